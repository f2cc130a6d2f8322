"""The agent turn: a message answered by the model, directly or, past its direct budget, as a
background job.

`handle` is the last handler of the chain (handlers/turn/direct.py); `run_job` is what a job
worker runs (handlers/turn/job.py); both drive the loop through handlers/turn/drive.py.
"""

from __future__ import annotations

from handlers.turn.direct import handle
from handlers.turn.gate import guest_limit_text
from handlers.turn.held import TRAILER
from handlers.turn.job import run_job
from handlers.turn.promote import LONG_WORK_NOTE, QUEUED_NOTE
from handlers.turn.prompt import RETEACH

__all__ = ["LONG_WORK_NOTE", "QUEUED_NOTE", "RETEACH", "TRAILER", "guest_limit_text", "handle", "run_job"]

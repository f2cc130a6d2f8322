"""`python -m bot spool retry`: the operator replays the spool's set-aside entries (dead.jsonl).

Each entry is stored as the web server would have stored it, but for one of a number erased
since it came (`users forget`), which is dropped; what fails again, and bytes that were no entry,
stay in dead.jsonl. Exit code 0 when nothing stays dead, 1 otherwise. Safe next to
a running server: the file is renamed before it is read, so what the server sets aside meanwhile
goes to a new dead.jsonl, and what stays dead is appended to it.
"""

from __future__ import annotations

from bot.channel.inbound import InboundWriter
from bot.channel.locale import default_locale
from bot.channel.spool import Spool
from bot.channel.web import store_entry
from bot.config import Settings
from bot.services import build_services


async def retry(settings: Settings) -> int:
    services = await build_services(settings)
    writer = InboundWriter(services.engine, defaults=default_locale(settings),
                           rates_file=settings.costs.cost_rates_file)
    try:
        spool = Spool(settings.data_dir / "spool", settings.spool_max_bytes, settings.spool_max_attempts)
        stored, dropped, dead = await spool.retry_dead(lambda entry: store_entry(services, writer, entry))
    finally:
        await writer.close()
        await services.close()
    print(f"{stored} stored, {dead} still dead ({spool.dead})"
          + (f"; {dropped} dropped: their number was erased since" if dropped else ""))
    return 0 if dead == 0 else 1

"""The core of the bot: the base, storage, the channel and the agent, the domains and the edges
(ARCHITECTURE.md has the table of packages)."""

import os

# One BLAS thread per process, set before numpy is first imported (the local embedding model, the
# charts): the bot answers many people at once on few cores, and OpenBLAS's threads spin while they
# wait. On a busy 2-core machine one embedding took 0.49 s with two threads and 0.03 s with one.
# An operator who sets the variable keeps their value.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

__all__: list[str] = []

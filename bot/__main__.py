"""`python -m bot …`: see bot/cli.py."""

from bot.cli import main

# Guarded: the background lane's process (bot.lanes, spawned) imports this module again under
# another name, and must not start a second `serve` or `worker` there.
if __name__ == "__main__":
    raise SystemExit(main())

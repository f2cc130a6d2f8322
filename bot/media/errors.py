"""The base of every exception bot.media defines: `except MediaError` catches all of them. A module of
its own, so that the package's modules and its `__init__` import it without importing each other."""


class MediaError(Exception):
    """A failure of media (files received from Twilio, voice notes heard, replies spoken)."""

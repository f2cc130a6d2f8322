"""What arrives as media and what leaves as sound: the files a user sends, fetched from Twilio and
stored in the library (`received`), voice notes heard and replies spoken (`speech`)."""

from bot.media.errors import MediaError

__all__ = ["MediaError", "received", "speech"]

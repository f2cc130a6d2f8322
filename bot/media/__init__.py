"""What arrives as media and what leaves as sound: the files a user sends, fetched from Twilio and
stored in the library (`received`), voice notes heard and replies spoken (`speech`)."""

__all__ = ["received", "speech"]

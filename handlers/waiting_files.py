"""Files kept for a user's next message (WhatsApp's 24 h window was closed) go out when they write.

bot.channel.outbound keeps such a file as a `PendingDelivery` row when it could go neither by
SMS nor as a template's link. This handler runs early in the chain, sends each waiting file in
the order it was kept, and marks it sent once Twilio took it or the outbox holds it (the outbox
sends it; the next message must not send it again). It never takes the message.
"""

from __future__ import annotations

from sqlalchemy import select, update

from bot.channel.context import FILES_WAITING, Incoming
from bot.channel.outbound import commit_turn, files_waiting, send_to_user
from bot.storage.models import PendingDelivery, UserFile


async def handle(msg: Incoming) -> bool:
    """The files that waited for this user's next message go out now, before the answer.

    Never takes the message (returns False): it goes on to the other handlers."""
    services, user, db = msg.services, msg.user, msg.db
    if msg.lacks(FILES_WAITING):  # the arrival looked: most messages find nothing
        return False
    # Read in the message's session: no transaction of its own for it.
    waiting = list((await db.scalars(
        select(PendingDelivery).where(files_waiting(user.id)).order_by(PendingDelivery.id)
    )).all())
    files = {f.id: f for f in (await db.scalars(
        select(UserFile).where(UserFile.id.in_([w.file_id for w in waiting]))
    )).all()} if waiting else {}
    for item in waiting:
        media = files.get(item.file_id)
        sent = True
        if media is not None:
            intro = msg.t("📎 Voici le fichier qui attendait.",
                          "📎 Here is the file that was waiting for you.")
            text = f"{intro}\n\n{item.text}" if item.text.strip() else intro
            result = await send_to_user(services, user, text=text, media=media, channel=msg.channel,
                                        kind="pending_file")
            sent = result.ok or result.queued  # queued: the outbox sends it, not the next message
        if sent:
            await commit_turn()
            async with services.sessions() as db:
                await db.execute(update(PendingDelivery).where(PendingDelivery.id == item.id)
                                 .values(sent_at=services.clock()))
                await db.commit()
    return False

"""EMAIL / CODE: registering and confirming the user's own address, with a real SMTP server.

Replies go through the real outbound path to its console sink (the `chat` channel)."""

from __future__ import annotations

import io
import re
from datetime import timedelta
from typing import Any

from bot.channel.console import ConsoleSink
from bot.channel.context import Incoming
from bot.storage.models import Conversation, InboundMessage, User
from handlers import email_commands
from tests.support.outreach import add_user


class Chat:
    """One user talking to the handler; each `send` runs it like the worker does (then commits)."""

    def __init__(self, services, user: User) -> None:
        self.services, self.user_id, self.n = services, user.id, 0
        services.console = ConsoleSink(io.StringIO())

    async def send(self, text: str) -> tuple[bool, str]:
        sink = self.services.console
        before = len(sink.lines)
        self.n += 1
        async with self.services.sessions() as db:
            user = await db.get(User, self.user_id)
            conv = Conversation(user_id=user.id)
            db.add(conv)
            await db.flush()
            inbound = InboundMessage(message_sid=f"SM{self.user_id}x{self.n}", user_id=user.id, channel="cli",
                                     from_addr=user.phone, body=text)
            db.add(inbound)
            await db.flush()
            msg = Incoming(services=self.services, db=db, user=user, conversation=conv, inbound=inbound,
                           channel="cli", text=text.strip())
            taken = await email_commands.handle(msg)
            await db.commit()
        return taken, "\n".join(sink.lines[before:])

    async def user(self) -> User:
        async with self.services.sessions() as db:
            return await db.get(User, self.user_id)


def _code_in(mail: Any) -> str:
    found = re.search(r"\b(\d{6})\b", mail.message.get_body(("plain",)).get_content())
    assert found is not None
    return found.group(1)


async def test_register_and_confirm(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env())
    chat = Chat(services, await add_user(services))
    taken, reply = await chat.send("EMAIL Awa.Kone@Exemple.CI")
    assert taken and "Awa.Kone@exemple.ci" in reply and "CODE" in reply
    assert len(smtp.received) == 1 and smtp.received[0].rcpt_tos == ["Awa.Kone@exemple.ci"]
    code = _code_in(smtp.received[0])
    user = await chat.user()
    assert user.pending_email == "Awa.Kone@exemple.ci" and not user.email_verified and user.email is None
    taken, reply = await chat.send(f"code {code}")
    assert taken and "confirm" in reply.lower()
    user = await chat.user()
    assert user.email == "Awa.Kone@exemple.ci" and user.email_verified
    assert user.email_code is None and user.pending_email is None
    _, status = await chat.send("EMAIL")
    assert "Awa.Kone@exemple.ci" in status


async def test_email_with_code_form_also_confirms(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env())
    chat = Chat(services, await add_user(services))
    await chat.send("email: moi@test.ci")
    taken, _ = await chat.send(f"EMAIL {_code_in(smtp.received[0])}")
    assert taken and (await chat.user()).email_verified


async def test_wrong_code_then_lockout(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env())
    chat = Chat(services, await add_user(services))
    await chat.send("EMAIL moi@test.ci")
    code = _code_in(smtp.received[0])
    wrong = "000000" if code != "000000" else "111111"
    for _ in range(email_commands.MAX_WRONG_CODES - 1):
        taken, reply = await chat.send(f"CODE {wrong}")
        assert taken and "incorrect" in reply.lower()
    _, reply = await chat.send(f"CODE {wrong}")
    assert "trop de fois" in reply
    _, reply = await chat.send(f"CODE {code}")  # the right code no longer works
    user = await chat.user()
    assert not user.email_verified and user.email is None
    assert "Aucun code" in reply


async def test_code_expires(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env(EMAIL_CODE_TTL_S="600"))
    chat = Chat(services, await add_user(services))
    await chat.send("EMAIL moi@test.ci")
    code = _code_in(smtp.received[0])
    async with services.sessions() as db:  # the code was issued eleven minutes ago
        user = await db.get(User, chat.user_id)
        user.email_code_expires_at = services.clock() - timedelta(minutes=1)
        await db.commit()
    _, reply = await chat.send(f"CODE {code}")
    assert "expiré" in reply
    assert not (await chat.user()).email_verified


async def test_new_address_keeps_old_until_confirmed_and_remove(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env())
    chat = Chat(services, await add_user(services, email="old@test.ci", email_verified=True))
    await chat.send("EMAIL new@test.ci")
    user = await chat.user()
    assert user.email == "old@test.ci" and user.email_verified and user.pending_email == "new@test.ci"
    await chat.send(f"CODE {_code_in(smtp.received[0])}")
    assert (await chat.user()).email == "new@test.ci"
    taken, reply = await chat.send("EMAIL SUPPRIMER")
    assert taken and "retirée" in reply
    user = await chat.user()
    assert user.email is None and not user.email_verified


async def test_bad_input_and_sentences_left_to_the_agent(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env())
    chat = Chat(services, await add_user(services))
    taken, reply = await chat.send("EMAIL pas-une-adresse@")
    assert taken and "n'est pas une adresse" in reply
    for sentence in ("Email me the summary please", "EMAIL a@b.c\r\nBcc: x@y.z", "CODE 12345", "123456",
                     "code promo 123456"):
        taken, _ = await chat.send(sentence)
        assert taken is False, sentence
    taken, reply = await chat.send("CODE 123456")
    assert taken and "Aucun code" in reply
    assert smtp.received == []


async def test_smtp_down_keeps_nothing_pending(make_services):
    from tests.support.ports import free_port

    services = await make_services(SMTP_HOST="127.0.0.1", SMTP_PORT=str(free_port()), SMTP_SECURITY="none",
                                   SMTP_FROM="bot@deblo.test")
    chat = Chat(services, await add_user(services))
    taken, reply = await chat.send("EMAIL moi@test.ci")
    assert taken and "pas pu envoyer" in reply
    assert (await chat.user()).pending_email is None


async def test_english_user_and_rate_limit(make_services, smtp_server):
    smtp = smtp_server()
    services = await make_services(**smtp.env())
    chat = Chat(services, await add_user(services, language="en"))
    _, reply = await chat.send("EMAIL me@test.ci")
    assert "I sent a code" in reply
    assert "confirmation code" in smtp.received[0].message["Subject"]
    for _ in range(email_commands.MAX_CODES_PER_HOUR - 1):
        await chat.send("EMAIL me@test.ci")
    _, reply = await chat.send("EMAIL me@test.ci")
    assert "Too many codes" in reply
    assert len(smtp.received) == email_commands.MAX_CODES_PER_HOUR


async def test_without_smtp_registration_is_declined(make_services):
    services = await make_services()
    chat = Chat(services, await add_user(services))
    taken, reply = await chat.send("EMAIL moi@test.ci")
    assert taken and "pas disponible" in reply
    assert (await chat.user()).pending_email is None

"""The cost meter on both databases: each message priced when Twilio reports it (a sent one by its
status callback, a received one as it is stored), and the cost per active learner per week and per
month, messages / templates / tokens, for the school and a class, against a hand-computed week;
`users show` gives one learner's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bot.billing.costs import cost_lines
from bot.channel.outbound import send_to_user
from bot.storage.models import CohortMember, Conversation, InboundMessage, OutboundMessage, TurnRecord, User
from tests.support.admin import logged_in, make_cohort, make_operator
from tests.support.console import users
from tests.support.harness import Harness

ABIDJAN = "+2250700000501"
DAKAR = "+221770000502"
NNBSP = "\u202f"


async def _outbound(h: Harness) -> list[OutboundMessage]:
    async with h.services.sessions() as db:
        return list((await db.scalars(select(OutboundMessage).order_by(OutboundMessage.id))).all())


async def test_sent_messages_are_priced_by_their_status_callback(make_harness: Any, tmp_path: Path) -> None:
    rates = tmp_path / "rates.toml"  # the operator's: Meta approved this template as marketing
    rates.write_text(f'[templates]\n{"HX" + "b" * 32} = "marketing"\n', "utf-8")
    h = await make_harness(TWILIO_TEMPLATE_SID="HX" + "b" * 32, COST_RATES_FILE=str(rates))
    whatsapp = await h.make_user(ABIDJAN)
    sms = await h.make_user(DAKAR, last_channel="sms")
    assert (await send_to_user(h.services, whatsapp, text="Bravo !")).ok
    assert (await send_to_user(h.services, sms, text="Rappel : " + "la lumiere du jour. " * 9)).ok
    h.clock.advance(hours=25)  # outside the 24 h window: the approved template
    assert (await send_to_user(h.services, whatsapp, text="Rappel : contrôle demain.")).template
    await h.twilio.idle()
    reply, text, template = await _outbound(h)
    assert (reply.status, reply.cost_micro, reply.category) == ("delivered", 9000, "service")
    assert (text.channel, text.segments, text.cost_micro, text.category) == ("sms", 2, 487000, None)
    assert template.template and (template.cost_micro, template.category) == (27500, "marketing")
    # Priced once: a later callback, with Twilio's own segment count, changes nothing; a failed
    # send is never priced.
    base = {"AccountSid": h.settings.twilio_account_sid, "To": DAKAR}
    await h.post_form("/twilio/status", {**base, "MessageSid": text.sid, "MessageStatus": "read",
                                         "NumSegments": "3"})
    assert (await _outbound(h))[1].cost_micro == 487000
    async with h.services.sessions() as db, db.begin():
        db.add(OutboundMessage(user_id=sms.id, channel="sms", to_addr=DAKAR, sid="SMcost1", status="queued",
                               segments=1))
        db.add(OutboundMessage(user_id=sms.id, channel="sms", to_addr=DAKAR, sid="SMcost2", status="queued",
                               segments=1))
    await h.post_form("/twilio/status", {**base, "MessageSid": "SMcost1", "MessageStatus": "failed",
                                         "ErrorCode": "30008"})
    # Twilio's NumSegments, when its callback has it, over the count the message had when sent.
    await h.post_form("/twilio/status", {**base, "MessageSid": "SMcost2", "MessageStatus": "sent",
                                         "NumSegments": "3"})
    failed, three = (await _outbound(h))[3:]
    assert failed.cost_micro is None and (three.cost_micro, three.segments) == (730500, 3)


async def test_received_messages_are_priced_as_they_are_stored(harness: Harness) -> None:
    h = harness
    assert (await h.inbound(ABIDJAN, "Bonjour", sid="SMin1"))[0] == 200
    answer = await h.inbound(DAKAR, "Bonjour", channel="sms", sid="SMin2", extra={"NumSegments": "2"})
    assert answer[0] == 200
    async with h.services.sessions() as db:
        costs = dict((await db.execute(select(InboundMessage.message_sid, InboundMessage.cost_micro))).all())
    assert costs == {"SMin1": 5000, "SMin2": 16600}


async def test_an_unreadable_rate_file_leaves_messages_unpriced_never_refused(
        make_harness: Callable[..., Awaitable[Harness]], tmp_path: Path) -> None:
    h = await make_harness(COST_RATES_FILE=str(tmp_path / "missing.toml"))
    user = await h.make_user(ABIDJAN)
    assert (await h.inbound(ABIDJAN, "Bonjour", sid="SMin3"))[0] == 200
    result = await send_to_user(h.services, user, text="Bravo !")
    assert result.ok
    await h.twilio.idle()
    rows = await _outbound(h)  # with the tutor's answer to « Bonjour », maybe
    assert [row.status for row in rows if row.sid in result.sids] == ["delivered"]
    assert [row.cost_micro for row in rows] == [None] * len(rows)
    async with h.services.sessions() as db:
        assert await db.scalar(select(InboundMessage.cost_micro)) is None
        # The dashboard's messages then count nothing, its tokens still do.
        [week, _] = await cost_lines(db, h.settings, None, h.clock())
    assert (week.active, week.messages, week.total) == (1, 0, 0)


def _rates(tmp_path: Path) -> str:
    """A round rate for the hand computation: 600 FCFA to the dollar (the rest as packaged)."""
    path = tmp_path / "rates.toml"
    path.write_text('[currency]\nXOF = "600"\n', "utf-8")
    return str(path)


async def _messages(h: Harness, user: User, days_ago: float, received: Sequence[int], sent: Sequence[int],
                    templates: Sequence[int] = (), tokens: int = 0) -> None:
    """Rows as the meter priced them (millionths of a dollar), and a turn's tokens, `days_ago`."""
    at = h.clock() - timedelta(days=days_ago)
    async with h.services.sessions() as db, db.begin():
        for n, micro in enumerate(received):
            db.add(InboundMessage(message_sid=f"SMi{user.id}x{n}x{days_ago}", user_id=user.id,
                                  channel="whatsapp", from_addr="x", status="done", created_at=at,
                                  cost_micro=micro))
        for n, micro in enumerate([*sent, *templates]):
            db.add(OutboundMessage(user_id=user.id, channel="whatsapp", to_addr="x", status="delivered",
                                   sid=f"SMo{user.id}x{n}x{days_ago}", template=n >= len(sent),
                                   created_at=at, cost_micro=micro))
        if tokens:
            conversation = Conversation(user_id=user.id)
            db.add(conversation)
            await db.flush()
            db.add(TurnRecord(conversation_id=conversation.id, user_id=user.id, exit_reason="final",
                              prompt_tokens=tokens - tokens // 4, completion_tokens=tokens // 4,
                              created_at=at))


async def test_the_cost_per_active_learner_of_a_hand_computed_week(
        make_harness: Callable[..., Awaitable[Harness]], tmp_path: Path) -> None:
    h = await make_harness(COST_PER_1K_TOKENS="2", COST_RATES_FILE=_rates(tmp_path))
    awa = await h.make_user("+2250700000511", display_name="Awa")
    ben = await h.make_user("+2250700000512", display_name="Ben")
    other = await h.make_user("+2250700000513")  # in no class: the school's, not the class's
    await _messages(h, awa, 1, received=[5000, 5000], sent=[9000, 9000], templates=[9000], tokens=1500)
    await _messages(h, ben, 2, received=[8300], sent=[418200], tokens=500)
    await _messages(h, ben, 10, received=[5000], sent=[9000], tokens=1000)  # this month, not this week
    await _messages(h, other, 3, received=[5000], sent=[9000])
    cohort = await make_cohort(h, "6e A", [awa, ben])
    # The class's week by hand: messages 10,000 + 18,000 + 8,300 + 418,200 millionths of a dollar
    # = $0.4545 = 272.70 FCFA; the template $0.009 = 5.40 FCFA; 2,000 tokens at 2 FCFA per 1,000 =
    # 4 FCFA; 282.10 FCFA for 2 active learners = 141.05 FCFA each. Its month: + $0.014 = 8.40 FCFA of
    # messages and 1,000 tokens = 2 FCFA: 292.50 FCFA, 146.25 each.
    async with h.services.sessions() as db:
        week, month = await cost_lines(db, h.settings, select(CohortMember.user_id).where(
            CohortMember.cohort_id == cohort), h.clock())
        school_week, school_month = await cost_lines(db, h.settings, None, h.clock())
    assert (week.currency, week.active, week.messages, week.templates, week.tokens) == (
        "XOF", 2, Decimal("272.70"), Decimal("5.40"), Decimal("4"))
    assert week.total == Decimal("282.10") and week.per_learner == Decimal("141.05")
    assert (month.active, month.messages, month.total, month.per_learner) == (
        2, Decimal("281.10"), Decimal("292.50"), Decimal("146.25"))
    # The school: the third learner's $0.014 more, 3 active learners.
    assert (school_week.active, school_week.total) == (3, Decimal("290.50"))
    assert school_month.total == Decimal("300.90") and school_month.per_learner == Decimal("100.30")
    await make_operator(h, "admin@ecole.ci")
    await make_operator(h, "prof@ecole.ci", role="teacher", cohorts=[cohort])
    admin, teacher = await logged_in(h, "admin@ecole.ci"), await logged_in(h, "prof@ecole.ci")
    try:
        _, page, _ = await admin.get("/admin/cohorts/6e%20A")
        row = page.split('id="cost-week"')[1].split("</tr>")[0]
        assert [f"{n}{NNBSP}FCFA" in row for n in ("273", "5", "4", "282", "141")] == [True] * 5
        assert f"146{NNBSP}FCFA" in page.split('id="cost-month"')[1].split("</tr>")[0]
        _, page, _ = await admin.get("/admin/")
        row = page.split('id="cost-week"')[1].split("</tr>")[0]
        assert f"291{NNBSP}FCFA" in row and f"97{NNBSP}FCFA" in row  # 290.50 / 3 = 96.83
        assert f"100{NNBSP}FCFA" in page.split('id="cost-month"')[1].split("</tr>")[0]
        # What the school pays is the admins': a teacher's class page has no costs.
        _, page, _ = await teacher.get("/admin/cohorts/6e%20A")
        assert 'id="costs"' not in page
    finally:
        await admin.close()
        await teacher.close()
    shown = await users(h, "show", "+2250700000512")
    assert shown.code == 0, shown.err
    # Ben's week: (8,300 + 418,200) × 600 / 10⁶ = 255.90 FCFA and 500 tokens = 1 FCFA.
    assert ("cost:        week 256.90 XOF (messages 255.90, templates 0.00, tokens 1.00); "
            "month 267.30 XOF (messages 264.30, templates 0.00, tokens 3.00)") in shown.out

"""One WhatsApp number per persona (TWILIO_WHATSAPP_FROM_PRO): pro users are written to from the
pro sender, a message on the other persona's number is told the right one, with no model call."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bot.channel.outbound import send_template, send_to_user
from tests.support.files import make_file
from tests.support.harness import WHATSAPP_FROM, Harness

PRO_NUMBER = "+2250700000097"
PRO_FROM = f"whatsapp:{PRO_NUMBER}"
STUDENTS_NUMBER = WHATSAPP_FROM.removeprefix("whatsapp:")
PRO = "+2250700000061"
CHILD = "+2250700000062"
MakeHarness = Callable[..., Awaitable[Harness]]


async def test_a_pro_on_the_students_number_is_told_the_pro_number(make_harness: MakeHarness) -> None:
    h = await make_harness(TWILIO_WHATSAPP_FROM_PRO=PRO_FROM)
    await h.make_user(PRO, mode="pro")
    await h.inbound(PRO, "Fais-moi le bilan SYSCOHADA de mars.")  # To: the students' number
    await h.settle()
    [told] = h.twilio.sent
    # From the number they wrote to: its 24 h window is the one open.
    assert told["From"] == WHATSAPP_FROM and told["To"] == f"whatsapp:{PRO}"
    assert PRO_NUMBER in told["Body"] and f"https://wa.me/{PRO_NUMBER[1:]}" in told["Body"]
    assert told["Body"].startswith("Ce numéro est celui du tuteur des élèves")
    assert h.llm.requests == []  # no model call


async def test_a_child_on_the_pro_number_is_told_the_students_number(make_harness: MakeHarness) -> None:
    h = await make_harness(TWILIO_WHATSAPP_FROM_PRO=PRO_FROM)
    await h.make_user(CHILD, mode="child", language="en")
    await h.inbound(CHILD, "Help me with fractions", extra={"To": PRO_FROM})
    await h.settle()
    [told] = h.twilio.sent
    assert told["From"] == PRO_FROM and STUDENTS_NUMBER in told["Body"]
    assert told["Body"].startswith("This number is for pro accounts only")
    assert h.llm.requests == []


async def test_a_pro_on_the_pro_number_is_answered_from_it(make_harness: MakeHarness) -> None:
    h = await make_harness(TWILIO_WHATSAPP_FROM_PRO=PRO_FROM)
    await h.make_user(PRO, mode="pro")
    h.llm.push_text("Le bilan de mars est prêt à être préparé.")
    await h.inbound(PRO, "Prépare le bilan de mars.", extra={"To": PRO_FROM})
    await h.settle()
    assert h.twilio.sent and {m["From"] for m in h.twilio.sent} == {PRO_FROM}
    assert "bilan de mars" in h.twilio.bodies()[-1]


async def test_proactive_sends_to_a_pro_go_from_the_pro_sender(make_harness: MakeHarness) -> None:
    h = await make_harness(TWILIO_WHATSAPP_FROM_PRO=PRO_FROM, TWILIO_TEMPLATE_SID="HX" + "1" * 32)
    pro = await h.make_user(PRO, mode="pro")
    child = await h.make_user(CHILD, mode="child")
    sheet = await make_file(h, pro, "bilan.pdf", "application/pdf", b"%PDF-1.4 bilan")
    assert (await send_to_user(h.services, pro, text="Rappel : TVA à déclarer.", kind="reminder")).ok
    assert (await send_to_user(h.services, pro, text="Ton bilan", media=sheet, kind="tool")).ok
    assert (await send_template(h.services, pro, "HX" + "2" * 32, {"1": "TVA"}, text="TVA",
                                kind="reminder")).ok
    assert (await send_to_user(h.services, child, text="Révise les fractions !", kind="reminder")).ok
    froms = [(m["To"], m["From"]) for m in h.twilio.sent]
    assert froms == [(f"whatsapp:{PRO}", PRO_FROM)] * 3 + [(f"whatsapp:{CHILD}", WHATSAPP_FROM)]
    assert h.twilio.sent[1].get("MediaUrl")


async def test_one_sender_for_everyone_without_the_pro_number(harness: Harness) -> None:
    h = harness
    await h.make_user(PRO, mode="pro")
    h.llm.push_text("Bonjour, voici la réponse.")
    await h.inbound(PRO, "Bonjour")
    await h.settle()
    assert h.twilio.sent and {m["From"] for m in h.twilio.sent} == {WHATSAPP_FROM}
    assert len(h.llm.requests) == 1

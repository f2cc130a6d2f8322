"""A turn run again after a worker crash does not send the bug report e-mail a second time: the
real tool, SMTP server and effect store, the calls run as a re-run turn runs them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from bot.agent.effects import EffectStore
from bot.agent.executor import TurnMemory, execute_calls
from bot.agent.sse import ToolCall
from bot.agent.toolspec import ToolContext
from bot.storage.models import ToolEffect
from tools.report_bug import TOOL as REPORT_BUG

PHONE = "+2250700000001"


async def test_report_bug_is_mailed_once_across_runs_of_a_turn(make_harness: Any, smtp_server: Any) -> None:
    smtp = smtp_server()
    h = await make_harness(**smtp.env(BUG_REPORT_EMAIL="bugs@deblo.test"))
    user = await h.make_user(PHONE, mode="pro")
    thanked: list[str] = []

    async def deliver(text: str = "", media: Any = None) -> None:
        thanked.append(text)

    def make(call: ToolCall) -> ToolContext:
        return ToolContext(services=h.services, user_id=user.id, conversation_id=7, channel="whatsapp",
                           mode="pro", language="fr", tool_call_id=call.id, deliver=deliver)

    async def run_turn_once(call_id: str) -> Any:
        # Each run of the message's turn gets a fresh memory, as a restarted worker does.
        store = EffectStore(h.services.sessions, user.id, inbound_id=99)
        [outcome] = await execute_calls(
            [ToolCall(call_id, "report_bug", '{"description": "Le PDF ne s\'ouvre pas"}')],
            tools={"report_bug": REPORT_BUG}, mode="pro", make_context=make, timeout_s=10,
            memory=TurnMemory(), effects=store)
        return outcome

    first = await run_turn_once("call_1")
    assert first.status == "ok" and first.result["delivered_by"] == ["email"]
    again = await run_turn_once("call_1b")  # the re-run's model asks for the same report
    assert again.status == "replayed" and "not done again" in again.result["note"]
    assert [m.rcpt_tos for m in smtp.received] == [["bugs@deblo.test"]]
    assert thanked == ["Merci d'avoir signalé ce problème ! L'équipe l'a bien reçu."]
    async with h.services.sessions() as db:
        [row] = (await db.scalars(select(ToolEffect))).all()
    assert row.key == "inbound:99:call:0:report_bug" and row.status == "done"

"""STUDENT_WEB_TOOLS: a school's tutor keeps its students to their lessons. browse_url stays in the
child mode's 22 tools (the modes' sets are the product's) but opens no page for a student unless
the operator set it; a parent (the child mode's other role) and a pro browse either way. E-mail to
anyone else was never a student's: send_email_to_user writes only to their own confirmed address."""

from __future__ import annotations

from typing import Any

import pytest

import tools
from bot.agent.toolspec import ToolContext
from tools.browse_url import TOOL as BROWSE
from tools.registry import MODE_TOOLS
from tools.send_email_to_user import TOOL as EMAIL

PAGE = "http://169.254.169.254/latest/meta-data/"  # refused as private whoever asks: no fetch here


def _ctx(h: Any, user_id: int, mode: str) -> ToolContext:
    return ToolContext(services=h.services, user_id=user_id, conversation_id=1, channel="whatsapp",
                       mode=mode, language="fr")


async def test_a_student_opens_no_page_unless_the_school_allows_it(make_harness: Any) -> None:
    h = await make_harness()
    assert h.settings.student_web_tools is False  # off unless the operator says so
    student = await h.make_user("+2250700000031", mode="child", role="student")
    parent = await h.make_user("+2250700000032", mode="child", role="parent")
    pro = await h.make_user("+2250700000033", mode="pro", role="pro")
    refused = await BROWSE.run(_ctx(h, student.id, "child"), {"url": PAGE})
    assert refused["success"] is False and refused["code"] == "students_no_web" and refused["refused"]
    fr, en = refused["error"].split("\n")
    assert fr.startswith("Pages web fermées aux élèves") and en.startswith("Web pages are closed to students")
    for user, mode in ((parent, "child"), (pro, "pro")):
        other = await BROWSE.run(_ctx(h, user.id, mode), {"url": PAGE})
        assert other.get("code") != "students_no_web", other  # refused only as a private address
    # The tool set is the same either way: 22 tools for the child mode, browse_url among them.
    assert len(MODE_TOOLS["child"]) == 22 and "browse_url" in MODE_TOOLS["child"]
    assert "browse_url" in {t.name for t in tools.for_mode("child", h.settings)}
    opened = await make_harness(STUDENT_WEB_TOOLS="1")
    student = await opened.make_user("+2250700000034", mode="child", role="student")
    allowed = await BROWSE.run(_ctx(opened, student.id, "child"), {"url": PAGE})
    assert allowed.get("code") != "students_no_web", allowed


@pytest.mark.parametrize("key", ["to", "cc", "bcc"])
async def test_a_student_emails_nobody_but_themselves(harness: Any, key: str) -> None:
    h = harness
    student = await h.make_user("+2250700000035", mode="child", role="student", email="awa@example.org",
                                email_verified=True)
    result = await EMAIL.run(_ctx(h, student.id, "child"),
                             {"subject": "Devoir", "body": "Bonjour", key: "ami@example.org"})
    assert result["success"] is False and result["refused"] is True
    assert "draft_email" not in MODE_TOOLS["child"]  # no e-mail to others in the child mode

"""The operator's console, `python -m bot users …`, run as a process on the test database.

Each command is run as the operator runs it (a subprocess with the harness's settings), so the
same tests cover SQLite and PostgreSQL. `forget` is checked against every table of the schema:
after it, no row anywhere holds the person's id or number, and no byte of their files is left.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import func, select, update

from bot import accounts, library
from bot.storage.models import (
    Base,
    CreditEntry,
    InboundMessage,
    ParentLink,
    Payment,
    ScheduledSend,
    User,
    UserFile,
)
from bot.storage.state import lock_key, make_state
from tests.support.accounts import PARENT, PHONE, leftovers, rich_user, say
from tests.support.console import users
from tests.support.harness import Harness
from tests.support.waiting import eventually

DIGITS = PHONE.removeprefix("+")


async def snapshot(h: Harness) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, in key order."""
    rows: dict[str, list[tuple[Any, ...]]] = {}
    async with h.services.sessions() as db:
        for table in Base.metadata.sorted_tables:
            result = await db.execute(select(table).order_by(*table.primary_key.columns))
            rows[table.name] = [tuple(r) for r in result]
    return rows


# --- set-mode ---------------------------------------------------------------------------------


async def test_set_mode_enrols_a_number_that_never_wrote(harness: Harness) -> None:
    h = harness
    run = await users(h, "set-mode", "+225 07 00 00 00 01", "child")
    assert run.code == 0, run.err
    assert "mode child" in run.out and "new user" in run.out
    assert f"balance {h.settings.signup_credits}" in run.out
    again = await users(h, "set-mode", PHONE, "pro")
    assert again.code == 0 and "mode pro" in again.out and "new user" not in again.out
    user = await h.user(PHONE)
    assert user is not None
    assert (user.mode, user.role, user.onboarding_step) == ("pro", "pro", None)
    async with h.services.sessions() as db:
        signups = (await db.scalars(select(CreditEntry).where(CreditEntry.user_id == user.id))).all()
    assert [(e.reason, e.delta) for e in signups] == [("signup", h.settings.signup_credits)]
    assert user.credit_balance == h.settings.signup_credits
    # Ready to use: the first message is answered by the tutor, not by the onboarding menu.
    h.llm.push_text("Bonjour, que puis-je faire pour toi ?")
    replies = await say(h, PHONE, "Bonjour")
    assert "Bonjour, que puis-je faire pour toi ?" in replies and len(h.llm.requests) == 1


async def test_a_guest_set_by_the_operator_picks_a_profile_and_gets_credits_once(harness: Harness) -> None:
    h = harness
    run = await users(h, "set-mode", PHONE, "guest")
    assert run.code == 0 and "mode guest" in run.out and "balance 0" in run.out, run.err
    h.llm.push_text("Bonjour ! Je suis là.")
    replies = await say(h, PHONE, "Bonjour, tu peux m'aider ?")
    assert "Bonjour ! Je suis là." in replies and any("1 Élève" in r for r in replies), replies
    replies = await say(h, PHONE, "1")
    assert any("C'est parti" in r for r in replies), replies
    user = await h.user(PHONE)
    assert user is not None and (user.mode, user.role, user.onboarding_step) == ("child", "student", None)
    again = await users(h, "set-mode", PHONE, "child")
    assert again.code == 0 and "signup credits" not in again.out
    async with h.services.sessions() as db:
        entries = (await db.scalars(select(CreditEntry).where(CreditEntry.user_id == user.id))).all()
        balance = await db.scalar(select(User.credit_balance).where(User.id == user.id))
    assert [e.reason for e in entries] == ["signup"] and balance == h.settings.signup_credits


# --- credit -----------------------------------------------------------------------------------


async def test_credit_adds_and_takes_back_but_never_below_zero(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    start = h.settings.signup_credits
    run = await users(h, "credit", PHONE, "20", "--reason", "bourse de l'école")
    assert run.code == 0 and f"balance {start + 20}" in run.out, run.err
    run = await users(h, "credit", PHONE, f"-{start + 100}")
    assert run.code == 0 and "balance 0" in run.out
    assert f"only {start + 20} of the {start + 100} credits were taken back" in run.err
    run = await users(h, "credit", PHONE, "-5")
    assert run.code == 0 and "balance 0" in run.out and "nothing taken back" in run.err
    async with h.services.sessions() as db:
        entries = (await db.scalars(select(CreditEntry).where(CreditEntry.user_id == user.id)
                                    .order_by(CreditEntry.id))).all()
        balance = await db.scalar(select(User.credit_balance).where(User.id == user.id))
    assert [(e.reason, e.delta, e.note) for e in entries] == [
        ("signup", start, None), ("operator", 20, "bourse de l'école"), ("operator", -(start + 20), None)]
    assert balance == 0 == sum(e.delta for e in entries) and entries[-1].balance_after == 0
    run = await users(h, "credit", "+2250799999999", "5")
    assert run.code == 1 and "no user with the number +2250799999999" in run.err


# --- show -------------------------------------------------------------------------------------


async def test_show_as_text_and_json(harness: Harness) -> None:
    h = harness
    user = await rich_user(h)
    async with h.services.sessions() as db:
        await db.execute(update(User).where(User.id == user.id).values(
            delivery_failures=2, delivery_blocked_reason="21610 sms: unsubscribed"))
        await db.commit()
        balance = await db.scalar(select(User.credit_balance).where(User.id == user.id))
    assert balance and balance < h.settings.signup_credits  # the turn was paid
    run = await users(h, "show", PHONE)
    assert run.code == 0, run.err
    for expected in (f"{PHONE} (user {user.id})", "Awa", "role student, mode child", "onboarding:  done",
                     f"balance:     {balance} credits", "opt-out:     no",
                     "2 failed send(s) in a row; delivery_blocked_reason: 21610 sms: unsubscribed",
                     f"parents:     {PARENT} confirmed", "children:    none",
                     "1 user_files", "1 memories"):
        assert expected in run.out, (expected, run.out)
    info = json.loads((await users(h, "show", PHONE, "--json")).out)
    assert info["id"] == user.id and info["balance"] == balance
    assert info["delivery"]["delivery_failures"] == 2 and info["opted_out"] is False
    assert info["parents"] == [{"phone": PARENT, "name": None, "status": "confirmed",
                                "since": info["parents"][0]["since"]}]
    assert info["last_activity"]["last_message_from_them"] and info["last_activity"]["last_message_to_them"]
    parent = json.loads((await users(h, "show", PARENT, "--json")).out)
    assert [c["phone"] for c in parent["children"]] == [PHONE] and parent["role"] == "parent"
    missing = await users(h, "show", "+2250799999999")
    assert missing.code == 1 and missing.err.strip() == "error: no user with the number +2250799999999"


# --- export -----------------------------------------------------------------------------------


async def test_export_is_everything_kept_about_the_person(harness: Harness) -> None:
    h = harness
    user = await rich_user(h)
    run = await users(h, "export", PHONE)
    assert run.code == 0, run.err
    doc = json.loads(run.out)
    data = doc["data"]
    assert doc["profile"]["id"] == user.id and doc["profile"]["phone"] == PHONE
    assert "email_code" not in doc["profile"]
    assert any("Explique-moi les fractions" in (m["content"] or "") for m in data["messages"])
    assert {r["body"] for r in data["inbound_messages"]} >= {"Explique-moi les fractions", f"PARENT {PARENT}"}
    assert "Une fraction est une part d'un tout." in {r["body"] for r in data["outbound_messages"]}
    assert [(f["name"], f["mime"], f["size"]) for f in doc["files"]] == [("devoir.txt", "text/plain", 19)]
    assert [m["fact"] for m in data["memories"]] == ["En 4e au lycee de Cocody"]
    assert [(r["topic"], r["correct"]) for r in data["exercise_results"]] == [("fractions", True)]
    assert [t["title"] for t in data["tasks"]] == ["Réviser les fractions"]
    assert [link["status"] for link in data["parent_links"]] == ["confirmed"]
    assert [e["reason"] for e in data["credit_entries"]] == ["signup", "usage"]
    assert [p["reference"] for p in data["payments"]] == [f"deblo-{user.id}-abc"]
    assert doc["account"]["parents"][0]["phone"] == PARENT
    # Nothing of the parent's own: their reply and profile are theirs.
    assert "OUI" not in {r["body"] for r in data["inbound_messages"]}


# --- forget -----------------------------------------------------------------------------------


async def test_forget_leaves_no_row_or_file_of_that_person(harness: Harness) -> None:
    h = harness
    user = await rich_user(h)
    parent = await h.user(PARENT)
    assert parent is not None
    async with h.services.sessions() as db:
        parent_file = await library.add_file(h.services, db, user_id=parent.id, name="bulletin.txt",
                                             mime="text/plain", data=b"bulletin", origin="upload")
        await db.commit()
        keys = list(await db.scalars(select(UserFile.storage_key).where(UserFile.user_id == user.id)))
        ledger = select(CreditEntry.delta, CreditEntry.reason).where(CreditEntry.user_id == user.id)
        ledger_before = (await db.execute(ledger.order_by(CreditEntry.id))).all()
        balance = await db.scalar(select(User.credit_balance).where(User.id == user.id))
    assert balance is not None
    assert keys and all(h.stored_path(k).exists() for k in keys)
    assert await leftovers(h, user.id, PHONE) != []  # the check finds what is there

    run = await users(h, "forget", PHONE)
    assert run.code == 0, run.err
    assert f"erased (user {user.id})" in run.out and "kept for accounting" in run.out

    assert await leftovers(h, user.id, PHONE) == []
    assert not any(h.stored_path(k).exists() for k in keys)
    assert not (h.settings.data_dir / "files" / f"u{user.id}").exists()
    assert h.stored_path(parent_file.storage_key).exists()
    show = await users(h, "show", PHONE)
    assert show.code == 1 and "no user with the number" in show.err
    async with h.services.sessions() as db:
        # The parent keeps their account and their own records.
        assert await db.get(User, parent.id) is not None
        assert await db.scalar(select(func.count()).select_from(InboundMessage)
                               .where(InboundMessage.user_id == parent.id)) == 1
        assert await db.scalar(select(func.count()).select_from(ParentLink)) == 0
        # The parent's digest about this child went with the link.
        assert await db.scalar(select(func.count()).select_from(ScheduledSend)) == 0
        # Accounting: the same ledger rows and the payment, on a placeholder with nothing personal.
        placeholder = await db.scalar(select(User).where(User.onboarding_step == "erased"))
        assert placeholder is not None and placeholder.id != user.id
        assert (placeholder.phone, placeholder.display_name, placeholder.opted_out) == (None, None, True)
        on_placeholder = select(CreditEntry.delta, CreditEntry.reason).where(
            CreditEntry.user_id == placeholder.id)
        kept = (await db.execute(on_placeholder.order_by(CreditEntry.id))).all()
        payment = await db.scalar(select(Payment).where(Payment.reference == f"deblo-{user.id}-abc"))
    assert [tuple(r) for r in kept] == [*map(tuple, ledger_before), (-balance, "erased")]
    assert sum(r[0] for r in kept) == placeholder.credit_balance == 0
    assert payment is not None and payment.user_id == placeholder.id and payment.amount == 500
    # The number writing again is a new person.
    replies = await say(h, PHONE, "Bonjour")
    assert any("Bienvenue sur Deblo" in r for r in replies), replies
    again = await h.user(PHONE)
    assert again is not None and again.id not in (user.id, placeholder.id)


async def test_forget_an_unknown_number(harness: Harness) -> None:
    run = await users(harness, "forget", "+2250799999999")
    assert run.code == 1 and "no user with the number +2250799999999" in run.err


async def test_forget_waits_for_the_turn_answering_that_user(harness: Harness) -> None:
    """Without Redis too: the console is another process than the one running the turn."""
    h = harness
    await h.make_user(PHONE)
    h.llm.push_text("Une réponse qui prend son temps.", delay_s=6)
    assert (await h.inbound(PHONE, "Explique-moi les fractions"))[0] == 200
    await eventually(lambda: _true(len(h.llm.requests) == 1))  # the turn holds the user's lock
    run = await users(h, "forget", PHONE)
    # It erased the person only once the turn had ended: the answer went out before.
    assert h.llm.streams and h.llm.streams[0]["ended"] is not None
    assert await h.texts_to(PHONE) == ["Une réponse qui prend son temps."]
    assert run.code == 0, run.err
    assert await h.user(PHONE) is None


async def test_forget_refuses_while_another_holder_keeps_the_users_lock(harness: Harness) -> None:
    h = harness
    user = await h.make_user(PHONE)
    # Another process's lock (as `serve`'s would be): its own state on the same Redis or lock folder.
    other = make_state(h.settings.redis_url, h.settings.redis_key_prefix, h.settings.data_dir / "locks")
    token = await other.acquire(lock_key(user.id), 60)
    assert token is not None
    try:
        with pytest.raises(accounts.AccountBusy, match="is being answered right now; try again"):
            await accounts.forget_number(h.services, PHONE, wait_s=0.5)
        assert await h.user(PHONE) is not None
        assert await h.services.state.acquire(lock_key(user.id), 60) is None  # nor may a turn start
    finally:
        await other.release(lock_key(user.id), token)
        await other.close()
    report = await accounts.forget_number(h.services, PHONE, wait_s=5)
    assert report.user_id == user.id and await h.user(PHONE) is None


async def _true(value: bool) -> bool:
    return value


# --- wrong arguments --------------------------------------------------------------------------


async def test_a_wrong_argument_is_one_line_exit_2_and_changes_nothing(harness: Harness) -> None:
    h = harness
    await rich_user(h)
    before = await snapshot(h)
    bad = [
        ["set-mode", "hello", "pro"],
        ["set-mode", "+2250799999999", "admin"],
        ["set-mode", "+1", "child"],
        ["credit", PHONE, "abc"],
        ["credit", PHONE, "0"],
        ["credit", PHONE, "5", "--reason", "x" * 201],
        ["credit", "07 00 00 00 01", "5"],
        ["show"],
        ["forget", "12"],
        ["export", PHONE, "extra"],
        ["erase", PHONE],
    ]
    for args in bad:
        run = await users(h, *args)
        assert run.code == 2, (args, run)
        assert run.out == "" and run.err.startswith("error:") and run.err.count("\n") == 1, (args, run.err)
    assert await snapshot(h) == before


async def test_credit_refuses_an_amount_beyond_the_bound_and_cleans_the_reason(harness: Harness) -> None:
    from bot.console.credit import MAX_OPERATOR_CREDIT

    h = harness
    user = await h.make_user(PHONE)
    before = await snapshot(h)
    for amount in (str(MAX_OPERATOR_CREDIT + 1), f"-{MAX_OPERATOR_CREDIT + 1}", "2250700000001"):
        run = await users(h, "credit", PHONE, amount)
        assert run.code == 2 and "at most 100 000 credits" in run.err and run.out == "", (amount, run.err)
    # (A NUL cannot travel in a command line; escapes, bells and direction overrides can.)
    run = await users(h, "credit", PHONE, "5", "--reason", "\x1b\x07\u202e\u200f")  # nothing but controls
    assert run.code == 2 and "--reason must be 1 to 200 characters" in run.err
    assert await snapshot(h) == before  # nothing changed
    run = await users(h, "credit", PHONE, "5", "--reason", "bourse\x1b[31m rouge\x07\u202e fin")
    assert run.code == 0, run.err
    async with h.services.sessions() as db:
        note = await db.scalar(select(CreditEntry.note).where(CreditEntry.user_id == user.id,
                                                              CreditEntry.reason == "operator"))
    assert note == "bourse[31m rouge fin"

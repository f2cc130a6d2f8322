"""AIDE / MENU: every command findable. On WhatsApp a list-picker of at most 10 commands with their
descriptions (recorded by the fake Twilio, its limits held), a tap explaining its command with no
model call; « AIDE MOT »; SMS pages of at most two segments ending « AIDE 2 »; a parent's and a
guest's AIDE; and the handlers' keyword lists held against the catalogue, so that a new command
word with no help entry fails here."""

from __future__ import annotations

import importlib
import pkgutil
import re
import re._constants as sre_c
import re._parser as sre_p
from typing import Any

import pytest

import handlers
from bot.channel import formatting, keywords
from bot.channel.buttons import LIST_PICKER, Menu, content_kind, content_variables
from bot.channel.keywords import keyword
from handlers import help
from handlers.help_catalogue import AUDIENCES, CATALOGUE
from tests.support.pedagogy import PARENT, STUDENT, confirm, say

GUEST = "+2250700000003"


def tapped_reply_extra(item: dict[str, Any]) -> dict[str, str]:
    return {"ListId": item["id"], "ListTitle": item["item"], "MessageType": "interactive"}


def last_list(h: Any, phone: str) -> tuple[str, list[dict[str, Any]]]:
    """(body, items) of the last list-picker sent to `phone`."""
    sent = [m for m in h.twilio.to(phone) if m.get("ContentSid")]
    assert sent, h.twilio.bodies()
    [(kind, spec)] = sent[-1]["Rendered"].items()
    assert kind == LIST_PICKER
    return spec["body"], spec["items"]


async def tap(h: Any, phone: str, item: dict[str, Any]) -> list[str]:
    before = len(await h.texts_to(phone))
    status, _ = await h.inbound(phone, item["item"], extra=tapped_reply_extra(item))
    assert status == 200
    await h.settle()
    return (await h.texts_to(phone))[before:]


def within_limits(items: list[dict[str, Any]]) -> None:
    assert 1 <= len(items) <= 10
    assert all(len(i["item"]) <= 24 and 0 < len(i["description"]) <= 72 for i in items), items


# --- WhatsApp --------------------------------------------------------------------------------


async def test_aide_is_a_list_of_commands_and_a_tap_explains_one_without_the_model(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    [text] = await say(h, STUDENT, "AIDE")
    body, items = last_list(h, STUDENT)
    within_limits(items)
    assert text == body and "Deblo" in body and "AIDE STATUT" in body
    for word in help.words_offered("child", "fr", payments=False):  # the list refused, the text names all
        assert re.search(rf"(^|[\s,]){word}\b", body), word
    assert items[0]["item"] == "REVISION" and items[-1]["item"] == "Autres commandes"
    statut = next(i for i in items if i["item"] == "STATUT")
    assert statut["description"] == "où en est un long travail"
    [explained] = await tap(h, STUDENT, statut)
    assert explained.startswith("*STATUT* : où en est un long travail") and "Exemple : STATUT" in explained
    # « Autres commandes » opens the next list, and so on until every command was offered.
    seen = [i["item"] for i in items[:-1]]
    while items[-1]["item"] == "Autres commandes":
        await tap(h, STUDENT, items[-1])
        _, items = last_list(h, STUDENT)
        within_limits(items)
        seen += [i["item"] for i in items if i["item"] != "Autres commandes"]
    assert set(seen) == {c.item("fr") for c in help.entries_for("child", payments=False)} - {"AIDE", "MENU"}
    # A tapped item comes back with its title as the text: STOP's is not a bare STOP.
    [stop] = await tap(h, STUDENT, next(i for i in items if i["item"] == "STOP / START"))
    assert stop.startswith("*STOP* :") and "START" in stop
    user = await h.user(STUDENT)
    assert user is not None and not user.opted_out
    assert h.llm.requests == []


async def test_with_buttons_off_the_text_still_names_every_command(make_harness: Any) -> None:
    h = await make_harness(WHATSAPP_BUTTONS="false")
    await h.make_user(STUDENT, mode="child", language="en")
    [text] = await say(h, STUDENT, "HELP")
    assert h.twilio.contents_sent() == [] and "HELP STATUS" in text
    for word in help.words_offered("child", "en", payments=False):
        assert re.search(rf"(^|[\s,]){word}\b", text), word
    [explained] = await say(h, STUDENT, "HELP CANCEL")
    assert explained.startswith("*CANCEL*:") and h.llm.requests == []


async def test_a_forged_or_outdated_help_tap_is_told_to_ask_again(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    await say(h, STUDENT, "MENU")
    _, items = last_list(h, STUDENT)
    forged = {"item": "STATUT", "id": "help1-0123456789:3"}
    [reply] = await tap(h, STUDENT, forged)
    assert reply.startswith("Cette liste n'est plus à jour") and "AIDE" in reply
    # Another audience's list (a parent's) from a student: not this user's list.
    parent_page = help.list_pages("parent")[0]
    [reply] = await tap(h, STUDENT, {"item": "ENFANTS", "id": f"{parent_page.menu_id}:1"})
    assert "plus à jour" in reply
    [beyond] = await tap(h, STUDENT, {"item": "?", "id": items[0]["id"].rsplit(":", 1)[0] + ":11"})
    assert "plus à jour" in beyond
    assert h.llm.requests == []


async def test_aide_keeps_a_pending_quiz_and_its_typed_number(harness: Any) -> None:
    from tests.support.pedagogy import ask_quiz

    h = harness
    await h.make_user(STUDENT, mode="child")
    await ask_quiz(h)
    await say(h, STUDENT, "AIDE")
    [verdict] = await say(h, STUDENT, "2")
    assert verdict.startswith("✅")


async def test_aide_mot_explains_one_command_and_an_unknown_word_gets_the_nearest(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child")
    [statut] = await say(h, STUDENT, "AIDE STATUT")
    assert statut.startswith("*STATUT* :") and "Exemple : STATUT" in statut and "Aussi : STATUS" in statut
    [revision] = await say(h, STUDENT, "aide révision")
    assert revision.startswith("*REVISION* :") and "REVISION NON" in revision
    [solde] = await say(h, STUDENT, "Aide solde")  # another spelling finds its command
    assert solde.startswith("*CREDITS* :")
    [fait] = await say(h, STUDENT, "AIDE FAIT 2")
    assert fait.startswith("*FAIT* :")
    [unknown] = await say(h, STUDENT, "AIDE STATU")
    assert unknown.startswith("Je ne connais pas la commande « STATU »") and "STATUT" in unknown
    await h.make_user(GUEST, mode="child", language="en")
    [english] = await say(h, GUEST, "HELP STATUS")
    assert english.startswith("*STATUS*: where a long task stands") and "Example: STATUS" in english
    [nearest] = await say(h, GUEST, "help memry")
    assert nearest.startswith('I don\'t know the command "MEMRY"') and "MEMORY" in nearest
    assert h.llm.requests == []
    # A request for help in a sentence, or with a subject, is for the tutor, not a command.
    h.llm.push_text("Bien sûr, montre-moi l'exercice.")
    assert await say(h, STUDENT, "Aide moi à faire mes devoirs") == ["Bien sûr, montre-moi l'exercice."]
    for ask in ("Aide maths", "Aide moi", "aide stp !"):
        h.llm.push_text("Avec plaisir : sur quel chapitre ?")
        assert await say(h, STUDENT, ask) == ["Avec plaisir : sur quel chapitre ?"], ask


# --- SMS -------------------------------------------------------------------------------------


@pytest.mark.parametrize("language", ["fr", "en"])
async def test_sms_pages_stay_within_two_segments_and_end_with_the_next_page(harness: Any,
                                                                              language: str) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child", language=language, last_channel="sms")
    aide = "HELP" if language == "en" else "AIDE"
    texts: list[str] = []
    for number in range(1, 6):
        before = len(h.twilio.to(STUDENT))
        await h.inbound(STUDENT, aide if number == 1 else f"{aide} {number}", channel="sms")
        await h.settle()
        [sent] = h.twilio.to(STUDENT)[before:]
        assert sent["To"] == STUDENT and not sent.get("ContentSid")
        assert formatting.sms_segments(sent["Body"])[1] <= 2, sent["Body"]
        texts.append(sent["Body"])
        if not sent["Body"].endswith(f"{aide} {number + 1}: more" if language == "en" else
                                     f"{aide} {number + 1} : la suite"):
            break
    assert 2 <= len(texts) <= 3 and f"{aide} 2" in texts[0]
    everything = "\n".join(texts)
    for word in help.words_offered("child", language, payments=False):
        assert re.search(rf"(^|\n){word}\b", everything), word
    # MENU's first page (another head) is cut where AIDE's is: « AIDE 2 » goes on from it.
    [menu] = await say(h, STUDENT, "MENU", channel="sms")
    assert menu.split("\n")[1:] == texts[0].split("\n")[1:]
    assert h.llm.requests == []


# --- who sees what -----------------------------------------------------------------------------


async def test_a_parents_aide_shows_enfants_first(harness: Any) -> None:
    h = harness
    await h.make_user(STUDENT, mode="child", display_name="Awa")
    await say(h, STUDENT, f"PARENT {PARENT}")
    await confirm(h)
    parent = await h.user(PARENT)
    assert parent is not None and parent.role == "parent"
    [page] = await say(h, PARENT, "AIDE", channel="sms")
    assert page.split("\n")[1].startswith("ENFANTS") and "Profil" not in page
    await say(h, PARENT, "AIDE", channel="whatsapp")
    body, items = last_list(h, PARENT)
    within_limits(items)
    assert items[0]["item"] == "ENFANTS" and "Profil" not in body
    assert not {"REVISION", "CLASSE", "PARENT"} & {i["item"] for i in items}
    [explained] = await tap(h, PARENT, items[0])
    assert explained.startswith("*ENFANTS* : les progrès de votre enfant")
    assert h.llm.requests == []


async def test_a_guest_sees_the_profile_choice_and_what_a_guest_can_use(harness: Any) -> None:
    h = harness
    [menu] = await say(h, GUEST, "MENU")
    body, items = last_list(h, GUEST)
    within_limits(items)
    assert menu == body and "Profil : répondre 1 Élève, 2 Parent, 3 Pro" in body
    offered = {i["item"] for i in items}
    assert offered == {c.item("fr") for c in help.entries_for("guest", payments=False)} - {"AIDE", "MENU"}
    assert not {"REVISION", "TACHES", "ENFANTS", "STATUT"} & offered
    [done] = await say(h, GUEST, "3")  # the profile choice is still the typed number
    assert "Parfait" in done


# --- the catalogue against the handlers ------------------------------------------------------


# Words that answer a question (OUI 4821, REVISION NON, EMAIL SUPPRIMER) or are a menu's number, not
# commands of their own; each is explained under its command.
NOT_COMMANDS = {("handlers.account", "YES_WORDS"), ("handlers.account", "NO_WORDS"),
                ("handlers.parents", "YES_WORDS"), ("handlers.parents", "NO_WORDS"),
                ("handlers.email_commands", "_REMOVE_WORDS"), ("handlers.parents", "_ANSWER"),
                ("handlers.credits_choice", "_NUMBER"), ("handlers.buttons", "_ITEM_TITLE"),
                ("handlers.help", "_PAGE")}


def _alternatives(op: Any, av: Any) -> set[str]:
    """Every string a small regular expression item matches (white space as one space)."""
    if op is sre_c.LITERAL:
        return {chr(av)}
    if op is sre_c.IN:
        assert all(o in (sre_c.LITERAL, sre_c.CATEGORY) for o, _ in av), av
        return {" " if o is sre_c.CATEGORY else chr(a) for o, a in av}
    if op is sre_c.CATEGORY:
        return {" "}
    if op is sre_c.BRANCH:
        return set().union(*(_expand(list(branch)) for branch in av[1]))
    if op is sre_c.SUBPATTERN:
        return _expand(list(av[-1]))
    if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT):
        low, _, sub = av
        inner = _expand(list(sub))
        return inner | {""} if low == 0 else inner
    raise AssertionError(f"not a command word: {op} {av}")


def _expand(items: list[tuple[Any, Any]]) -> set[str]:
    out = {""}
    for op, av in items:
        out = {a + b for a in out for b in _alternatives(op, av)}
    return out


def _is_space(op: Any, av: Any) -> bool:
    return op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT) and _expand(list(av[2])) == {" "}


def pattern_words(pattern: re.Pattern[str]) -> set[str]:
    """The command words a handler's pattern starts with: what comes before its first repeat."""
    items = [(op, av) for op, av in sre_p.parse(pattern.pattern, pattern.flags) if op is not sre_c.AT]
    while items and _is_space(*items[0]):
        items.pop(0)
    lead = []
    for op, av in items:  # up to the first repeat: the white space or the argument after the word
        if op not in (sre_c.LITERAL, sre_c.IN, sre_c.BRANCH, sre_c.SUBPATTERN):
            break
        lead.append((op, av))
    return {keyword(word) for word in _expand(lead)}


def handler_words() -> dict[str, set[str]]:
    """Every command word of the handlers (and of bot/channel/keywords.py), by where it is held."""
    found: dict[str, set[str]] = {
        "bot.channel.keywords": {keyword(w) for w in keywords.STOP_WORDS | keywords.START_WORDS}}
    for info in pkgutil.walk_packages(handlers.__path__, "handlers."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (info.name, name) in NOT_COMMANDS:
                continue
            if name.endswith("WORDS") and isinstance(value, frozenset | set | tuple) and \
                    all(isinstance(w, str) for w in value):
                found[f"{info.name}.{name}"] = {keyword(w) for w in value}
            elif isinstance(value, re.Pattern) and value.pattern.startswith("^"):
                found[f"{info.name}.{name}"] = pattern_words(value)
    return found


def test_every_command_word_the_handlers_know_has_its_help_entry() -> None:
    found = handler_words()
    # The pattern reader reads what it should (a regression there would make this test blind).
    assert found["handlers.timezone._COMMAND"] == {"FUSEAU", "FUSEAU HORAIRE", "TIMEZONE", "TIME ZONE"}
    assert {"E-MAIL", "EMAIL", "COURRIEL", "CODE"} == found["handlers.email_commands._CODE"]
    assert found["handlers.parents._COMMAND"] == {"PARENT"}
    spellings = {word: command.name for command in CATALOGUE for word in command.words()}
    missing = {f"{where}: {word}" for where, words in found.items() for word in words
               if word not in spellings}
    assert not missing, f"command words with no entry in handlers/help_catalogue.py: {sorted(missing)}"
    # And the other way: what AIDE offers is a word some handler takes.
    known = set().union(*found.values())
    assert set(spellings) <= known, sorted(set(spellings) - known)
    for command in CATALOGUE:
        assert help.find(command.example.fr) is command and help.find(command.example.en) is command


@pytest.mark.parametrize("who", AUDIENCES)
def test_every_command_of_an_audience_is_on_its_sms_pages_and_its_lists(who: str) -> None:
    for language in ("fr", "en"):
        words = help.words_offered(who, language)
        pages = help.sms_pages(["Deblo t'aide à l'école et au travail. Pose ta question !",
                                "Profil : répondre 1 Élève, 2 Parent, 3 Pro (+50 crédits)"], who, language)
        assert all(formatting.sms_segments(formatting.to_sms(page))[1] <= 2 for page in pages)
        assert len(pages) <= 3
        lines = [line for page in pages for line in page.split("\n")]
        assert all(any(line.startswith(f"{word} ") or line.startswith(f"{word}:") for line in lines)
                   for word in words if word not in ("AIDE", "HELP")), (who, language, lines)
        listed = [c.word.get(language) for page in help.list_pages(who) for c in page.commands]
        assert sorted(listed) == sorted(set(words) - {"AIDE", "HELP", "MENU"})
        assert all(len(page.commands) + page.more <= 10 for page in help.list_pages(who))
    assert {c.name for c in CATALOGUE} == {c.name for w in AUDIENCES for c in help.entries_for(w)}
    assert all(len(c.summary.fr) <= 72 and len(c.summary.en) <= 72 for c in CATALOGUE)


def test_a_list_item_carries_its_own_description() -> None:
    menu = Menu(menu_id="help1-0123456789", body="Aide", options=("STATUT", "ANNULER"),
                descriptions=("où en est un long travail", "arrêter le travail en cours"))
    assert content_kind(menu) == LIST_PICKER  # two short labels, but descriptions need a list
    values = content_variables(LIST_PICKER, menu, "Aide")
    assert [values["3"], values["4"], values["5"]] == ["STATUT", "help1-0123456789:1",
                                                        "où en est un long travail"]
    quiz = Menu(menu_id="q", body="Quiz", options=("Vrai", "Faux"))
    assert content_kind(quiz) != LIST_PICKER  # menus without descriptions are as before


@pytest.mark.parametrize(("provider", "offered"), [("", False), ("local", True)])
async def test_buying_is_offered_only_where_payments_are_configured(make_harness: Any, provider: str,
                                                                    offered: bool) -> None:
    """No PAYMENT_PROVIDER: MENU and AIDE never name ACHETER; with one, they do."""
    h = await make_harness(PAYMENT_PROVIDER=provider, PAYMENT_SECRET="local-secret" if provider else "")
    await h.make_user(STUDENT, mode="child")
    [text] = await say(h, STUDENT, "AIDE")
    assert bool(re.search(r"(^|[\s,])ACHETER\b", text)) == offered, text
    pages = []
    for n in (1, 2, 3):
        [page] = await say(h, STUDENT, f"AIDE {n}", channel="sms")
        pages.append(page)
    assert ("ACHETER" in "\n".join(pages)) == offered, pages

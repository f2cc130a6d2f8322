"""AIDE / HELP and MENU: every command of the catalogue (handlers/help_catalogue.py), findable.

On WhatsApp the commands go as a `twilio/list-picker` (bot.channel.buttons): at most 10 items,
each a command and its one-line description, the last one « Autres commandes » when the audience
has more, and a short text that names every command, so that the list refused (or buttons off)
still leaves each one findable by its word. The text is not numbered: the typed way is the
command itself or « AIDE MOT », and no pending menu is set, so a quiz or a review question asked
before AIDE keeps its « 2 ». A list's id is `help<page>-<digest of its commands>`: a tap is
mapped back by rebuilding the user's own pages (no state to lose), and an id that matches none
of them (an older catalogue, another audience's list, a forged payload) is told to ask again.

On SMS each page stays within two segments as the carrier counts them once the text is made
GSM-7 (bot.channel.formatting), and ends with « AIDE 2 » (« AIDE 3 »…) while more follow.
« AIDE MOT » explains one command (what it does, its forms, an example); an unknown word gets the
nearest commands. Nothing here calls the model.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass

from bot.channel import buttons, formatting
from bot.channel.context import Incoming
from bot.channel.keywords import keyword
from bot.texts import fr_en
from handlers.help_catalogue import CATALOGUE, Command

__all__ = ["HELP_WORDS", "MENU_WORDS", "ListPage", "answer_tap", "audience", "entries_for", "explain", "find",
           "is_help_menu", "is_request", "list_pages", "lookup", "show_help", "sms_pages", "to_audience",
           "words_offered"]

HELP_WORDS = frozenset({"AIDE", "HELP"})
MENU_WORDS = frozenset({"MENU"})
SMS_SEGMENTS = 2
_MENU_PREFIX = "help"
_PAGE = re.compile(r"^[1-9][0-9]?$")
# Who is told « vous »: a parent or a pro; a student (and a guest, most often a pupil) « tu ».
FORMAL = frozenset({"parent", "pro"})


def audience(msg: Incoming) -> str:
    """guest, child (a student), parent or pro: whom the catalogue's entries are offered to."""
    mode = msg.user.mode or "guest"
    if mode == "guest":
        return "guest"
    if msg.user.role == "parent":
        return "parent"
    return "pro" if mode == "pro" else "child"


def to_audience(msg: Incoming, tu: str, vous: str, en: str) -> str:
    """The French text in the register of the user's audience (one register per audience), or the
    English one."""
    return msg.t(vous if audience(msg) in FORMAL else tu, en)


# Offered only where payments are configured (PAYMENT_PROVIDER): a list never names a way of paying
# that the deployment does not have.
PAYING = frozenset({"ACHETER"})


def entries_for(who: str, *, payments: bool = True) -> list[Command]:
    return [command for command in CATALOGUE if who in command.audiences
            and (payments or command.name not in PAYING)]


def words_offered(who: str, language: str, *, payments: bool = True) -> list[str]:
    return [command.word.get(language) for command in entries_for(who, payments=payments)]


def _payments(msg: Incoming) -> bool:
    return bool(msg.services.settings.payment_provider)


def find(word: str) -> Command | None:
    """The command `word` names (any accepted spelling, or its first word: « FAIT 2 »), or None."""
    word = keyword(word)
    # The first word alone for a short form or a number after it (« PARENT +225 07… »): « AIDE
    # CLASSE DE MOTS » is a question.
    first, _, after = word.partition(" ")
    short = len(word.split(" ")) <= 2 or after[:1] in "+0123456789"
    for candidate in (word, first) if short else (word,):
        for command in CATALOGUE:
            if candidate in command.words():
                return command
    return None


# How close a mistyped word must be to a command's spelling to be taken for it (STATU, REVISON,
# CLASE, LANG are; MATHS, DEVOIRS, ANGLAIS, MOI are not).
_CLOSE = 0.7
# « Aide stp », « help me »: asking the tutor, however close the word is to a command (STP, STOP).
_NOT_COMMANDS = frozenset({"MOI", "ME", "NOUS", "US", "SVP", "STP", "SVPP", "PLEASE", "PLZ", "PLS", "VITE",
                           "URGENT"})


def _spellings() -> dict[str, Command]:
    return {spelling: command for command in CATALOGUE for spelling in command.words()}


def is_request(rest: str) -> bool:
    """Whether what follows AIDE / MENU asks for the help (nothing, a page, a command, or one word
    close to a command's), rather than the tutor's help (« aide maths », « aide moi à faire… »)."""
    rest = keyword(rest)
    if not rest or _PAGE.match(rest) or find(rest) is not None:
        return True
    if " " in rest or rest in _NOT_COMMANDS:
        return False
    return bool(difflib.get_close_matches(rest, list(_spellings()), n=1, cutoff=_CLOSE))


def lookup(word: str, language: str) -> str:
    """« AIDE MOT »: the command explained, or the nearest ones when the word names none."""
    command = find(word)
    if command is not None:
        return explain(command, language)
    spellings = _spellings()
    close = difflib.get_close_matches(keyword(word), list(spellings), n=6, cutoff=_CLOSE)
    if not close:
        close = difflib.get_close_matches(keyword(word), list(spellings), n=6, cutoff=0.0)
    nearest = list(dict.fromkeys(spellings[spelling].word.get(language) for spelling in close))[:3]
    shown = word.strip()[:30]
    tell = fr_en(language, "AIDE", "HELP")
    if language == "en":
        return (f"I don't know the command \"{shown}\". The nearest: {', '.join(nearest)}. "
                f"Send {tell} for every command.")
    return (f"Je ne connais pas la commande « {shown} ». Les plus proches : {', '.join(nearest)}. "
            f"{tell} : toutes les commandes.")


def explain(command: Command, language: str) -> str:
    word = command.word.get(language)
    other = [w for w in command.words() if w != word]
    lines = [fr_en(language, f"**{word}** : {command.summary.get(language)}",
                   f"**{word}**: {command.summary.get(language)}"), command.detail.get(language)]
    lines.append(fr_en(language, "Exemple : ", "Example: ") + command.example.get(language))
    if other:
        lines.append(fr_en(language, "Aussi : ", "Also: ") + ", ".join(other))
    return "\n".join(lines)


# --- SMS pages ---------------------------------------------------------------------------------


def _fits(text: str) -> bool:
    return formatting.sms_segments(formatting.to_sms(text))[1] <= SMS_SEGMENTS


def _line(command: Command, language: str) -> str:
    sep = fr_en(language, " : ", ": ")
    return f"{command.word.get(language)}{sep}{command.summary.get(language)}"


def _more(number: int, language: str) -> str:
    return fr_en(language, f"AIDE {number} : la suite", f"HELP {number}: more")


def sms_pages(head: list[str], who: str, language: str, cut_with: list[str] | None = None, *,
              payments: bool = True) -> list[str]:
    """The text pages of AIDE, each within two SMS segments, each but the last ending « AIDE n ».
    The pages are cut as if page 1 began with `cut_with` (no shorter than `head`), so that MENU and
    AIDE, whose heads differ, have the same « AIDE 2 »."""
    reserve = cut_with if cut_with is not None else head
    last = fr_en(language, "AIDE mot : expliquer une commande (AIDE STATUT)",
                 "HELP word: explain one (HELP STATUS)")
    lines = [_line(c, language) for c in entries_for(who, payments=payments) if c.name != "AIDE"] + [last]
    pages: list[list[str]] = [list(reserve)]
    for line in lines:
        page = pages[-1]
        if page and not _fits("\n".join([*page, line, _more(len(pages) + 1, language)])):
            pages.append([])
        pages[-1].append(line)
    pages[0][: len(reserve)] = head
    texts = ["\n".join(page) for page in pages]
    return [f"{text}\n{_more(n + 1, language)}" if n < len(texts) else text
            for n, text in enumerate(texts, start=1)]


# --- WhatsApp lists ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ListPage:
    menu_id: str
    commands: tuple[Command, ...]
    more: bool  # the last item opens the next page


def list_pages(who: str, *, payments: bool = True) -> list[ListPage]:
    """The audience's commands in lists of at most 10 items, the 10th « more » when others follow."""
    left = [c for c in entries_for(who, payments=payments) if c.name not in ("AIDE", "MENU")]
    chunks: list[list[Command]] = []
    while left:
        take = buttons.LIST_MAX if len(left) <= buttons.LIST_MAX else buttons.LIST_MAX - 1
        chunks.append(left[:take])
        left = left[take:]
    pages = []
    for n, chunk in enumerate(chunks, start=1):
        more = n < len(chunks)
        digest = hashlib.sha256(" ".join([c.name for c in chunk] + ["+"] * more).encode()).hexdigest()[:10]
        pages.append(ListPage(f"{_MENU_PREFIX}{n}-{digest}", tuple(chunk), more))
    return pages


def is_help_menu(menu_id: str) -> bool:
    return re.fullmatch(rf"{_MENU_PREFIX}[1-9][0-9]?-[0-9a-f]{{10}}", menu_id) is not None


def _list_menu(page: ListPage, number: int, body: str, language: str) -> buttons.Menu:
    labels = [c.item(language) for c in page.commands]
    descriptions = [c.summary.get(language) for c in page.commands]
    if page.more:
        labels.append(fr_en(language, "Autres commandes", "More commands"))
        descriptions.append(_more(number + 1, language))
    return buttons.Menu(menu_id=page.menu_id, body=body, options=tuple(labels), language=language,
                        descriptions=tuple(descriptions))


def _whatsapp_body(head: list[str], who: str, language: str, payments: bool) -> str:
    words = ", ".join(words_offered(who, language, payments=payments))
    return "\n".join([*head,
                      fr_en(language, "« Choisir » : chacune expliquée ; AIDE suivi d'un mot : une seule "
                            "(AIDE STATUT).",
                            "Tap Choose to see each one explained, or send HELP and a word (HELP STATUS)."),
                      fr_en(language, "Toutes les commandes : ", "All commands: ") + words])


# --- replies -----------------------------------------------------------------------------------


async def _send_page(msg: Incoming, head: list[str], number: int, cut_with: list[str] | None = None) -> None:
    """Page `number` (the last one past the end). The head is shown on page 1 only, but the SMS
    pages are always cut with it, so that « AIDE 2 » goes on where page 1 stopped."""
    who, language, payments = audience(msg), msg.lang, _payments(msg)
    if msg.channel == "sms":
        pages = sms_pages(head, who, language, cut_with, payments=payments)
        await msg.reply(pages[min(number, len(pages)) - 1])
        return
    lists = list_pages(who, payments=payments)
    page = lists[min(number, len(lists)) - 1]
    body = _whatsapp_body(head, who, language, payments) if number == 1 else fr_en(
        language, "Autres commandes :", "More commands:")
    await msg.reply(menu=_list_menu(page, min(number, len(lists)), body, language))


async def show_help(msg: Incoming, head: list[str], rest: str = "",
                    cut_with: list[str] | None = None) -> None:
    """AIDE (page 1), « AIDE 2 » (a later page) or « AIDE MOT » (one command explained); SMS pages
    are cut with `cut_with` in place of the head (see `sms_pages`)."""
    rest = rest.strip()
    if rest and not _PAGE.match(rest):
        await msg.reply(lookup(rest, msg.lang))
        return
    await _send_page(msg, head, int(rest or "1"), cut_with)


async def answer_tap(msg: Incoming, menu_id: str, number: int) -> None:
    """A tap on an item of a help list: the command explained, or the next list."""
    for n, page in enumerate(list_pages(audience(msg), payments=_payments(msg)), start=1):
        if page.menu_id != menu_id:
            continue
        if number <= len(page.commands):
            await msg.reply(explain(page.commands[number - 1], msg.lang))
            return
        if page.more and number == len(page.commands) + 1:
            await _send_page(msg, [], n + 1)  # the lists do not depend on the head
            return
    await msg.reply(msg.t("Cette liste n'est plus à jour. AIDE pour la revoir, ou AIDE suivi d'une "
                          "commande (AIDE STATUT).",
                          "This list is out of date. Send HELP to see it again, or HELP and a command "
                          "(HELP STATUS)."))

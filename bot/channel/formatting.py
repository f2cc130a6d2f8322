"""Text for each channel: WhatsApp's own Markdown, plain GSM-7 text for SMS, and splitting.

The model writes ordinary Markdown. WhatsApp shows `*bold*`, `_italic_`, `~strike~` and code; it
has no headings, tables or link syntax. SMS shows plain text, and one character outside GSM-7
switches the whole message to UCS-2 (70 characters a segment instead of 160): French accents
such as â ê î ô û ç are outside it, é è ù à É are inside. An SMS goes with its accents (UCS-2) when
that costs no more segments than its GSM-7 transliteration (a short reply), else transliterated.
LaTeX becomes readable maths on both (`bot/channel/maths.py`): x², √2, ≤ on WhatsApp, and on SMS
the GSM-7 spellings x^2, sqrt(2), <= that keep a message out of UCS-2.
"""

from __future__ import annotations

import re

from unidecode import unidecode

from bot.channel.maths import gsm7_maths, latex_to_text

WHATSAPP_MAX = 1600  # Twilio's Body limit (error 21617)
# A media message's body is shown as the file's caption: WhatsApp takes at most 1,024 characters
# (Meta's image/document messages: "caption … Maximum 1024 characters").
WHATSAPP_CAPTION_MAX = 1024
# Two GSM-7 segments (2 x 153): Twilio recommends SMS of at most 320 characters.
SMS_PART_GSM = 306
SMS_PART_UCS2 = 134  # two UCS-2 segments (2 x 67), for text that cannot be made GSM-7

GSM7_BASIC = frozenset(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?"
    "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
)
GSM7_EXTENSION = frozenset("^{}\\[~]|€\f")

# Look-alikes replaced before the generic transliteration, chosen to read naturally in French.
_SMS_REPLACEMENTS = {
    "«": '"', "»": '"', "“": '"', "”": '"', "„": '"', "‟": '"',
    "‘": "'", "’": "'", "‚": "'", "‛": "'", "´": "'", "`": "'",
    "–": "-", "—": "-", "‑": "-", "−": "-", "…": "...", "•": "-", "·": ".",
    "\u00a0": " ", "\u202f": " ", "\u2009": " ", "\u200b": "", "\t": " ",
    "œ": "oe", "Œ": "OE", "æ": "ae",
    "À": "A", "Â": "A", "È": "E", "Ê": "E", "Ë": "E", "Î": "I", "Ï": "I", "Ô": "O", "Û": "U",
    "Ù": "U", "Ÿ": "Y", "ç": "c",
}


# --- WhatsApp ------------------------------------------------------------------------------

_FENCE = re.compile(r"```.*?```", re.S)
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_LINK = re.compile(r"\[([^\]\n]+)\]\((\S+?)\)")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC_STAR = re.compile(r"(?<![*\w])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![*\w])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_BULLET = re.compile(r"^(\s*)[-*+]\s+", re.M)
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$", re.M)
_IMAGE = re.compile(r"!\[([^\]\n]*)\]\((\S+?)\)")


def _protect_code(text: str) -> tuple[str, list[str]]:
    blocks: list[str] = []

    def keep(m: re.Match[str]) -> str:
        blocks.append(m.group(0))
        return f"\x00{len(blocks) - 1}\x00"

    return _FENCE.sub(keep, text), blocks


def _restore_code(text: str, blocks: list[str], plain: bool) -> str:
    def put(m: re.Match[str]) -> str:
        block = blocks[int(m.group(1))]
        inner = re.sub(r"^```[\w+-]*\n", "", block[:-3] if block.endswith("```") else block)
        inner = inner.removeprefix("```").strip("\n")
        return inner if plain else f"```{inner}```"

    return re.sub(r"\x00(\d+)\x00", put, text)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _tables_to_lines(lines: list[str], bold: str) -> list[str]:
    """A Markdown table becomes one readable line per row: `Header: value, Header: value`."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        if "|" in lines[i] and i + 1 < len(lines) and _TABLE_SEP.match(lines[i + 1]):
            headers = _cells(lines[i])
            i += 2
            while i < len(lines) and "|" in lines[i] and lines[i].strip():
                row = _cells(lines[i])
                if len(headers) == len(row) and len(row) > 1:
                    first = f"{bold}{row[0]}{bold}" if row[0] else ""
                    rest = ", ".join(f"{h}: {v}" for h, v in zip(headers[1:], row[1:], strict=True) if v)
                    out.append(f"- {first}: {rest}")
                else:
                    out.append("- " + ", ".join(c for c in row if c))
                i += 1
            continue
        out.append(lines[i])
        i += 1
    return out


def _link_text(m: re.Match[str], template: str) -> str:
    label, url = m.group(1), m.group(2)
    return url if label == url else template.format(label=label, url=url)


_B = "\x01"  # stands for WhatsApp's bold star until the italic stars have been converted


def to_whatsapp(markdown: str) -> str:
    text, blocks = _protect_code(markdown.replace("\r\n", "\n"))
    text = latex_to_text(text)
    text = _IMAGE.sub(lambda m: f"{m.group(1)} {m.group(2)}".strip(), text)
    text = _LINK.sub(lambda m: _link_text(m, "{label} ({url})"), text)
    text = _ITALIC_STAR.sub(r"_\1_", text)
    text = _BOLD.sub(_B + r"\2" + _B, text)
    lines = _tables_to_lines(text.split("\n"), _B)
    converted = []
    for line in lines:
        heading = _HEADING.match(line)
        converted.append(f"{_B}{heading.group(1).replace(_B, '')}{_B}" if heading else line)
    text = "\n".join(converted)
    text = _RULE.sub("", text)
    text = _BULLET.sub(lambda m: f"{m.group(1)}• ", text)
    text = _STRIKE.sub(r"~\1~", text)
    text = re.sub(r"\n{3,}", "\n\n", text).replace(_B, "*")
    return _restore_code(text, blocks, plain=False).strip()


# --- SMS -----------------------------------------------------------------------------------


def to_plain(markdown: str) -> str:
    """Markdown without its markup: what SMS (and logs) show."""
    text, blocks = _protect_code(markdown.replace("\r\n", "\n"))
    text = latex_to_text(text)
    text = _IMAGE.sub(lambda m: f"{m.group(1)} {m.group(2)}".strip(), text)
    text = _LINK.sub(lambda m: _link_text(m, "{label}: {url}"), text)
    lines = _tables_to_lines(text.split("\n"), "")
    out = []
    for line in lines:
        heading = _HEADING.match(line)
        out.append(heading.group(1) if heading else line)
    text = "\n".join(out)
    text = _RULE.sub("", text)
    text = _BULLET.sub(lambda m: f"{m.group(1)}- ", text)
    text = _BOLD.sub(r"\2", text)
    text = _ITALIC_STAR.sub(r"\1", text)
    text = re.sub(r"(?<![\w])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w])", r"\1", text)
    text = _STRIKE.sub(r"\1", text)
    text = re.sub(r"`([^`\n]+)`", r"\1", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return _restore_code(text, blocks, plain=True).strip()


def is_gsm7(text: str) -> bool:
    return all(ch in GSM7_BASIC or ch in GSM7_EXTENSION for ch in text)


def to_gsm7(text: str) -> str:
    """Transliterates what GSM-7 lacks, keeping the accents it has (é è ù à É Ç…)."""
    text = gsm7_maths(text)
    text = re.sub(r"«\s*", '"', re.sub(r"\s*»", '"', text))
    out: list[str] = []
    dropped_at_start = False  # an emoji that opened a line (« 🔗 En direct ») leaves no space behind
    for ch in text:
        line_start = not out or out[-1].endswith("\n")
        if ch == " " and dropped_at_start:
            continue
        dropped_at_start = False
        if ch in GSM7_BASIC or ch in GSM7_EXTENSION:
            out.append(ch)
        elif ch in _SMS_REPLACEMENTS:
            out.append(_SMS_REPLACEMENTS[ch])
        else:
            kept = "".join(c for c in unidecode(ch) if c in GSM7_BASIC or c in GSM7_EXTENSION)
            dropped_at_start = line_start and not kept
            out.append(kept)
    return re.sub(r"[ ]{2,}", " ", "".join(out))


def to_sms(markdown: str) -> str:
    """SMS text chosen by cost: as written (UCS-2, « tâches », « prêt », x²) when that takes no more
    segments than its GSM-7 transliteration (« taches », « pret », x^2), else transliterated. The
    segments are counted over the parts the send path cuts the text into."""
    plain = to_plain(markdown)
    gsm = to_gsm7(plain)
    if gsm == plain:
        return gsm
    # Never more messages either: a page of AIDE or a summary arrives as one SMS, not two.
    cheaper = sms_cost(plain) <= sms_cost(gsm) and len(sms_parts(plain)) <= len(sms_parts(gsm))
    return plain if cheaper else gsm


def sms_cost(text: str) -> int:
    """Segments billed for `text` sent as SMS: the sum over the parts `sms_parts` cuts it into."""
    return sum(sms_segments(part)[1] for part in sms_parts(text))


def sms_segments(text: str) -> tuple[str, int]:
    """(encoding, number of segments) as a carrier counts them."""
    if is_gsm7(text):
        units = sum(2 if ch in GSM7_EXTENSION else 1 for ch in text)
        if units <= 160:
            return "GSM-7", 1
        return "GSM-7", -(-units // 153)
    units = sum(2 if ord(ch) > 0xFFFF else 1 for ch in text)
    if units <= 70:
        return "UCS-2", 1
    return "UCS-2", -(-units // 67)


# --- Splitting -----------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?…:;])\s+")


def _hard_split(text: str, limit: int) -> list[str]:
    parts: list[str] = []
    current = ""
    for word in text.split(" "):
        while len(word) > limit:
            if current:
                parts.append(current)
                current = ""
            parts.append(word[:limit])
            word = word[limit:]
        candidate = f"{current} {word}" if current else word
        if len(candidate) > limit:
            parts.append(current)
            current = word
        else:
            current = candidate
    if current:
        parts.append(current)
    return parts


def _pieces(paragraph: str, limit: int) -> list[tuple[str, str]]:
    """(separator before, text) pieces of one paragraph, each within `limit`."""
    out: list[tuple[str, str]] = []
    for n, line in enumerate(paragraph.split("\n")):
        sep = "\n\n" if n == 0 else "\n"
        if len(line) <= limit:
            out.append((sep, line))
            continue
        for sentence in _SENTENCE_END.split(line):
            for piece in [sentence] if len(sentence) <= limit else _hard_split(sentence, limit):
                out.append((sep, piece))
                sep = " "
    return out


def split_text(text: str, limit: int = WHATSAPP_MAX) -> list[str]:
    """Parts of at most `limit` characters, cut between paragraphs, else lines, else sentences."""
    text = text.strip()
    if len(text) <= limit:
        return [text] if text else []
    parts: list[str] = []
    current = ""
    for paragraph in re.split(r"\n\s*\n", text):
        if not paragraph.strip():
            continue
        for sep, piece in _pieces(paragraph.strip("\n"), limit):
            candidate = f"{current}{sep}{piece}" if current else piece
            if len(candidate) <= limit:
                current = candidate
            else:
                if current.strip():
                    parts.append(current.strip())
                current = piece
    if current.strip():
        parts.append(current.strip())
    return parts


def sms_parts(text: str) -> list[str]:
    """SMS text split so that each part costs at most two segments."""
    limit = SMS_PART_GSM if is_gsm7(text) else SMS_PART_UCS2
    return split_text(text, limit)


def whatsapp_parts(text: str) -> list[str]:
    return split_text(text, WHATSAPP_MAX)

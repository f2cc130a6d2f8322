"""The progress page over HTTP: one student's numbers in their language, charts as inline SVG with
their tables, escaped labels, no phone number, no outside resource and nothing cached; a tampered,
borrowed or expired link gets 403 and a student who is gone 404, with none of their data."""

from __future__ import annotations

import re
from datetime import timedelta
from html.parser import HTMLParser
from typing import Any

from bot.accounts import forget_number
from bot.channel.links import progress_signature
from bot.web.render import PAGE_HEADERS
from tests.support.pedagogy import OTHER, STUDENT
from tests.support.progress import HOSTILE, progress_student


def _path(h: Any, student_id: int) -> str:
    sig = progress_signature(h.settings, student_id, now=h.clock().timestamp())
    return f"/progress/{student_id}?sig={sig}"


class _Tables(HTMLParser):
    """Every table's cells, row by row (text only), and the tags the page holds."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th") and self.rows:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _read(body: bytes) -> tuple[str, _Tables]:
    page = body.decode()
    parsed = _Tables()
    parsed.feed(page)
    return page, parsed


async def test_the_page_shows_one_student_in_their_language(harness: Any) -> None:
    h = harness
    awa = await progress_student(h, STUDENT)
    await progress_student(h, OTHER, name="Koffi Yao")  # another student's rows stay off the page
    status, headers, body = await h.get(_path(h, awa.id))
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    for name, value in PAGE_HEADERS.items():
        assert headers[name] == value, name  # CSP: default-src 'none'; Cache-Control: no-store
    page, parsed = _read(body)
    assert '<html lang="fr">' in page and "<h1>Progrès de Awa Kouassi</h1>" in page
    assert "Koffi" not in page and STUDENT not in page and STUDENT[1:] not in page  # no phone number
    assert "<script" not in page and HOSTILE not in page  # the model's label is text, escaped
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; $x^2$" in page
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", page)  # nothing from elsewhere
    rows = parsed.rows
    assert ["Maths", "25", "100 %", "7/7"] in rows  # checked answers only; the last 7 days
    assert ["Français", "13", "0 %", "0/2"] in rows
    assert ["les fractions", "97 % maîtrisé", "11/12"] in rows
    assert ["géométrie : théorème de Thalès", "20 % à revoir", "2/6"] in rows
    assert ["accords du participe passé", "62 % en cours", "6/9"] in rows
    weeks = [r for r in rows if len(r) == 4 and re.fullmatch(r"\d+/\d\d", r[0])]
    assert [w[1:] for w in weeks] == [["7", "2", "9"], ["1", "0", "1"], ["5", "5", "10"], ["6", "3", "9"],
                                      ["0", "0", "0"], ["4", "2", "6"], ["2", "1", "3"], ["0", "0", "0"]]
    assert "Et 3 exercices déclarés sans vérification, comptés à part." in page
    assert "1 question à revoir : REVISION, envoyé à Deblo, les propose." in page
    svgs = [attrs for tag, attrs in parsed.tags if tag == "svg"]
    labels = [a.get("aria-label") for a in svgs]
    assert labels == ["Maîtrise par compétence", "Réponses vérifiées, 8 semaines"]
    assert all(a.get("role") == "img" for a in svgs)
    ids = [attrs["id"] for _, attrs in parsed.tags if attrs.get("id")]
    assert len(ids) == len(set(ids))  # the two SVGs' ids do not collide

    fatou = await progress_student(h, "+2250700000004", name=None, language="en")
    status, _, body = await h.get(_path(h, fatou.id))
    page, parsed = _read(body)
    assert status == 200 and '<html lang="en">' in page and "<h1>Student&#39;s progress</h1>" in page
    assert ["fractions" in " ".join(r) for r in parsed.rows].count(True) == 1
    assert ["les fractions", "97 % mastered", "11/12"] in parsed.rows
    assert "1 question to review: send REVIEW to Deblo." in page


async def test_a_bad_borrowed_or_expired_link_shows_no_data(harness: Any) -> None:
    h = harness
    awa = await progress_student(h, STUDENT)
    koffi = await progress_student(h, OTHER, name="Koffi Yao")
    good = _path(h, awa.id)
    sig = good.split("sig=")[1]
    expires, mac = sig.split(".")
    bad = {
        "tampered mac": f"/progress/{awa.id}?sig={expires}.{mac[::-1]}",
        "later expiry": f"/progress/{awa.id}?sig={int(expires) + 1}.{mac}",
        "another student's id": f"/progress/{koffi.id}?sig={sig}",
        "no sig": f"/progress/{awa.id}",
        "garbage": f"/progress/{awa.id}?sig=%00%FF..",
    }
    for what, path in bad.items():
        status, headers, body = await h.get(path)
        # A NUL or a byte that is no UTF-8 is refused before any page: 400 (bot.channel.malformed).
        assert status == (400 if what == "garbage" else 403), what
        assert status == 400 or headers["Cache-Control"] == "no-store"
        text = body.decode()
        assert "Awa" not in text and "Koffi" not in text and "fractions" not in text
    status, _, _ = await h.get(f"/progress/0{awa.id}?sig={sig}")
    assert status == 404  # another spelling of the id matches no route
    assert (await h.get(good))[0] == 200
    h.clock.now += timedelta(seconds=h.settings.learning.progress_link_ttl_s + 1)
    status, _, body = await h.get(good)
    assert status == 403 and "expiré" in body.decode() and "Awa" not in body.decode()
    # A student erased (users forget) while their link is still valid: 404, nothing of them.
    fresh = _path(h, awa.id)
    await forget_number(h.services, STUDENT)
    status, _, body = await h.get(fresh)
    assert status == 404 and "Awa" not in body.decode()

"""A teacher's questions sent from the class page: a multipart form behind the dashboard's hook
(its CSRF token or 403, another class 404), checked whole (the problems by line, nothing stored)
or added (a file again adds nothing), the file's size capped and the sends per operator throttled."""

from __future__ import annotations

from sqlalchemy import func, select

from bot.storage.models import ClassItem
from bot.web.admin.throttle import ACTION_LIMITS
from tests.support.admin import logged_in, make_cohort, make_operator
from tests.support.harness import Harness

GOOD = ("Question;Choix 1;Choix 2;Choix 3;Bonne réponse;Explication;Matière;Notion\r\n"
        "Combien font 3 × 4 ?;7;12;34;2;3 fois 4 font 12.;Maths;La multiplication\r\n"
        "Un carré a quatre côtés.;Vrai;Faux;;Vrai;;Mathématiques;Les quadrilatères\r\n").encode("cp1252")
BAD = GOOD + "Combien font 2 + 2 ?;3;4;;7;;Maths;addition\r\n".encode("cp1252")


async def _bank_size(h: Harness) -> int:
    async with h.services.sessions() as db:
        return int(await db.scalar(select(func.count()).select_from(ClassItem)) or 0)


async def test_a_teacher_sends_the_class_questions(harness: Harness) -> None:
    h = harness
    own = await make_cohort(h, "6e A", [])
    await make_cohort(h, "6e B", [])
    await make_operator(h, "prof@ecole.ci", role="teacher", cohorts=[own])
    teacher = await logged_in(h, "prof@ecole.ci")
    try:
        status, page, _ = await teacher.get("/admin/cohorts/6e%20A")
        assert status == 200 and 'enctype="multipart/form-data"' in page and "Pas encore de questions" in page
        csrf = await teacher.csrf()
        # No token, or another's class: refused before anything is read or stored.
        assert (await teacher.post_file("/admin/cohorts/6e%20A/items", {}, "q.csv", GOOD))[0] == 403
        bad_token = {"csrf_token": "x" * 43}
        assert (await teacher.post_file("/admin/cohorts/6e%20A/items", bad_token, "q.csv", GOOD))[0] == 403
        other = await teacher.post_file("/admin/cohorts/6e%20B/items", {"csrf_token": csrf}, "q.csv", GOOD)
        assert other[0] == 404
        assert await _bank_size(h) == 0
        status, page, _ = await teacher.post_file("/admin/cohorts/6e%20A/items", {"csrf_token": csrf},
                                                  "q.csv", BAD)
        assert status == 422 and "rien n&#39;a changé" in page, page
        assert "ligne 4: la bonne réponse 7 n&#39;est pas un numéro de choix (1 à 2)" in page, page
        assert await _bank_size(h) == 0
        status, page, _ = await teacher.post_file("/admin/cohorts/6e%20A/items", {"csrf_token": csrf},
                                                  "q.csv", GOOD)
        assert status == 200 and "2 question(s) ajoutée(s), 0 déjà là." in page, page
        status, page, _ = await teacher.post_file("/admin/cohorts/6e%20A/items", {"csrf_token": csrf},
                                                  "q.csv", GOOD)
        assert status == 200 and "0 question(s) ajoutée(s), 2 déjà là." in page
        assert await _bank_size(h) == 2
        status, page, _ = await teacher.get("/admin/cohorts/6e%20A")
        table = page.split('id="items"')[1].split("</table>")[0]
        assert "La multiplication" in table and "Les quadrilatères" in table and "Mathématiques" in table
        # An empty form, and a file over the size limit.
        status, page, _ = await teacher.post_file("/admin/cohorts/6e%20A/items", {"csrf_token": csrf},
                                                  "q.csv", b"")
        assert status == 422 and "Aucun fichier choisi." in page
        huge = await teacher.post_file("/admin/cohorts/6e%20A/items", {"csrf_token": csrf}, "q.csv",
                                       b"x" * (2 * 1024 * 1024))
        assert huge[0] == 413
        assert await _bank_size(h) == 2
    finally:
        await teacher.close()


async def test_an_admin_may_send_and_sends_are_throttled(harness: Harness) -> None:
    h = harness
    await make_cohort(h, "CM2", [])
    await make_operator(h, "admin@ecole.ci")
    admin = await logged_in(h, "admin@ecole.ci")
    try:
        csrf = await admin.csrf()
        for n in range(ACTION_LIMITS["items"]):
            status, _page, _ = await admin.post_file("/admin/cohorts/CM2/items", {"csrf_token": csrf},
                                                     "q.csv", GOOD)
            assert status == 200, n
        status, page, resp = await admin.post_file("/admin/cohorts/CM2/items", {"csrf_token": csrf},
                                                   "q.csv", GOOD)
        assert status == 429 and "Trop de fichiers envoyés" in page and int(resp.headers["Retry-After"]) > 0
        assert await _bank_size(h) == 2
    finally:
        await admin.close()

"""A file for the class's library sent from the class page: a multipart form behind the dashboard's
hook (its CSRF token or 403, another teacher's class 404), stored once as the class's and read by
its student; the page then shows, per file, which students opened it; the sends per operator
throttled."""

from __future__ import annotations

from sqlalchemy import func, select

from bot.storage.models import UserFile
from bot.web.admin import throttle
from bot.web.admin.throttle import ACTION_LIMITS
from tests.support.admin import logged_in, make_cohort, make_operator
from tests.support.harness import Harness
from tests.support.library import Library
from tools import by_name

LESSON = "Le théorème de Pythagore : dans un triangle rectangle, le carré de l'hypoténuse.".encode()
PATH = "/admin/cohorts/6e%20A/files"


async def _files(h: Harness) -> list[UserFile]:
    async with h.services.sessions() as db:
        return list(await db.scalars(select(UserFile).order_by(UserFile.id)))


async def test_a_teacher_adds_a_file_and_sees_who_opened_it(harness: Harness) -> None:
    h = harness
    awa = await h.make_user("+2250700000201", display_name="Awa Koné")
    await h.make_user("+2250700000202", display_name="Yao Kouassi")
    own = await make_cohort(h, "6e A", [awa])
    await make_cohort(h, "6e B", [])
    await make_operator(h, "prof@ecole.ci", role="teacher", cohorts=[own])
    teacher = await logged_in(h, "prof@ecole.ci")
    try:
        status, page, _ = await teacher.get("/admin/cohorts/6e%20A")
        assert status == 200 and 'id="files-form"' in page and "Pas encore de fichier" in page
        csrf = await teacher.csrf()
        # No token, a wrong one, or another teacher's class: refused, nothing stored.
        assert (await teacher.post_file(PATH, {}, "pythagore.txt", LESSON))[0] == 403
        assert (await teacher.post_file(PATH, {"csrf_token": "x" * 43}, "pythagore.txt", LESSON))[0] == 403
        other = await teacher.post_file("/admin/cohorts/6e%20B/files", {"csrf_token": csrf}, "p.txt", LESSON)
        assert other[0] == 404
        assert await _files(h) == []
        status, page, _ = await teacher.post_file(PATH, {"csrf_token": csrf}, "p.txt", b"")
        assert status == 422 and "Aucun fichier choisi." in page
        status, page, resp = await teacher.post_file(PATH, {"csrf_token": csrf}, "pythagore.txt", LESSON)
        assert status == 303 and resp.headers["Location"] == "/admin/cohorts/6e%20A#files", page[:500]
        status, page, _ = await teacher.get("/admin/cohorts/6e%20A")
        files = await _files(h)
        assert [(f.user_id, f.cohort_id, f.origin) for f in files] == [(None, own, "class")]
        table = page.split('id="class-files"')[1].split("</table>")[0]
        assert "pythagore.txt" in table and "Personne pour l&#39;instant." in table and "Awa" not in table
        # Awa reads it with the tutor: the page says so, by her name as the roster shows it.
        read = await by_name()["read_user_file"].run(Library(h.services, [awa]).ctx(awa),
                                                      {"file_id": files[0].id})
        assert read["success"] and "Pythagore" in read["content"]
        status, page, _ = await teacher.get("/admin/cohorts/6e%20A")
        table = page.split('id="class-files"')[1].split("</table>")[0]
        assert f'<a href="/admin/students/{awa.id}">Awa Koné</a>' in table and "×1" in table, table
        assert "Yao" not in table
    finally:
        await teacher.close()


async def test_the_sends_are_throttled(harness: Harness) -> None:
    h = harness
    await make_cohort(h, "6e A", [])
    operator_id = await make_operator(h, "admin@ecole.ci")
    admin = await logged_in(h, "admin@ecole.ci")
    try:
        csrf = await admin.csrf()
        # The operator's earlier sends, counted as the route counts them.
        for _ in range(ACTION_LIMITS["files"] - 1):
            assert await throttle.take_action(h.services.state, "files", operator_id) == 0
        status, _page, _ = await admin.post_file(PATH, {"csrf_token": csrf}, "pythagore.txt", LESSON)
        assert status == 303
        status, page, resp = await admin.post_file(PATH, {"csrf_token": csrf}, "encore.txt", LESSON)
        assert status == 429 and "Trop de fichiers envoyés" in page and int(resp.headers["Retry-After"]) > 0
        assert [f.name for f in await _files(h)] == ["pythagore.txt"]
        # Another operator's count is their own.
        assert await throttle.take_action(h.services.state, "files", operator_id + 1) == 0
    finally:
        await admin.close()


async def test_a_class_that_is_not_there_is_404(harness: Harness) -> None:
    """Nothing is stored for a class that is not there (404 before the throttle counts)."""
    h = harness
    await make_operator(h, "admin@ecole.ci")
    admin = await logged_in(h, "admin@ecole.ci")
    try:
        csrf = await admin.csrf()
        assert (await admin.post_file("/admin/cohorts/absente/files", {"csrf_token": csrf}, "a.txt",
                                      LESSON))[0] == 404
        async with h.services.sessions() as db:
            assert await db.scalar(select(func.count()).select_from(UserFile)) == 0
    finally:
        await admin.close()

"""A class's library: `python -m bot cohorts files add NAME FILE` as the operator runs it (and
`cohorts files list`), the file stored and indexed once; the class's students find it with
search_user_files (by its words and by meaning), list_user_files and read_user_file, marked
« (classe 6e A) » and read-only; another student, and a student who left the class, do not; each
reading recorded for the teacher; a current student makes a PDF of one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import delete, func, select

from bot import library, school
from bot.storage.models import ClassFileOpen, Cohort, CohortMember, LibraryChunk, User, UserFile
from tests.support.admin import make_cohort
from tests.support.console import console
from tests.support.harness import Harness
from tests.support.library import Library
from tools import by_name

LESSON = ("La photosynthèse : les plantes vertes fabriquent leur matière organique à partir de la "
          "lumière du soleil, de l'eau et du dioxyde de carbone. Cette réaction libère de l'oxygène "
          "dans l'air et se passe dans les chloroplastes des feuilles.\n")


async def tool(lib: Library, user: User, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await by_name()[name].run(lib.ctx(user), args)
    return result


async def test_the_operator_adds_a_file_the_class_students_read_but_cannot_change(
        harness: Harness, tmp_path: Path) -> None:
    h = harness
    awa = await h.make_user("+2250700000101", display_name="Awa Koné")
    kofi = await h.make_user("+2250700000102")
    await make_cohort(h, "6e A", [awa])
    path = tmp_path / "photosynthese.txt"
    path.write_text(LESSON, encoding="utf-8")
    run = await console(h, "cohorts", "files", "add", "6e A", str(path))
    assert run.code == 0, run.err
    assert "fichier 'photosynthese.txt' ajouté" in run.out, run.out
    missing = await console(h, "cohorts", "files", "add", "6e Z", str(path))
    assert missing.code == 1 and "aucune classe nommée '6e Z'" in missing.err
    unreadable = await console(h, "cohorts", "files", "add", "6e A", str(tmp_path / "absent.pdf"))
    assert unreadable.code == 2 and "rien n'a changé" in unreadable.err
    async with h.services.sessions() as db:
        files = list(await db.scalars(select(UserFile)))
        assert [(f.user_id, f.origin, f.name) for f in files] == [(None, "class", "photosynthese.txt")]
        chunks = list(await db.scalars(select(LibraryChunk)))
        # Indexed once, for the class: no copy per student; embedded as it was stored.
        assert chunks and all(c.cohort_id == files[0].cohort_id and c.user_id is None for c in chunks)
        assert all(c.embedding is not None for c in chunks)
    file_id = files[0].id
    lib = Library(h.services, [awa, kofi])

    listed = await tool(lib, awa, "list_user_files", {})
    assert listed["total"] == 1
    assert listed["files"][0]["name"] == "photosynthese.txt (classe 6e A)"
    assert listed["files"][0]["read_only"] is True and listed["files"][0]["id"] == file_id
    by_words = await tool(lib, awa, "search_user_files", {"query": "chloroplastes"})
    assert [(r["file_id"], r["name"]) for r in by_words["results"]] == [
        (file_id, "photosynthese.txt (classe 6e A)")]
    by_meaning = await tool(lib, awa, "search_user_files",
                            {"query": "comment une plante produit sa nourriture"})
    assert [r["file_id"] for r in by_meaning["results"]] == [file_id], by_meaning
    read = await tool(lib, awa, "read_user_file", {"file_id": file_id})
    assert read["success"] and "chloroplastes" in read["content"] and read["read_only"] is True
    await tool(lib, awa, "read_user_file", {"file_id": file_id})

    # A student of no class sees nothing of it, by list, search or id.
    assert (await tool(lib, kofi, "list_user_files", {}))["total"] == 0
    assert (await tool(lib, kofi, "search_user_files", {"query": "chloroplastes"}))["results"] == []
    assert not (await tool(lib, kofi, "read_user_file", {"file_id": file_id}))["success"]
    # Nobody's own file to delete: the library refuses it, and it is still there.
    async with h.services.sessions() as db:
        assert not await library.delete_file(h.services, db, awa.id, file_id)
        await db.commit()
        assert await db.scalar(select(func.count()).select_from(UserFile)) == 1

    async with h.services.sessions() as db:
        opens = list(await db.scalars(select(ClassFileOpen)))
        assert [(o.file_id, o.user_id, o.count) for o in opens] == [(file_id, awa.id, 2)]
        shown = await school.class_files(db, files[0].cohort_id or 0)
    assert [(f.name, [(o.name, o.count) for o in f.opened_by]) for f in shown] == [
        ("photosynthese.txt", [("Awa Koné", 2)])]
    listed_cli = await console(h, "cohorts", "files", "list", "6e A")
    assert listed_cli.code == 0 and "ouvert par : Awa Koné ×2" in listed_cli.out, listed_cli.out

    # Awa leaves the class: its files are no longer hers to see.
    async with h.services.sessions() as db:
        await db.execute(delete(CohortMember).where(CohortMember.user_id == awa.id))
        await db.commit()
    assert (await tool(lib, awa, "list_user_files", {}))["total"] == 0
    assert (await tool(lib, awa, "search_user_files", {"query": "chloroplastes"}))["results"] == []
    assert not (await tool(lib, awa, "read_user_file", {"file_id": file_id}))["success"]


async def test_a_student_own_files_and_the_class_files_together(harness: Harness) -> None:
    """The student's own file and the class's are searched and listed together, each as it is; the
class's sent to her counts as opened."""
    h = harness
    awa = await h.make_user("+2250700000103")
    cohort_id = await make_cohort(h, "CM2", [awa])
    async with h.services.sessions() as db:
        cohort = await db.get(Cohort, cohort_id)
    assert cohort is not None
    await school.add_class_file(h.services, cohort, "photosynthese.txt", LESSON.encode())
    async with h.services.sessions() as db:
        await library.add_file(h.services, db, user_id=awa.id, name="mes-notes.txt", mime="text/plain",
                               data="Les chloroplastes sont verts, dit la maîtresse.".encode(),
                               origin="upload")
        await db.commit()
    lib = Library(h.services, [awa])
    listed = await tool(lib, awa, "list_user_files", {})
    assert sorted(f["name"] for f in listed["files"]) == ["mes-notes.txt", "photosynthese.txt (classe CM2)"]
    assert [f.get("read_only", False) for f in listed["files"] if f["name"] == "mes-notes.txt"] == [False]
    found = await tool(lib, awa, "search_user_files", {"query": "chloroplastes"})
    assert sorted(r["name"] for r in found["results"]) == ["mes-notes.txt", "photosynthese.txt (classe CM2)"]
    # Sent to her on WhatsApp: an opening, as the teacher sees it.
    class_file = next(f for f in listed["files"] if f.get("read_only"))
    sent = await tool(lib, awa, "send_whatsapp_to_user", {"message": "Le cours", "file_id": class_file["id"]})
    assert sent["success"], sent
    async with h.services.sessions() as db:
        opens = [(o.file_id, o.user_id, o.count) for o in await db.scalars(select(ClassFileOpen))]
    assert opens == [(class_file["id"], awa.id, 1)]



async def test_a_class_file_is_made_a_pdf_only_for_a_student_of_the_class_now(harness: Harness) -> None:
    """generate_pdf's source may be a file of a class the student is in now (an opening for the
    teacher); a student of another class, or one who left, gets « no file »."""
    h = harness
    awa, kofi, ama = [await h.make_user(f"+22507000001{n}") for n in ("04", "05", "06")]
    cohort_id = await make_cohort(h, "5e B", [awa, ama])
    await make_cohort(h, "5e C", [kofi])
    async with h.services.sessions() as db:
        cohort = await db.get(Cohort, cohort_id)
    assert cohort is not None
    lesson = await school.add_class_file(h.services, cohort, "photosynthese.txt", LESSON.encode())
    lib = Library(h.services, [awa, kofi, ama])
    made = await tool(lib, awa, "generate_pdf", {"title": "", "source_file_id": lesson.id})
    assert made["success"] and made["name"] == "photosynthese.pdf", made
    async with h.services.sessions() as db:
        pdf = await library.get_file(db, awa.id, made["file_id"])
        assert pdf is not None and pdf.user_id == awa.id and pdf.cohort_id is None  # hers, not the class's
        assert "chloroplastes" in (pdf.text or "")
    for outsider in (kofi, ama):
        if outsider is ama:  # Ama leaves the class
            async with h.services.sessions() as db:
                await db.execute(delete(CohortMember).where(CohortMember.user_id == ama.id))
                await db.commit()
        refused = await tool(lib, outsider, "generate_pdf", {"title": "", "source_file_id": lesson.id})
        assert refused["success"] is False and "no file with id" in refused["error"]
    async with h.services.sessions() as db:
        opens = [(o.file_id, o.user_id, o.count) for o in await db.scalars(select(ClassFileOpen))]
        owned = await db.scalar(select(func.count()).select_from(UserFile).where(UserFile.user_id.in_(
            [kofi.id, ama.id])))
    assert opens == [(lesson.id, awa.id, 1)] and owned == 0

"""The user's library on a real database: uploads with their text, listing, reading and ranked
search, generated files stored and delivered by the tools, and ids scoped to their owner."""

from __future__ import annotations

import io
from typing import Any

import openpyxl
import pytest
from docx import Document as DocxDocument
from pptx import Presentation
from pypdf import PdfReader
from sqlalchemy import func, select

from bot import library
from bot.documents.convert import parse_document
from bot.documents.docx import build_docx
from bot.documents.names import MIME_BY_EXT
from bot.documents.pdf import build_pdf
from bot.documents.pptx import build_pptx, parse_slides
from bot.documents.xlsx import build_xlsx, parse_workbook
from bot.storage.filestore import LocalFileStore
from bot.storage.models import UserFile
from tests.support.library import Library
from tools import by_name


def tool(name: str) -> Any:
    return by_name()[name]


async def upload(lib: Library, user_index: int, name: str, data: bytes, mime: str = "") -> UserFile:
    async with lib.services.sessions() as db:
        row = await library.add_file(
            lib.services,
            db,
            user_id=lib.users[user_index].id,
            name=name,
            mime=mime,
            data=data,
            origin="upload",
        )
        await db.commit()
    return row


def office_samples() -> dict[str, tuple[bytes, str]]:
    doc = parse_document(
        {
            "title": "Contrat de prestation",
            "blocks": [
                {"type": "heading", "text": "Article premier"},
                "Le prestataire s'engage à livrer le mobilier scolaire avant la rentrée.",
                {"type": "table", "columns": ["Article", "Prix"], "rows": [["Tables-bancs", "45 000 FCFA"]]},
            ],
        }
    )
    xlsx = build_xlsx(
        "Budget",
        parse_workbook(
            {
                "sheets": [
                    {
                        "name": "Budget",
                        "columns": ["Poste", "Montant"],
                        "rows": [["Cantine scolaire", 350000]],
                    }
                ]
            }
        ),
    )
    pptx = build_pptx(
        "Réunion des parents",
        "",
        parse_slides(
            {
                "slides": [
                    {
                        "title": "Calendrier",
                        "bullets": ["Examens blancs en février"],
                        "notes": "Rappeler la kermesse",
                    }
                ]
            }
        ),
    )
    pdf = build_pdf(parse_document({"title": "Bulletin trimestriel", "blocks": ["Moyenne générale : 14,5"]}))[
        0
    ]
    return {
        "contrat.docx": (build_docx(doc), MIME_BY_EXT[".docx"]),
        "budget.xlsx": (xlsx, MIME_BY_EXT[".xlsx"]),
        "reunion.pptx": (pptx, MIME_BY_EXT[".pptx"]),
        "bulletin.pdf": (pdf, "application/pdf"),
        "notes.txt": ("Révisions : théorème de Pythagore".encode(), "text/plain"),
        "cours.md": (b"# Photosynth\xc3\xa8se\n\nLa chlorophylle capte la lumi\xc3\xa8re.", "text/markdown"),
        "notes.csv": ("élève;note\nAwa;16\n".encode("cp1252"), "text/csv"),
    }


async def test_uploads_keep_their_text_under_a_key_of_ours(lib: Library) -> None:
    expected = {
        "contrat.docx": ["Article premier", "mobilier scolaire", "Tables-bancs | 45 000 FCFA"],
        "budget.xlsx": ["Cantine scolaire", "350000"],
        "reunion.pptx": ["Examens blancs en février", "Rappeler la kermesse"],
        "bulletin.pdf": ["Bulletin trimestriel", "Moyenne générale : 14,5"],
        "notes.txt": ["théorème de Pythagore"],
        "cours.md": ["Photosynthèse", "chlorophylle"],
        "notes.csv": ["élève;note", "Awa;16"],
    }
    for name, (data, mime) in office_samples().items():
        row = await upload(lib, 0, name, data, mime)
        for piece in expected[name]:
            assert piece in (row.text or ""), (name, piece, row.text)
        assert row.origin == "upload" and row.size == len(data) and row.mime == mime
        assert name.split(".")[0] not in row.storage_key
        assert await lib.services.files.get(row.storage_key) == data


async def test_hostile_names_and_unreadable_files_are_kept_safely(lib: Library) -> None:
    store = lib.services.files
    assert isinstance(store, LocalFileStore)
    root = store.root
    row = await upload(lib, 0, "../../etc/passwd", b"root:x:0:0", "text/plain")
    assert row.name == "passwd" and ".." not in row.storage_key
    path = store.local_path(row.storage_key)
    assert root in path.parents and path.read_bytes() == b"root:x:0:0"
    photo = await upload(lib, 0, "IMG_0001.jpg", b"\xff\xd8\xff\xe0" + b"\x00" * 100, "image/jpeg")
    broken = await upload(lib, 0, "faux.docx", b"PK\x03\x04 not really a zip", MIME_BY_EXT[".docx"])
    assert photo.text is None and broken.text is None
    assert await lib.services.files.get(broken.storage_key) == b"PK\x03\x04 not really a zip"
    with pytest.raises(ValueError, match="origin"):
        async with lib.services.sessions() as db:
            await library.add_file(
                lib.services, db, user_id=lib.users[0].id, name="x", mime="", data=b"", origin="evil"
            )


async def test_list_is_newest_first_and_only_the_users_own(lib: Library) -> None:
    first = await upload(lib, 0, "premier.txt", b"un")
    second = await upload(lib, 0, "second.txt", b"deux")
    theirs = await upload(lib, 1, "autre.txt", b"trois")
    result = await tool("list_user_files").run(lib.ctx(lib.users[0]), {})
    assert result["total"] == 2
    assert [f["id"] for f in result["files"]] == [second.id, first.id]
    assert result["files"][0]["name"] == "second.txt" and result["files"][0]["origin"] == "upload"
    other = await tool("list_user_files").run(lib.ctx(lib.users[1]), {})
    assert [f["id"] for f in other["files"]] == [theirs.id]


async def test_read_user_file_and_ids_of_another_user(lib: Library) -> None:
    mine = await upload(lib, 0, "cours.md", "# Les fractions\n\nUn demi s'écrit 1/2.".encode())
    read = tool("read_user_file").run
    result = await read(lib.ctx(lib.users[0]), {"file_id": mine.id})
    assert result["success"] and "Un demi s'écrit 1/2." in result["content"] and result["name"] == "cours.md"
    stolen = await read(lib.ctx(lib.users[1]), {"file_id": mine.id})
    missing = await read(lib.ctx(lib.users[1]), {"file_id": mine.id + 1000})
    assert stolen == missing | {"error": stolen["error"]} and not stolen["success"]
    assert "no file with id" in stolen["error"] and "Un demi" not in str(stolen)
    assert not (await read(lib.ctx(lib.users[0]), {"file_id": "abc"}))["success"]
    further = await read(lib.ctx(lib.users[0]), {"file_id": mine.id, "offset": 10})
    assert further["content"] == result["content"][10:]


async def test_search_ranks_with_snippets_and_never_crosses_users(lib: Library) -> None:
    best = await upload(
        lib,
        0,
        "fractions.txt",
        "Les fractions : additionner des fractions demande un dénominateur commun.".encode(),
    )
    weaker = await upload(lib, 0, "divers.txt", "Une fraction de la classe était absente lundi.".encode())
    await upload(lib, 0, "autre.txt", "Géographie de la Côte d'Ivoire : le fleuve Comoé.".encode())
    await upload(lib, 1, "secret.txt", "Fractions et dénominateur commun, fiche de l'autre élève.".encode())
    search = tool("search_user_files").run
    result = await search(lib.ctx(lib.users[0]), {"query": "fractions dénominateur commun"})
    ids = [r["file_id"] for r in result["results"]]
    assert ids[:2] == [best.id, weaker.id] and len(ids) == 2
    assert "«" in result["results"][0]["snippet"] and "dénominateur" in result["results"][0]["snippet"]
    # Accents and plurals as typed on a phone.
    loose = await search(lib.ctx(lib.users[0]), {"query": "cote divoire comoe"})
    assert [r["name"] for r in loose["results"]][:1] == ["autre.txt"]
    accents = await search(lib.ctx(lib.users[0]), {"query": "geographie"})
    assert [r["name"] for r in accents["results"]] == ["autre.txt"]
    # Query syntax is never interpreted.
    odd = await search(lib.ctx(lib.users[0]), {"query": 'fraction" OR NOT * NEAR( -- ; DROP TABLE'})
    assert odd["success"] and weaker.id in [r["file_id"] for r in odd["results"]]
    assert not (await search(lib.ctx(lib.users[0]), {"query": "  ?!  "}))["success"]
    others = await search(lib.ctx(lib.users[1]), {"query": "fractions"})
    assert [r["name"] for r in others["results"]] == ["secret.txt"]


async def test_search_follows_deletions(lib: Library) -> None:
    row = await upload(lib, 0, "temp.txt", b"kermesse annuelle")
    search = tool("search_user_files").run
    assert (await search(lib.ctx(lib.users[0]), {"query": "kermesse"}))["results"]
    async with lib.services.sessions() as db:
        assert await library.delete_file(lib.services, db, lib.users[0].id, row.id)
        await db.commit()
    assert (await search(lib.ctx(lib.users[0]), {"query": "kermesse"}))["results"] == []
    with pytest.raises(FileNotFoundError):
        await lib.services.files.get(row.storage_key)


# --- generation tools -------------------------------------------------------------------------------

DOC_ARGS = {
    "title": "Résumé de la leçon : les fractions",
    "markdown": (
        "## À retenir\n\nUne fraction a un numérateur et un dénominateur. « Ça » coûte 500 FCFA.\n\n"
        "- 1/2 = 0,5\n- 3/4 = 0,75\n\n| Fraction | Décimal |\n|---|---|\n| 1/2 | 0,5 |\n"
    ),
}


def reopen(name: str, data: bytes) -> str:
    """The file's text as its own library reads it."""
    if name.endswith(".pdf"):
        return "\n".join(p.extract_text() for p in PdfReader(io.BytesIO(data)).pages)
    if name.endswith(".docx"):
        document = DocxDocument(io.BytesIO(data))
        cells = [c.text for t in document.tables for r in t.rows for c in r.cells]
        return "\n".join([p.text for p in document.paragraphs] + cells)
    if name.endswith(".pptx"):
        prs = Presentation(io.BytesIO(data))
        return "\n".join(s.text_frame.text for sl in prs.slides for s in sl.shapes if s.has_text_frame)
    if name.endswith(".xlsx"):
        wb = openpyxl.load_workbook(io.BytesIO(data))
        return "\n".join(str(c.value) for ws in wb for r in ws.iter_rows() for c in r if c.value is not None)
    return data.decode("utf-8")


GENERATORS: dict[str, tuple[dict[str, Any], str, str]] = {
    "generate_pdf": (DOC_ARGS, ".pdf", "application/pdf"),
    "generate_docx": (DOC_ARGS, ".docx", MIME_BY_EXT[".docx"]),
    "generate_md": (DOC_ARGS, ".md", "text/markdown"),
    "generate_html": (DOC_ARGS, ".html", "text/html"),
    "generate_pptx": (
        {
            "title": "Résumé de la leçon : les fractions",
            "markdown": "# À retenir\n\n- Une fraction a un numérateur et un dénominateur.\n",
        },
        ".pptx",
        MIME_BY_EXT[".pptx"],
    ),
    "generate_xlsx": (
        {
            "title": "Résumé de la leçon : les fractions",
            "sheets": [
                {
                    "name": "Fractions",
                    "rows": [
                        ["Fraction", "Décimal"],
                        ["Une fraction a un numérateur et un dénominateur.", 0.5],
                    ],
                }
            ],
        },
        ".xlsx",
        MIME_BY_EXT[".xlsx"],
    ),
}


@pytest.mark.parametrize("name", sorted(GENERATORS))
async def test_generator_tool_stores_delivers_and_reports_without_bytes(lib: Library, name: str) -> None:
    args, ext, mime = GENERATORS[name]
    user = lib.users[0]
    result = await tool(name).run(lib.ctx(user), {**args, "filename": "../../etc/passwd"})
    assert result["success"] is True and result["delivered"] is True
    assert result["name"] == "passwd" + ext and result["mime"] == mime
    assert set(result) >= {"file_id", "name", "size", "mime"}
    assert not any(isinstance(v, bytes) for v in result.values()) and len(str(result)) < 600
    assert len(lib.sent) == 1
    to, caption, media = lib.sent[0]
    assert to == user.id and "passwd" in caption
    if mime in library.WHATSAPP_MEDIA_TYPES:
        assert media is not None and media.id == result["file_id"]
    else:  # WhatsApp takes no HTML or Markdown attachment: the signed link goes in the text
        assert media is None and f"/files/{result['file_id']}/" in caption
    async with lib.services.sessions() as db:
        row = await library.get_file(db, user.id, result["file_id"])
    assert row is not None and row.origin == "generated" and row.size == result["size"]
    data = await lib.services.files.get(row.storage_key)
    assert len(data) == row.size
    assert "numérateur et un dénominateur" in reopen(row.name, data)
    found = await tool("search_user_files").run(lib.ctx(user), {"query": "numerateur"})
    assert [r["file_id"] for r in found["results"]] == [row.id]


async def test_generated_file_named_from_its_title(lib: Library) -> None:
    result = await tool("generate_md").run(lib.ctx(lib.users[0]), DOC_ARGS)
    assert result["name"] == "Résumé de la leçon   les fractions.md" or result["name"].endswith(".md")
    assert ":" not in result["name"]


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        (
            "generate_xlsx",
            {"title": "t", "sheets": [{"name": "A", "rows": [["n"]] + [[1]] * 10_001}]},
            "at most 10000 per sheet",
        ),
        ("generate_pptx", {"title": "t", "markdown": "\n---\n".join(["# s"] * 61)}, "at most 60"),
        ("generate_pdf", {"title": "t", "markdown": "| x |\n|---|\n" + "| x |\n" * 5001}, "at most 5000"),
        ("generate_docx", {"title": "t", "markdown": "- x\n" * 501}, "at most 500"),
        ("generate_html", {"title": "t", "html": "x" * 300_001}, "at most 300000"),
        ("generate_md", {"title": "t", "markdown": "x" * 20_001}, "at most 20000"),
    ],
)
async def test_over_the_bound_is_an_error_result_and_nothing_is_kept(
    lib: Library, name: str, args: dict[str, Any], message: str
) -> None:
    result = await tool(name).run(lib.ctx(lib.users[0]), args)
    assert result["success"] is False and message in result["error"]
    assert lib.sent == []
    async with lib.services.sessions() as db:
        assert (await db.execute(select(func.count()).select_from(UserFile))).scalar_one() == 0


async def test_pdf_page_bound_at_100(lib: Library) -> None:
    def pages(n: int) -> dict[str, Any]:
        blocks: list[dict[str, Any]] = []
        for i in range(n):
            blocks += [{"type": "paragraph", "text": f"Page {i + 1} — résumé"}, {"type": "page_break"}]
        return {"title": "Cahier", "blocks": blocks[:-1]}

    at_bound = await tool("generate_pdf").run(lib.ctx(lib.users[0]), pages(100))
    assert at_bound["success"] and at_bound["pages"] == 100
    over = await tool("generate_pdf").run(lib.ctx(lib.users[0]), pages(101))
    assert over["success"] is False and "more than 100 pages" in over["error"]
    assert "shorten" in over["error"] and len(lib.sent) == 1


@pytest.mark.one_backend  # LibreOffice converts; the database only holds the files
async def test_convert_library_files_to_pdf(lib: Library) -> None:
    samples = office_samples()
    expected = {
        "budget.xlsx": "Cantine scolaire",
        "contrat.docx": "mobilier scolaire",
        "cours.md": "chlorophylle",
        "reunion.pptx": "Examens blancs",
    }
    for name, needle in expected.items():
        data, mime = samples[name]
        source = await upload(lib, 0, name, data, mime)
        result = await tool("generate_pdf").run(
            lib.ctx(lib.users[0]), {"title": "", "source_file_id": source.id}
        )
        assert result["success"], result
        assert result["name"] == name.rsplit(".", 1)[0] + ".pdf"
        async with lib.services.sessions() as db:
            row = await library.get_file(db, lib.users[0].id, result["file_id"])
        assert row is not None
        assert needle in reopen(row.name, await lib.services.files.get(row.storage_key))
    budget = await upload(lib, 0, "budget.xlsx", *samples["budget.xlsx"])
    stolen = await tool("generate_pdf").run(
        lib.ctx(lib.users[1]), {"title": "x", "source_file_id": budget.id}
    )
    assert stolen["success"] is False and "no file with id" in stolen["error"]
    pdf = await upload(lib, 0, "bulletin.pdf", *samples["bulletin.pdf"])
    again = await tool("generate_pdf").run(lib.ctx(lib.users[0]), {"title": "x", "source_file_id": pdf.id})
    assert again["success"] is False and "already a PDF" in again["error"]


CONTROL = "Texte\x00 avec\x01 des\x0b caractères\x1f de contrôle\ufffe"
HOSTILE_ARGS = {
    "generate_pdf": {
        "title": CONTROL,
        "blocks": [CONTROL, {"type": "table", "columns": [CONTROL], "rows": [[CONTROL]]}],
    },
    "generate_docx": {
        "title": CONTROL,
        "blocks": [
            CONTROL,
            {"type": "bullets", "items": [CONTROL]},
            {"type": "table", "columns": [CONTROL], "rows": [[CONTROL]]},
        ],
    },
    "generate_md": {"title": CONTROL, "blocks": [CONTROL]},
    "generate_html": {"title": CONTROL, "blocks": [CONTROL], "html": f"<p>{CONTROL}</p>"},
    "generate_pptx": {
        "title": CONTROL,
        "subtitle": CONTROL,
        "slides": [
            {
                "title": CONTROL,
                "bullets": [CONTROL],
                "notes": CONTROL,
                "table": {"columns": [CONTROL], "rows": [[CONTROL]]},
            }
        ],
    },
    "generate_xlsx": {
        "title": CONTROL,
        "sheets": [{"name": CONTROL, "columns": [CONTROL], "rows": [[CONTROL], ['=A1&\x01"x"']]}],
    },
}


@pytest.mark.parametrize("name", sorted(HOSTILE_ARGS))
async def test_control_characters_never_make_a_broken_file(lib: Library, name: str) -> None:
    result = await tool(name).run(lib.ctx(lib.users[0]), HOSTILE_ARGS[name])
    assert result["success"], result
    row, data = await stored_file(lib, result["file_id"])
    assert "Texte avec des caractères de contrôle" in reopen(row.name, data).replace("\ufffe", "")


async def stored_file(lib: Library, file_id: int) -> tuple[UserFile, bytes]:
    async with lib.services.sessions() as db:
        row = await library.get_file(db, lib.users[0].id, file_id)
    assert row is not None
    return row, await lib.services.files.get(row.storage_key)


def test_tool_schemas_are_valid_and_accept_the_documented_arguments() -> None:
    import jsonschema

    names = [*GENERATORS, "list_user_files", "read_user_file", "search_user_files", "save_memory"]
    for name in names:
        jsonschema.Draft202012Validator.check_schema(tool(name).parameters)
    for name, (args, _ext, _mime) in GENERATORS.items():
        jsonschema.validate(args, tool(name).parameters)
    jsonschema.validate(XLSX_EXAMPLE, tool("generate_xlsx").parameters)
    for name in GENERATORS:
        assert tool(name).side_effects  # a file and a send: never repeated within one turn


XLSX_EXAMPLE = {
    "title": "Bilan",
    "sheets": [
        {
            "name": "Actif",
            "rows": [["Poste", "Montant (FCFA)"], ["Caisse", 150000], ["Total", "=SUM(B2:B2)"]],
            "totals": False,
        }
    ],
}


@pytest.mark.parametrize("name", ["generate_pdf", "generate_docx", "generate_md", "generate_html"])
async def test_documents_need_content(lib: Library, name: str) -> None:
    result = await tool(name).run(lib.ctx(lib.users[0]), {"title": "Vide", "markdown": "  "})
    assert result["success"] is False and "as markdown" in result["error"] and lib.sent == []

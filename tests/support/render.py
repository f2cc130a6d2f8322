"""Office files rendered as a person sees them: LibreOffice headless to PDF, then poppler to text,
boxes, page sizes and PNG images.

Every function raises RenderError with a clear message when a tool is missing or fails, so a
rendering test fails (never skips) on a machine without LibreOffice or poppler-utils.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

# A cold LibreOffice start on a busy machine takes a while; a hung one must not hang the suite.
CONVERT_TIMEOUT_S = 180.0
POPPLER_TIMEOUT_S = 60.0

# Where the pages kept for a person to look at go (override with RENDER_OUTPUT_DIR).
OUTPUT_DIR = Path(os.environ.get("RENDER_OUTPUT_DIR", "/tmp/deblo-render"))

PACKAGES = {
    "soffice": "libreoffice-core with libreoffice-writer, libreoffice-calc, libreoffice-impress",
    "pdftoppm": "poppler-utils",
    "pdftotext": "poppler-utils",
    "pdfinfo": "poppler-utils",
}

PT_PER_MM = 72 / 25.4


class RenderError(RuntimeError):
    """A file could not be rendered; the message says why (tool missing, conversion failed)."""


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RenderError(
            f"`{name}` is not installed: rendering checks need it (apt-get install {PACKAGES[name]})"
        )
    return path


def _run(args: list[str], timeout_s: float, what: str) -> subprocess.CompletedProcess[bytes]:
    try:
        done = subprocess.run(args, capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise RenderError(f"{what} took more than {timeout_s:.0f} s") from exc
    if done.returncode != 0:
        err = (done.stderr or done.stdout).decode(errors="replace").strip()[-2000:]
        raise RenderError(f"{what} failed (exit {done.returncode}): {err}")
    return done


def _soffice(sources: list[Path], fmt: str, outdir: Path, timeout_s: float, what: str,
             infilter: str | None = None) -> list[Path]:
    """One LibreOffice headless conversion of `sources` to `fmt` in `outdir` (read with the import
    filter `infilter` when given); returns the new files.

    Each call gets its own LibreOffice profile: two conversions sharing one block each other
    (or fail) when tests run in parallel.
    """
    soffice = tool("soffice")
    for source in sources:
        if not source.is_file():
            raise RenderError(f"no file to {what} at {source}")
    outdir.mkdir(parents=True, exist_ok=True)
    profile = Path(tempfile.gettempdir()) / f"lo-profile-{os.getpid()}-{uuid.uuid4().hex}"
    names = ", ".join(source.name for source in sources)
    try:
        args = [soffice, f"-env:UserInstallation=file://{profile}", "--headless", "--norestore", "--nologo",
                *([f"--infilter={infilter}"] if infilter else []),
                "--convert-to", fmt, "--outdir", str(outdir), *map(str, sources)]
        done = _run(args, timeout_s, f"LibreOffice converting {names} to {fmt}")
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    made = [outdir / f"{source.stem}.{fmt.split(':')[0]}" for source in sources]
    for source, path in zip(sources, made, strict=True):
        if not path.is_file():  # soffice exits 0 even when it could not load the file
            out = (done.stdout + done.stderr).decode(errors="replace").strip()
            label = "PDF" if fmt == "pdf" else fmt
            raise RenderError(f"LibreOffice made no {label} from {source.name}: {out or 'no output'}")
    return made


def to_pdf(source: Path, outdir: Path | None = None, *, timeout_s: float = CONVERT_TIMEOUT_S) -> Path:
    """Converts an Office file (docx, xlsx, pptx…) to PDF with LibreOffice headless; returns the PDF."""
    source = Path(source)
    outdir = Path(outdir) if outdir is not None else source.parent
    return _soffice([source], "pdf", outdir, timeout_s, "render")[0]


def render_bytes(data: bytes, name: str, outdir: Path) -> Path:
    """Writes `data` as outdir/name and converts it; returns the PDF path."""
    outdir.mkdir(parents=True, exist_ok=True)
    source = outdir / name
    source.write_bytes(data)
    return to_pdf(source, outdir)


def to_png(pdf: Path, prefix: Path, *, dpi: int = 80, first: int = 1, last: int | None = None) -> list[Path]:
    """Pages of a PDF as PNG images prefix-1.png, prefix-2.png… (dpi 60..100 keeps them small)."""
    if not 30 <= dpi <= 300:
        raise ValueError(f"dpi {dpi} out of range 30..300")
    args = [tool("pdftoppm"), "-png", "-r", str(dpi), "-f", str(first)]
    if last is not None:
        args += ["-l", str(last)]
    prefix.parent.mkdir(parents=True, exist_ok=True)
    for old in _pages_of(prefix):  # pages of an earlier, longer rendering
        old.unlink()
    _run([*args, str(pdf), str(prefix)], POPPLER_TIMEOUT_S, f"pdftoppm on {pdf.name}")
    pages = _pages_of(prefix)
    if not pages:
        raise RenderError(f"pdftoppm made no image from {pdf.name}")
    return pages


def _pages_of(prefix: Path) -> list[Path]:
    """prefix-1.png, prefix-2.png… (pdftoppm pads the number: prefix-01.png past 9 pages), in
    page order; never another prefix's pages ("slides-extra-1.png" is not a page of "slides")."""
    pattern = re.compile(re.escape(prefix.name) + r"-(\d+)\.png")
    found = [(m, p) for p in prefix.parent.glob("*.png") if (m := pattern.fullmatch(p.name))]
    return [p for m, p in sorted(found, key=lambda mp: int(mp[0].group(1)))]


def text(pdf: Path, *, layout: bool = True, first: int | None = None, last: int | None = None) -> str:
    """The PDF's text as pdftotext gives it (-layout keeps columns on their line); pages split by \\f."""
    args = [tool("pdftotext"), "-enc", "UTF-8"]
    if layout:
        args.append("-layout")
    if first is not None:
        args += ["-f", str(first)]
    if last is not None:
        args += ["-l", str(last)]
    return _run([*args, str(pdf), "-"], POPPLER_TIMEOUT_S, f"pdftotext on {pdf.name}").stdout.decode()


def pages_text(pdf: Path, *, layout: bool = True) -> list[str]:
    """One string per page."""
    parts = text(pdf, layout=layout).split("\f")
    return parts[:-1] if parts and not parts[-1].strip() else parts


@dataclass(frozen=True)
class PageInfo:
    pages: int
    width_pt: float
    height_pt: float

    @property
    def width_mm(self) -> float:
        return self.width_pt / PT_PER_MM

    @property
    def height_mm(self) -> float:
        return self.height_pt / PT_PER_MM


def info(pdf: Path) -> PageInfo:
    """Page count and the first page's size in points (pdfinfo)."""
    out = _run([tool("pdfinfo"), str(pdf)], POPPLER_TIMEOUT_S, f"pdfinfo on {pdf.name}").stdout.decode()
    pages = re.search(r"^Pages:\s+(\d+)", out, re.M)
    size = re.search(r"^Page size:\s+([\d.]+) x ([\d.]+) pts", out, re.M)
    if not pages or not size:
        raise RenderError(f"pdfinfo gave no page count or size for {pdf.name}: {out[:500]}")
    return PageInfo(int(pages.group(1)), float(size.group(1)), float(size.group(2)))


@dataclass(frozen=True)
class Word:
    """One word as drawn on a page, in points from the page's top-left corner."""

    page: int  # 1-based
    text: str
    x0: float
    y0: float
    x1: float
    y1: float


@dataclass(frozen=True)
class Page:
    number: int
    width: float
    height: float
    words: tuple[Word, ...]


class _BoxParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.pages: list[Page] = []
        self._words: list[Word] = []
        self._size = (0.0, 0.0)
        self._word: dict[str, float] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "page":
            self._size = (float(values["width"]), float(values["height"]))
            self._words = []
        elif tag == "word":
            self._word = {k: float(values[k]) for k in ("xmin", "ymin", "xmax", "ymax")}
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._word is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "word" and self._word is not None:
            w, n = self._word, len(self.pages) + 1
            self._words.append(Word(n, "".join(self._text), w["xmin"], w["ymin"], w["xmax"], w["ymax"]))
            self._word = None
        elif tag == "page":
            self.pages.append(Page(len(self.pages) + 1, *self._size, tuple(self._words)))


def words(pdf: Path) -> list[Page]:
    """Every page with the box of each word drawn on it (pdftotext -bbox)."""
    out = _run(
        [tool("pdftotext"), "-enc", "UTF-8", "-bbox", str(pdf), "-"],
        POPPLER_TIMEOUT_S,
        f"pdftotext -bbox on {pdf.name}",
    ).stdout.decode()
    parser = _BoxParser()
    parser.feed(out)
    parser.close()
    return parser.pages


def keep_pages(pdf: Path, name: str, *, pages: int = 3, dpi: int = 80) -> list[Path]:
    """Keeps the first `pages` pages as PNG in OUTPUT_DIR/name-N.png for a person to look at."""
    return to_png(pdf, OUTPUT_DIR / name, dpi=dpi, last=pages)


def convert(source: Path, fmt: str, outdir: Path, *, timeout_s: float = CONVERT_TIMEOUT_S) -> Path:
    """Converts with LibreOffice headless to another format than PDF ("xlsx", "ods", "csv"…);
    returns the new file. A spreadsheet comes back with the values LibreOffice computed for its
    formulas, which is how a test reads the totals a person would see."""
    source = Path(source)
    if outdir.resolve() == source.parent.resolve():
        raise RenderError("convert into another directory than the source's: it would overwrite it")
    return _soffice([source], fmt, outdir, timeout_s, "convert")[0]


def csv_filter(separator: str) -> str:
    """LibreOffice's CSV import options as a spreadsheet at its most trusting reads a file: split
    on `separator`, `"` around a field, UTF-8, quoted fields not forced to text, formulas
    evaluated (tokens 1, 2, 3, 7 and 13 of LibreOffice's CSV filter options)."""
    return f"CSV:{ord(separator)},34,76,1,,0,false,true,false,false,false,-1,true"


def csvs_to_xlsx(sources: list[Path], outdir: Path, separator: str, *,
                 timeout_s: float = CONVERT_TIMEOUT_S) -> list[Path]:
    """CSV files opened in LibreOffice Calc as `csv_filter` says, saved as xlsx (one start for all)."""
    return _soffice(sources, "xlsx", outdir, timeout_s, "convert", csv_filter(separator))

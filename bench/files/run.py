"""Time and peak memory of the document generators on the sizes the product promises.

    .venv/bin/python -m bench.files [--repeat 3]

Each case runs in its own fresh process (libraries imported and fonts registered first, as in a
warm worker), a few times for the time, then once more under tracemalloc for peak Python memory;
max RSS is the whole process's high-water mark. Aim: each case under one second.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from bench.compare import Figure, add_arguments, compare, report

LOREM = (
    "Le bilan SYSCOHADA présente la situation patrimoniale de l'entité à la clôture de l'exercice : "
    "l'actif immobilisé, l'actif circulant et la trésorerie d'un côté, les capitaux propres et les "
    "dettes de l'autre. Chaque élève doit savoir lire « l'équilibre » du bilan, en FCFA comme en €."
)


def pdf_20_pages() -> Callable[[], str]:
    from bot.documents.convert import parse_document
    from bot.documents.pdf import build_pdf

    blocks: list[dict[str, Any]] = []
    for section in range(1, 18):
        blocks.append({"type": "heading", "text": f"Partie {section} : analyse du poste n°{section}"})
        blocks += [{"type": "paragraph", "text": LOREM * 2} for _ in range(3)]
        blocks.append(
            {"type": "bullets", "items": [f"Point clé {i} — écriture de régularisation" for i in range(5)]}
        )
        blocks.append(
            {
                "type": "table",
                "columns": ["Compte", "Libellé", "Débit (FCFA)", "Crédit (FCFA)"],
                "rows": [
                    [
                        f"{401000 + i}",
                        f"Fournisseur n°{i} — règlement",
                        f"{i * 12500:,}".replace(",", " "),
                        "",
                    ]
                    for i in range(20)
                ],
            }
        )
    args = {
        "title": "Rapport d'audit — exercice 2024",
        "subtitle": "Cabinet Deblo, Abidjan",
        "blocks": blocks,
    }

    def run() -> str:
        _data, pages = build_pdf(parse_document(args))
        return f"{pages} pages"

    return run


def xlsx_10000_rows() -> Callable[[], str]:
    from bot.documents.xlsx import build_xlsx, parse_workbook

    rows = [
        [
            f"2024-{(i % 12) + 1:02d}-{(i % 28) + 1:02d}",
            f"Écriture n°{i} — achat de fournitures",
            i * 125,
            i % 50,
            0.18,
            f"Journal {i % 7}",
        ]
        for i in range(10_000)
    ]
    args = {
        "sheets": [
            {
                "name": "Grand livre",
                "columns": [
                    {"header": "Date", "type": "date"},
                    {"header": "Libellé"},
                    {"header": "Montant", "type": "fcfa"},
                    {"header": "Quantité", "type": "integer"},
                    {"header": "TVA", "type": "percent"},
                    {"header": "Journal"},
                ],
                "rows": rows,
                "totals": True,
            }
        ]
    }

    def run() -> str:
        data = build_xlsx("Grand livre", parse_workbook(args))
        return f"10,000 rows x 6, {len(data) // 1024} KB"

    return run


def xlsx_10000_rows_of_text() -> Callable[[], str]:
    """The same size written as the model often writes it: amounts, negatives, percentages and
    dates as text, every column typed from its values."""
    from bot.documents.xlsx import build_xlsx, parse_workbook

    rows = [
        [
            str(401000 + i % 90),
            f"Écriture n°{i} — achat de fournitures",
            f"{i * 1250:,}".replace(",", " "),
            f"({i * 3:,})".replace(",", " "),
            "18 %",
            f"{i % 28 + 1:02d}/03/2024",
        ]
        for i in range(10_000)
    ]
    args = {
        "sheets": [
            {
                "name": "Grand livre",
                "columns": ["Compte", "Libellé", "Débit (FCFA)", "Crédit (FCFA)", "TVA", "Date"],
                "rows": rows,
                "totals": True,
            }
        ]
    }

    def run() -> str:
        data = build_xlsx("Grand livre", parse_workbook(args))
        return f"10,000 text rows x 6, {len(data) // 1024} KB"

    return run


def pptx_30_slides() -> Callable[[], str]:
    from bot.documents.pptx import build_pptx, parse_slides

    args = {
        "slides": [
            {
                "title": f"Module {i} : la comptabilité générale",
                "bullets": [
                    "Le **bilan** : actif et passif",
                    "- immobilisations",
                    "Le compte de résultat",
                    "Les flux de trésorerie",
                    "Exemple chiffré en FCFA",
                ],
                "notes": "Insister sur l'équilibre du bilan. " * 3,
            }
            for i in range(30)
        ]
    }

    def run() -> str:
        data = build_pptx("Formation SYSCOHADA", "Abidjan — 2024", parse_slides(args))
        return f"31 slides, {len(data) // 1024} KB"

    return run


def docx_20_pages() -> Callable[[], str]:
    from bot.documents.convert import parse_document
    from bot.documents.docx import build_docx

    blocks: list[dict[str, Any]] = []
    for article in range(1, 37):
        blocks.append({"type": "heading", "text": f"Article {article} — obligations des parties"})
        blocks += [{"type": "paragraph", "text": LOREM * 2} for _ in range(3)]
        blocks.append({"type": "bullets", "items": [f"Clause {article}.{i}" for i in range(1, 5)]})
        blocks.append(
            {
                "type": "table",
                "columns": ["Prestation", "Quantité", "Prix (FCFA)"],
                "rows": [[f"Prestation {i}", str(i), f"{i * 15000}"] for i in range(1, 6)],
            }
        )
    args = {"title": "Contrat de prestation de services", "blocks": blocks}
    words = sum(len(str(b.get("text", "")).split()) for b in blocks)

    def run() -> str:
        data = build_docx(parse_document(args))
        return f"~{words // 500} pages ({words} words), {len(data) // 1024} KB"

    return run


CASES: dict[str, Callable[[], Callable[[], str]]] = {
    "PDF 20 pages": pdf_20_pages,
    "XLSX 10,000 rows": xlsx_10000_rows,
    "XLSX 10,000 text": xlsx_10000_rows_of_text,
    "PPTX 30 slides": pptx_30_slides,
    "DOCX 20 pages": docx_20_pages,
}


def _measure(name: str, repeat: int, out: Any) -> None:
    from bot.documents.pdf import register_fonts

    register_fonts()
    make = CASES[name]()
    make()  # warm: first-use imports and caches, as in a worker that already served a file
    times = []
    cpu = []
    detail = ""
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        detail = make()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    tracemalloc.start()
    make()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out.send(
        (detail, statistics.median(times), min(times), statistics.median(cpu), peak / 2**20, rss_kb / 1024)
    )


FIGURES = {f"{key}_{case}": Figure(f"{case} {label}", False, digits)
           for case in CASES for key, label, digits in (("best", "min s", 3), ("cpu", "CPU s", 3),
                                                         ("peak", "peak py MB", 1), ("rss", "RSS MB", 1))}


def run_case(ctx: Any, name: str, repeat: int) -> tuple[str, float, float, float, float, float]:
    """One case in a fresh process; an error there is raised here, never waited on."""
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_measure, args=(name, repeat, child))
    proc.start()
    child.close()  # only the process holds the sending end: its exit ends the wait below
    try:
        result: tuple[str, float, float, float, float, float] = parent.recv()
    except EOFError:
        raise RuntimeError(f"{name}: the measuring process exited with status {proc.exitcode}") from None
    finally:
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
            proc.join()
        parent.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    add_arguments(parser)
    args = parser.parse_args()
    if compare(args, "bench.files", FIGURES):
        return
    ctx = multiprocessing.get_context("spawn")
    if not args.json:
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
              "(wall time suffers when it is high)")
        print(f"{'case':<18} {'output':<34} {'median s':>9} {'min s':>7} {'CPU s':>7} {'peak py MB':>11} "
              f"{'max RSS MB':>11}  <1 s")
    values: dict[str, float] = {}
    for name in CASES:
        detail, median, best, cpu, peak, rss = run_case(ctx, name, args.repeat)
        values.update({f"best_{name}": best, f"cpu_{name}": cpu, f"peak_{name}": peak, f"rss_{name}": rss})
        if not args.json:
            verdict = "yes" if best < 1.0 else "NO"
            print(f"{name:<18} {detail:<34} {median:>9.3f} {best:>7.3f} {cpu:>7.3f} {peak:>11.1f} "
                  f"{rss:>11.1f}  {verdict}")
    if args.json:
        report("bench.files", FIGURES, values)


if __name__ == "__main__":
    main()

"""`python -m bench.charts` on one small case: a row per case under the columns, sizes that are a
real PNG's and SVG's."""

from __future__ import annotations

from bench.charts.run import COLUMNS, rows, table


def test_the_bench_prints_a_row_per_case() -> None:
    [row] = rows(repeat=1, cases=(("few", 2),))
    assert row.case == "few" and row.skills == 2
    assert row.png_ms > 0 and row.svg_ms > 0 and row.png_kb > 20 and 2 < row.svg_kb < row.png_kb
    lines = table([row]).splitlines()
    assert lines[0].split() == [word for column in COLUMNS for word in column.split()]
    assert set(lines[1]) == {"-", " "} and lines[2].split()[:2] == ["few", "2"]

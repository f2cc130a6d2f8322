"""A new number's time zone and language, from its country; and a zone named by a person.

The country comes from the calling code (`phonenumbers`). The French-speaking countries the bot
serves each have their zone: UTC+0 in the west (Abidjan, Dakar, Bamako, Ouagadougou, Conakry, Lomé),
UTC+1 further east (Douala, Porto-Novo, Niamey, Libreville, Brazzaville, Kinshasa, N'Djamena) — so
that a reminder set for 7 h in Douala is not an hour late. An English-speaking country's number is
answered in English, in the zone phonenumbers gives when it gives exactly one. Any other country,
and a WhatsApp user known only by a BSUID, gets DEFAULT_TIMEZONE and DEFAULT_LANGUAGE.

`find_zone` reads what a person types after FUSEAU / TIMEZONE: an IANA name (« Africa/Lagos ») or a
city, matched on the last part of the IANA names with accents, case, spaces and hyphens ignored,
plus the French names of cities that are not themselves in IANA's list (« Yaoundé », « Cotonou »).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from zoneinfo import available_timezones

import phonenumbers
from phonenumbers import timezone as number_zones

from bot.config import Settings

__all__ = ["ENGLISH_REGIONS", "FRENCH_ZONES", "Locale", "default_locale", "find_zone", "locale_for",
           "region_of"]

# Region (ISO 3166) → zone, French answers.
FRENCH_ZONES = {
    "CI": "Africa/Abidjan", "SN": "Africa/Dakar", "ML": "Africa/Bamako", "BF": "Africa/Ouagadougou",
    "GN": "Africa/Conakry", "TG": "Africa/Lome",
    "CM": "Africa/Douala", "BJ": "Africa/Porto-Novo", "NE": "Africa/Niamey", "GA": "Africa/Libreville",
    "CG": "Africa/Brazzaville", "CD": "Africa/Kinshasa", "TD": "Africa/Ndjamena",
}
ENGLISH_REGIONS = frozenset({
    "GH", "NG", "GB", "US", "KE", "LR", "SL", "GM", "UG", "TZ", "ZA", "ZM", "ZW", "MW", "BW", "NA",
    "IE", "AU", "NZ", "JM", "TT", "GG", "JE", "IM",
})
# Cities people name in French that are not the last part of an IANA name (keys as `_key` makes them).
CITIES = {
    "yaounde": "Africa/Douala", "n_djamena": "Africa/Ndjamena", "cotonou": "Africa/Porto-Novo",
    "ouaga": "Africa/Ouagadougou",
    "bobo_dioulasso": "Africa/Ouagadougou", "yamoussoukro": "Africa/Abidjan", "bouake": "Africa/Abidjan",
    "thies": "Africa/Dakar", "pointe_noire": "Africa/Brazzaville", "abuja": "Africa/Lagos",
    "londres": "Europe/London", "bruxelles": "Europe/Brussels", "geneve": "Europe/Zurich",
    "le_caire": "Africa/Cairo", "alger": "Africa/Algiers", "rabat": "Africa/Casablanca",
    "montreal": "America/Toronto", "new_york": "America/New_York",
}
# IANA areas a city is looked for in, in this order (not Etc/…, US/…, the old aliases).
AREAS = ("Africa", "Europe", "America", "Asia", "Atlantic", "Indian", "Pacific", "Australia")


@dataclass(frozen=True)
class Locale:
    timezone: str
    language: str  # "fr" | "en"

    def columns(self) -> dict[str, str]:
        """The new user row's values."""
        return {"timezone": self.timezone, "language": self.language}


def default_locale(settings: Settings) -> Locale:
    """DEFAULT_TIMEZONE and DEFAULT_LANGUAGE."""
    return Locale(settings.default_timezone, settings.default_language)


def region_of(phone: str | None) -> str | None:
    """The number's country (ISO 3166), None when it has no number or no known country."""
    if not phone:
        return None
    try:
        return phonenumbers.region_code_for_number(phonenumbers.parse(phone, None)) or None
    except phonenumbers.NumberParseException:
        return None


def _english_zone(phone: str) -> str | None:
    zones = [z for z in number_zones.time_zones_for_number(phonenumbers.parse(phone, None))
             if z in available_timezones()]
    return zones[0] if len(zones) == 1 else None


def locale_for(phone: str | None, fallback: Locale) -> Locale:
    """A new number's zone and language; `fallback` (the settings' defaults) when its country says
    nothing."""
    region = region_of(phone)
    if region in FRENCH_ZONES:
        return Locale(FRENCH_ZONES[region], "fr")
    if region in ENGLISH_REGIONS and phone:
        return Locale(_english_zone(phone) or fallback.timezone, "en")
    return fallback


def _key(text: str) -> str:
    """Lower case, no accents, one `_` for spaces, hyphens and apostrophes."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return re.sub(r"[\s_'’\-]+", "_", plain.strip()).strip("_")


@functools.cache
def _zones() -> tuple[dict[str, str], dict[str, str]]:
    """(IANA name as `_key` → name, city as `_key` → name), built once."""
    names = sorted(available_timezones())
    by_name = {_key(name.replace("/", " / ")).replace("_/_", "/"): name for name in names}
    by_city: dict[str, str] = {}
    for area in reversed(AREAS):  # earlier areas win
        for name in names:
            if name.startswith(area + "/"):
                by_city[_key(name.rsplit("/", 1)[1])] = name
    return by_name, by_city


def find_zone(text: str) -> str | None:
    """The IANA zone `text` names (an IANA name or a city), None when it names none."""
    by_name, by_city = _zones()
    key = _key(text)
    if "/" in text or key in ("utc", "gmt"):
        return by_name.get(re.sub(r"_?/_?", "/", key)) or ("UTC" if key in ("utc", "gmt") else None)
    return CITIES.get(key) or by_city.get(key)

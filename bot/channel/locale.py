"""A new number's time zone and language, from its country; and a zone named by a person.

The country comes from the calling code, the zone from phonenumbers' time-zone data, which knows
every region's: a country of one zone gets it; a country of several gets the zone of the number's
prefix where the data gives one (+1 416 is Toronto, +1 604 Vancouver), else the country's most
populous (bot.channel.countries.MAIN_ZONES: a DR Congo mobile gets Kinshasa, not Lubumbashi), and
`Locale.guessed` says so, for the welcome to offer FUSEAU. The language is the country's, by region
where the number tells it (bot.channel.countries); the first message may change it afterwards
(bot.channel.language). A number of no known country, and a WhatsApp user known only by a BSUID,
get DEFAULT_TIMEZONE and DEFAULT_LANGUAGE.

`find_zone` reads what a person types after FUSEAU / TIMEZONE: an IANA name (« Africa/Lagos »), the
last part of one (« Lagos »), a few French names of cities (« Cotonou »), or any city of the
gazetteer (bot.channel.places: « Garoua », « Bamenda »), accents, case, spaces and hyphens ignored.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from zoneinfo import available_timezones

import phonenumbers
from phonenumbers import PhoneNumber
from phonenumbers import timezone as number_zones

from bot.channel.countries import ENGLISH, ENGLISH_PLACES, FRENCH, FRENCH_PLACES, MAIN_ZONES
from bot.channel.places import City, closest, find_city, place_key
from bot.config import Settings

__all__ = ["Locale", "country_zones", "default_locale", "find_zone", "locale_for", "near_city", "region_of",
           "region_of_zone"]

# Cities people name in French that are not the last part of an IANA name nor in the gazetteer
# under that name (keys as `place_key` makes them).
CITIES = {
    "ouaga": "Africa/Ouagadougou", "londres": "Europe/London", "rabat": "Africa/Casablanca",
    "new_york": "America/New_York", "cotonou": "Africa/Porto-Novo", "abuja": "Africa/Lagos",
}
# IANA areas a city is looked for in, in this order (not Etc/…, US/…, the old aliases).
AREAS = ("Africa", "Europe", "America", "Asia", "Atlantic", "Indian", "Pacific", "Australia")


@dataclass(frozen=True)
class Locale:
    timezone: str
    language: str  # "fr" | "en"
    guessed: bool = False  # one of the country's zones, the number's prefix not telling which

    def columns(self) -> dict[str, str]:
        """The new user row's values."""
        return {"timezone": self.timezone, "language": self.language}


def default_locale(settings: Settings) -> Locale:
    """DEFAULT_TIMEZONE and DEFAULT_LANGUAGE."""
    return Locale(settings.default_timezone, settings.default_language)


def _parse(phone: str | None) -> PhoneNumber | None:
    if not phone:
        return None
    try:
        return phonenumbers.parse(phone, None)
    except phonenumbers.NumberParseException:
        return None


def region_of(phone: str | None) -> str | None:
    """The number's country (ISO 3166), None when it has no number or no known country."""
    number = _parse(phone)
    return (phonenumbers.region_code_for_number(number) or None) if number is not None else None


@functools.cache
def _installed_zones() -> frozenset[str]:
    """The zones this machine's tz database has, read once: available_timezones walks its
    directories at each call, and a new number's first webhook asked once per zone of its country
    (6.5 ms of the event loop for a number of Côte d'Ivoire, 31 µs now)."""
    return frozenset(available_timezones())


def _zones(number: PhoneNumber) -> list[str]:
    return [z for z in number_zones.time_zones_for_number(number) if z in _installed_zones()]


@functools.cache
def country_zones() -> dict[str, tuple[str, ...]]:
    """Country (ISO 3166) → its zones, from IANA's zone.tab (the tzdata package's copy)."""
    found: dict[str, list[str]] = {}
    text = (resources.files("tzdata.zoneinfo") / "zone.tab").read_text(encoding="utf-8")
    for line in text.splitlines():
        if line and not line.startswith("#"):
            region, _, name = line.split("\t")[:3]
            found.setdefault(region, []).append(name)
    return {region: tuple(names) for region, names in found.items()}


def _zone(number: PhoneNumber, region: str) -> tuple[str | None, bool]:
    """(zone, guessed). phonenumbers gives each prefix a zone of the right offset, not always the
    country's own (Morocco's is Atlantic/Canary, Algeria's Europe/Paris, which keep summer time
    where these countries do not): its zone is taken when it is one of the country's, else the
    country's only zone, else its main one (guessed), else the prefix's."""
    zones = _zones(number)
    own = country_zones().get(region, ())
    mine = [z for z in zones if z in own]
    if len(mine) == 1:
        return mine[0], False
    if len(own) == 1:
        return own[0], False
    main = MAIN_ZONES.get(region)
    if main is not None:
        return main, True
    candidates = mine or zones or list(own)
    return (candidates[0], len(candidates) > 1) if candidates else (None, False)


def _language(number: PhoneNumber, region: str) -> str | None:
    """The country's language, by region where the number names its place; None: neither served."""
    if region in ENGLISH_PLACES or region in FRENCH_PLACES:
        # Imported here: the geocoder's place names for every country cost 100 MB and 0.6 s in each
        # process (serve, worker, console) that imports it; only a bilingual country's new numbers
        # need it, and the first of them in a process waits for it once.
        from phonenumbers import geocoder

        place = geocoder.description_for_number(number, "en")
        if place in ENGLISH_PLACES.get(region, ()):
            return "en"
        if place in FRENCH_PLACES.get(region, ()):
            return "fr"
    return "fr" if region in FRENCH else "en" if region in ENGLISH else None


def locale_for(phone: str | None, fallback: Locale) -> Locale:
    """A new number's zone and language; `fallback` (the settings' defaults) for what its country
    does not say."""
    number = _parse(phone)
    region = phonenumbers.region_code_for_number(number) if number is not None else None
    if number is None or not region:
        return fallback
    zone, guessed = _zone(number, region)
    return Locale(zone or fallback.timezone, _language(number, region) or fallback.language,
                  guessed and zone is not None)


def region_of_zone(zone: str) -> str | None:
    """The French-speaking country whose numbers get `zone`, None when none or several do."""
    found = {region for region in FRENCH
             if MAIN_ZONES.get(region, (country_zones().get(region) or ("",))[0]) == zone}
    return found.pop() if len(found) == 1 else None


@functools.cache
def _iana() -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """(IANA name as `place_key` → name, city → a zone of zone.tab, city → an old link such as
    America/Montreal), built once."""
    names = sorted(_installed_zones())
    by_name = {place_key(name.replace("/", " / ")).replace("_/_", "/"): name for name in names}
    listed = {zone for zones in country_zones().values() for zone in zones}
    cities: tuple[dict[str, str], dict[str, str]] = ({}, {})
    for area in reversed(AREAS):  # earlier areas win
        for name in names:
            if name.startswith(area + "/"):
                cities[name not in listed][place_key(name.rsplit("/", 1)[1])] = name
    return by_name, *cities


def find_zone(text: str) -> str | None:
    """The IANA zone `text` names (an IANA name or a city), None when it names none. A city IANA
    names a zone after comes first (London is Europe/London, not London, Ontario), then the
    gazetteer's own names (Montréal is America/Toronto, not the old link America/Montreal), the old
    links (Calcutta), and the gazetteer's other names."""
    by_name, by_city, by_link = _iana()
    key = place_key(text)
    if "/" in text or key in ("utc", "gmt"):
        return by_name.get(re.sub(r"_?/_?", "/", key)) or ("UTC" if key in ("utc", "gmt") else None)
    city = find_city(text)
    own = city.zone if city is not None and place_key(city.name) == key else None
    other = city.zone if city is not None else None  # one of the city's other names (« Tananarive »)
    return CITIES.get(key) or by_city.get(key) or own or by_link.get(key) or other


def near_city(text: str) -> City | None:
    """The gazetteer's city nearest a name `find_zone` does not know (« Garuoa »), for a « did you
    mean »; None when none is near."""
    return closest(text) if find_zone(text) is None else None

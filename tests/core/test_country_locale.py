"""A new number's zone and language from its country alone (bot.channel.locale), the language of a
message (bot.channel.language) and the gazetteer FUSEAU reads (bot.channel.places): pure functions,
no database. The first message and FUSEAU through the webhook: tests/core/test_country_defaults.py."""

from __future__ import annotations

import subprocess
import sys
from zoneinfo import available_timezones

import phonenumbers
import pytest

from bot.channel.countries import MAIN_ZONES
from bot.channel.language import spoken_language
from bot.channel.locale import Locale, country_zones, find_zone, locale_for, near_city, region_of_zone
from bot.channel.places import find_city

# The settings' defaults, chosen unlike any country's so that a country's own values show.
DEFAULTS = Locale("Etc/UTC", "en")

# number, zone, language, guessed (one of the country's zones, the prefix not telling which)
NUMBERS = [
    ("+2250123456789", "Africa/Abidjan", "fr", False),  # Côte d'Ivoire
    ("+221701234567", "Africa/Dakar", "fr", False),  # Senegal
    ("+22365012345", "Africa/Bamako", "fr", False),  # Mali
    ("+22670123456", "Africa/Ouagadougou", "fr", False),  # Burkina Faso
    ("+224601123456", "Africa/Conakry", "fr", False),  # Guinea
    ("+22890112345", "Africa/Lome", "fr", False),  # Togo
    ("+237671234567", "Africa/Douala", "fr", False),  # Cameroon, a mobile: no region, French
    ("+237222231234", "Africa/Douala", "fr", False),  # Cameroon, a Yaoundé line
    ("+237233361234", "Africa/Douala", "en", False),  # Cameroon, a Bamenda line (North-West)
    ("+237233331234", "Africa/Douala", "en", False),  # Cameroon, a Tiko line (South-West)
    ("+2290195123456", "Africa/Porto-Novo", "fr", False),  # Benin
    ("+22793123456", "Africa/Niamey", "fr", False),  # Niger
    ("+24106031234", "Africa/Libreville", "fr", False),  # Gabon
    ("+242061234567", "Africa/Brazzaville", "fr", False),  # Congo
    ("+243991234567", "Africa/Kinshasa", "fr", True),  # DR Congo: Kinshasa, not Lubumbashi
    ("+23563012345", "Africa/Ndjamena", "fr", False),  # Chad
    ("+261321234567", "Indian/Antananarivo", "fr", False),  # Madagascar (UTC+3, not Abidjan's +0)
    ("+23670012345", "Africa/Bangui", "fr", False),  # Central African Republic
    ("+250720123456", "Africa/Kigali", "en", False),  # Rwanda
    ("+25779561234", "Africa/Bujumbura", "fr", False),  # Burundi
    ("+22222123456", "Africa/Nouakchott", "fr", False),  # Mauritania
    ("+240222123456", "Africa/Malabo", "fr", False),  # Equatorial Guinea
    ("+212650123456", "Africa/Casablanca", "fr", False),  # Morocco (phonenumbers says Atlantic/Canary)
    ("+21620123456", "Africa/Tunis", "fr", False),  # Tunisia
    ("+213551234567", "Africa/Algiers", "fr", False),  # Algeria (phonenumbers says Europe/Paris)
    ("+25377831001", "Africa/Djibouti", "fr", False),  # Djibouti
    ("+2693212345", "Indian/Comoro", "fr", False),  # Comoros
    ("+262692123456", "Indian/Reunion", "fr", False),  # Réunion
    ("+23052512345", "Indian/Mauritius", "fr", False),  # Mauritius
    ("+2482510123", "Indian/Mahe", "en", False),  # Seychelles
    ("+233231234567", "Africa/Accra", "en", False),  # Ghana
    ("+2348021234567", "Africa/Lagos", "en", False),  # Nigeria
    ("+254712123456", "Africa/Nairobi", "en", False),  # Kenya
    ("+27711234567", "Africa/Johannesburg", "en", False),  # South Africa
    ("+201001234567", "Africa/Cairo", "en", False),  # Egypt: neither served, the default language
    ("+251911234567", "Africa/Addis_Ababa", "en", False),  # Ethiopia: likewise
    ("+33612345678", "Europe/Paris", "fr", False),  # France
    ("+32450001234", "Europe/Brussels", "fr", False),  # Belgium
    ("+41781234567", "Europe/Zurich", "fr", False),  # Switzerland
    ("+352628123456", "Europe/Luxembourg", "fr", False),  # Luxembourg
    ("+50934101234", "America/Port-au-Prince", "fr", False),  # Haiti
    ("+15145551234", "America/Toronto", "fr", False),  # Canada, Montreal (Quebec): French
    ("+14165550123", "America/Toronto", "en", False),  # Canada, Toronto
    ("+16045550123", "America/Vancouver", "en", False),  # Canada, Vancouver: its prefix's zone
    ("+12125551234", "America/New_York", "en", False),  # United States, New York
    ("+13105551234", "America/Los_Angeles", "en", False),  # United States, California
    ("+447400123456", "Europe/London", "en", False),  # United Kingdom
    ("+918123456789", "Asia/Kolkata", "en", False),  # India
    ("+74951234567", "Europe/Moscow", "en", False),  # Russia, a Moscow line
    ("+74232123456", "Asia/Vladivostok", "en", False),  # Russia, a Vladivostok line
    ("+79123456789", "Europe/Moscow", "en", True),  # Russia, a mobile: the main zone
    ("+5511961234567", "America/Sao_Paulo", "en", False),  # Brazil
    ("+61412345678", "Australia/Sydney", "en", True),  # Australia, a mobile
    ("+525512345678", "America/Mexico_City", "en", False),  # Mexico
]


@pytest.mark.parametrize(("number", "zone", "language", "guessed"), NUMBERS)
def test_a_numbers_zone_and_language(number: str, zone: str, language: str, guessed: bool) -> None:
    assert locale_for(number, DEFAULTS) == Locale(zone, language, guessed)


def test_a_process_loads_the_place_names_only_for_a_bilingual_countrys_number() -> None:
    # 100 MB and 0.6 s a process (serve, worker, console): loaded by the first number that needs it.
    code = ("import sys; from bot.channel.locale import locale_for; import bot.cli, bot.console, bot.warm; "
            "from bot.channel.locale import Locale as L; d = L('Etc/UTC', 'en'); "
            "locale_for('+2250123456789', d); locale_for('+33612345678', d); "
            "print('phonenumbers.geocoder' in sys.modules); "
            "print(locale_for('+237233361234', d).language, 'phonenumbers.geocoder' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == ["False", "en True"]


def test_the_tz_database_is_read_once_not_at_each_new_number(monkeypatch: pytest.MonkeyPatch) -> None:
    import bot.channel.locale as module

    reads: list[int] = []

    def counted() -> set[str]:
        reads.append(1)
        return available_timezones()

    monkeypatch.setattr(module, "available_timezones", counted)
    module._installed_zones.cache_clear()
    try:
        for number, zone, *_ in NUMBERS:
            assert locale_for(number, DEFAULTS).timezone == zone
    finally:
        module._installed_zones.cache_clear()
    assert len(reads) == 1


def test_the_table_covers_40_numbers_of_30_countries() -> None:
    countries = {phonenumbers.region_code_for_number(phonenumbers.parse(n)) for n, *_ in NUMBERS}
    assert len(NUMBERS) >= 40 and len(countries) >= 30
    assert all(phonenumbers.is_valid_number(phonenumbers.parse(n)) for n, *_ in NUMBERS)


@pytest.mark.parametrize("phone", [None, "", "+999123456", "not a number"])
def test_a_number_of_no_known_country_gets_the_defaults(phone: str | None) -> None:
    assert locale_for(phone, DEFAULTS) == DEFAULTS


def test_every_country_of_several_zones_has_its_main_one() -> None:
    """A country of several zones (IANA's zone.tab) that has numbers is never left to whichever zone
    phonenumbers lists first: MAIN_ZONES names one of its own zones."""
    several = {region for region, zones in country_zones().items() if len(zones) > 1}
    with_numbers = several & phonenumbers.SUPPORTED_REGIONS
    assert with_numbers - MAIN_ZONES.keys() == set()
    for region, zone in MAIN_ZONES.items():
        assert zone in country_zones()[region] and zone in available_timezones(), region


def test_the_zone_of_a_french_speaking_country_names_it() -> None:
    assert region_of_zone("Africa/Abidjan") == "CI" and region_of_zone("Africa/Douala") == "CM"
    assert region_of_zone("Indian/Antananarivo") == "MG" and region_of_zone("Europe/Paris") == "FR"
    assert region_of_zone("Africa/Lagos") is None and region_of_zone("Mars/Olympus") is None


@pytest.mark.parametrize(("text", "language"), [
    ("Hello", "en"), ("Hi, can you help me with my maths homework?", "en"), ("what is photosynthesis", "en"),
    ("Good morning", "en"), ("pls help me", "en"), ("Explain Pythagoras theorem", "en"),
    ("Bonjour", "fr"), ("Salut tu peux m'aider en maths", "fr"), ("c quoi la photosynthèse", "fr"),
    ("svp aide moi", "fr"), ("bjr", "fr"), ("explique le théorème de Pythagore", "fr"),
    ("Quelle est la capitale du Cameroun ?", "fr"),
    ("Hola, necesito ayuda con mis deberes", "other"), ("Olá, preciso de ajuda", "other"),
    ("Habari yako, rafiki", "other"), ("Guten Tag, wie geht es dir", "other"),
    ("1", None), ("😀", None), ("ok", None), ("", None), ("Mbote", None),
])
def test_the_language_of_a_message(text: str, language: str | None) -> None:
    assert spoken_language(text) == language


@pytest.mark.parametrize(("name", "zone"), [
    ("Garoua", "Africa/Douala"), ("garoua", "Africa/Douala"), ("Bamenda", "Africa/Douala"),
    ("BAFOUSSAM", "Africa/Douala"), ("Maroua", "Africa/Douala"), ("Antananarivo", "Indian/Antananarivo"),
    ("Tananarive", "Indian/Antananarivo"), ("Yaoundé", "Africa/Douala"), ("yaounde", "Africa/Douala"),
    ("Bobo Dioulasso", "Africa/Ouagadougou"), ("bobo-dioulasso", "Africa/Ouagadougou"),
    ("N Djamena", "Africa/Ndjamena"), ("Lubumbashi", "Africa/Lubumbashi"), ("Goma", "Africa/Lubumbashi"),
    ("Saint-Louis", "Africa/Dakar"), ("Port-Gentil", "Africa/Libreville"), ("Montréal", "America/Toronto"),
    ("Bruxelles", "Europe/Brussels"), ("Genève", "Europe/Zurich"), ("Lyon", "Europe/Paris"),
    ("Cotonou", "Africa/Porto-Novo"), ("Lomé", "Africa/Lome"), ("Africa/Lagos", "Africa/Lagos"),
])
def test_fuseau_knows_the_gazetteers_cities(name: str, zone: str) -> None:
    assert find_zone(name) == zone


def test_a_misspelt_city_is_offered_not_taken() -> None:
    assert find_zone("Garuoa") is None
    near = near_city("Garuoa")
    assert near is not None and (near.name, near.zone) == ("Garoua", "Africa/Douala")
    assert near_city("Bamanda") is not None and near_city("Bamanda").name == "Bamenda"  # type: ignore[union-attr]
    assert near_city("Xqzwv") is None and near_city("Garoua") is None  # a known name needs no offer


LARGE = {
    "CM": "Yaoundé", "CI": "Abidjan", "SN": "Dakar", "CD": "Kinshasa", "MG": "Antananarivo",
    "MA": "Casablanca", "DZ": "Algiers", "TN": "Tunis", "EG": "Cairo", "NG": "Lagos", "KE": "Nairobi",
    "ZA": "Johannesburg", "ET": "Addis Ababa", "RW": "Kigali", "BI": "Bujumbura", "MR": "Nouakchott",
    "GQ": "Malabo", "CF": "Bangui", "TD": "N'Djamena", "NE": "Niamey", "ML": "Bamako",
    "BF": "Ouagadougou", "GN": "Conakry", "TG": "Lomé", "BJ": "Cotonou", "GA": "Libreville",
    "CG": "Brazzaville", "DJ": "Djibouti", "KM": "Moroni", "SO": "Mogadishu", "AO": "Luanda",
    "FR": "Marseille", "BE": "Liège", "CH": "Lausanne", "CA": "Québec",
}


@pytest.mark.parametrize(("region", "name"), LARGE.items())
def test_the_gazetteer_holds_the_large_cities_of_africa_and_the_french_speaking_countries(
        region: str, name: str) -> None:
    city = find_city(name)
    assert city is not None and city.country == region and city.population > 50_000

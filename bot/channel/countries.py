"""What a country's numbers say about their owner: the languages spoken, and the main zone of a
country that has several.

French where French is official or the language of school and business; English likewise. A
bilingual country is answered by region where the number's prefix tells it (phonenumbers' geocoder
names the place of a fixed line): Cameroon's North-West and South-West regions and Canada outside
Quebec in English, the rest of each in French. Mobile numbers name no place: they get the country's
main language, and their first message decides (bot.channel.language). Rwanda and the Seychelles
teach in English and are answered in it; Mauritius, whose press and daily life are in French, in
French. Other countries get DEFAULT_LANGUAGE.

MAIN_ZONES is the most populous zone of each country of several zones (IANA's zone.tab), used when a
number's prefix does not settle which (a DR Congo mobile: Kinshasa, not Lubumbashi); such a number
is told its zone and FUSEAU in its welcome. tests/core/test_country_locale.py holds it complete.
"""

from __future__ import annotations

__all__ = ["ENGLISH", "ENGLISH_PLACES", "FRENCH", "FRENCH_PLACES", "MAIN_ZONES"]

FRENCH = frozenset({
    # Africa and the Indian Ocean
    "BJ", "BF", "BI", "CM", "CF", "TD", "KM", "CG", "CD", "CI", "DJ", "GQ", "GA", "GN", "MG", "ML",
    "MR", "NE", "SN", "TG", "DZ", "MA", "TN", "MU", "RE", "YT",
    # Europe, America, the Pacific, and Lebanon
    "FR", "BE", "CH", "LU", "MC", "HT", "GP", "MQ", "GF", "PM", "BL", "MF", "NC", "PF", "WF", "LB",
})
ENGLISH = frozenset({
    "GH", "NG", "KE", "LR", "SL", "GM", "UG", "TZ", "ZA", "ZM", "ZW", "MW", "BW", "NA", "LS", "SZ",
    "SS", "RW", "SC", "GB", "IE", "US", "CA", "AU", "NZ", "JM", "TT", "BS", "BB", "BZ", "GY", "AG",
    "DM", "GD", "KN", "LC", "VC", "BM", "KY", "TC", "VG", "VI", "GG", "JE", "IM", "MT", "IN", "PK",
    "PH", "SG",
})
# Places phonenumbers' geocoder names (in English) where the other language is spoken:
# Cameroon's North-West and South-West regions, Canada's Quebec.
ENGLISH_PLACES = {
    "CM": frozenset({
        "Bamenda", "Mbambili", "Wum", "Nkambe", "Kumbo", "Ndop", "Fundong", "Bali", "Mbengwi",  # North-West
        "Buea", "Limbe", "Tiko", "Kumba", "Muyuka", "Mamfe", "Mundemba", "Fontem", "Idenau",  # South-West
    }),
}
FRENCH_PLACES = {"CA": frozenset({"Quebec", "Québec"})}
MAIN_ZONES = {
    "CD": "Africa/Kinshasa", "ES": "Europe/Madrid", "PT": "Europe/Lisbon",
    "CA": "America/Toronto", "US": "America/New_York", "MX": "America/Mexico_City",
    "BR": "America/Sao_Paulo", "AR": "America/Argentina/Buenos_Aires", "CL": "America/Santiago",
    "EC": "America/Guayaquil", "GL": "America/Nuuk", "RU": "Europe/Moscow", "KZ": "Asia/Almaty",
    "UA": "Europe/Kyiv", "MN": "Asia/Ulaanbaatar", "UZ": "Asia/Tashkent", "CN": "Asia/Shanghai",
    "ID": "Asia/Jakarta", "MY": "Asia/Kuala_Lumpur", "CY": "Asia/Nicosia", "PS": "Asia/Gaza",
    "DE": "Europe/Berlin", "AU": "Australia/Sydney", "NZ": "Pacific/Auckland",
    "PF": "Pacific/Tahiti", "KI": "Pacific/Tarawa", "FM": "Pacific/Chuuk", "MH": "Pacific/Majuro",
    "PG": "Pacific/Port_Moresby",
}

"""Distress said in words: a French and English phrase list, matched on folded text.

Text is folded before matching: lower case, accents and apostrophes dropped, a letter typed three
times or more kept once, and the spellings of SMS (« jveux », « chui », « mouri », « kms ») written
out. Each phrase is a regular expression over the folded words, with word boundaries, written so
that it needs the child to speak of themselves (« je veux mourir », « il me frappe », « on me
touche ») and not of a topic: « la mort de Louis XVI », « mourir de rire », « le suicide chez
Camus », « il me bat aux échecs » are not distress. A false positive costs a kind message and a
flag a person looks at, never a refusal to teach, so the list leans to catching.

SAFETY_PHRASES_FILE adds the operator's own phrases, one a line: `category: phrase` (one of
CATEGORIES; `abuse` and `violence`, the names of earlier releases, are still read), `#` for
comments; a phrase is matched as whole words of folded text. A file that cannot be read is logged
and the list of the code still applies.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from bot.texts import fr_en

log = logging.getLogger(__name__)

__all__ = ["ALIASES", "CATEGORIES", "LABELS", "PhraseList", "fold", "label", "load_phrases"]

# Most serious first: a message that says two things is flagged for the first.
CATEGORIES = ("self_harm", "sexual_abuse", "abuse_home", "threats", "forced_marriage", "school_violence",
              "bullying", "runaway", "child_labour")
# The names of earlier releases, still read in SAFETY_PHRASES_FILE and on old flags.
ALIASES = {"abuse": "sexual_abuse", "violence": "abuse_home"}
# What each category is, for the adults told of a flag: French, English.
LABELS: dict[str, tuple[str, str]] = {
    "self_harm": ("pensées de se faire du mal ou de mourir", "thoughts of self-harm or of dying"),
    "sexual_abuse": ("abus ou exploitation sexuels", "sexual abuse or exploitation"),
    "abuse_home": ("violences subies à la maison", "violence against them at home"),
    "threats": ("menaces contre l'enfant", "threats against the child"),
    "forced_marriage": ("mariage forcé ou précoce", "forced or early marriage"),
    "school_violence": ("violences à l'école (châtiments corporels)",
                        "violence at school (corporal punishment)"),
    "bullying": ("harcèlement ou cyber-harcèlement", "bullying or cyber-bullying"),
    "runaway": ("fugue ou nuit dehors", "running away or sleeping outside"),
    "child_labour": ("travail de l'enfant ou retrait de l'école",
                     "a child put to work or taken out of school"),
    "abuse": ("maltraitance ou abus (peut-être sexuel)", "abuse (possibly sexual)"),
    "violence": ("violence subie", "violence against them"),
}


def label(category: str, language: str) -> str:
    """What `category` is, in the reader's language (the category's own name if unknown)."""
    return fr_en(language, *LABELS.get(category, (category, category)))

# SMS and chat spellings, word for word, to what the phrases expect.
_SPELLINGS = {
    "jveux": "je veux", "jveu": "je veux", "jvx": "je veux", "jvoudrais": "je voudrais", "vx": "veux",
    "veu": "veux", "mouri": "mourir", "mourrir": "mourir", "mourire": "mourir", "chui": "je suis",
    "chuis": "je suis", "jsuis": "je suis", "jsui": "je suis", "jai": "j ai", "jme": "je me",
    "jmen": "je m en", "frape": "frappe", "frapent": "frappent", "kms": "kill myself",
    "wanna": "want to", "gonna": "going to", "im": "i am", "dont": "do not", "cant": "can not",
    "ptn": "", "tt": "tout", "ds": "dans", "tjr": "toujours", "tjrs": "toujours",
    "pu": "plus", "pl": "plus", "mm": "meme", "ke": "que", "k": "que", "kil": "qu il", "ki": "qui",
    "koi": "quoi", "g": "j ai", "jss": "je suis", "jpeu": "je peux", "jpx": "je peux",
    "jpeux": "je peux", "jen": "j en", "bcp": "beaucoup", "tlm": "tout le monde", "pr": "pour",
    "mwa": "moi", "moa": "moi", "persone": "personne", "presonne": "personne", "jamai": "jamais",
    "vivr": "vivre", "viv": "vivre", "mn": "mon", "ma3": "", "ns": "nous", "vs": "vous", "tjs": "toujours",
    "pk": "pourquoi", "pq": "pourquoi", "pcq": "parce que",
    "ya": "il y a", "jdois": "je dois", "jvais": "je vais", "jvai": "je vais", "jv": "je vais",
    "u": "you", "ur": "your", "pls": "please", "plz": "please",
}

_ME = r"(?:je|j)"
# « mon frère va me tuer si je touche sa console mdr » is a joke the child says it is.
_NOT_JOKING = r"(?!.*\b(?:mdr|lol|ptdr|rigole|blague)\b)"
_WANT = r"(?:veux|veut|voudrais|vais|prefererais|pense a|ai envie de|a envie de|ai envi de)"
_BUILTIN: dict[str, tuple[str, ...]] = {
    "self_harm": (
        rf"\b{_ME} {_WANT} (?:me )?(?:mourir|crever)\b(?! de (?:rire|faim|froid|chaud|honte|ennui|peur))",
        r"(?<!pas )(?<!plus )\b(?:envie|envi) de (?:mourir|crever)\b(?! de (?:rire|faim|froid|chaud|honte))",
        r"\b(?:me suicid\w*|suicidaire|je pense au suicide|me tuer moi meme)\b",
        rf"\b{_ME} {_WANT} me tuer\b",
        r"\b(?:g|j ai|jai|on a) envie d en finir\b(?! avec (?!la vie|tout|moi))",
        rf"\b{_ME} {_WANT} en finir\b(?! avec (?!la vie|tout|moi))",
        r"\ben finir avec (?:la vie|ma vie)\b",
        r"\b(?:plus|pas|aucune) envie de vivre\b|\bmarre de (?:la vie|vivre)\b",
        r"\bme (?:faire du mal|scarifi\w*|mutil\w*)\b",
        r"\bje me (?:coupe|blesse) (?:expres|les bras|les poignets)\b",
        r"\b(?:kill|killing|hurt|hurting|cut|cutting) myself\b|\bsuicidal\b|\bself harm\w*\b",
        r"\b(?:i|i am|i m) (?:want to|going to|wish i could|wish to) die\b|\bi wish i (?:was|were) dead\b",
        r"\b(?:want to|going to) (?:end my life|end it all|commit suicide)\b|\bend my life\b",
        r"\b(?:do not|don t) want to (?:live|be alive)\b|\bno reason to live\b",
        rf"\b{_ME} (?:ne )?(?:veux|veut|voudrais|peux) (?:plus|pas|vraiment plus) "
        r"(?:vivre|continuer a vivre)\b",
        r"\bje vais me (?:jeter|noyer|tuer|empoisonner)\b"
        r"|\bme pendre\b(?! (?:a|au) (?:la|une|cou|bras) ?(?:barre|branche)?)",
        r"\bfatigu\w* de (?:vivre|la vie|ma vie|exister)\b|\bmarre d exister\b",
        r"\b(?:la|ma) vie (?:n a|a) (?:plus|pas|aucun) (?:de |aucun )?sens\b",
        r"\bje me (?:coupe|scarifie)\b(?! (?:les cheveux|les ongles|la frange|le doigt))"
        r" (?:avec|les|la|encore|souvent|chaque)\b",
        r"\bpersonne ne m aime\b|\b(?:no one|nobody) (?:loves|cares about) me\b",
        r"\b(?:seraient|serait|serais|sera) mieux sans moi\b|\bbetter off without me\b",
        r"\bne (?:plus|jamais) me reveiller\b|\bnever wake up\b|\bhang myself\b",
        r"\b(?:tired of|sick of) (?:living|life|being alive)\b",
    ),
    "sexual_abuse": (
        # « ça me touche (beaucoup) » is being moved, not touched.
        r"(?<!ca )(?<!cela )(?<!tu )(?<!je )\bme touche(?:nt|r)?\b"
        r"(?! (?:le coeur|beaucoup|vraiment|profondement))",
        r"\b(?:touche|touchent|toucher) (?:mes parties|mon sexe|ma poitrine|mes seins|mes fesses)\b",
        r"\battouchements?\b|\babus(?:e|ee|es)? sexuel\w*\b",
        r"\b(?:m a|ma|m ont) (?:viol\w*|abus\w*|force a)\b|\bon me (?:viol\w*|force a)\b",
        r"\b(?:touches|touched|touching|molests|molested|raped|abuses|abused) me\b|\bsexually abused\b",
        r"\b(?:he|she|they) (?:makes|make|made|forces|forced) me (?:touch|undress|take off)\b",
        r"\bphotos? (?:de moi )?(?:nue?s?|toute nue|tout nu|sans (?:habits|vetements))\b|\bnudes?\b",
        r"\b(?:me|m) (?:demande|demandent|demandait|reclame) (?:des|mes|une) photos?\b",
        r"\b(?:bonne )?notes? si (?:je|j) (?:viens|vais|accepte|couche|sors)\b",
        r"\bsi (?:je|j) (?:couche|sors) avec (?:lui|elle)\b",
        r"\b(?:send|sends|asks? me for|asked me for) (?:me )?(?:nudes|naked (?:pics|photos|pictures))\b",
        r"\b(?:grade|grades|marks) if i (?:come|sleep|go)\b",
    ),
    "abuse_home": (
        r"(?<!je )(?<!tu )\bme (?:frappe|frappent|frappait|frappaient|tape|tapent|tabasse\w*|fouett\w*|"
        r"brule|brulent)\b(?! sur (?:les nerfs|le systeme))",
        # « il me bat » but not « il me bat (toujours) aux échecs »: beaten at a game.
        r"(?<!je )(?<!tu )\bme (?:bat|battent|battait|battaient)\b(?!(?: \w+)? (?:aux|au|a|en)\b)",
        r"\bje (?:suis|me fais) (?:battue?|frappee?|tabassee?) (?:par|a la maison|tous les jours|chaque)",
        r"\b(?:he|she|they|dad|mom|mum|father|mother|uncle|teacher) (?:hits|hit|beats|beat|kicks|burns) me\b"
        r"(?! (?:at|in|to))",
        r"\bbeats? me up\b",
        r"\b(?:papa|maman|mon pere|ma mere|mon oncle|ma tante|ma maratre|le vieux|la vieille|mon beau pere|"
        r"ma belle mere|tonton|tata|mon tuteur|ma tutrice) (?:me|m a|nous) "
        r"(?:frappe|tape|bat|cogne|brule|fouette)\b"
        r"(?! (?:aux|au|a|en)\b)",
        r"\bme (?:cogne|cognent|chicotte\w*)\b",
    ),
    "threats": (
        # A person threatens: « il va me tuer », not « cette chaleur va me tuer ».
        r"\b(?:il|ils|elle|elles|on|qu il|qu ils|qu elle|kil|quelqu un|un \w+|des \w+) "
        rf"(?:menace\w*|veut|veulent|voulait|vont|va) (?:de )?me tuer\b{_NOT_JOKING}",
        r"\bmenace\w* de me tuer\b",
        rf"\bme tuer si (?:je|j)\b{_NOT_JOKING}|\bme (?:menace|menacent)\b",
        r"\bthreatens? (?:me|to kill me)\b|\b(?:wants|want|going) to kill me\b",
    ),
    "forced_marriage": (
        r"\bmari(?:er|ee|e) de force\b",
        r"\b(?:veut|veulent|vont|va|voulait) me (?:marier|donner en mariage)\b",
        r"\bme (?:marier|donner) (?:a|avec) (?:un|mon|son|le)\b",
        r"\b(?:forced|forcing|force) (?:me )?to marry\b|\bmarry me off\b|\bmake me marry\b",
    ),
    "school_violence": (
        r"\b(?:le maitre|la maitresse|le prof\w*|la prof\w*|le directeur|la directrice|l enseignant\w*|"
        r"le surveillant|le censeur|les profs|les maitres) (?:nous|me) (?:frappe\w*|tape\w*|bat|battent|"
        r"fouette\w*|chicotte\w*|cogne\w*)\b",
        r"\b(?:nous|me) (?:frappe|tape|bat|fouette) avec (?:la|une) (?:chicotte|regle|ceinture|cravache)\b",
        r"\b(?:teacher|teachers|headmaster|principal) (?:hits|beats|whips|canes) (?:me|us)\b",
    ),
    "bullying": (
        r"\bje suis harcel\w*\b|\b(?:on|ils|elles) me harcel\w*\b|\bharcel\w* a l ecole\b",
        r"\b(?:se moquent|se moque) (?:tous |toujours )?de moi\b",
        r"\b(?:ont|a) (?:mis|partage|publie|envoye|poste) (?:ma|mes) photos?\b",
        r"\bi (?:am|m) (?:being )?bullied\b|\b(?:they|everyone) (?:bully|bullies) me\b",
    ),
    "runaway": (
        r"\bje (?:dors|dormais|vais dormir) (?:dehors|dans la rue|a la gare|sous)\b",
        r"\bje (?:me suis|vais me) (?:enfui\w*|sauve\w*|barre\w*)\b|\bj ai fugue\b|\bje (?:vais )?fugu\w*\b",
        r"\b(?:ran|run|running) away from home\b|\bi (?:sleep|am sleeping|slept) (?:outside|on the street)\b",
    ),
    "child_labour": (
        r"\b(?:n irai|ne vais|ne peux|peux) plus (?:aller )?a l ecole\b",
        r"\b(?:m a|m ont|on m a) (?:retire|retiree|sorti|sortie) de l ecole\b",
        r"\bje (?:dois|suis oblige\w* de) (?:travailler|vendre)\b(?! (?:mes|mon|ma) (?:lecon|maths|devoir))",
        r"\b(?:taken out of|pulled out of|can not go to) school\b|\b(?:make|makes|made) me work\b",
    ),
}


def fold(text: str) -> str:
    """The words of `text` as phrases are matched: lower case, no accents, no punctuation, SMS
    spellings written out, one space between words."""
    decomposed = unicodedata.normalize("NFKD", (text or "").lower())
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    bare = re.sub(r"(.)\1{2,}", r"\1", bare)  # « mouriiiir » is « mourir »
    words = re.sub(r"[^a-z0-9]+", " ", bare.replace("œ", "oe")).split()
    return " ".join(w for w in (_SPELLINGS.get(word, word) for word in words) if w)


@dataclass(frozen=True)
class PhraseList:
    """The compiled phrases of each category, the code's and the operator's."""

    patterns: tuple[tuple[str, re.Pattern[str]], ...]

    def match(self, text: str) -> str | None:
        """The category of the first phrase found in `text`, most serious category first."""
        folded = fold(text)
        if not folded:
            return None
        for category, pattern in self.patterns:
            if pattern.search(folded):
                return category
        return None


def _operator_phrases(path: str) -> list[tuple[str, str]]:
    """`category: phrase` lines of SAFETY_PHRASES_FILE, as (category, regex of the folded words)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        log.error("SAFETY_PHRASES_FILE cannot be read; the built-in phrases still apply",
                  extra={"path": path, "error": str(exc)})
        return []
    found = []
    for number, line in enumerate(lines, 1):
        category, _, phrase = line.partition(":")
        category, words = category.strip().lower(), fold(phrase)
        category = ALIASES.get(category, category)
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if category not in CATEGORIES or not words:
            log.warning("SAFETY_PHRASES_FILE line skipped: expected `category: phrase`",
                        extra={"path": path, "line": number})
            continue
        found.append((category, rf"\b{re.escape(words)}\b"))
    return found


_CACHE: dict[tuple[str, float], PhraseList] = {}


def load_phrases(path: str = "") -> PhraseList:
    """The built-in phrases and those of the file at `path` (read again when it changes)."""
    try:
        stamp = Path(path).stat().st_mtime if path else 0.0
    except OSError:
        stamp = -1.0
    key = (path, stamp)
    if key not in _CACHE:
        extra = _operator_phrases(path) if path else []
        ordered = [(c, p) for c in CATEGORIES for p in _BUILTIN[c]]
        ordered += sorted(extra, key=lambda item: CATEGORIES.index(item[0]))
        ordered.sort(key=lambda item: CATEGORIES.index(item[0]))  # stable: the code's first
        _CACHE.clear()
        _CACHE[key] = PhraseList(tuple((c, re.compile(p)) for c, p in ordered))
    return _CACHE[key]

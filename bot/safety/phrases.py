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

from bot.safety.wordings import A_TEST, MORE
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
    "avc": "avec", "qd": "quand", "kan": "quand", "kand": "quand", "pa": "pas", "pck": "parce que",
    "dpuis": "depuis", "depui": "depuis", "dps": "depuis", "chak": "chaque", "tro": "trop",
    "mtn": "maintenant", "pers": "personne", "kelk1": "quelqu un", "kelkun": "quelqu un",
    "lecole": "l ecole", "daller": "d aller", "largent": "l argent", "dotres": "d autres",
    "dor": "dors", "sui": "suis", "peu": "peux", "vai": "vais", "fotos": "photos",
    "foto": "photo", "ll": "will",
    "boir": "boire", "dehor": "dehors", "meur": "meurs", "mieu": "mieux", "vo": "vaut", "envi": "envie",
    "mor": "mort", "fo": "faut", "tou": "tout", "bocou": "beaucoup", "veule": "veulent", "veul": "veulent",
    "frap": "frappe", "tap": "tape", "chicote": "chicotte", "chicoter": "chicotter", "chicotent": "chic"
    "ottent",
    "maitr": "maitre", "epous": "epouse", "lhomme": "l homme", "lautre": "l autre", "rentr": "rentrer",
    "mapel": "m appelle",
    "mapelle": "m appelle", "mappelle": "m appelle", "mfrappe": "me frappe", "mtape": "me tape",
    "mbat": "me bat", "mtue": "me tue", "mtuer": "me tuer", "mtouche": "me touche", "ktu": "que tu",
    "kelqun": "quelqu un", "quelquun": "quelqu un", "qqn": "quelqu un", "qlq1": "quelqu un",
    "lmaitre": "le maitre", "lprof": "le prof", "jveut": "je veux", "vlt": "veulent", "oci": "aussi", ""
    "otre": "autre", "ojd": "aujourd hui", "auj": "aujourd hui",
    "sav": "sais", "jsais": "je sais", "jsai": "je sais", "jcrois": "je crois", "cmt": "comment",
    "kom": "comme", "pke": "parce que", "paske": "parce que", "psk": "parce que",
}
# « jdors », « jtravaille », « jcomprends »: a j glued to the verb that follows, as SMS writes it.
_GLUED_JE = re.compile(r"^j(?=[bcdfhklmnpqrstvwxz][a-z]{2,}$)")

_ME = r"(?:je|j)"
# « mon frère va me tuer si je touche sa console mdr » is a joke the child says it is.
# ... nor « il va me tuer aux cartes ».
_NOT_JOKING = (r"(?!.*\b(?:mdr|lol|ptdr|rigole|blague|haha\w*|hihi\w*|mort de rire|jeu|cartes|dames|echecs|"
               r"fifa|match|partie)\b)")
_WANT = r"(?:veux|veut|voudrais|vais|prefererais|pense a|ai envie de|a envie de|ai envi de)"
# « Le personnage dit « je veux mourir » » is a question on a text, not the child's own words.
_OWN_WORDS = (r"^(?!.*\b(?:personnage|figure de style|scene|citation|traduis\w*|translate|heroine|heros|"
              r"poeme|roman|narrateur)\b).*")
_BUILTIN: dict[str, tuple[str, ...]] = {
    "self_harm": (
        # « je vais mourir » is as often a stomach ache or a test tomorrow: the meaning layer judges it.
        rf"{_OWN_WORDS}\b{_ME} (?!vais){_WANT} (?:me )?(?:mourir|crever)\b"
        rf"(?! (?:de (?:rire|faim|froid|chaud|honte|ennui|peur)|vieux|vieille|heureu\w*|en paix))"
        rf"{_NOT_JOKING}",
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
        r"\bpersonne ne m aime\b(?! (?:autant|plus|mieux|comme))|\b(?:no one|nobody) (?:loves|cares about)"
        r" me\b",
        r"\b(?:seraient|serait|serais|sera) mieux sans moi\b|\bbetter off without me\b",
        r"\bne (?:plus|jamais) me reveiller\b|\bnever wake up\b|\bhang myself\b",
        r"\b(?:tired of|sick of) (?:living|life|being alive)\b",
        r"\b(?:je|j) (?:veux|voudrais|vais|pense a|ai envie de) (?:juste )?(?:disparaitre|partir|dormir)"
        r" (?:pour toujours|de ce monde|de cette terre|pour de bon|pour de vrai|a jamais)\b",
        r"\b(?:quitter|partir de) (?:ce monde|cette terre)\b|\bmettre fin a (?:mes jours|ma vie)\b",
        r"\b(?:je|j) (?:vais |veux |ai )?(?:pris|prendre|avale\w*|bu|boire) (?:tous|toutes|tout|tt) "
        r"(?:les|mes) (?:medicaments|cachets|comprimes|pilules)\b",
        r"\b(?:je|j) (?:vais |veux |ai )?(?:bu|boire|bois|avaler) (?:le|du|de l|l) ?(?:poison|eau de javel"
        r"|javel|"
        r"produit des champs|gramoxone|mort aux rats|insecticide|petrole)\b",
        r"\blettre d adieu\b|\b(?:goodbye|suicide) (?:letter|note)\b",
        r"\b(?:je|j) (?:vais |veux )?(?:me )?(?:saute|sauter|jeter|jette) (?:du|d un|de l|de la|sous|dans) "
        r"(?:haut )?(?:du |de l |la |le |un |une )?(?:pont|toit|immeuble|etage|fleuve|puits|lagune|voiture"
        r"|train)\w*",
        r"\ba (?:quoi|koi) (?:bon|ca sert de|sa sert de|sert de) (?:vivre|rester en vie|continuer|exister)\b",
        r"\b(?:je|j) (?:ne )?(?:veux|veut|voudrais) (?:plus|pas) (?:etre|rester) en vie\b",
        r"\b(?:vaut mieux|mieux) (?:que|ke) (?:je|j) (?:meure|meurs|disparaisse|sois mort\w*)\b"
        r"|\bje (?:merite|meritais) de mourir\b|\bje suis (?:un poids|un fardeau|de trop)\b",
        r"\b(?:la corde|une corde) (?:au|a|sous|derriere)\b|\bprendre la corde\b|\brope (?:ready|for)\b",
        r"\bje me (?:suis )?(?:coupe|entaille|taillade|brule|lame|scarifie)\w* (?:les|le|aux|sur les) "
        r"(?:bras|poignets|veines|cuisses)\b|\bla lame (?:sur|la sur) (?:les|mes) bras\b",
        r"\b(?:i|i am|i m|been|keep) (?:cutting|burning|hurting) (?:my )?(?:arms|wrists|myself)\b"
        r"|\bi (?:cut|burn) myself\b",
        r"\b(?:end|ending) it (?:tonight|all|today)\b|\bi (?:just )?(?:want|wanna) to disappear forever\b",
        r"\bjump\w* (?:off|from) the (?:roof|bridge|building)\b|\btook all (?:my|the|of my) \w*\s?pills\b",
        r"\b(?:no|any) point (?:in )?(?:living|being alive)\b|\bdo not want to wake up\b|\bhate my life\b"
        r"|\bdone with (?:life|living)\b|\bthinking (?:about|of) (?:killing myself|suicide|dying)\b",
        r"\bi (?:am|m) a burden\b|\bwant it all to (?:end|stop)\b|\bcan not go on\b",
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
        r"\b(?:photos?|pics?|pictures?|videos?) (?:de moi )?(?:de mon corps|sans habits|en sous vetements|"
        r"intimes?|in my underwear|of my body)\b",
        r"\b(?:me voir|me rencontrer|se voit|se voir|meet me|see me) (?:seule?|en secret|en cachette"
        r"|alone)\b",
        r"\b(?:me|m a|m ont) (?:caresse\w*|tripote\w*|embrasse\w* de force)\b|\bsous ma jupe\b",
        r"\b(?:coucher|dormir) avec (?:lui|elle|moi)\b|\bsleep with (?:him|her|me)\b",
        r"\bmontre (?:son|ses) (?:sexe|parties)\b|\bshowed me his (?:private|penis)\b|\bphotos? de son"
        r" sexe\b",
        r"\b(?:m a|ma|me) (?:force\w*|oblige\w*) a (?:le |la )?(?:toucher|regarder|faire)\b",
        r"\b(?:raped|touched) me\b|\bforces? me to do things\b|\bmy private (?:parts|photos)\b",
        r"\b(?:good )?grades if i (?:come|go|visit)\b|\b(?:bonnes? )?notes? si (?:je|j) (?:viens|vais)"
        r" chez\b",
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
        rf"\bme (?:cogne|cognent|chicotte\w*)\b{_NOT_JOKING}",
        r"^(?!.*\b(?:maitre|maitresse|prof\w*|directeur|directrice|surveillant|censeur|enseignant\w*|"
        r"repetiteur|teacher|headmaster|principal|petit frere|petite soeur|copain|copine|camarade)\b)"
        r".*\b(?:m a|ma|m ont|nous a) (?:frappe\w*|battu\w*|brule\w*|fouette\w*|tabasse\w*|"
        r"chicotte\w*|etrangle\w*|attache\w*)\b"
        rf"(?!.*\b(?:aux|pes|ludo|awale|foot|course|\d+)\b){_NOT_JOKING}",
        r"\b(?:papa|maman|pere|mere|oncle|tante|tantie|tonton|beau pere|belle mere|maratre|tuteur|tutrice"
        r"|vieux|"
        r"vieille|pater|daron) (?:va|vont|veut) (?:encore )?me (?:frapper|taper|battre|tabasser|chicotter"
        rf"|fouetter)\b{_NOT_JOKING}",
        r"\b(?:me donne|m a donne|nous donne) des coups\b|\bcoups de (?:poing|pied|ceinture|baton|cable) "
        r"(?:au|a la|dans|sur)\b|\bles coups (?:tous les jours|chaque)\b|\ba cause des coups\b",
        r"\b(?:my )?(?:dad|father|mom|mother|mum|stepfather|stepdad|stepmother|uncle|aunt|brother|sister"
        r"|parents|"
        r"grandfather|grandmother) (?:burned|burnt|burns|whips|whipped|punches|punched|slaps|slapped|chokes|"
        rf"choked|beat|beats|hits|hit|kicks|kicked) (?:me|my)\b{_NOT_JOKING}",
        r"\b(?:my )?(?:father|dad|mother|mom|stepfather|uncle|aunt) will beat me\b",
        r"\bme (?:prive\w*) (?:de|des) (?:repas|nourriture|manger)\b|\block me in\b",
    ),
    "threats": (
        # A person threatens: « il va me tuer », not « cette chaleur va me tuer ».
        r"\b(?:il|ils|elle|elles|on|qu il|qu ils|qu elle|kil|quelqu un|un \w+|des \w+) "
        rf"(?:menace\w*|veut|veulent|voulait|vont|va) (?:de )?me tuer\b{_NOT_JOKING}",
        r"\bmenace\w* de me tuer\b",
        rf"\bme tuer si (?:je|j)\b{_NOT_JOKING}|\bme (?:menace|menacent)\b",
        r"\bthreatens? (?:me|to kill me)\b|\b(?:he|she|they|someone|somebody|he is|she is|they are) "
        r"(?:wants|want|going|is going|are going) to kill me\b",
        r"\b(?:il|elle|ils|on|qu il|qu ils|quelqu un) (?:va|vont|allait|allaient|veut|veulent) (?:venir )?me "
        rf"(?:planter|poignarder|egorger|enlever|kidnapper|defigurer|finir|decouper|defoncer|faire du mal|"
        rf"faire disparaitre|casser (?:la tete|les jambes|les dents)|chercher)\b{_NOT_JOKING}",
        r"\b(?:m a|m ont|on m a|ma|on me|me) menace\w* (?:de mort|avec|de me (?:tuer|frapper|battre|planter|"
        r"poignarder|bruler|violer|couper|kidnapper|enlever|faire du mal))\b",
        r"\b(?:je recois|j ai recu|getting|got|received) (?:des )?(?:menaces|death threats)\b",
        r"\bsait ou (?:j|je) habite\b|\bknows? where i live\b",
        r"\b(?:said|says|say) (?:he|she|they) (?:will|would|d|is going to|are going to) (?:kill|hurt|stab|"
        rf"burn|break|beat)\b{_NOT_JOKING}",
        rf"\b(?:he|she|they|someone) (?:will|is going to|are going to) (?:kill|hurt|stab) me\b{_NOT_JOKING}",
    ),
    "forced_marriage": (
        r"\bmari(?:er|ee|e) de force\b",
        r"\b(?:veut|veulent|vont|va|voulait) me (?:marier|donner en mariage)\b",
        r"\bme (?:marier|donner) (?:a|avec) (?:un|mon|son|le)\b",
        r"\b(?:forced|forcing|force) (?:me )?to marry\b|\bmarry me off\b|\bmake me marry\b",
        r"\b(?:pris|recu|accepte|bouffe|mange|touche)\w* (?:la|ma) dot\b|\bbride price\b",
        r"\b(?:arrange\w*|prepare\w*|organise\w*) (?:mon|mes) (?:mariage|noces)\b|\bmon mariage (?:est prevu"
        r"|c est"
        r"|c|est dans|dans)\b|\barranged my marriage\b|\bmy wedding is\b",
        r"\b(?:que j|que je|ke j) (?:epouse|marie)\b"
        r"|\b(?:je|j) dois (?:me marier|epouser|marier)\b(?! un jour)"
        r"|\b(?:force|oblige)\w* (?:a|de) (?:me marier|epouser|l epouser)\b",
        r"\b(?:on m a|ils m ont|m a) fiance\w*\b|\bpromis ma main\b|\bpromised me to\b",
        r"\b(?:wants?|want|forcing|force) me to (?:marry|get married)\b|\bi do not want to (?:get married"
        r"|marry)\b",
        # Not when the sentence is an essay's subject (« … c'est le sujet de ma dissertation »).
        r"\b(?:veux|veut) pas (?:me marier|de ce mariage)\b(?!.*\b(?:dissertation|expose|redaction)\b)"
        r"|\b(?:je|j) refuse (?:ce|le) mariage\b",
    ),
    "school_violence": (
        r"\b(?:le maitre|la maitresse|le prof\w*|la prof\w*|le directeur|la directrice|l enseignant\w*|"
        r"le surveillant|le censeur|les profs|les maitres) (?:nous|me) (?:frappe\w*|tape\w*|bat|battent|"
        r"fouette\w*|chicotte\w*|cogne\w*)\b",
        r"\b(?:nous|me) (?:frappe|tape|bat|fouette) avec (?:la|une) (?:chicotte|regle|ceinture|cravache)\b",
        r"\b(?:teacher|teachers|headmaster|principal) (?:hits|beats|whips|canes) (?:me|us)\b",
        r"\b(?:maitre|maitresse|prof\w*|directeur|directrice|surveillant|censeur|enseignant\w*)(?: la)? "
        r"(?:m a|ma|nous a|nous|me) (?:frappe\w*|tape\w*|gifle\w*|chicotte\w*|fouette\w*|battu\w*|pousse\w*|"
        r"pince\w*|blesse\w*|donne des coups|tire l oreille)\b"
        rf"(?! (?:sur (?:l )?l?epaule|une \w* ?note|dans le dos|{A_TEST}))",
        r"\b(?:maitre|maitresse|prof\w*|directeur|surveillant|censeur) (?:va|vont) (?:encore )?(?:me|nous) "
        r"(?:frapper|taper|chicotter|fouetter|battre)\b",
        r"\b(?:teacher|headmaster|principal) (?:hit|hits|beat|beats|slapped|slaps|whipped|whips|punched"
        r"|caned)"
        r" (?:me|us|my)\b|\bwhipped at school\b",
        r"\ba genoux sur (?:des|les) (?:cailloux|graviers|pierres)\b|\bkneel on stones\b",
    ),
    "bullying": (
        r"\bje suis harcel\w*\b|\b(?:on|ils|elles) me harcel\w*\b",
        r"\b(?:se moquent|se moque) (?:tous |toujours )?de moi\b",
        r"\b(?:ont|a) (?:mis|partage|publie|envoye|poste) (?:ma|mes) photos?\b",
        r"\bi (?:am|m) (?:being )?bullied\b|\b(?:they|everyone) (?:bully|bullies) me\b",
        r"\b(?:ils|elles|on) (?:me|m) (?:traite\w*|traitent) de\b|\b(?:me|m) (?:insulte\w*|rackett\w*)\b",
        r"\b(?:rigolent|rient|se foutent) de moi\b|\bmake fun of me\b|\blaugh\w* at me\b",
        r"\b(?:on m a|ils m ont|elles m ont) (?:filme\w*|exclu\w*)\b|\bthey filmed me\b",
        r"\b(?:bully|bullies|bullied|harass\w*|bullying) me\b|\bwho bully me\b",
        r"\bnobody (?:sits|talks|plays) with me\b|\bpersonne ne (?:veut )?me parle\b",
        r"\b(?:faux compte|fake account) (?:avec ma|with my|pour|to)\b|\bprennent mon (?:argent|gouter)\b",
    ),
    "runaway": (
        r"\bje (?:dors|dormais|vais dormir) (?:dehors|dans la rue|a la gare|sous)\b",
        # Fled from the police (a game, a chase) is not leaving home.
        r"\bje (?:me suis|vais me) (?:enfui\w*|sauve\w*|barre\w*)\b(?! de (?:la police|policiers|flics|"
        r"zombies|monstres)\b)|\bj ai fugue\b|\bje (?:vais )?fugu\w*\b",
        r"\b(?:ran|run|running) away from home\b|\bi (?:sleep|am sleeping|slept) (?:outside|on the street)\b",
        r"\bje (?:dors|dormais) (?:au marche|au carrefour|a la mosquee|devant|dans un (?!lit)|dans les"
        r" rues)\b",
        # Put out of the house, not out of the classroom: a teacher sending a pupil out is school life.
        r"(?<!prof )(?<!professeur )(?<!maitre )(?<!maitresse )(?<!surveillant )(?<!directeur )"
        r"\b(?:m a|m ont|ma|on m a|nous a) (?:mis|mise|chasse\w*|jete\w*) (?:dehors|a la porte|de la"
        r" maison)\b(?! (?:du|de la|de l) ?(?:cours|classe|salle|ecole|college|lycee|examen))"
        r"|\b(?:kicked|threw) me out\b",
        r"\b(?:j ai|je suis) (?:quitte|parti\w*|fui|fraya) (?:la maison|de la maison|de chez)\b"
        r"(?! (?:tot|ce matin|a (?:\d|l heure)|pour (?:aller|l ecole)))",
        r"\b(?:nulle part|pas ou|sais pas ou|nowhere) (?:ou )?(?:dormir|aller|to sleep|to go)\b",
        r"\bi (?:am|m) (?:homeless|sleeping (?:outside|at|on|in|under))\b|\bi sleep (?:under|at the|in the"
        r" street)\b",
        r"\bi (?:am |m )?(?:going to |planning to |want to |will )?(?:run|ran) away\b",
        r"\b(?:je n ai plus de|j ai plus de) maison\b|\b(?:do not|don t) have a home\b",
    ),
    "child_labour": (
        r"\b(?:n irai|ne vais|ne peux|peux) plus (?:aller )?a l ecole\b",
        r"\b(?:m a|m ont|on m a) (?:retire|retiree|sorti|sortie) de l ecole\b",
        r"\bje (?:dois|suis oblige\w* de) (?:travailler|vendre)\b(?! (?:mes|mon|ma) (?:lecon|maths|devoir)|"
        r" (?:plus|mieux|dur|bien|encore|davantage|pour (?:passer|reussir|avoir)|(?:des|les) (?:tickets"
        r"|billets)))",
        r"\b(?:taken out of|pulled out of|can not go to) school\b|\b(?:make|makes|made) me work\b",
        r"\b(?:au lieu d aller|sans (?:jamais )?aller|jamais aller|plus aller) (?:a l ecole|en classe)\b",
        r"\bl ecole c(?: est)? (?:fini|gate|termine)\b|\bplus de classe\b|\bplus (?:a l ecole|d ecole)\b",
        r"\b(?:m a|m ont|on m a|ma|me|nous a) (?:retire|sorti|enleve)\w* (?:de|du) "
        r"(?:l ecole|college|lycee)\b",
        r"\b(?:can not|cannot|do not|don t|won t) (?:go|let me go) to school\b|\binstead of (?:going to"
        r" )?school\b"
        r"|\b(?:took|take|taken|pulled) me out of school\b|\bsent me to work\b",
        r"\b(?:je travaille|i work) (?:dans|in|a|at|au|sur) (?:une |un |la |le |a |the )?"
        r"(?:mine|carriere|chantier|construction site|orpaillage)\b|\borpaillage\b",
        r"\b(?:patron|patronne|boss|tutrice|tuteur|oncle|tante|dame)\b.{0,30}\b(?:me paye|me paie) "
        r"(?:pas|jamais|rien)\b|\b(?:never|doesn t|does not) pays? me\b",
        r"\bcomme (?:bonne|servante|domestique)\b|\b(?:to be|as) a (?:maid|housemaid)\b"
        r"|\bje suis (?:petite )?(?:bonne|domestique|servante)\b|\bi (?:am|m) a (?:maid|housemaid)\b",
    ),
}


def fold(text: str) -> str:
    """The words of `text` as phrases are matched: lower case, no accents, no punctuation, SMS
    spellings written out, one space between words."""
    decomposed = unicodedata.normalize("NFKD", (text or "").lower())
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    bare = re.sub(r"(.)\1{2,}", r"\1", bare)  # « mouriiiir » is « mourir »
    words = re.sub(r"[^a-z0-9]+", " ", bare.replace("œ", "oe")).split()
    return " ".join(w for w in (_spelled(word) for word in words) if w)


def _spelled(word: str) -> str:
    """`word` as the phrases expect it: an SMS spelling written out, a glued « j » set apart."""
    if word in _SPELLINGS:
        return _SPELLINGS[word]
    if _GLUED_JE.match(word):
        return "je " + _SPELLINGS.get(word[1:], word[1:])
    return word


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
        ordered = [(c, p) for c in CATEGORIES for p in (*_BUILTIN[c], *MORE.get(c, ()))]
        ordered += sorted(extra, key=lambda item: CATEGORIES.index(item[0]))
        ordered.sort(key=lambda item: CATEGORIES.index(item[0]))  # stable: the code's first
        _CACHE.clear()
        _CACHE[key] = PhraseList(tuple((c, re.compile(p)) for c, p in ordered))
    return _CACHE[key]

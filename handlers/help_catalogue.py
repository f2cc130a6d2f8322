"""Every command a user can type, as data: what AIDE / MENU lists and « AIDE MOT » explains.

One entry per command: the word shown in each language, every other spelling the handlers accept
(`aliases`, so that « AIDE SOLDE » finds CREDITS and a test can hold the handlers' keyword lists
against this catalogue), who is offered it, and its texts. The texts of an entry offered to
students and to adults name no one (« solde de crédits », not « ton solde »): a student is told
« tu », a parent or a pro « vous », and one neutral line suits both. The order is the order AIDE shows: the
most useful first for each audience. Words are upper case without accents, as `keyword` gives them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bot.texts import fr_en

__all__ = ["AUDIENCES", "CATALOGUE", "Command", "Text"]

AUDIENCES = ("guest", "child", "parent", "pro")
_ALL = frozenset(AUDIENCES)
_ENROLLED = frozenset({"child", "parent", "pro"})
_STUDENT = frozenset({"child"})
_LEARNERS = frozenset({"child", "pro"})


@dataclass(frozen=True)
class Text:
    fr: str
    en: str

    def get(self, language: str) -> str:
        return fr_en(language, self.fr, self.en)


@dataclass(frozen=True)
class Command:
    """`summary` is one short line (an SMS page, a list item's description: at most 72 characters);
    `detail` says what it does and its forms; `example` is a message that works as it is."""

    name: str
    word: Text
    summary: Text
    detail: Text
    example: Text
    audiences: frozenset[str]
    aliases: tuple[str, ...] = ()
    # A list item's title when the bare word must not be it: a tapped item comes back with its
    # title as the message's text, and a bare STOP opts the user out as soon as it is stored.
    label: Text | None = None

    def item(self, language: str) -> str:
        return (self.label or self.word).get(language)

    def words(self) -> tuple[str, ...]:
        """Every spelling that names this command, the shown words first."""
        seen = dict.fromkeys((self.name, self.word.fr, self.word.en, *self.aliases))
        return tuple(seen)


def _c(name: str, en: str, audiences: frozenset[str], summary: tuple[str, str], detail: tuple[str, str],
       example: tuple[str, str], *aliases: str) -> Command:
    return Command(name=name, word=Text(name, en), summary=Text(*summary), detail=Text(*detail),
                   example=Text(*example), audiences=audiences, aliases=aliases)


CATALOGUE: tuple[Command, ...] = (
    _c("ENFANTS", "CHILDREN", frozenset({"parent"}),
       ("les progrès de votre enfant", "your child's progress"),
       ("Montre les progrès de chaque enfant lié à votre numéro : quiz, notions, révisions.",
        "Shows the progress of each child linked to your number: quizzes, skills, reviews."),
       ("ENFANTS", "CHILDREN"), "MES ENFANTS", "MY CHILDREN"),
    _c("REVISION", "REVIEW", _STUDENT,
       ("réviser tes quiz", "review your quizzes"),
       ("Lance une série de questions déjà vues, à l'heure où il faut les revoir. REVISION NON arrête "
        "les rappels de révision, REVISION OUI les remet. DEVOIR montre les devoirs donnés par ton "
        "professeur et lance le premier à faire.",
        "Starts a round of questions seen before, when they are due. REVIEW OFF stops the review "
        "reminders, REVIEW ON brings them back. HOMEWORK shows the homework your teacher set and "
        "starts the first one due."),
       # DEVOIR (handlers/assignment.py) is explained here: AIDE's SMS pages (3 of 2 segments) are full.
       ("REVISION", "REVIEW"), "REVISIONS", "REVIEWS", "REVISER", "DEVOIR", "DEVOIRS", "HOMEWORK"),
    _c("CLASSE", "LEVEL", _STUDENT,
       ("ta classe", "your class"),
       ("CLASSE seul montre ta classe et la liste ; CLASSE suivi d'une classe la change.",
        "LEVEL alone shows your class and the list; LEVEL and a class changes it."),
       ("CLASSE 4e", "LEVEL 4e"), "CLASS", "NIVEAU"),
    _c("PROGRES", "PROGRESS", _LEARNERS,
       ("les progrès", "your progress"),
       ("Résume les résultats par matière : réponses justes, notions, questions à revoir.",
        "Sums up your results per subject: right answers, skills, questions to review."),
       ("PROGRES", "PROGRESS"), "MES PROGRES", "MY PROGRESS"),
    _c("BILAN", "SUMMARY", _STUDENT,
       ("ta semaine", "your week"),
       ("Résume ta semaine : questions, réponses justes, jours de suite, notions à revoir. Ce bilan "
        "t'arrive aussi chaque semaine sur WhatsApp : BILAN NON l'arrête, BILAN OUI le remet.",
        "Sums up your week: questions, right answers, days in a row, skills to review. This summary "
        "also comes every week on WhatsApp: SUMMARY OFF stops it, SUMMARY ON brings it back."),
       ("BILAN", "SUMMARY")),
    _c("TACHES", "TASKS", _ENROLLED,
       ("tâches et rappels", "your tasks and reminders"),
       ("Liste les tâches en cours, numérotées. Pour en créer une, il suffit de le demander "
        "(« rappelle-moi demain à 18 h de réviser »).",
        "Lists your open tasks, numbered. To create one, just ask (\"remind me tomorrow at 6 pm to "
        "revise\")."),
       ("TACHES", "TASKS"), "MES TACHES", "MY TASKS"),
    _c("FAIT", "DONE", _ENROLLED,
       ("finir une tâche (FAIT 2)", "finish a task (DONE 2)"),
       ("FAIT suivi d'un numéro de la liste TACHES marque cette tâche comme faite.",
        "DONE and a number from the TASKS list marks that task as done."),
       ("FAIT 2", "DONE 2"), "TERMINE"),
    _c("MEMOIRE", "MEMORY", _ENROLLED,
       ("ce que j'ai retenu", "what I remember about you"),
       ("Liste ce que j'ai retenu (classe, matières...), numéroté.",
        "Lists what I remember about you (your class, your subjects...), numbered."),
       ("MEMOIRE", "MEMORY"), "MA MEMOIRE", "MY MEMORY"),
    _c("OUBLIE", "FORGET", _ENROLLED,
       ("effacer un souvenir (OUBLIE 2)", "delete a memory (FORGET 2)"),
       ("OUBLIE suivi d'un numéro de la liste MEMOIRE efface ce souvenir ; OUBLIE TOUT les efface tous.",
        "FORGET and a number from the MEMORY list deletes that memory; FORGET ALL deletes them all."),
       ("OUBLIE 2", "FORGET 2"), "OUBLIER"),
    _c("STATUT", "STATUS", _ENROLLED,
       ("où en est un long travail", "where a long task stands"),
       ("Dit où en est le travail long en cours (document, recherche), ou comment le dernier s'est "
        "terminé, avec ses fichiers et son lien.",
        "Tells where the long task in progress stands (document, research), or how the last one "
        "ended, with its files and link."),
       ("STATUT", "STATUS")),
    _c("ANNULER", "CANCEL", _ENROLLED,
       ("arrêter le travail en cours", "stop the task in progress"),
       ("Arrête le travail long en cours ; ce qui est déjà fait reste.",
        "Stops the long task in progress; what is already done stays."),
       ("ANNULER", "CANCEL")),
    _c("NOUVEAU", "NEW", _ALL,
       ("changer de sujet", "new topic"),
       ("Met de côté la conversation en cours et en commence une nouvelle.",
        "Puts the current conversation aside and starts a new one."),
       ("NOUVEAU", "NEW"), "NOUVELLE CONVERSATION", "NEW CHAT"),
    _c("VOCAL", "VOICE", _ALL,
       ("réponses en note vocale", "answers as voice notes"),
       ("Sur WhatsApp, mes réponses arrivent aussi en note vocale. VOCAL NON revient au texte seul.",
        "On WhatsApp, my answers also come as a voice note. VOICE OFF goes back to text only."),
       ("VOCAL", "VOICE")),
    _c("LANGUE", "LANGUAGE", _ALL,
       ("anglais (LANGUE EN)", "French (LANGUAGE FR)"),
       ("LANGUE EN pour l'anglais, LANGUE FR pour le français ; LANGUE seul montre la langue choisie.",
        "LANGUAGE FR for French, LANGUAGE EN for English; LANGUAGE alone shows your language."),
       ("LANGUE EN", "LANGUAGE FR")),
    _c("FUSEAU", "TIMEZONE", _ALL,
       ("fuseau horaire", "your time zone"),
       ("FUSEAU seul montre le fuseau et l'heure ; FUSEAU suivi d'une ville le change (les rappels "
        "suivent cette heure).",
        "TIMEZONE alone shows your time zone and the time; TIMEZONE and your city changes it (your "
        "reminders follow it)."),
       ("FUSEAU Douala", "TIMEZONE Lagos"), "FUSEAU HORAIRE", "TIME ZONE"),
    _c("CREDITS", "CREDITS", _ALL,
       ("solde de crédits", "your balance"),
       ("Dit combien de crédits il reste.", "Tells how many credits you have left."),
       ("CREDITS", "CREDITS"), "CREDIT", "SOLDE", "BALANCE"),
    _c("ACHETER", "BUY", _ALL,
       ("acheter des crédits", "buy credits"),
       ("Montre les offres de crédits ; un numéro en réponse donne le lien de paiement.",
        "Shows the credit packs; reply with a number to get the payment link."),
       ("ACHETER", "BUY"), "ACHETER DES CREDITS", "ACHETER CREDITS", "BUY CREDITS", "RECHARGER", "TOP UP"),
    _c("EMAIL", "EMAIL", _ENROLLED,
       ("fichiers par e-mail (EMAIL adresse)", "your files by e-mail (EMAIL address)"),
       ("EMAIL suivi d'une adresse l'enregistre (un code de confirmation y est envoyé) ; EMAIL seul "
        "la montre ; EMAIL SUPPRIMER l'efface.",
        "EMAIL and your address registers it (a confirmation code is sent there); EMAIL alone shows it; "
        "EMAIL DELETE removes it."),
       ("EMAIL awa@exemple.com", "EMAIL awa@example.com"), "E-MAIL", "COURRIEL"),
    _c("CODE", "CODE", _ENROLLED,
       ("confirmer l'e-mail", "confirm your e-mail (CODE 123456)"),
       ("CODE suivi des 6 chiffres reçus par e-mail confirme l'adresse.",
        "CODE and the 6 digits received by e-mail confirms your address."),
       ("CODE 123456", "CODE 123456")),
    _c("PARENT", "PARENT", _STUDENT,
       ("lier un parent (PARENT numéro)", "link a parent (PARENT number)"),
       ("PARENT suivi du numéro d'un parent lui demande de suivre tes progrès ; il répond OUI ou NON "
        "avec le code reçu.",
        "PARENT and a parent's number asks them to follow your progress; they answer YES or NO with "
        "the code they get."),
       ("PARENT +225 07 00 00 00 00", "PARENT +225 07 00 00 00 00")),
    _c("SUPPRIMER", "DELETE", _ALL,
       ("effacer les données", "erase your data"),
       ("Efface tout ce que Deblo garde sur ce numéro, après confirmation (OUI).",
        "Erases everything Deblo keeps about you, after you confirm (YES)."),
       ("SUPPRIMER", "DELETE"), "SUPPRIMER MON COMPTE", "SUPPRIMER MES DONNEES", "DELETE MY ACCOUNT",
       "DELETE MY DATA"),
    replace(_c("STOP", "STOP", _ALL,
       ("plus de messages (START : revenir)", "no more messages (START: come back)"),
       ("Plus aucun message de Deblo. START pour revenir.",
        "You get no more messages from Deblo. START to come back."),
       ("STOP", "STOP"), "ARRET", "STOPALL", "UNSUBSCRIBE", "START", "UNSTOP"),
            label=Text("STOP / START", "STOP / START")),
    _c("MENU", "MENU", _ALL,
       ("les commandes", "every command"),
       ("Montre toutes les commandes, comme AIDE.", "Shows every command, as HELP does."),
       ("MENU", "MENU")),
    _c("AIDE", "HELP", _ALL,
       ("expliquer une commande (AIDE mot)", "explain a command (HELP word)"),
       ("AIDE seul montre les commandes ; AIDE suivi d'une commande l'explique ; AIDE 2 montre la suite.",
        "HELP alone shows the commands; HELP and a command explains it; HELP 2 shows the rest."),
       ("AIDE STATUT", "HELP STATUS")),
)

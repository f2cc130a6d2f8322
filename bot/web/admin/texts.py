"""The dashboard's words, French first and English second, chosen by the browser's Accept-Language
(an operator has no language of their own)."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from bot.safety import category_label
from bot.texts import fr_en

TEXTS: dict[str, tuple[str, str]] = {
    "dashboard": ("Tableau de bord", "Dashboard"),
    "login": ("Connexion", "Log in"),
    "email": ("Adresse e-mail", "E-mail address"),
    "password": ("Mot de passe", "Password"),
    "sign_in": ("Se connecter", "Log in"),
    "logout": ("Se déconnecter", "Log out"),
    "bad_login": ("E-mail ou mot de passe incorrect.", "Wrong e-mail or password."),
    "throttled": ("Trop d'essais depuis cette connexion. Réessayez dans {wait}.",
                  "Too many attempts from this connection. Try again in {wait}."),
    "overview": ("Vue d'ensemble", "Overview"),
    "flags": ("Alertes de sécurité", "Safety flags"),
    "active": ("Élèves actifs", "Active learners"),
    "today": ("Aujourd'hui", "Today"),
    "days_7": ("7 jours", "7 days"),
    "days_30": ("30 jours", "30 days"),
    "classes": ("Classes", "Classes"),
    "class": ("Classe", "Class"),
    "members": ("Élèves", "Students"),
    "messages_per_day": ("Messages par jour (30 jours)", "Messages per day (30 days)"),
    "day": ("Jour", "Day"),
    "inbound": ("Reçus", "Received"),
    "outbound": ("Envoyés", "Sent"),
    "usage": ("Usage sur 30 jours", "Use over 30 days"),
    "turns": ("Tours du tuteur", "Tutor turns"),
    "prompt_tokens": ("Jetons du modèle (entrée)", "Model tokens (prompt)"),
    "completion_tokens": ("Jetons du modèle (sortie)", "Model tokens (completion)"),
    "credits_spent": ("Crédits dépensés", "Credits spent"),
    # A class's pool of credits (funding.py).
    "pool": ("Crédits de la classe", "The class's credits"),
    "pool_line": ("{balance} crédits restants sur {funded} versés ; chaque élève en utilise au plus {cap} "
                  "par jour, avant ses propres crédits.",
                  "{balance} credits left of {funded} put in; each student uses at most {cap} a day, "
                  "before their own credits."),
    "pool_pace": ("{spent} crédits utilisés ces 7 derniers jours : environ {days} jours restants à "
                  "ce rythme.",
                  "{spent} credits used in the last 7 days: about {days} days left at that pace."),
    "pool_idle": ("Aucun crédit utilisé ces 7 derniers jours.", "No credit used in the last 7 days."),
    "pool_week": ("Utilisés (7 jours)", "Used (7 days)"),
    "pool_total": ("Utilisés (en tout)", "Used (in all)"),
    "fund": ("Ajouter des crédits à la classe", "Add credits to the class"),
    "fund_credits": ("Nombre de crédits", "Number of credits"),
    "fund_submit": ("Ajouter", "Add"),
    "notice:funded": ("Crédits ajoutés à la classe.", "Credits added to the class."),
    "notice:again": ("Ce formulaire avait déjà été envoyé : rien n'a changé.",
                     "This form had already been sent: nothing changed."),
    "notice:bad_credits": ("Non ajouté : un nombre entier de crédits, de 1 à {max}.",
                           "Not added: a whole number of credits, from 1 to {max}."),
    "notice:bad_form": ("Non ajouté : formulaire périmé, rechargez la page.",
                        "Not added: stale form, reload the page."),
    "notice:throttled": ("Non ajouté : trop d'ajouts d'affilée. Réessayez dans quelques minutes.",
                         "Not added: too many in a row. Try again in a few minutes."),
    "whatsapp_sent": ("Messages WhatsApp envoyés", "WhatsApp messages sent"),
    "templates_sent": ("dont modèles approuvés (hors fenêtre de 24 h)",
                       "of which approved templates (outside the 24 h window)"),
    "sms_segments": ("Segments SMS envoyés", "SMS segments sent"),
    "costs": ("Coût par élève actif", "Cost per active learner"),
    "cost_period": ("Période", "Period"),
    "cost_week": ("7 derniers jours", "Last 7 days"),
    "cost_month": ("30 derniers jours", "Last 30 days"),
    "cost_active": ("Élèves actifs", "Active learners"),
    "cost_messages": ("Messages", "Messages"),
    "cost_templates": ("Modèles approuvés", "Approved templates"),
    "cost_tokens": ("Modèle (jetons)", "Model (tokens)"),
    "cost_all": ("Total", "Total"),
    "cost_per_learner": ("Par élève actif", "Per active learner"),
    "costs_note": ("Chaque message reçu ou envoyé au tarif de Meta et de Twilio quand Twilio le signale "
                   "(python -m bot costs rates) ; les jetons à COST_PER_1K_TOKENS. Un élève actif a écrit "
                   "au moins une fois dans la période.",
                   "Each message received or sent at Meta's and Twilio's rates when Twilio reports it "
                   "(python -m bot costs rates); tokens at COST_PER_1K_TOKENS. An active learner wrote "
                   "at least once in the period."),
    "failures": ("Échecs de livraison (code d'erreur Twilio)", "Delivery failures (Twilio error code)"),
    "code": ("Code", "Code"),
    "count": ("Nombre", "Count"),
    "jobs": ("Tâches en arrière-plan (30 jours)", "Background jobs (30 days)"),
    "status": ("État", "Status"),
    "queue": ("File d'attente", "Queue"),
    "queue_pending": ("Messages reçus en attente", "Received messages waiting"),
    "outbox_queued": ("Réponses en attente d'envoi", "Answers waiting to be sent"),
    "none": ("Aucun", "None"),
    "roster": ("Liste des élèves", "Roster"),
    "name": ("Nom", "Name"),
    "phone": ("Téléphone", "Phone"),
    "level": ("Niveau", "Level"),
    "last_active": ("Dernière activité", "Last activity"),
    "never": ("jamais", "never"),
    "heatmap": ("Maîtrise par compétence (%)", "Mastery by skill (%)"),
    "legend": ("Légende : moins de 30 %, moins de 50 %, moins de 70 %, moins de 95 %, "
               "maîtrisé (95 % et plus) ; « · » : pas encore de réponse ; « ↻ 2 » : réexpliqué deux fois "
               "(une question manquée deux fois de suite, expliquée autrement avec une nouvelle question).",
               "Key: under 30 %, under 50 %, under 70 %, under 95 %, mastered (95 % and more); "
               "“·”: no answer yet; “↻ 2”: re-taught twice (a question missed twice in a row, explained "
               "another way with a new question)."),
    "retaught": ("réexpliqué", "re-taught"),
    "at_risk": ("Élèves à risque", "Students at risk"),
    "quiet": ("aucun message depuis 7 jours", "no message for 7 days"),
    "fell": ("maîtrise en baisse :", "mastery fell:"),
    "nobody": ("Personne pour l'instant.", "Nobody for now."),
    "export_roster": ("Exporter la liste (CSV)", "Export the roster (CSV)"),
    "export_results": ("Exporter les résultats (CSV)", "Export the results (CSV)"),
    "items": ("Questions de la classe", "The class's questions"),
    "items_count": ("Questions", "Questions"),
    "items_none": ("Pas encore de questions : envoyez un fichier.", "No question yet: send a file."),
    "items_file": ("Fichier de questions (CSV ou XLSX)", "Questions file (CSV or XLSX)"),
    "items_send": ("Ajouter les questions", "Add the questions"),
    "items_help": ("Une question par ligne ; colonnes : question, choix_1 à choix_4 (2 à 4 remplis ; "
                   "« Vrai » et « Faux » pour un vrai-faux), bonne_reponse (le numéro du bon choix ou son "
                   "texte), explication, matiere, notion. Les questions déjà là ne sont pas ajoutées deux "
                   "fois.",
                   "One question per row; columns: question, option_1 to option_4 (2 to 4 filled; “True” "
                   "and “False” for a true-or-false item), answer (the right option's number or its text), "
                   "explanation, subject, skill. Questions already there are not added twice."),
    "items_refused": ("Le fichier n'a pas été importé, rien n'a changé :",
                      "The file was not imported, nothing changed:"),
    "items_added": ("{added} question(s) ajoutée(s), {already} déjà là.",
                    "{added} question(s) added, {already} already there."),
    "items_throttled": ("Trop de fichiers envoyés : réessayez dans 10 minutes.",
                        "Too many files sent: try again in 10 minutes."),
    "items_back": ("Retour à la classe", "Back to the class"),
    "files": ("Bibliothèque de la classe", "The class's library"),
    "files_none": ("Pas encore de fichier : ses élèves verront ceux que vous ajoutez.",
                   "No file yet: the class's students will see those you add."),
    "files_file": ("Fichier (PDF, Word, texte, photo… 1 Mo au plus)",
                   "File (PDF, Word, text, photo… 1 MB at most)"),
    "files_send": ("Ajouter à la bibliothèque", "Add to the library"),
    "files_help": ("Les élèves de la classe le trouvent avec le tuteur (recherche, lecture), marqué comme "
                   "celui de la classe ; ils ne peuvent ni le supprimer ni le modifier.",
                   "The class's students find it with the tutor (search, reading), marked as the class's; "
                   "they cannot delete or change it."),
    "files_name": ("Fichier", "File"),
    "files_added_on": ("Ajouté le", "Added on"),
    "files_opened_by": ("Ouvert par", "Opened by"),
    "files_chosen": ("Aucun fichier choisi.", "No file chosen."),
    "files_throttled": ("Trop de fichiers envoyés : réessayez dans 10 minutes.",
                        "Too many files sent: try again in 10 minutes."),
    "student": ("Élève", "Student"),
    "skills": ("Maîtrise par compétence", "Mastery by skill"),
    "subject": ("Matière", "Subject"),
    "skill": ("Compétence", "Skill"),
    "mastery": ("Maîtrise", "Mastery"),
    "answers": ("Réponses", "Answers"),
    "results_over_time": ("Résultats par semaine (12 semaines)", "Results per week (12 weeks)"),
    "week": ("Semaine du", "Week of"),
    "right": ("Justes", "Right"),
    "wrong": ("Fausses", "Wrong"),
    "items_due": ("Questions à revoir", "Items due"),
    "due_at": ("À revoir le", "Due on"),
    "no_flags": ("Aucune alerte ouverte.", "No open flag."),
    "category": ("Type", "Kind"),
    "when": ("Quand", "When"),
    "excerpt": ("Extrait", "Excerpt"),
    "acknowledge": ("J'ai vu, je m'en occupe", "Seen, I am on it"),
    "open_flag": ("Ouvrir", "Open"),
    "flag": ("Alerte", "Flag"),
    "acknowledged": ("Vue le", "Seen on"),
    "conversation": ("Messages depuis les 24 heures avant l'alerte",
                     "Messages since 24 hours before the flag"),
    "who:child": ("Élève", "Student"),
    "who:bot": ("Tuteur", "Tutor"),
    "who:school": ("École", "School"),
    "no_messages": ("Aucun message.", "No message."),
    "held": ("Une personne tient la conversation : le tuteur ne répond pas à l'élève.",
             "A person holds the conversation: the tutor does not answer the student."),
    "held_by": ("Tenue par", "Held by"),
    "removed_operator": ("un compte supprimé", "a removed account"),
    "held_until": ("Rendue au tuteur sans nouveau message de votre part le",
                   "Handed back to the tutor without a new message from you on"),
    "not_held": ("Le tuteur répond à l'élève.", "The tutor answers the student."),
    "take": ("Prendre la conversation", "Take the conversation"),
    "release": ("Rendre la main au tuteur", "Hand back to the tutor"),
    "write": ("Écrire à l'élève", "Write to the student"),
    "write_help": ("Le message part du numéro du bot et commence par « Message d'une personne de "
                   "l'école : ». L'envoyer vous donne la conversation.",
                   "The message goes from the bot's number and starts with “Message from a person at "
                   "your school:”. Sending it gives you the conversation."),
    "window_shut": ("L'élève n'a pas écrit depuis plus de 24 heures : on ne peut lui écrire qu'après "
                    "son prochain message.",
                    "The student has not written for more than 24 hours: you can write only after their "
                    "next message."),
    "message": ("Message", "Message"),
    "send": ("Envoyer", "Send"),
    "notice:sent": ("Envoyé : Twilio a accepté le message.", "Sent: Twilio accepted the message."),
    "notice:window_closed": ("Non envoyé : l'élève n'a pas écrit depuis plus de 24 heures ; on ne peut "
                             "lui écrire qu'après son prochain message.",
                             "Not sent: the student has not written for more than 24 hours; you can "
                             "write only after their next message."),
    "notice:opted_out": ("Non envoyé : l'élève a écrit STOP.", "Not sent: the student wrote STOP."),
    "notice:gone": ("Non envoyé : l'élève n'est plus là.", "Not sent: the student is gone."),
    "notice:empty": ("Non envoyé : le message est vide.", "Not sent: the message is empty."),
    "notice:too_long": ("Non envoyé : {max} caractères au plus.", "Not sent: {max} characters at most."),
    "notice:failed": ("Non envoyé : Twilio ne l'a pas accepté ({reason}). Réessayez plus tard.",
                      "Not sent: Twilio did not accept it ({reason}). Try again later."),
    "record": ("Qui a fait quoi", "Who did what"),
    "action:read": ("a lu les messages", "read the messages"),
    "action:take": ("a pris la conversation", "took the conversation"),
    "action:reply": ("a écrit à l'élève", "wrote to the student"),
    "action:release": ("a rendu la main au tuteur", "handed back to the tutor"),
    "action:expire": ("rendue au tuteur : délai écoulé", "handed back to the tutor: time ran out"),
    "assignments": ("Devoirs", "Homework"),
    "assign": ("Donner un devoir à la classe", "Set homework to the class"),
    "notion": ("Notion", "Skill"),
    "questions": ("Nombre de questions", "Number of questions"),
    "due_on": ("À faire avant le (facultatif)", "Due by (optional)"),
    "finished": ("terminé", "finished"),
    "no_assignment": ("Aucun devoir pour l'instant.", "No homework yet."),
    "assign_throttled": ("Trop de devoirs donnés d'un coup. Réessayez dans {wait}.",
                         "Too much homework set at once. Try again in {wait}."),
    "not_number": ("le nombre de questions doit être un nombre", "the number of questions must be a number"),
    "not_found": ("Page introuvable.", "Page not found."),
    "forbidden": ("Jeton de sécurité manquant ou périmé : rechargez la page.",
                  "Security token missing or stale: reload the page."),
}


def language_of(request: web.Request) -> str:
    """fr unless the browser puts English before French."""
    accepted = request.headers.get("Accept-Language", "").lower()
    en, fr = accepted.find("en"), accepted.find("fr")
    return "en" if en != -1 and (fr == -1 or en < fr) else "fr"


def translator(lang: str) -> Callable[[str], str]:
    def t(key: str) -> str:
        if key.startswith("category:"):  # a flag's kind, named where the categories are
            return category_label(key.removeprefix("category:"), lang)
        return fr_en(lang, *TEXTS[key])

    return t

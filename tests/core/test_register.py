"""One register per audience: a student is told « tu », a parent or a pro « vous », and a text that
anyone may receive (the first contact, before the profile is known, or a text sent to whoever wrote)
names no one. Every French text of bot/, handlers/ and tools/ (read from the source: tests/support/
register.py), every entry of AIDE's catalogue and every template is held to its audience's register.

Who a text is for is data: `AUDIENCE` names it by folder, module or function (the longest match
wins), and `to_audience`'s « tu » and « vous » texts are the students' and the adults' (its « tu »
goes to a guest too, most often a pupil: handlers/help.py). A text with no second person suits
everyone; the English side has no register. A lone word is no sentence (a keyword, a list's entry),
and what a text quotes between « » is someone's own words.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from handlers.help_catalogue import CATALOGUE
from tests.support.register import Said, said, template_text, tu_marks, unquoted, vous_marks

ROOT = Path(__file__).resolve().parents[2]

# Who reads what. « student »: « tu »; « adult » (parents, pros) and « staff » (the school's people,
# the operator): « vous »; « anyone »: neither; « model » (what only the model reads: prompts, tool
# results, notes) and « data » (people's own words, word lists, patterns): no register to hold.
AUDIENCE: dict[str, str] = {
    "bot/": "anyone", "handlers/": "anyone", "tools/": "anyone",
    # The students' own features.
    "bot/learning/": "student", "bot/safety/reply.py": "student", "bot/safety/hold.py": "student",
    "bot/billing/pool.py:_class_pool_text": "student", "bot/school/assignments.py": "student",
    "handlers/level.py": "student", "handlers/review.py": "student",
    "handlers/weekly_note.py": "student", "handlers/assignment.py": "student",
    "handlers/consent.py": "student", "handlers/session_start.py": "student",
    "handlers/buttons.py:_reminder_tap": "student", "handlers/credits_choice.py:_not_offered": "student",
    "handlers/parents.py": "student", "handlers/onboarding.py:_student_confirmation": "student",
    "bot/safety/scope.py": "student",
    "handlers/onboarding.py:_adult_confirmation": "adult",
    # What parents receive.
    "handlers/parents.py:invitation_text": "adult", "handlers/parents.py:answer_request": "adult",
    "handlers/parents.py:_tell_codes": "adult", "handlers/parents.py:_wrong_code": "adult",
    "handlers/parents.py:_settle": "adult", "handlers/progress.py:children_progress": "adult",
    "handlers/progress.py:parent_pointer": "adult",
    "bot/school/enrolment.py": "adult", "bot/safety/__init__.py:parent_note": "adult",
    "bot/assistant/tasks.py:digest_text": "adult", "bot/learning/progress.py:student_name": "adult",
    "bot/learning/progress.py:weekly_text": "adult",
    # Every learner's (students' and pros'): PROGRES and the quizzes.
    "bot/learning/progress.py": "anyone", "bot/learning/quiz_types.py": "anyone",
    "bot/learning/quiz.py": "anyone", "handlers/quiz_answer.py": "anyone",
    # The school's people and the operator.
    "bot/web/admin/": "staff", "bot/console/": "staff", "bot/doctor/": "staff", "bot/cli.py": "staff",
    "bot/cli_school.py": "staff", "bot/school/": "staff",
    # Only the model reads these.
    "bot/agent/prompts.py": "model", "bot/agent/untrusted.py": "model",
    "bot/agent/loop.py:_steps_left_note": "model", "bot/agent/vision.py:photo_text_note": "model",
    "bot/learning/profile.py:learner_block": "model", "bot/learning/reteach.py:reteach_block": "model",
    "bot/learning/quiz.py:claim_quiz_slot": "model", "handlers/turn/prompt.py": "model",
    "tools/web_search.py:<module>": "model",
    # People's own words, word lists and patterns.
    "bot/safety/examples.py": "data", "bot/safety/phrases.py": "data", "bot/channel/language.py": "data",
    "bot/safety/scope_examples.py": "data", "bot/safety/examples_pupils.py": "data",
    "bot/safety/examples_varied.py": "data",
    "bot/safety/wordings.py": "data", "bot/safety/scope_sentences.py": "data",
    "bot/library/text.py": "data", "handlers/onboarding.py:<module>": "data",
    # AIDE's entries: held below with each entry's own audience.
    "handlers/help_catalogue.py": "data",
}
TEMPLATES: dict[str, str] = {
    "": "anyone", "admin/": "staff", "email/teacher_summary": "staff", "email/safety_alert": "staff",
    "email/bug_report": "staff", "documents/": "data",
}
FORMAL = frozenset({"adult", "staff"})
UNHELD = frozenset({"model", "data"})


def audience_of(key: str, table: dict[str, str]) -> str:
    """`path:function` (`<module>` for module level) named whole, else the longest folder or module
    of `table` it starts with, names its audience."""
    best = max((k for k in table if k == key or (":" not in k and key.startswith(k))), key=len, default="")
    return table[best]


def breaks(text: str, audience: str) -> list[str]:
    """The words of `text` out of its audience's register (none for a text that names no one)."""
    if audience in UNHELD or not any(c.isspace() for c in text.strip()):
        return []  # a lone word is a keyword or a list's entry, not a sentence said to someone
    tu, vous = tu_marks(unquoted(text)), vous_marks(unquoted(text))
    if audience == "student":
        return [f"« {w} »" for w in vous]
    if audience in FORMAL:
        return [f"« {w} »" for w in tu]
    return [f"« {w} »" for w in tu + vous]


def offences(texts: list[Said], table: dict[str, str] = AUDIENCE) -> list[str]:
    found = []
    for item in texts:
        path = item.where.rsplit(":", 1)[0]
        audience = item.audience or audience_of(f"{path}:{item.function or '<module>'}", table)
        words = breaks(item.text, audience)
        if words:
            found.append(f"{item.where} ({audience}): {', '.join(words)} in {item.text[:100]!r}")
    return found


def code_texts(root: Path = ROOT) -> list[Said]:
    return [s for top in ("bot", "handlers", "tools") for p in sorted((root / top).rglob("*.py"))
            for s in said(p, root)]


def test_every_text_of_the_code_speaks_its_audiences_register() -> None:
    texts = code_texts()
    assert len(texts) > 1000  # the walk reaches the code
    found = offences(texts)
    assert not found, "a text out of its audience's register:\n" + "\n".join(found)


def _entry_audience(audiences: frozenset[str]) -> str:
    if audiences <= {"guest", "child"}:
        return "student"
    return "adult" if audiences <= {"parent", "pro"} else "anyone"


def test_every_entry_of_aide_speaks_its_audiences_register() -> None:
    found = []
    for command in CATALOGUE:
        audience = _entry_audience(command.audiences)
        for part in (command.summary, command.detail, command.example, command.label):
            if part is not None and breaks(part.fr, audience):
                found.append(f"{command.name} ({audience}): {breaks(part.fr, audience)} in {part.fr!r}")
    assert not found, "\n".join(found)


def test_every_template_speaks_its_audiences_register() -> None:
    folder = ROOT / "bot" / "templates"
    templates = [p for p in sorted(folder.rglob("*"))
                 if p.is_file() and not p.name.endswith((".en.txt", ".css", ".js"))]
    assert len(templates) > 20
    found = []
    for path in templates:
        name = str(path.relative_to(folder))
        audience = audience_of(name, TEMPLATES)
        words = breaks(template_text(path.read_text()), audience)
        if words:
            found.append(f"bot/templates/{name} ({audience}): {', '.join(words)}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("text", "tu", "vous"), [
    ("Pose-moi une question ou envoie la photo d'un exercice.", ["Pose-moi", "envoie"], []),
    ("Peux-tu reformuler ta question ?", ["tu", "ta"], []),
    ("Je t'aide. Réessaie dans un instant.", ["t'", "Réessaie"], []),
    ("Dites-moi ce dont vous avez besoin. Envoyez ENFANTS.", [], ["Dites", "vous", "avez", "Envoyez"]),
    ("Encouragez-le/la ! Votre enfant a fini.", [], ["Votre", "Encouragez"]),
    ("Je t'envoie le fichier.", ["t'"], []),
    ("Le service ne répond pas : nouvel essai dans un instant. Chez Deblo, assez de crédits.", [], []),
    ("Pour réessayer, envoyer MENU ; STOP : ne plus rien recevoir.", [], []),
    ("Il envoie un SMS à l'élève, qui répond OUI.", [], []),
])
def test_the_detector_tells_the_registers_apart(text: str, tu: list[str], vous: list[str]) -> None:
    assert tu_marks(text) == tu or sorted(tu_marks(text)) == sorted(tu)
    assert sorted(vous_marks(text)) == sorted(vous)


# A parent told « tu », a student « vous », anyone « tu »: each is found, and nothing else is.
SAMPLE = (
    'from bot.texts import fr_en\n\n'
    'def to_parent(lang):\n    """Ton docstring, not said."""\n'
    '    return fr_en(lang, "Ton enfant a fini ses exercices.", "Your child is done.")\n\n'
    'def to_student(msg):\n    return msg.t("Envoyez REVISION pour réviser.", "Send REVIEW, you.")\n\n'
    'def to_both(msg):\n'
    '    return to_audience(msg, "Écris MENU.", "Écrivez MENU.", "Send MENU.")\n\n'
    'def to_anyone(msg, lang):\n'
    '    if lang == "en":\n        return "Tu: the English side has no register"\n'
    '    return msg.t("Réessaie dans un instant.", "Try again in a moment.")\n')


def test_the_check_flags_a_tu_text_to_a_parent_and_a_vous_text_to_a_student(tmp_path: Path) -> None:
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "sample.py").write_text(SAMPLE)
    table = {"bot/": "anyone", "bot/sample.py:to_parent": "adult", "bot/sample.py:to_student": "student",
             "bot/sample.py:to_both": "anyone"}
    found = offences(said(tmp_path / "bot" / "sample.py", tmp_path), table)
    lines = [f.split(" ")[0] for f in found]
    assert lines == ["bot/sample.py:5", "bot/sample.py:8", "bot/sample.py:16"], found
    assert "(adult): « Ton »" in found[0] and "(student): « Envoyez »" in found[1], found
    assert "(anyone): « Réessaie »" in found[2], found

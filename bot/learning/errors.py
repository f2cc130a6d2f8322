"""The base of every exception bot.learning defines: `except LearningError` catches all of them. A module of
its own, so that the package's modules and its `__init__` import it without importing each other."""


class LearningError(Exception):
    """A failure of the learner's side (quizzes, mastery, reviews, progress)."""

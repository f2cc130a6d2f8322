"""What to do with one inbound message: the first handler that takes it wins.

Order matters: opt-out keywords come before everything (a user who said STOP hears nothing more),
then a child's distress (answered first, then passed on), then a message on the other persona's
WhatsApp number (told the right one), then a conversation a person of the
school holds (the tutor stays quiet),
a parent's confirmation, then a child without the consent CONSENT_MODE asks for (told how to
get it, nothing more), and the answer to a pending menu (quiz, credit packs) before commands,
commands before onboarding, then a student's request plainly off a school's scope (turned back
to schoolwork), and the agent turn takes whatever is left.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bot.channel.context import Incoming

Handler = Callable[[Incoming], Awaitable[bool]]


def chain() -> list[Handler]:
    from handlers import (
        account,
        assignment,
        buttons,
        commands,
        consent,
        credits_choice,
        email_commands,
        hold,
        job_commands,
        level,
        memory_commands,
        onboarding,
        optout,
        parents,
        persona,
        progress,
        quiz_answer,
        review,
        safety,
        scope,
        session_start,
        task_commands,
        timezone,
        turn,
        voice_commands,
        waiting_files,
        weekly_note,
    )

    return [
        optout.handle,
        safety.handle,  # a child's distress: the caring reply first, then on down (the tutor answers too)
        persona.handle,  # the other persona's WhatsApp number: told the right one, nothing more
        hold.handle,  # a person of the school holds this child's conversation: nothing answers for them
        waiting_files.handle,  # files kept while the WhatsApp window was closed; then on down
        buttons.handle,  # a tapped button or list item: its number for the pending menu, or « expired »
        account.handle,  # before parents: OUI confirms the user's own deletion request when one is pending
        parents.handle,
        consent.handle,  # a child lacking CONSENT_MODE's consent: how to get it, the helpline, nothing more
        quiz_answer.handle,
        credits_choice.handle,
        level.handle,  # CLASSE / LEVEL and the pending class menu
        job_commands.handle,  # STATUT / ANNULER answer from the database at once, whatever else goes on
        commands.handle,
        progress.handle,
        weekly_note.handle,  # BILAN / SUMMARY: the week's note now, or the weekly note on or off
        memory_commands.handle,
        voice_commands.handle,
        task_commands.handle,
        timezone.handle,  # FUSEAU / TIMEZONE
        email_commands.handle,
        assignment.handle,  # DEVOIR; an assignment not told yet is told before the message is answered
        review.handle,  # REVISION rounds: after the commands, so that they work in the middle of one
        onboarding.handle,
        scope.handle,  # a student's request plainly off a school's scope: back to schoolwork, no model call
        session_start.handle,  # a session's first message: the answer, then the offers
        turn.handle,
    ]


async def dispatch(msg: Incoming, handlers: list[Handler] | None = None) -> str:
    """Runs the chain; returns the name of the handler that took the message."""
    for handler in handlers or chain():
        if await handler(msg):
            # Named by its module under handlers/ (the agent turn's package is "turn").
            parts = handler.__module__.split(".")
            return parts[1] if parts[0] == "handlers" and len(parts) > 1 else parts[-1]
    return "none"

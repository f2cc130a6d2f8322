"""Checks of how the service stands with WhatsApp's Business Solution terms: a named organisation's
own service, no training on the chats, one sender per persona. ORG_NAME FAILs wherever it is unset:
the welcome, AIDE and the students' redirect name the school with it, so even a local trial needs it.
The attestation of no training FAILs only for a production deployment (an https PUBLIC_BASE_URL on a
real host)."""

from __future__ import annotations

from urllib.parse import urlsplit

from bot.config import Settings
from bot.config_secrets import example_host
from bot.doctor.report import Check, fail, ok, warn

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", ""})


def production(settings: Settings) -> bool:
    """Whether PUBLIC_BASE_URL is a deployment's: https, not this machine, not an example domain."""
    url = settings.public_base_url
    host = (urlsplit(url).hostname or "").lower()
    return url.startswith("https://") and host not in LOCAL_HOSTS and not example_host(url)


def organisation(settings: Settings) -> Check:
    name = settings.org_name.strip()
    if name:
        return ok("organisation", name)
    return fail("organisation",
                "ORG_NAME is not set: the service is named after no school or organisation, which is how "
                "WhatsApp tells a general-purpose AI assistant (barred) from a business's own tutoring, "
                "and the welcome, AIDE and the students' redirect have no school to name",
                "set ORG_NAME to the school's or organisation's name (e.g. ORG_NAME=\"Lycée Sainte-Marie\")")


def no_training(settings: Settings) -> Check:
    if settings.llm_provider_no_training:
        return ok("no training", "LLM_PROVIDER_NO_TRAINING: the model provider's terms forbid training "
                  "on the requests (attested by the operator)")
    reason = ("LLM_PROVIDER_NO_TRAINING is not set: WhatsApp's Business Solution terms forbid using the "
              "chats to train AI models, and nobody has attested that the model provider does not")
    fix = ("check the model provider's terms (no training on API requests, or opt out), then set "
           "LLM_PROVIDER_NO_TRAINING=1")
    return fail("no training", reason, fix) if production(settings) else warn("no training", reason, fix)


def persona_senders(settings: Settings) -> Check | None:
    """None without WhatsApp (SMS only): there is no sender to share."""
    students = settings.twilio_whatsapp_from.removeprefix("whatsapp:")
    pro = settings.twilio_whatsapp_from_pro.removeprefix("whatsapp:")
    if not students:
        return None
    if pro and pro != students:
        return ok("persona senders", f"students on {students}, pro users on {pro}")
    said = "is not set" if not pro else "is the students' number"
    return warn("persona senders", f"TWILIO_WHATSAPP_FROM_PRO {said}: the students' tutor and the pro "
                "assistant share one WhatsApp sender, which reads as a general-purpose assistant",
                "register a second WhatsApp sender for pro users and set TWILIO_WHATSAPP_FROM_PRO")


def service_checks(settings: Settings) -> list[Check]:
    senders = persona_senders(settings)
    return [organisation(settings), no_training(settings), *([senders] if senders else [])]

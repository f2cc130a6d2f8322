"""Checks that need no provider: the settings themselves, the tools on this machine, the disk."""

from __future__ import annotations

import shutil
from urllib.parse import urlsplit

from bot.channel.email import smtp_configured
from bot.channel.prices import RatesError, load_rates
from bot.config import Settings
from bot.config_secrets import example_host, refusal
from bot.doctor.report import Check, fail, off, ok, warn
from bot.doctor.service import LOCAL_HOSTS, service_checks
from bot.media import speech
from bot.sandbox.bwrap import unavailable_reason

SANDBOX_WHATSAPP = "+14155238886"  # Twilio's WhatsApp sandbox: only numbers that joined it can write
MIN_FREE_BYTES = 1 << 30


def public_url(settings: Settings) -> Check:
    host = (urlsplit(settings.public_base_url).hostname or "").lower()
    if example_host(settings.public_base_url):  # .env.example's, kept by copying the file
        return fail("public URL", f"PUBLIC_BASE_URL is the placeholder {settings.public_base_url}",
                    "set PUBLIC_BASE_URL to the https address Twilio reaches this bot at")
    if host in LOCAL_HOSTS:
        return fail("public URL", f"PUBLIC_BASE_URL is {settings.public_base_url}: Twilio cannot reach it",
                    "set PUBLIC_BASE_URL to the bot's public https address (a tunnel while trying it)")
    if not settings.public_base_url.startswith("https://"):
        # Twilio calls and fetches plain http too, but webhooks and file links then travel in clear.
        return ok("public URL", f"{settings.public_base_url} (not https: prefer TLS in production)")
    return ok("public URL", settings.public_base_url)


def whatsapp_sender(settings: Settings) -> Check:
    number = settings.twilio_whatsapp_from.removeprefix("whatsapp:")
    if not number:
        return off("WhatsApp sender", "TWILIO_WHATSAPP_FROM is not set: SMS only",
                   "set TWILIO_WHATSAPP_FROM=whatsapp:+… to a WhatsApp sender of the account")
    if number == SANDBOX_WHATSAPP:
        return fail("WhatsApp sender", "TWILIO_WHATSAPP_FROM is Twilio's sandbox number: only numbers "
                    "that joined the sandbox can write, and it leaves it after 3 days",
                    "register a WhatsApp sender of your own (Twilio console, Messaging → Senders)")
    return ok("WhatsApp sender", number)


def required(settings: Settings, missing: str | None) -> Check:
    """`missing`: what load_settings said of the variables `serve` requires (None: all set)."""
    if missing:
        return fail("settings", missing, "fill them in .env (see .env.example)")
    refused = refusal(settings)  # what stops serve and worker: a weak SECRET_KEY, a placeholder
    if refused is not None:
        return fail("settings", refused.reason, refused.fix)
    return ok("settings", "every variable serve requires is set")


def email(settings: Settings) -> Check | None:
    """None when SMTP is configured: the probe then says whether the server answers."""
    reason = smtp_configured(settings)
    if reason:
        return off("e-mail", f"{reason}: EMAIL, e-mailed files and summaries are off",
                   "set SMTP_HOST, SMTP_PORT, SMTP_FROM (and SMTP_USER/SMTP_PASSWORD)")
    return None


def web_search(settings: Settings) -> Check:
    if settings.tavily_api_key:
        return ok("web search", "Tavily key set (not called here: each search is billed)")
    if settings.searxng_url:
        return ok("web search", f"SearXNG at {settings.searxng_url}")
    return off("web search", "no TAVILY_API_KEY nor SEARXNG_URL: web_search is not offered",
               "set TAVILY_API_KEY (or SEARXNG_URL for a SearXNG of your own)")


def payments(settings: Settings) -> Check:
    provider = settings.payment_provider
    if not provider:
        return off("payments", "PAYMENT_PROVIDER is not set: credits are given by the operator only",
                   "PAYMENT_PROVIDER=paystack with PAYMENT_SECRET")
    if provider == "local":
        return ok("payments", "local: no money moves; /pay/… confirms a payment, for trying the bot")
    if not settings.payment_secret:
        return fail("payments", f"PAYMENT_PROVIDER={provider} without PAYMENT_SECRET", "set PAYMENT_SECRET")
    return ok("payments", f"{provider} (not called here)")


def cost_meter(settings: Settings) -> Check:
    """The rate table that prices every message: its date, the operator's file over it, the rate
    of the school's currency (the dashboard's costs)."""
    try:
        table = load_rates(settings.costs.cost_rates_file or None)
    except RatesError as exc:
        return fail("cost meter", f"{exc}: messages are not priced", "fix COST_RATES_FILE or leave it empty")
    where = f"rates taken {table.taken}" + (f", {table.override} over them" if table.override else "")
    currency = settings.payment_currency.upper()
    if currency not in table.currency:
        return warn("cost meter", f"{where}; no rate for {currency}: costs shown in USD",
                    f"add {currency} to [currency] in COST_RATES_FILE")
    return ok("cost meter", f"{where}; {table.currency[currency]} {currency} per USD")


def review_reminders(settings: Settings) -> Check:
    """The way back to review after a silence (bot.learning.reengage): past WhatsApp's 24 h window only
    an approved template may go."""
    learning = settings.learning
    sms = "; SMS students get one SMS (SMS_REENGAGE)" if learning.sms_reengage else ""
    sid = learning.review_template_sid
    if not sid:
        return off("review reminders", "REVIEW_TEMPLATE_SID is not set: nothing is sent to a WhatsApp "
                   f"student outside the 24 h window, however long their questions wait{sms}",
                   "create a twilio/quick-reply template ({{1}} first name, {{2}} number of questions, "
                   "a « Réviser » button with the id revise:1), have it approved, set REVIEW_TEMPLATE_SID")
    if not sid.startswith("HX"):
        return fail("review reminders", f"REVIEW_TEMPLATE_SID {sid} is not a content sid (HX…)",
                    "copy the approved template's Content SID from Twilio's Content Template Builder")
    if not learning.reengage_max_per_week:
        return off("review reminders", "REENGAGE_MAX_PER_WEEK=0: the template is never sent",
                   "set REENGAGE_MAX_PER_WEEK (2 by default)")
    return ok("review reminders", f"template {sid} to a student silent {learning.reengage_after_s // 3600} h "
              f"with questions due, at most {learning.reengage_max_per_week} a week{sms}")


def distress(settings: Settings) -> Check:
    """How a child's distress is heard: the local layers are on everywhere, but measured on sentences
    by writers they were not trained on (bench.safety's held-out split) they hear about two in three;
    a moderation endpoint is the layer that hears what they miss."""
    safety = settings.safety
    if safety.moderation_base_url:
        return ok("distress", f"phrases, {'meaning, ' if safety.safety_meaning else ''}"
                  f"and the moderation endpoint {safety.moderation_base_url}")
    layers = "the phrase list and the message's meaning" if safety.safety_meaning else "the phrase list alone"
    return warn("distress", f"MODERATION_BASE_URL is not set: a child's distress is heard by {layers}, "
                "which miss about one message in three written in words they have not seen "
                "(python -m bench.safety)",
                "set MODERATION_BASE_URL (and MODERATION_API_KEY) to an OpenAI-compatible "
                "moderation endpoint")


def tools(settings: Settings) -> list[Check]:
    found = []
    reason = unavailable_reason(settings)
    found.append(off("bubblewrap sandbox", f"bash_execute is not offered: {reason}",
                     "apt-get install bubblewrap util-linux (and see SANDBOX_* settings)")
                 if reason else ok("bubblewrap sandbox", "bash_execute offered"))
    found.append(ok("Tesseract", shutil.which("tesseract") or "")
                 if shutil.which("tesseract") else
                 off("Tesseract", "not installed: photos are not read as text",
                     "apt-get install tesseract-ocr tesseract-ocr-fra"))
    missing = speech.ffmpeg_missing()
    found.append(off("ffmpeg", f"{missing}: voice notes are not heard", "apt-get install ffmpeg")
                 if missing else ok("ffmpeg", shutil.which("ffmpeg") or ""))
    return found


def disk(settings: Settings) -> Check:
    path = settings.data_dir
    try:
        path.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(path).free
    except OSError as exc:
        return fail("disk", f"DATA_DIR {path}: {exc.strerror or exc}", "make DATA_DIR writable by the bot")
    gib = free / (1 << 30)
    if free < MIN_FREE_BYTES:
        return fail("disk", f"{gib:.1f} GiB free in DATA_DIR {path}", "free space or move DATA_DIR")
    return ok("disk", f"{gib:.1f} GiB free in DATA_DIR {path}")


def local_checks(settings: Settings, missing: str | None = None) -> list[Check]:
    found = [required(settings, missing), public_url(settings), whatsapp_sender(settings),
             *service_checks(settings)]
    mail = email(settings)
    if mail is not None:
        found.append(mail)
    return [*found, web_search(settings), payments(settings), cost_meter(settings),
            review_reminders(settings), distress(settings), *tools(settings), disk(settings)]

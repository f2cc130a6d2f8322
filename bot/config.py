"""Settings read once from the environment (and a `.env` file), checked at start-up.

Every error names the variable at fault so that an operator can fix it without reading code.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from dotenv import dotenv_values


class ConfigError(Exception):
    """A setting is missing or malformed; the message names the variable."""


TWILIO_DEFAULT_API = "https://api.twilio.com"
OPENROUTER_API = "https://openrouter.ai/api/v1"

# Settings the bot cannot serve without. The CLI `chat` command runs without Twilio ones.
REQUIRED_FOR_SERVE = (
    "PUBLIC_BASE_URL",
    "TWILIO_ACCOUNT_SID",
    "TWILIO_AUTH_TOKEN",
    "LLM_API_KEY",
    "SECRET_KEY",
)


@dataclass(frozen=True)
class Limits:
    """The agent loop's hard caps, in one place; tests may lower them."""

    max_iterations: int = 10
    tool_timeout_s: float = 60.0
    turn_timeout_s: float = 180.0
    final_answer_reserve_s: float = 20.0
    progress_note_after_s: float = 8.0
    # Calls run from one model response; the others get a result saying they were not run.
    max_tool_calls_per_response: int = 8


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    database_url: str
    redis_url: str | None
    host: str
    port: int
    public_base_url: str
    twilio_account_sid: str
    twilio_auth_token: str = field(repr=False)
    twilio_whatsapp_from: str
    twilio_sms_from: str
    twilio_api_base_url: str
    twilio_template_sid: str
    llm_base_url: str
    llm_api_key: str = field(repr=False)
    llm_model: str
    llm_fallback_models: tuple[str, ...]
    llm_context_tokens: int
    llm_timeout_s: float
    limits: Limits
    # Worker and outbound behaviour.
    worker_concurrency: int
    outbound_part_wait_s: float
    media_max_bytes: int
    file_link_ttl_s: int
    secret_key: str = field(repr=False)
    # Credits (numbers an operator tunes).
    signup_credits: int
    tokens_per_credit: int
    guest_daily_messages: int
    notice_interval_s: int  # at most one "no credits" / "guest limit" notice per user per interval
    bonus_max_awards_per_day: int
    bonus_max_credits_per_day: int
    quiz_ttl_s: int
    parent_summary_weekday: int
    parent_summary_hour: int
    reminder_lead_minutes: int
    default_timezone: str
    # E-mail, search, browse, payments, bug reports.
    smtp_host: str
    smtp_port: int
    smtp_user: str
    smtp_password: str = field(repr=False)
    smtp_from: str
    smtp_security: str  # "starttls", "tls" or "none"
    tavily_api_key: str = field(repr=False)
    tavily_base_url: str
    searxng_url: str
    jina_api_key: str = field(repr=False)
    jina_base_url: str
    browse_allow_private: bool
    payment_provider: str
    payment_secret: str = field(repr=False)
    payment_base_url: str
    bug_report_email: str
    bug_report_whatsapp: str
    log_level: str
    # Outreach caps (e-mail codes, SMTP, search and browsing).
    email_code_ttl_s: int = 900
    smtp_timeout_s: float = 20.0
    smtp_ca_file: str = ""  # a private CA for an internal relay; the system CAs otherwise
    email_max_attachment_bytes: int = 15 * 1024 * 1024
    web_search_timeout_s: float = 20.0
    browse_timeout_s: float = 25.0
    browse_max_bytes: int = 3 * 1024 * 1024
    # Test-only: "host:port" pairs browse_url may reach although private (never set in production).
    browse_test_allow: tuple[str, ...] = ()
    # Sandbox for bash_execute (bubblewrap), limits per command.
    sandbox_bwrap: str = "bwrap"
    sandbox_timeout_s: float = 30.0
    sandbox_cpu_s: int = 20
    sandbox_memory_mb: int = 512
    sandbox_max_procs: int = 64
    sandbox_file_mb: int = 16
    sandbox_workspace_mb: int = 64
    sandbox_uid: int = 65534  # who the sandbox runs as when the bot runs as root
    sandbox_concurrency: int = 4
    # Memory of all sandboxes together (a parent control group); fewer run at once when it is small.
    sandbox_total_memory_mb: int = 2048
    sandbox_shm_mb: int = 16  # the size of the sandbox's /dev/shm
    sandbox_cpus: float = 1.0  # CPU quota per sandbox
    sandbox_limiter: str = "auto"  # auto | cgroup2 | cgroup1 | rlimits (per-process limits only)
    sandbox_cgroup: str = "deblo-sandbox"  # name of the parent control group
    # Credit packs: (credits, price in PAYMENT_CURRENCY), offered in this order.
    credit_packs: tuple[tuple[int, int], ...] = ((100, 500), (250, 1000), (600, 2000))
    payment_currency: str = "XOF"
    payment_timeout_s: float = 20.0
    # How far below zero a turn may take a balance: a turn stops calling the model before it would.
    turn_overdraft_credits: int = 5
    # LLM retries (429, 5xx, connection errors before anything was streamed).
    llm_max_retries: int = 2
    llm_retry_base_s: float = 0.5
    # Message path: worker leases, sweeper, Twilio retries, scheduler (bot.pipeline, bot.outbound).
    worker_lease_s: float = 30.0
    sweep_interval_s: float = 5.0
    requeue_delay_s: float = 0.25
    max_attempts: int = 3
    twilio_send_attempts: int = 4
    twilio_backoff_s: float = 0.5
    twilio_timeout_s: float = 15.0
    jobs_enabled: bool = True
    # Proactive sends (reminders, summaries, parents' digests): retries of a failed send (bot.scheduler).
    scheduled_send_attempts: int = 5
    scheduled_send_backoff_s: float = 60.0
    scheduled_send_claim_s: float = 300.0
    # The outbox (bot.outbound): a reply Twilio did not take is retried in the background with
    # backoff from OUTBOX_BACKOFF_S doubling up to OUTBOX_BACKOFF_MAX_S, for at most OUTBOX_MAX_AGE_S.
    outbox_backoff_s: float = 2.0
    outbox_backoff_max_s: float = 300.0
    outbox_max_age_s: float = 86400.0
    outbox_poll_s: float = 1.0
    # The inbound spool (bot.spool): a webhook not stored within SPOOL_AFTER_S (database down) is
    # kept in DATA_DIR/spool and replayed every SPOOL_REPLAY_S; beyond SPOOL_MAX_BYTES, 503.
    spool_after_s: float = 5.0
    spool_replay_s: float = 2.0
    spool_max_bytes: int = 100 * 1024 * 1024
    parent_digest_hour: int = 7  # local hour of a parent's daily digest of their children's tasks
    max_open_tasks: int = 50  # open tasks one user may have; create_task refuses more (bot.tasks)
    # Messages, inbound payloads, outbound rows, tool effects and files older than this are purged
    # (bot.retention); the credit ledger is kept.
    retention_days: int = 365
    # Outbound (bot.outbound, bot.links): links a person opens later (SMS, e-mail, template) last
    # longer than the WhatsApp media links Twilio fetches at once (file_link_ttl_s).
    file_link_sms_ttl_s: int = 7 * 86400
    twilio_template_link_variable: str = ""  # the template variable that takes a file link, if any
    delivery_block_after: int = 3  # consecutive permanent failures before proactive sends stop
    redis_key_prefix: str = "deblo:"
    # Photos and voice notes (bot.vision, bot.speech); "" base URLs and keys mean the LLM's.
    llm_vision: bool = True
    llm_vision_model: str = ""
    transcribe_base_url: str = ""
    transcribe_api_key: str = field(default="", repr=False)
    transcribe_model: str = "whisper-1"
    transcribe_max_seconds: int = 180
    tts_base_url: str = ""
    tts_api_key: str = field(default="", repr=False)
    tts_model: str = "tts-1"
    tts_voice: str = "alloy"
    speech_timeout_s: float = 60.0
    # Rates: credits per image the model sees, audio seconds and spoken characters per credit.
    image_input_credits: int = 1
    audio_seconds_per_credit: int = 60
    speech_chars_per_credit: int = 500
    extra: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def single_process(self) -> bool:
        return not self.redis_url


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "")
    if raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "")
    if raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw == "":
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be true or false, got {raw!r}")


def _url(env: Mapping[str, str], name: str, default: str = "") -> str:
    raw = env.get(name, default).strip().rstrip("/")
    if raw and not raw.startswith(("http://", "https://")):
        raise ConfigError(f"{name} must start with http:// or https://, got {raw!r}")
    return raw


def _scheduled_sends(env: Mapping[str, str]) -> dict[str, float]:
    """SCHEDULED_SEND_ATTEMPTS / _BACKOFF_S / _CLAIM_S and PARENT_DIGEST_HOUR, checked."""
    attempts = _int(env, "SCHEDULED_SEND_ATTEMPTS", 5)
    backoff = _float(env, "SCHEDULED_SEND_BACKOFF_S", 60.0)
    claim = _float(env, "SCHEDULED_SEND_CLAIM_S", 300.0)
    hour = _int(env, "PARENT_DIGEST_HOUR", 7)
    if attempts < 1:
        raise ConfigError(f"SCHEDULED_SEND_ATTEMPTS must be 1 or more, got {attempts}")
    if backoff < 0 or claim <= 0:
        raise ConfigError("SCHEDULED_SEND_BACKOFF_S must be 0 or more and SCHEDULED_SEND_CLAIM_S more than 0")
    if not 0 <= hour <= 23:
        raise ConfigError(f"PARENT_DIGEST_HOUR must be an hour from 0 to 23, got {hour}")
    return {"scheduled_send_attempts": attempts, "scheduled_send_backoff_s": backoff,
            "scheduled_send_claim_s": claim, "parent_digest_hour": hour}


def _outbound(env: Mapping[str, str]) -> dict[str, object]:
    """FILE_LINK_SMS_TTL_S, TWILIO_TEMPLATE_LINK_VARIABLE and DELIVERY_BLOCK_AFTER, checked."""
    ttl = _int(env, "FILE_LINK_SMS_TTL_S", 7 * 86400)
    variable = env.get("TWILIO_TEMPLATE_LINK_VARIABLE", "").strip()
    block_after = _int(env, "DELIVERY_BLOCK_AFTER", 3)
    if ttl <= 0:
        raise ConfigError(f"FILE_LINK_SMS_TTL_S must be more than 0 seconds, got {ttl}")
    # Variable 1 carries the message text; a Content API variable key is at most 16 characters.
    if variable and (variable == "1" or len(variable) > 16 or not variable.isalnum()):
        raise ConfigError("TWILIO_TEMPLATE_LINK_VARIABLE must be a template variable other than 1 "
                          f"(letters or digits, at most 16), got {variable!r}")
    if block_after < 1:
        raise ConfigError(f"DELIVERY_BLOCK_AFTER must be 1 or more, got {block_after}")
    return {"file_link_sms_ttl_s": ttl, "twilio_template_link_variable": variable,
            "delivery_block_after": block_after}


def _media(env: Mapping[str, str], llm_base_url: str, llm_api_key: str, llm_model: str) -> dict[str, object]:
    """LLM_VISION*, TRANSCRIBE_*, TTS_* and the media rates, checked; URLs and keys default to the LLM's."""
    vision = env.get("LLM_VISION", "on").strip().lower() or "on"
    if vision not in ("on", "off", "true", "false", "1", "0", "yes", "no"):
        raise ConfigError(f"LLM_VISION must be on or off, got {vision!r}")
    values: dict[str, object] = {
        "llm_vision": vision in ("on", "true", "1", "yes"),
        "llm_vision_model": env.get("LLM_VISION_MODEL", "").strip() or llm_model,
        "transcribe_base_url": _url(env, "TRANSCRIBE_BASE_URL") or llm_base_url,
        "transcribe_api_key": env.get("TRANSCRIBE_API_KEY", "").strip() or llm_api_key,
        "transcribe_model": env.get("TRANSCRIBE_MODEL", "").strip() or "whisper-1",
        "transcribe_max_seconds": _at_least(env, "TRANSCRIBE_MAX_SECONDS", 180, 1),
        "tts_base_url": _url(env, "TTS_BASE_URL") or llm_base_url,
        "tts_api_key": env.get("TTS_API_KEY", "").strip() or llm_api_key,
        "tts_model": env.get("TTS_MODEL", "").strip() or "tts-1",
        "tts_voice": env.get("TTS_VOICE", "").strip() or "alloy",
        "speech_timeout_s": _float(env, "SPEECH_TIMEOUT_S", 60.0),
        "image_input_credits": _at_least(env, "IMAGE_INPUT_CREDITS", 1, 0),
        "audio_seconds_per_credit": _at_least(env, "AUDIO_SECONDS_PER_CREDIT", 60, 1),
        "speech_chars_per_credit": _at_least(env, "SPEECH_CHARS_PER_CREDIT", 500, 1),
    }
    return values


def _outbox_and_spool(env: Mapping[str, str]) -> dict[str, float]:
    """OUTBOX_* and SPOOL_* settings, each more than 0."""
    values: dict[str, float] = {}
    for name, default in (("OUTBOX_BACKOFF_S", 2.0), ("OUTBOX_BACKOFF_MAX_S", 300.0),
                          ("OUTBOX_MAX_AGE_S", 86400.0), ("OUTBOX_POLL_S", 1.0), ("SPOOL_AFTER_S", 5.0),
                          ("SPOOL_REPLAY_S", 2.0)):
        value = _float(env, name, default)
        if value <= 0:
            raise ConfigError(f"{name} must be more than 0, got {value}")
        values[name.lower()] = value
    values["spool_max_bytes"] = _at_least(env, "SPOOL_MAX_BYTES", 100 * 1024 * 1024, 4096)
    return values


def _at_least(env: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    value = _int(env, name, default)
    if value < minimum:
        raise ConfigError(f"{name} must be {minimum} or more, got {value}")
    return value


def _secret_key(env: Mapping[str, str]) -> str:
    """SECRET_KEY signs file links and must be the bot's own: never the Twilio auth token, which
    Twilio and whoever manages the Twilio account also know. Without it (the `chat` command), a
    random key of this process only: its links are not meant to outlive it."""
    key = env.get("SECRET_KEY", "").strip()
    if key and key == env.get("TWILIO_AUTH_TOKEN", "").strip():
        raise ConfigError("SECRET_KEY must be its own secret, not the value of TWILIO_AUTH_TOKEN: "
                          "set a long random value (e.g. `openssl rand -hex 32`)")
    return key or secrets.token_hex(32)


def _credit_packs(env: Mapping[str, str]) -> tuple[tuple[int, int], ...]:
    """CREDIT_PACKS="100:500,250:1000": credits:price pairs, offered in that order."""
    raw = env.get("CREDIT_PACKS", "").strip()
    if not raw:
        return ((100, 500), (250, 1000), (600, 2000))
    packs: list[tuple[int, int]] = []
    for item in raw.split(","):
        credits, _, price = item.strip().partition(":")
        try:
            pack = (int(credits), int(price))
        except ValueError:
            raise ConfigError(
                f"CREDIT_PACKS must look like 100:500,250:1000 (credits:price), got {item!r}"
            ) from None
        if pack[0] <= 0 or pack[1] <= 0:
            raise ConfigError(f"CREDIT_PACKS needs positive credits and prices, got {item!r}")
        packs.append(pack)
    return tuple(packs)


def read_environment(env_file: str | Path | None = ".env") -> dict[str, str]:
    """The process environment over the values of `.env` (the environment wins)."""
    values: dict[str, str] = {}
    if env_file and Path(env_file).is_file():
        values.update({k: v or "" for k, v in dotenv_values(env_file).items()})
    values.update(os.environ)
    return values


def load_settings(env: Mapping[str, str] | None = None, *, require: tuple[str, ...] = ()) -> Settings:
    env = dict(read_environment() if env is None else env)
    missing = [name for name in require if not env.get(name, "").strip()]
    if missing:
        raise ConfigError(
            f"missing required setting {missing[0]}"
            + (f" (and {', '.join(missing[1:])})" if missing[1:] else "")
            + ": set it in the environment or in .env (see .env.example)"
        )
    data_dir = Path(env.get("DATA_DIR") or "./data")
    database_url = env.get("DATABASE_URL") or f"sqlite+aiosqlite:///{data_dir / 'deblo.db'}"
    if not database_url.startswith(("sqlite+aiosqlite://", "postgresql+asyncpg://")):
        raise ConfigError(
            "DATABASE_URL must start with sqlite+aiosqlite:// or postgresql+asyncpg://, "
            f"got {database_url.split(':', 1)[0]!r}"
        )
    redis_url = env.get("REDIS_URL", "").strip() or None
    if redis_url and not redis_url.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"REDIS_URL must start with redis://, rediss:// or unix://, got {redis_url!r}")
    wa_from = env.get("TWILIO_WHATSAPP_FROM", "").strip()
    if wa_from and not wa_from.startswith("whatsapp:"):
        raise ConfigError(f"TWILIO_WHATSAPP_FROM must look like whatsapp:+14155238886, got {wa_from!r}")
    smtp_security = env.get("SMTP_SECURITY", "starttls").strip().lower()
    if smtp_security not in ("starttls", "tls", "none"):
        raise ConfigError(f"SMTP_SECURITY must be starttls, tls or none, got {smtp_security!r}")
    port = _int(env, "PORT", 8080)
    notice_interval_s = _int(env, "NOTICE_INTERVAL_S", 3600)
    if notice_interval_s < 0:
        raise ConfigError(f"NOTICE_INTERVAL_S must be 0 or more seconds, got {notice_interval_s}")
    limits = Limits(
        max_iterations=_int(env, "AGENT_MAX_ITERATIONS", 10),
        tool_timeout_s=_float(env, "AGENT_TOOL_TIMEOUT_S", 60.0),
        turn_timeout_s=_float(env, "AGENT_TURN_TIMEOUT_S", 180.0),
        final_answer_reserve_s=_float(env, "AGENT_FINAL_RESERVE_S", 20.0),
        progress_note_after_s=_float(env, "AGENT_PROGRESS_NOTE_AFTER_S", 8.0),
        max_tool_calls_per_response=_at_least(env, "MAX_TOOL_CALLS_PER_RESPONSE", 8, 1),
    )
    return Settings(
        data_dir=data_dir,
        database_url=database_url,
        redis_url=redis_url,
        host=env.get("HOST", "0.0.0.0"),
        port=port,
        public_base_url=_url(env, "PUBLIC_BASE_URL", f"http://localhost:{port}"),
        twilio_account_sid=env.get("TWILIO_ACCOUNT_SID", "").strip(),
        twilio_auth_token=env.get("TWILIO_AUTH_TOKEN", "").strip(),
        twilio_whatsapp_from=wa_from,
        twilio_sms_from=env.get("TWILIO_SMS_FROM", "").strip(),
        twilio_api_base_url=_url(env, "TWILIO_API_BASE_URL", TWILIO_DEFAULT_API),
        twilio_template_sid=env.get("TWILIO_TEMPLATE_SID", "").strip(),
        llm_base_url=_url(env, "LLM_BASE_URL", OPENROUTER_API),
        llm_api_key=env.get("LLM_API_KEY", "").strip(),
        llm_model=env.get("LLM_MODEL", "").strip() or "openai/gpt-4o-mini",
        llm_fallback_models=tuple(
            m.strip() for m in env.get("LLM_FALLBACK_MODELS", "").split(",") if m.strip()
        ),
        llm_context_tokens=_int(env, "LLM_CONTEXT_TOKENS", 32_000),
        llm_timeout_s=_float(env, "LLM_TIMEOUT_S", 60.0),
        limits=limits,
        worker_concurrency=_int(env, "WORKER_CONCURRENCY", 16),
        outbound_part_wait_s=_float(env, "OUTBOUND_PART_WAIT_S", 3.0),
        media_max_bytes=_int(env, "MEDIA_MAX_BYTES", 16 * 1024 * 1024),
        file_link_ttl_s=_int(env, "FILE_LINK_TTL_S", 3600),
        secret_key=_secret_key(env),
        signup_credits=_int(env, "SIGNUP_CREDITS", 50),
        tokens_per_credit=_int(env, "TOKENS_PER_CREDIT", 2000),
        turn_overdraft_credits=_at_least(env, "TURN_OVERDRAFT_CREDITS", 5, 0),
        guest_daily_messages=_int(env, "GUEST_DAILY_MESSAGES", 10),
        notice_interval_s=notice_interval_s,
        bonus_max_awards_per_day=_int(env, "BONUS_MAX_AWARDS_PER_DAY", 3),
        bonus_max_credits_per_day=_int(env, "BONUS_MAX_CREDITS_PER_DAY", 10),
        quiz_ttl_s=_int(env, "QUIZ_TTL_S", 3600),
        parent_summary_weekday=_int(env, "PARENT_SUMMARY_WEEKDAY", 6),
        parent_summary_hour=_int(env, "PARENT_SUMMARY_HOUR", 18),
        reminder_lead_minutes=_int(env, "REMINDER_LEAD_MINUTES", 60),
        default_timezone=env.get("DEFAULT_TIMEZONE", "Africa/Abidjan"),
        smtp_host=env.get("SMTP_HOST", "").strip(),
        smtp_port=_int(env, "SMTP_PORT", 587),
        smtp_user=env.get("SMTP_USER", ""),
        smtp_password=env.get("SMTP_PASSWORD", ""),
        smtp_from=env.get("SMTP_FROM", "").strip(),
        smtp_security=smtp_security,
        tavily_api_key=env.get("TAVILY_API_KEY", "").strip(),
        tavily_base_url=_url(env, "TAVILY_BASE_URL", "https://api.tavily.com"),
        searxng_url=_url(env, "SEARXNG_URL"),
        jina_api_key=env.get("JINA_API_KEY", "").strip(),
        jina_base_url=_url(env, "JINA_BASE_URL", "https://r.jina.ai"),
        browse_allow_private=_bool(env, "BROWSE_ALLOW_PRIVATE_FOR_TESTS", False),
        payment_provider=env.get("PAYMENT_PROVIDER", "").strip().lower(),
        payment_secret=env.get("PAYMENT_SECRET", ""),
        payment_base_url=_url(env, "PAYMENT_BASE_URL"),
        bug_report_email=env.get("BUG_REPORT_EMAIL", "").strip(),
        bug_report_whatsapp=env.get("BUG_REPORT_WHATSAPP", "").strip(),
        log_level=env.get("LOG_LEVEL", "INFO").upper(),
        email_code_ttl_s=_int(env, "EMAIL_CODE_TTL_S", 900),
        smtp_timeout_s=_float(env, "SMTP_TIMEOUT_S", 20.0),
        smtp_ca_file=env.get("SMTP_CA_FILE", "").strip(),
        email_max_attachment_bytes=_int(env, "EMAIL_MAX_ATTACHMENT_BYTES", 15 * 1024 * 1024),
        web_search_timeout_s=_float(env, "WEB_SEARCH_TIMEOUT_S", 20.0),
        browse_timeout_s=_float(env, "BROWSE_TIMEOUT_S", 25.0),
        browse_max_bytes=_int(env, "BROWSE_MAX_BYTES", 3 * 1024 * 1024),
        browse_test_allow=tuple(
            a.strip() for a in env.get("BROWSE_ALLOW_ADDRS_FOR_TESTS", "").split(",") if a.strip()
        ),
        sandbox_bwrap=env.get("SANDBOX_BWRAP", "").strip() or "bwrap",
        sandbox_timeout_s=_float(env, "SANDBOX_TIMEOUT_S", 30.0),
        sandbox_cpu_s=_int(env, "SANDBOX_CPU_S", 20),
        sandbox_memory_mb=_int(env, "SANDBOX_MEMORY_MB", 512),
        sandbox_max_procs=_int(env, "SANDBOX_MAX_PROCS", 64),
        sandbox_file_mb=_int(env, "SANDBOX_FILE_MB", 16),
        sandbox_workspace_mb=_int(env, "SANDBOX_WORKSPACE_MB", 64),
        sandbox_uid=_int(env, "SANDBOX_UID", 65534),
        sandbox_concurrency=_int(env, "SANDBOX_CONCURRENCY", 4),
        sandbox_total_memory_mb=_int(env, "SANDBOX_TOTAL_MEMORY_MB", 2048),
        sandbox_shm_mb=_int(env, "SANDBOX_SHM_MB", 16),
        sandbox_cpus=_float(env, "SANDBOX_CPUS", 1.0),
        sandbox_limiter=env.get("SANDBOX_LIMITER", "").strip().lower() or "auto",
        sandbox_cgroup=env.get("SANDBOX_CGROUP", "").strip() or "deblo-sandbox",
        credit_packs=_credit_packs(env),
        payment_currency=env.get("PAYMENT_CURRENCY", "").strip().upper() or "XOF",
        payment_timeout_s=_float(env, "PAYMENT_TIMEOUT_S", 20.0),
        llm_max_retries=_int(env, "LLM_MAX_RETRIES", 2),
        llm_retry_base_s=_float(env, "LLM_RETRY_BASE_S", 0.5),
        worker_lease_s=_float(env, "WORKER_LEASE_S", 30.0),
        sweep_interval_s=_float(env, "SWEEP_INTERVAL_S", 5.0),
        requeue_delay_s=_float(env, "REQUEUE_DELAY_S", 0.25),
        max_attempts=_int(env, "MAX_ATTEMPTS", 3),
        twilio_send_attempts=_int(env, "TWILIO_SEND_ATTEMPTS", 4),
        twilio_backoff_s=_float(env, "TWILIO_BACKOFF_S", 0.5),
        twilio_timeout_s=_float(env, "TWILIO_TIMEOUT_S", 15.0),
        jobs_enabled=_bool(env, "JOBS_ENABLED", True),
        max_open_tasks=_at_least(env, "MAX_OPEN_TASKS", 50, 1),
        retention_days=_at_least(env, "RETENTION_DAYS", 365, 1),
        **_scheduled_sends(env),
        **_outbox_and_spool(env),
        **_outbound(env),
        **_media(env, _url(env, "LLM_BASE_URL", OPENROUTER_API), env.get("LLM_API_KEY", "").strip(),
                 env.get("LLM_MODEL", "").strip() or "openai/gpt-4o-mini"),
        redis_key_prefix=env.get("REDIS_KEY_PREFIX", "").strip() or "deblo:",
        extra={k: v for k, v in env.items() if k.startswith("DEBLO_")},
    )


def describe(settings: Settings) -> dict[str, object]:
    """Settings safe to log: secrets are left out."""
    hidden = {"twilio_auth_token", "llm_api_key", "smtp_password", "tavily_api_key", "jina_api_key",
              "payment_secret", "secret_key", "extra", "transcribe_api_key", "tts_api_key"}
    return {f.name: getattr(settings, f.name) for f in fields(settings) if f.name not in hidden}

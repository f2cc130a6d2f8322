"""Settings read once from the environment (and a `.env` file), checked at start-up.

Every error names the variable at fault so that an operator can fix it without reading code.
"""

from __future__ import annotations

import os
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
)


@dataclass(frozen=True)
class Limits:
    """The agent loop's hard caps, in one place; tests may lower them."""

    max_iterations: int = 10
    tool_timeout_s: float = 60.0
    turn_timeout_s: float = 180.0
    final_answer_reserve_s: float = 20.0
    progress_note_after_s: float = 8.0


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
    # Credit packs: (credits, price in PAYMENT_CURRENCY), offered in this order.
    credit_packs: tuple[tuple[int, int], ...] = ((100, 500), (250, 1000), (600, 2000))
    payment_currency: str = "XOF"
    payment_timeout_s: float = 20.0
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
    redis_key_prefix: str = "deblo:"
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
    limits = Limits(
        max_iterations=_int(env, "AGENT_MAX_ITERATIONS", 10),
        tool_timeout_s=_float(env, "AGENT_TOOL_TIMEOUT_S", 60.0),
        turn_timeout_s=_float(env, "AGENT_TURN_TIMEOUT_S", 180.0),
        final_answer_reserve_s=_float(env, "AGENT_FINAL_RESERVE_S", 20.0),
        progress_note_after_s=_float(env, "AGENT_PROGRESS_NOTE_AFTER_S", 8.0),
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
        secret_key=env.get("SECRET_KEY", "").strip() or env.get("TWILIO_AUTH_TOKEN", "dev-secret"),
        signup_credits=_int(env, "SIGNUP_CREDITS", 50),
        tokens_per_credit=_int(env, "TOKENS_PER_CREDIT", 2000),
        guest_daily_messages=_int(env, "GUEST_DAILY_MESSAGES", 10),
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
        redis_key_prefix=env.get("REDIS_KEY_PREFIX", "").strip() or "deblo:",
        extra={k: v for k, v in env.items() if k.startswith("DEBLO_")},
    )


def describe(settings: Settings) -> dict[str, object]:
    """Settings safe to log: secrets are left out."""
    hidden = {"twilio_auth_token", "llm_api_key", "smtp_password", "tavily_api_key", "jina_api_key",
              "payment_secret", "secret_key", "extra"}
    return {f.name: getattr(settings, f.name) for f in fields(settings) if f.name not in hidden}

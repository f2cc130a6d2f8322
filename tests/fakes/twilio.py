"""A local server speaking Twilio's Messages API, for tests and benchmarks.

- `POST /2010-04-01/Accounts/{sid}/Messages.json` (form-encoded, Basic auth checked): 201 with the
  JSON Twilio returns; every accepted message is recorded in `.sent` (its form fields, plus "Sid").
- `GET …/Messages.json?To=&From=`: the list the client uses to resolve an ambiguous send.
- After a create, like Twilio: fetches each `MediaUrl` with HEAD then GET (recorded in `.fetched`;
  a failed fetch or a wrong Content-Type fails the message with 63019), then posts signed status
  callbacks (queued → sent → delivered by default) to `StatusCallback`, each `callback_delay_s`
  (20 ms by default) after the one before: like Twilio's, they come after the create's answer,
  which the bot stores the SID from (tests/core/test_outbound.py sends one before, on purpose).
- Injectable failures, one per request: `fail_next("429" | "500" | "500_after_create" | "drop" |
  "drop_after_create" | "400", times=1)`, or any Twilio error code (`fail_next("21610")`,
  `"63016"`, …): a 400 refusal carrying that code, as the REST API answers.
- Failed deliveries after acceptance: `callback_statuses = ("sent", "undelivered")` with
  `callback_error_code = "63024"` puts that `ErrorCode` on the failed/undelivered callbacks.
- Throughput, like Twilio's REST API: `sender_mps = {"whatsapp:+…": 80}` takes at most that many
  creates from a sender (`From`) in each second of `rate_clock` (`time.time` unless a test gives
  its own), and answers the others 429 / 20429 « Too Many Requests », counted in `.rate_refused`
  (per sender in `.rate_refused_by`); nothing refused is recorded as sent. `.taken` lists each
  create let through, as (From, `rate_clock()`), limited or not.
- Outages: `fail_while("500" | "503" | "429", condition)` fails every API request (create and list)
  while `condition()` is true (e.g. for a minute of the test's clock); `refuse_connections()`
  stops listening (new connections are refused, requests on kept-alive ones are dropped) until
  `accept_connections()`.
- The typing indicator (`POST /v2/Indicators/Typing.json`, messaging.twilio.com's path): Basic auth,
  form fields `channel=whatsapp` and `messageId` (an SM… or MM… sid), else 400 like Twilio; 200
  `{"success": true}`. Accepted calls are recorded in `.typing` (fields plus "at", monotonic time),
  every call counted in `.typing_requests`; `fail_typing("500" | "400" | "403")` fails the next
  one, `typing_delay_s` makes it answer late. Outages and refused connections apply to it too.
- The Content API (content.twilio.com's paths): `POST /v1/Content` (JSON `friendly_name`, `language`,
  `variables`, `types` with `twilio/quick-reply` or `twilio/list-picker`; Basic auth; a body Twilio
  would refuse gets 400) → 201 with an `HX…` sid, kept in `.contents`; `GET /v1/Content/{sid}`.
  `fail_content("400" | "500")` fails the next creation. A message sent with `ContentSid` must name a
  known content (one created here, or any other HX… sid: a template approved in the console; not
  one in `.deleted_contents`) and carry `ContentVariables` as a JSON object; `.sent` records it with
  `Rendered` (the types with the variables filled in) and refuses it (400, 63021) when a filled
  button title passes 20 characters, a list item 24 or a description 72. `approve(sid, body)` makes
  a template approved in the console known by its content (a body as `POST /v1/Content` takes it),
  so that what is sent with it is rendered too.
- The account, as `doctor` reads it: `GET /2010-04-01/Accounts/{sid}.json` (`account_status`),
  `GET …/IncomingPhoneNumbers.json?PhoneNumber=` (`phone_numbers`) and messaging.twilio.com's
  `GET /v2/Channels/Senders?Channel=whatsapp` (`whatsapp_senders`); Basic auth, 401/20003 otherwise.
- Inbound media like Twilio's: `add_media(data, content_type)` gives a Basic-auth-protected URL that
  redirects to the file.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import secrets
import time
from collections import deque
from collections.abc import Callable
from email.utils import format_datetime
from typing import Any

import aiohttp
from aiohttp import web
from twilio.request_validator import RequestValidator

from bot.clock import system_now
from tests.fakes.twilio_content import content_problem, render

_MESSAGE_SIDS = itertools.count(1)
_CONTENT_SIDS = itertools.count(1)


# Messages of the refusals tests ask for (REST API error codes).
REFUSALS = {
    21211: "The 'To' number is not a valid phone number.",
    21610: "Attempt to send to unsubscribed recipient",
    21614: "'To' number is not a valid mobile number",
    21656: "The ContentVariables Parameter is invalid.",
    63016: "Failed to send freeform message because you are outside the allowed window.",
    63024: "Invalid message recipient",
}


class FakeTwilio:
    def __init__(self, account_sid: str = "AC" + "0" * 32, auth_token: str = "fake-auth-token") -> None:
        self.account_sid = account_sid
        self.auth_token = auth_token
        self.sent: list[dict[str, Any]] = []
        self.messages: dict[str, dict[str, Any]] = {}
        self.fetched: list[dict[str, Any]] = []
        self.callbacks: list[dict[str, str]] = []
        # (monotonic time, "created" | status, sid): the order in which things happened.
        self.events: list[tuple[float, str, str]] = []
        self.callback_statuses: tuple[str, ...] = ("sent", "delivered")
        self.callback_delay_s = 0.02
        self.callback_error_code: str | None = None
        self.send_callbacks = True
        # Set: each message's callbacks wait for this event (a test that counts what the bot does
        # holds them until the reply is recorded, so they never race the sender's own write).
        self.callbacks_after: asyncio.Event | None = None
        self.fetch_media = True
        self.requests = 0
        self.unauthorised = 0
        self.typing: list[dict[str, Any]] = []
        self.typing_requests = 0
        self.typing_delay_s = 0.0
        self._typing_failures: deque[str] = deque()
        self.contents: dict[str, dict[str, Any]] = {}
        self.content_requests = 0
        self.deleted_contents: set[str] = set()  # sids a send is refused for (21655)
        self._content_failures: deque[str] = deque()
        self._failures: deque[str] = deque()
        self._outage: tuple[str, Callable[[], bool]] | None = None
        self.sender_mps: dict[str, int] = {}
        self.rate_clock: Callable[[], float] = time.time
        self.rate_refused = 0
        self.rate_refused_by: dict[str, int] = {}
        self.taken: list[tuple[str, float]] = []
        self._windows: dict[str, tuple[int, int]] = {}  # From → (second, creates taken in it)
        self._refusing = False
        self._site: web.TCPSite | None = None
        self._port = 0
        self._media: dict[str, tuple[bytes, str]] = {}
        self._counter = _MESSAGE_SIDS  # unique across instances, like Twilio's: restarts share a database
        self._background: set[asyncio.Task[None]] = set()
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.url = ""
        # What `doctor` asks about: the account's status, its numbers, its WhatsApp senders.
        self.account_status = "active"
        self.phone_numbers: set[str] = set()
        self.whatsapp_senders: dict[str, str] = {}  # "whatsapp:+…" → ONLINE | OFFLINE | …

    # --- scripting -------------------------------------------------------------------------
    def fail_next(self, kind: str, times: int = 1) -> None:
        self._failures.extend([kind] * times)

    def fail_typing(self, kind: str, times: int = 1) -> None:
        """The next typing indicator calls fail: "500", "400" or "403" (the beta not enabled)."""
        self._typing_failures.extend([kind] * times)

    def fail_content(self, kind: str, times: int = 1) -> None:
        """The next content creations fail: "400" (refused) or "500"."""
        self._content_failures.extend([kind] * times)

    def approve(self, sid: str, body: dict[str, Any]) -> None:
        """A template approved in Twilio's console under `sid`, with this content (as `POST
        /v1/Content` takes it): messages sent with it are rendered like those of a created one."""
        problem = content_problem(body)
        if problem is not None:
            raise ValueError(problem)
        self._keep_content(sid, body)

    def contents_sent(self) -> list[dict[str, Any]]:
        """The messages sent with a ContentSid (each with its `Rendered` types)."""
        return [m for m in self.sent if m.get("ContentSid")]

    def fail_while(self, kind: str, condition: Callable[[], bool]) -> None:
        """Every API request fails with `kind` ("500", "503", "429") while `condition()` holds."""
        if kind not in ("500", "503", "429"):
            raise ValueError(f"fail_while takes 500, 503 or 429, not {kind!r}")
        self._outage = (kind, condition)

    def _outage_response(self) -> web.Response | None:
        if self._outage is None or not self._outage[1]():
            return None
        kind = self._outage[0]
        if kind == "429":
            return self._error(429, 20429, "Too Many Requests")
        message = "Service Unavailable" if kind == "503" else "Internal Server Error"
        return self._error(int(kind), 20500, message)

    def _over_rate(self, sender: str) -> web.Response | None:
        """429 / 20429 when `sender` already sent its `sender_mps` in this second of `rate_clock`."""
        now = self.rate_clock()
        limit = self.sender_mps.get(sender)
        if limit is None:
            self.taken.append((sender, now))
            return None
        second = int(now // 1)
        window, taken = self._windows.get(sender, (second, 0))
        if window != second:
            window, taken = second, 0
        if taken >= limit:
            self.rate_refused += 1
            self.rate_refused_by[sender] = self.rate_refused_by.get(sender, 0) + 1
            return self._error(429, 20429, "Too Many Requests")
        self._windows[sender] = (window, taken + 1)
        self.taken.append((sender, now))
        return None

    async def refuse_connections(self) -> None:
        """Stops listening: new connections are refused, requests on open ones are dropped."""
        self._refusing = True
        if self._site is not None:
            await self._site.stop()
            self._site = None

    async def accept_connections(self) -> None:
        """Listens again, on the same port."""
        assert self._runner is not None
        self._refusing = False
        site = web.TCPSite(self._runner, "127.0.0.1", self._port, reuse_address=True)
        await site.start()
        self._site = site

    def add_media(self, data: bytes, content_type: str) -> str:
        media_sid = "ME" + secrets.token_hex(16)
        self._media[media_sid] = (data, content_type)
        msg_sid = "MM" + secrets.token_hex(16)
        return f"{self.url}/2010-04-01/Accounts/{self.account_sid}/Messages/{msg_sid}/Media/{media_sid}"

    async def wait_for(self, n: int, timeout_s: float = 10.0) -> list[dict[str, Any]]:
        """Waits until at least `n` messages were sent; returns them all."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while len(self.sent) < n:
            if loop.time() > deadline:
                raise AssertionError(f"expected {n} sent messages, got {len(self.sent)}: {self.bodies()}")
            await asyncio.sleep(0.01)
        return self.sent

    async def idle(self) -> None:
        """Waits until every media fetch and status callback was made."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

    def bodies(self) -> list[str]:
        return [self.shown(m) for m in self.sent]

    @staticmethod
    def shown(message: dict[str, Any]) -> str:
        """The text the user reads: the Body, or a content's body with its variables filled in."""
        rendered = message.get("Rendered") or {}
        return str(message.get("Body") or next((t.get("body", "") for t in rendered.values()), ""))

    def to(self, address: str) -> list[dict[str, Any]]:
        return [m for m in self.sent if m.get("To") in (address, f"whatsapp:{address}")]

    # --- the API ---------------------------------------------------------------------------
    def _authorised(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except Exception:
            return False
        return user == self.account_sid and password == self.auth_token

    @staticmethod
    def _error(status: int, code: int, message: str) -> web.Response:
        return web.json_response({"code": code, "message": message, "status": status,
                                  "more_info": f"https://www.twilio.com/docs/errors/{code}"}, status=status)

    def _unavailable(self, request: web.Request) -> web.Response | None:
        """What an unreachable or failing Twilio answers, or None when it is up."""
        if self._refusing:  # a kept-alive connection: Twilio unreachable all the same
            assert request.transport is not None
            request.transport.close()
            return web.Response(status=503)
        return self._outage_response()

    def _resource(self, sid: str, fields: dict[str, Any], status: str) -> dict[str, Any]:
        now = format_datetime(system_now(), usegmt=True)
        body = fields.get("Body", "")
        return {
            "sid": sid, "account_sid": self.account_sid, "to": fields.get("To"), "from": fields.get("From"),
            "body": body, "status": status, "num_segments": "1",
            "num_media": str(len(fields.get("MediaUrls", []))),
            "direction": "outbound-api", "api_version": "2010-04-01", "price": None, "price_unit": "USD",
            "error_code": None, "error_message": None, "date_created": now, "date_updated": now,
            "date_sent": None, "messaging_service_sid": None,
            "uri": f"/2010-04-01/Accounts/{self.account_sid}/Messages/{sid}.json", "subresource_uris": {},
        }

    async def _create(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        if not self._authorised(request) or request.match_info["account"] != self.account_sid:
            self.unauthorised += 1
            return self._error(401, 20003, "Authenticate")
        unavailable = self._unavailable(request)
        if unavailable is not None:
            return unavailable
        form = await request.post()
        over = self._over_rate(str(form.get("From", "")))
        if over is not None:
            return over
        failure = self._failures.popleft() if self._failures else None
        if failure == "429":
            return self._error(429, 20429, "Too Many Requests")
        if failure == "500":
            return self._error(500, 20500, "Internal Server Error")
        if failure == "400":
            return self._error(400, 21211, "The 'To' number is not a valid phone number.")
        if failure is not None and failure.isdigit() and len(failure) == 5:
            code = int(failure)
            return self._error(400, code, REFUSALS.get(code, f"Refused with error {code}"))
        if failure == "drop":
            assert request.transport is not None
            request.transport.close()
            return web.Response(status=500)
        fields: dict[str, Any] = {k: str(v) for k, v in form.items()}
        media = [str(v) for v in form.getall("MediaUrl", [])]
        if media:
            fields["MediaUrl"] = media[0]
            fields["MediaUrls"] = media
        if not fields.get("To") or not fields.get("From"):
            return self._error(400, 21604, "A 'To' and a 'From' phone number are required.")
        if not (fields.get("Body") or media or fields.get("ContentSid")):
            return self._error(400, 21602, "Message body is required.")
        validity = fields.get("ValidityPeriod")
        if validity is not None and not (validity.isdigit() and 1 <= int(validity) <= 36_000):
            return self._error(400, 21624, "Invalid validity period value")
        if len(fields.get("Body", "")) > 1600:
            return self._error(400, 21617, "The concatenated message body exceeds the 1600 character limit.")
        if fields.get("ContentSid"):
            refused = self._render(fields)
            if refused is not None:
                return refused
        sid = f"SM{next(self._counter):032x}"
        fields["Sid"] = sid
        self.sent.append(fields)
        self.events.append((time.monotonic(), "created", sid))
        self.messages[sid] = self._resource(sid, fields, "queued")
        task = asyncio.create_task(self._after_create(sid, fields))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        if failure == "500_after_create":
            return self._error(500, 20500, "Internal Server Error")
        if failure == "drop_after_create":
            assert request.transport is not None
            request.transport.close()
            return web.Response(status=500)
        return web.json_response(self.messages[sid], status=201)

    def _render(self, fields: dict[str, Any]) -> web.Response | None:
        """Fills the content's variables into `fields["Rendered"]`; the refusal when it cannot."""
        sid = fields["ContentSid"]
        if sid in self.deleted_contents or not sid.startswith("HX"):
            return self._error(400, 21655, "The ContentSid is Invalid.")
        if sid not in self.contents:
            return None  # a template approved in Twilio's console, not created here
        rendered = render(self.contents[sid], fields.get("ContentVariables") or "{}")
        if isinstance(rendered, tuple):
            return self._error(400, *rendered)
        fields["Rendered"] = rendered
        return None

    async def _create_content(self, request: web.Request) -> web.Response:
        self.content_requests += 1
        if not self._authorised(request):
            self.unauthorised += 1
            return self._error(401, 20003, "Authenticate")
        unavailable = self._unavailable(request)
        if unavailable is not None:
            return unavailable
        failure = self._content_failures.popleft() if self._content_failures else None
        if failure == "500":
            return self._error(500, 20500, "Internal Server Error")
        if failure == "400":
            return self._error(400, 20001, "Invalid content")
        try:
            body = await request.json()
        except ValueError:
            return self._error(400, 20001, "The body must be JSON")
        problem = content_problem(body)
        if problem is not None:
            return self._error(400, 20001, problem)
        sid = f"HX{next(_CONTENT_SIDS):032x}"
        return web.json_response(self._keep_content(sid, body), status=201)

    def _keep_content(self, sid: str, body: dict[str, Any]) -> dict[str, Any]:
        now = format_datetime(system_now(), usegmt=True)
        self.contents[sid] = {
            "sid": sid, "account_sid": self.account_sid, "friendly_name": body.get("friendly_name", ""),
            "language": body["language"], "variables": body.get("variables") or {}, "types": body["types"],
            "date_created": now, "date_updated": now, "url": f"{self.url}/v1/Content/{sid}", "links": {},
        }
        return self.contents[sid]

    async def _fetch_content(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return self._error(401, 20003, "Authenticate")
        content = self.contents.get(request.match_info["sid"])
        if content is None:
            return self._error(404, 20404, "The requested resource was not found")
        return web.json_response(content)

    async def _list(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return self._error(401, 20003, "Authenticate")
        unavailable = self._unavailable(request)
        if unavailable is not None:
            return unavailable
        to, from_ = request.query.get("To"), request.query.get("From")
        found = [m for m in reversed(list(self.messages.values()))
                 if (not to or m["to"] == to) and (not from_ or m["from"] == from_)]
        return web.json_response({
            "messages": found[:50], "end": len(found[:50]) - 1, "first_page_uri": str(request.rel_url),
            "next_page_uri": None, "page": 0, "page_size": 50, "previous_page_uri": None, "start": 0,
            "uri": str(request.rel_url),
        })

    async def _typing_indicator(self, request: web.Request) -> web.StreamResponse:
        self.typing_requests += 1
        if not self._authorised(request):
            self.unauthorised += 1
            return self._error(401, 20003, "Authenticate")
        unavailable = self._unavailable(request)
        if unavailable is not None:
            return unavailable
        fields = {k: str(v) for k, v in (await request.post()).items()}
        if self.typing_delay_s:
            await asyncio.sleep(self.typing_delay_s)
        failure = self._typing_failures.popleft() if self._typing_failures else None
        if failure == "500":
            return self._error(500, 20500, "Internal Server Error")
        if failure == "403":
            return self._error(403, 20403, "Typing indicators are not enabled for this account.")
        if failure == "400" or fields.get("channel") != "whatsapp":
            return self._error(400, 20001, "Invalid channel: typing indicators support whatsapp only")
        message_id = fields.get("messageId", "")
        if not message_id:
            return self._error(400, 20001, "Missing required parameter messageId in the post body")
        if message_id[:2] not in ("SM", "MM"):
            return self._error(400, 20001, "Invalid messageId: a Message SID (SM…) or Media SID (MM…)")
        self.typing.append({**fields, "at": time.monotonic()})
        return web.json_response({"success": True}, status=200)

    async def _after_create(self, sid: str, fields: dict[str, Any]) -> None:
        failed_media = False
        if self.fetch_media:
            for url in fields.get("MediaUrls", []):
                if not await self._fetch(url):
                    failed_media = True
        callback = fields.get("StatusCallback")
        statuses: tuple[str, ...] = ("failed",) if failed_media else self.callback_statuses
        if self.callbacks_after is not None:
            await self.callbacks_after.wait()
        for status in statuses:
            if self.callback_delay_s:
                await asyncio.sleep(self.callback_delay_s)
            self.messages[sid]["status"] = status
            self.events.append((time.monotonic(), status, sid))
            if callback and self.send_callbacks:
                error = "63019" if failed_media else (
                    self.callback_error_code if status in ("failed", "undelivered") else None)
                await self._post_status(callback, sid, fields, status, error)

    async def _fetch(self, url: str) -> bool:
        assert self._session is not None
        record: dict[str, Any] = {"url": url}
        try:
            async with self._session.head(url, allow_redirects=True) as head:
                record["head_status"] = head.status
                record["head_type"] = head.headers.get("Content-Type")
            async with self._session.get(url, allow_redirects=True) as resp:
                record["status"] = resp.status
                record["content_type"] = resp.headers.get("Content-Type")
                record["disposition"] = resp.headers.get("Content-Disposition")
                record["body"] = await resp.read()
        except aiohttp.ClientError as exc:
            record["error"] = repr(exc)
        self.fetched.append(record)
        return record.get("status") == 200 and record.get("head_status") == 200 \
            and record.get("head_type") == record.get("content_type")

    async def _post_status(self, url: str, sid: str, fields: dict[str, Any], status: str,
                           error_code: str | None) -> None:
        assert self._session is not None
        params = {"MessageSid": sid, "SmsSid": sid, "MessageStatus": status, "SmsStatus": status,
                  "To": fields.get("To", ""), "From": fields.get("From", ""), "AccountSid": self.account_sid,
                  "ApiVersion": "2010-04-01"}
        if fields.get("To", "").startswith("whatsapp:"):
            params["ChannelPrefix"] = "whatsapp"
        if error_code:
            params["ErrorCode"] = error_code
        signature = RequestValidator(self.auth_token).compute_signature(url, params)
        self.callbacks.append(params)
        try:
            async with self._session.post(url, data=params, headers={"X-Twilio-Signature": signature}) as r:
                await r.read()
        except aiohttp.ClientError:
            pass  # the bot may be down in a restart test; Twilio gives up too

    # --- inbound media ---------------------------------------------------------------------
    async def _serve_media(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            self.unauthorised += 1
            return self._error(401, 20003, "Authenticate")
        media_sid = request.match_info["media"]
        if media_sid not in self._media:
            return self._error(404, 20404, "The requested resource was not found")
        # Like Twilio: a redirect to another host (its file storage), where our credentials must not go.
        storage = self.url.replace("127.0.0.1", "localhost")
        signature = secrets.token_hex(8)
        raise web.HTTPTemporaryRedirect(f"{storage}/storage/{media_sid}?X-Amz-Signature={signature}")

    async def _storage(self, request: web.Request) -> web.Response:
        if "Authorization" in request.headers:
            # Like S3 behind Twilio's redirect: credentials must not follow the redirect.
            return web.Response(status=400, text="Only one auth mechanism allowed")
        item = self._media.get(request.match_info["media"])
        if item is None:
            return web.Response(status=404)
        return web.Response(body=item[0], headers={"Content-Type": item[1]})

    # --- the account (what `python -m bot doctor` reads) -----------------------------------
    async def _account(self, request: web.Request) -> web.Response:
        account = request.match_info["account"].removesuffix(".json")
        if not self._authorised(request) or account != self.account_sid:
            return self._error(401, 20003, "Authenticate")
        return web.json_response({"sid": self.account_sid, "status": self.account_status, "type": "Full"})

    async def _numbers(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return self._error(401, 20003, "Authenticate")
        wanted = request.query.get("PhoneNumber")
        found = [{"phone_number": n, "sid": "PN" + n.strip("+").ljust(32, "0")}
                 for n in sorted(self.phone_numbers) if wanted in (None, n)]
        return web.json_response({"incoming_phone_numbers": found, "page": 0})

    async def _senders(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return self._error(401, 20003, "Authenticate")
        senders = [{"sid": f"XE{i:032d}", "sender_id": sid, "status": status}
                   for i, (sid, status) in enumerate(sorted(self.whatsapp_senders.items()))]
        return web.json_response({"senders": senders, "meta": {"page": 0, "page_size": 50}})

    # --- server ----------------------------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        app = web.Application()
        app.router.add_post("/2010-04-01/Accounts/{account}/Messages.json", self._create)
        app.router.add_get("/2010-04-01/Accounts/{account}/Messages.json", self._list)
        app.router.add_get("/2010-04-01/Accounts/{account}/Messages/{msg}/Media/{media}", self._serve_media)
        app.router.add_get("/storage/{media}", self._storage)
        app.router.add_post("/v2/Indicators/Typing.json", self._typing_indicator)
        app.router.add_post("/v1/Content", self._create_content)
        app.router.add_get("/v1/Content/{sid}", self._fetch_content)
        app.router.add_get("/2010-04-01/Accounts/{account}", self._account)
        app.router.add_get("/2010-04-01/Accounts/{account}/IncomingPhoneNumbers.json", self._numbers)
        app.router.add_get("/v2/Channels/Senders", self._senders)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, reuse_address=True)
        await site.start()
        sockets = site._server.sockets  # type: ignore[union-attr]
        self._site, self._port = site, int(sockets[0].getsockname()[1])
        self.url = f"http://{host}:{self._port}"
        self._session = aiohttp.ClientSession()
        return self.url

    async def stop(self) -> None:
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*list(self._background), return_exceptions=True)
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

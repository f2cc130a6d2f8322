"""Paystack's transaction API on a local port, speaking its wire format, and its signed webhooks."""

from __future__ import annotations

import asyncio
import json
import secrets
from typing import Any

from aiohttp import web

from bot.billing.payments.paystack import signature


class PaystackStandIn:
    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.initialized: list[dict[str, Any]] = []
        self.verified: list[str] = []
        self.transactions: dict[str, dict[str, Any]] = {}
        self.mode = "ok"  # ok | down | slow
        self.runner: web.AppRunner | None = None
        self.base_url = ""

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bearer {self.secret}"

    async def _misbehave(self) -> web.Response | None:
        if self.mode == "down":
            return web.json_response({"status": False, "message": "Service unavailable"}, status=503)
        if self.mode == "slow":
            await asyncio.sleep(30)
        return None

    async def initialize(self, request: web.Request) -> web.Response:
        if (bad := await self._misbehave()) is not None:
            return bad
        if not self._authorized(request):
            return web.json_response({"status": False, "message": "Invalid key"}, status=401)
        body = await request.json()
        self.initialized.append(body)
        if not body.get("email") or not str(body.get("amount", "")).isdigit():
            return web.json_response({"status": False, "message": "Invalid Email Address Passed"}, status=400)
        reference = body.get("reference") or secrets.token_hex(6)
        access_code = secrets.token_hex(8)
        self.transactions[reference] = {
            "id": len(self.transactions) + 1,
            "status": "abandoned",
            "reference": reference,
            "amount": int(body["amount"]),
            "currency": body.get("currency", "NGN"),
            "customer": {"email": body["email"]},
            "metadata": body.get("metadata"),
        }
        return web.json_response(
            {
                "status": True,
                "message": "Authorization URL created",
                "data": {
                    "authorization_url": f"https://checkout.paystack.com/{access_code}",
                    "access_code": access_code,
                    "reference": reference,
                },
            }
        )

    async def verify(self, request: web.Request) -> web.Response:
        if (bad := await self._misbehave()) is not None:
            return bad
        if not self._authorized(request):
            return web.json_response({"status": False, "message": "Invalid key"}, status=401)
        reference = request.match_info["reference"]
        self.verified.append(reference)
        tx = self.transactions.get(reference)
        if tx is None:
            return web.json_response(
                {"status": False, "message": "Transaction reference not found"}, status=400
            )
        return web.json_response({"status": True, "message": "Verification successful", "data": tx})

    def pay(self, reference: str, *, amount: int | None = None) -> bytes:
        """The customer pays: the transaction succeeds; returns the charge.success event body."""
        tx = self.transactions[reference]
        tx["status"] = "success"
        if amount is not None:
            tx["amount"] = amount
        tx["paid_at"] = "2026-03-10T10:05:00.000Z"
        tx["channel"] = "mobile_money"
        event = {"event": "charge.success", "data": dict(tx, gateway_response="Approved")}
        return json.dumps(event).encode()

    def signed(self, body: bytes) -> dict[str, str]:
        return {"x-paystack-signature": signature(self.secret, body), "Content-Type": "application/json"}

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/transaction/initialize", self.initialize)
        app.router.add_get("/transaction/verify/{reference}", self.verify)
        self.runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"
        return self.base_url

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()

"""The Paystack stand-in and a harness that pays through it, for the payment tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from tests.fakes.paystack import PaystackStandIn
from tests.support.harness import Harness
from tests.support.payments import SECRET


@pytest.fixture
async def paystack() -> AsyncIterator[PaystackStandIn]:
    stand_in = PaystackStandIn(SECRET)
    await stand_in.start()
    yield stand_in
    await stand_in.stop()


@pytest.fixture
async def h(make_harness: Callable[..., Awaitable[Harness]], paystack: PaystackStandIn) -> Harness:
    return await make_harness(
        PAYMENT_PROVIDER="paystack",
        PAYMENT_SECRET=SECRET,
        PAYMENT_BASE_URL=paystack.base_url,
        PAYMENT_TIMEOUT_S="1",
        CREDIT_PACKS="100:500,250:1000,600:2000",
    )

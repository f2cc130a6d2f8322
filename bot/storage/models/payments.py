"""A credit pack's payment, as the provider's webhook settles it (bot.billing.payments)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from bot.storage.models.base import PK, Base, utcnow

__all__ = ["Payment"]


class Payment(Base):
    __tablename__ = "payments"

    id: Mapped[int] = mapped_column(PK, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    provider: Mapped[str] = mapped_column(String(32))
    reference: Mapped[str] = mapped_column(String(128), unique=True)
    pack: Mapped[str] = mapped_column(String(32))
    amount: Mapped[int] = mapped_column(Integer)  # in the currency's smallest unit (XOF has none)
    currency: Mapped[str] = mapped_column(String(8), default="XOF")
    credits: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="pending")  # pending | paid | failed
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    paid_at: Mapped[datetime | None]

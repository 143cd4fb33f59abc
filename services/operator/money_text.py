"""Money for a person: integer minor units shown in the currency's own unit, with as many
decimals as the currency has minor units (ISO 4217, from CLDR through Babel: IDR and EUR
two, JPY and KRW none). Exact: the amount is scaled as a Decimal, never a float."""

from __future__ import annotations

from decimal import Decimal

from babel.numbers import format_currency, get_currency_precision


def money(amount: int | None, currency: str | None) -> str:
    """`12345, "IDR"` -> `IDR 123.45`; `-` for no amount; an unknown currency keeps its
    code and the minor units as they are."""
    if amount is None:
        return "-"
    if not currency:
        return f"{amount:,} minor units"
    digits = get_currency_precision(currency)
    value = Decimal(amount).scaleb(-digits)
    return format_currency(value, currency, format="¤¤ #,##0.00", locale="en",
                           currency_digits=True, format_type="standard").replace("\xa0", " ")

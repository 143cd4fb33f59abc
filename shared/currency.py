"""Currencies the platform knows: ISO 4217 code -> minor units (digits after the point).

One explicit table, the only place a currency's minor units are stated. Amounts stay integer
minor units everywhere; this table says what one unit is worth: 1 JPY minor unit is one yen
(0 digits), 1 IDR minor unit is one sen, a hundredth of a rupiah (2 digits, as ISO 4217 and
CLDR state it; the seeds name no amounts). Source and choices: docs/decisions/currencies.md.
"""

from __future__ import annotations

MINOR_UNITS: dict[str, int] = {
    "AUD": 2, "BRL": 2, "CAD": 2, "CNY": 2, "EUR": 2, "GBP": 2, "HKD": 2, "IDR": 2, "INR": 2,
    "JPY": 0, "KRW": 0, "MYR": 2, "PHP": 2, "SGD": 2, "THB": 2, "TWD": 2, "USD": 2, "VND": 0,
}


class CurrencyError(ValueError):
    """A currency code the platform does not know."""


def check_currency(code: str) -> str:
    """`code` if it is a known ISO 4217 code, else CurrencyError naming it and the known ones."""
    if code not in MINOR_UNITS:
        raise CurrencyError(f"unknown currency {code!r}: expected an ISO 4217 code of "
                            f"{', '.join(MINOR_UNITS)}")
    return code


def minor_units(code: str) -> int:
    """How many digits follow the point in `code`'s amounts: USD 2, JPY 0 (CurrencyError for
    an unknown code)."""
    return MINOR_UNITS[check_currency(code)]


def amount_text(amount: int, currency: str) -> str:
    """An integer amount of minor units for a message, in the currency's own unit:
    `1000, "IDR"` -> `IDR 10.00`, `1000, "JPY"` -> `JPY 1,000`; a code not in the table keeps
    its minor units (`1000 XYZ minor units`). Integer arithmetic only."""
    digits = MINOR_UNITS.get(currency)
    if digits is None:
        return f"{amount} {currency} minor units"
    sign, units = ("-" if amount < 0 else ""), abs(amount)
    major, minor = divmod(units, 10 ** digits)
    return f"{currency} {sign}{major:,}" + (f".{minor:0{digits}d}" if digits else "")

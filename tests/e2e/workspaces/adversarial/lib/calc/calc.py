"""Totals of ledger amounts, in cents."""

from lib.calc.rules import ROUNDING


def total(amounts):
    """The sum of the amounts, each rounded to ROUNDING decimals first."""
    return round(sum(round(amount, ROUNDING) for amount in amounts), ROUNDING)

"""How a reason sentence names things: one wording for every rule of the evaluator."""

from __future__ import annotations

from collections.abc import Sequence

# How many names a reason sentence spells out before summarizing the rest.
NAMES_SHOWN = 5


def names(items: Sequence[str]) -> str:
    """`a, b, c` for a few names; the first NAMES_SHOWN `and N more` for many."""
    shown = ", ".join(items[:NAMES_SHOWN])
    rest = len(items) - NAMES_SHOWN
    return f"{shown} and {rest} more" if rest > 0 else shown


def plural(count: int, word: str) -> str:
    """`1 row`, `2 rows`."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"

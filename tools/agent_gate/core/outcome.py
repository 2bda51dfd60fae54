"""Two runs of one property, read literally: pass, fail or flake.

Its own small module so the PropertyDoubleRun action (runner.py), which runs once
per matched property, classifies its runs without importing the whole quorum
evaluator; `quorum` re-exports both names.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunOutcome:
    """The two runs of one property: exit codes (-N = killed by signal N) and timeouts."""

    exit_codes: tuple[int, int]
    timed_out: tuple[bool, bool] = (False, False)


def classify(outcome: RunOutcome) -> str:
    """Read two runs literally: pass, fail (same token twice) or flake (anything else)."""
    first, second = (
        "timeout" if timed_out else code
        for code, timed_out in zip(outcome.exit_codes, outcome.timed_out, strict=True)
    )
    if first == 0 and second == 0:
        return "pass"
    if first == second:
        return "fail"
    return "flake"

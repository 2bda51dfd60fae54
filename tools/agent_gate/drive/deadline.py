"""The CLI's overall deadline: one point in time every long wait of a command stops at.

Set once per command (`--deadline SECONDS` or AGENT_GATE_DEADLINE_SECONDS, default
two hours). Bazel calls wait at most `remaining()`; when it reaches zero they stop
Bazel (client and server) and raise DeadlineError, a CliError: fail closed.
"""

from __future__ import annotations

import math
import os
import time

from agent_gate.drive.exit_codes import CliError

ENV = "AGENT_GATE_DEADLINE_SECONDS"
DEFAULT_SECONDS = 2 * 60 * 60.0
# Above this a deadline means nothing (and time.monotonic() + it may overflow a timeout).
MAX_SECONDS = 7 * 24 * 60 * 60.0

_state: dict[str, float] = {}


class DeadlineError(CliError):
    """The command ran past its deadline; nothing was decided."""


def parse_seconds(text: str, where: str) -> float:
    """A deadline in seconds, > 0 and at most a week; CliError naming `where` otherwise."""
    try:
        value = float(text)
    except ValueError:
        raise CliError(f"{where} must be a number of seconds, not {text!r}") from None
    if not math.isfinite(value) or value <= 0 or value > MAX_SECONDS:
        raise CliError(f"{where} must be more than 0 and at most {MAX_SECONDS:.0f} seconds")
    return value


def start(seconds: float | None = None) -> float:
    """Start the clock: `seconds`, else the environment's value, else the default."""
    if seconds is None:
        raw = os.environ.get(ENV, "").strip()
        seconds = parse_seconds(raw, ENV) if raw else DEFAULT_SECONDS
    _state["at"] = time.monotonic() + seconds
    _state["seconds"] = seconds
    return seconds


def remaining() -> float | None:
    """Seconds left before the deadline (never below 0); None when no clock was started."""
    at = _state.get("at")
    return None if at is None else max(0.0, at - time.monotonic())


def passed() -> bool:
    left = remaining()
    return left is not None and left <= 0


def error(what: str) -> DeadlineError:
    seconds = _state.get("seconds", DEFAULT_SECONDS)
    return DeadlineError(
        f"the command ran past its deadline of {seconds:.0f}s during {what} and was stopped "
        f"(Bazel too); nothing was decided, never a promote. Raise it with --deadline SECONDS "
        f"or {ENV} if the gate legitimately needs longer"
    )

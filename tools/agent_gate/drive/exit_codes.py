"""Exit codes of the `agent-gate` CLI, and the error that fails a command closed.

The codes are part of the contract (docs/merge-queue.md): a merge queue reads one exit code.
"""

from __future__ import annotations

EXIT_CODES: dict[str, int] = {
    "promote": 0,
    "reject": 10,
    "hold": 11,
    "review": 12,
    "fixture_fault": 13,
    "stop_queue": 14,
}
# Usage or configuration error: the command could not decide, so nothing is promoted.
EXIT_USAGE = 2
# `admit` checked the property and it did not earn a vote (a verdict, not an error).
EXIT_NOT_ADMITTED = 1


class CliError(Exception):
    """A command that must stop: the message says what went wrong and what to do."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def exit_code(decision: str) -> int:
    """The exit code of a gate decision; an unknown word fails closed."""
    return EXIT_CODES.get(decision, EXIT_USAGE)

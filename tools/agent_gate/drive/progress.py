"""Progress lines on stderr while a command works: the step, what runs, the time.

`--quiet` silences them; results and errors are printed elsewhere and never
depend on this module. Bazel's console output is filtered down to the lines a
person waiting on a merge queue wants: which property is running, and errors.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from agent_gate.formats.terminal import terminal_safe

_RUNNING = re.compile(r"Running property (\S+) twice")
_BAZEL_ERROR = re.compile(r"^(ERROR:|FAIL: //)")


class Progress:
    """Writes `agent-gate [  12.3s] step` lines; records how long each timed step took."""

    def __init__(
        self,
        quiet: bool = False,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.quiet = quiet
        self._stream = stream
        self._clock = clock
        self._started = clock()
        self._running: set[str] = set()
        self.timings: dict[str, float] = {}

    def elapsed(self) -> float:
        return self._clock() - self._started

    def step(self, message: str) -> None:
        if self.quiet:
            return
        stream = self._stream if self._stream is not None else sys.stderr
        stream.write(f"agent-gate [{self.elapsed():7.1f}s] {terminal_safe(message)}\n")
        stream.flush()

    def bazel_line(self, line: str) -> None:
        """One line of bazel's console output: keep property runs and errors."""
        match = _RUNNING.search(line)
        if match is not None:
            property_id = match.group(1)
            if property_id not in self._running:
                self._running.add(property_id)
                self.step(f"bazel: running {property_id} twice")
        elif _BAZEL_ERROR.match(line):
            self.step(f"bazel: {line.strip()}")

    def reset_runs(self) -> None:
        """Forget which properties were announced, before another bazel invocation."""
        self._running.clear()

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """Time a step; the duration is kept in `timings[name]` (added up if repeated)."""
        started = self._clock()
        try:
            yield
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + self._clock() - started

    def timing_line(self, extra: dict[str, float] | None = None) -> str:
        parts = [f"{name} {seconds:.1f}s" for name, seconds in self.timings.items()]
        parts += [f"{name} {seconds:.1f}s" for name, seconds in (extra or {}).items()]
        parts.append(f"total {self.elapsed():.1f}s")
        return "timing: " + ", ".join(parts)

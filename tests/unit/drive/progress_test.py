"""Progress lines: the step and the time on stderr, bazel's output filtered, --quiet."""

import io

from absl.testing import absltest

from agent_gate.drive.progress import Progress


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class ProgressTest(absltest.TestCase):
    def test_steps_carry_the_elapsed_time(self):
        clock, stream = _Clock(), io.StringIO()
        progress = Progress(stream=stream, clock=clock)
        clock.now = 101.25
        progress.step("reading the catalog")
        self.assertEqual(stream.getvalue(), "agent-gate [    1.2s] reading the catalog\n")

    def test_quiet_writes_nothing(self):
        stream = io.StringIO()
        progress = Progress(quiet=True, stream=stream)
        progress.step("x")
        progress.bazel_line("ERROR: boom")
        self.assertEqual(stream.getvalue(), "")

    def test_bazel_lines_are_filtered(self):
        stream = io.StringIO()
        progress = Progress(stream=stream, clock=_Clock())
        for line in (
            "INFO: Analyzed target //:agent_gate (0 packages loaded).",
            "[3 / 5] Running property counter.monotonic_under_replay twice (//:c); 1s sandbox",
            "[4 / 5] Running property counter.monotonic_under_replay twice (//:c); 2s sandbox",
            "FAIL: test_monotonic (__main__.MonotonicUnderReplayTest.test_monotonic)",
            "FAIL: //:agent_gate (see /x/test.log)",
            "ERROR: /ws/BUILD.bazel:3:1: no such target",
        ):
            progress.bazel_line(line)
        self.assertEqual(
            stream.getvalue().splitlines(),
            [
                "agent-gate [    0.0s] bazel: running counter.monotonic_under_replay twice",
                "agent-gate [    0.0s] bazel: FAIL: //:agent_gate (see /x/test.log)",
                "agent-gate [    0.0s] bazel: ERROR: /ws/BUILD.bazel:3:1: no such target",
            ],
        )

    def test_timings_add_up(self):
        clock = _Clock()
        progress = Progress(quiet=True, clock=clock)
        with progress.timed("gate"):
            clock.now += 2.0
        with progress.timed("gate"):
            clock.now += 1.0
        self.assertEqual(progress.timings, {"gate": 3.0})
        self.assertEqual(
            progress.timing_line({"property runs": 0.5}),
            "timing: gate 3.0s, property runs 0.5s, total 3.0s",
        )


if __name__ == "__main__":
    absltest.main()

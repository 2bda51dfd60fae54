"""Strong: replaying the log never moves a counter backwards, and replay is idempotent."""

import pathlib
import unittest

from store.counters.counter import history, replay

LOG = pathlib.Path("fixtures/replays/events.log")


class MonotonicUnderReplayTest(unittest.TestCase):
    def setUp(self):
        self.lines = LOG.read_text().splitlines()

    def test_monotonic(self):
        previous = {}
        for state in history(self.lines):
            for name, value in previous.items():
                self.assertGreaterEqual(state.get(name, 0), value, f"{name} went backwards")
            previous = state

    def test_replay_twice_is_idempotent(self):
        self.assertEqual(replay(self.lines), replay(self.lines + self.lines))


if __name__ == "__main__":
    unittest.main()

"""Strong: lower priority first, ties in arrival order."""

import unittest

from lib.queue.queue import drain
from testing.compare import assert_same_order


class OrderTest(unittest.TestCase):
    def test_order(self):
        items = [(2, "b"), (1, "a"), (2, "c"), (0, "z")]
        assert_same_order(self, drain(items), ["z", "a", "b", "c"])


if __name__ == "__main__":
    unittest.main()

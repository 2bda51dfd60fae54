"""A property's predicate: the fixture tree reads as committed, names and all."""

import os
import sys
import unittest


class ReadsFixturesTest(unittest.TestCase):
    def test_fixtures_read(self):
        self.assertTrue(sys.prefix.endswith("/consumer_python"), sys.prefix)
        tree = os.path.join(
            os.environ["TEST_SRCDIR"], os.environ["TEST_WORKSPACE"], "fixtures/tree"
        )
        with open(os.path.join(tree, "café.txt"), encoding="utf-8") as handle:
            self.assertEqual("crème\n", handle.read())


if __name__ == "__main__":
    unittest.main()

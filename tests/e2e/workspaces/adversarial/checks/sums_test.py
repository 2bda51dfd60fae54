"""Strong: totals match the sealed cases, negative amounts included."""

import unittest

from checks.helpers import assert_equal, load_cases
from lib.calc.calc import total


class SumsTest(unittest.TestCase):
    def test_cases(self):
        cases = load_cases()
        self.assertGreater(len(cases), 3)
        for amounts, expected in cases:
            assert_equal(self, total(amounts), expected, f"total({amounts})")


if __name__ == "__main__":
    unittest.main()

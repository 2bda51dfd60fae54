"""Weak: total() returns a float for a list of floats."""

import unittest

from lib.calc.calc import total


class ShapeTest(unittest.TestCase):
    def test_float(self):
        self.assertIsInstance(total([1.0, 2.0]), float)


if __name__ == "__main__":
    unittest.main()

"""Strong: load(dump(x)) == x."""

import unittest

from checks.helpers import assert_equal
from lib.fmt.fmt import dump, load


class RoundtripTest(unittest.TestCase):
    def test_roundtrip(self):
        for record in ({}, {"a": "1"}, {"b": "x=y", "a": "2"}):
            assert_equal(self, load(dump(record)), record)


if __name__ == "__main__":
    unittest.main()

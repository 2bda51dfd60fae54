"""Strong: load(dump(x)) == x, for the records of docs/roundtrip/cases."""

import os
import unittest
from pathlib import Path

from checks.helpers import assert_equal
from lib.fmt.fmt import dump, load

CASES = Path(os.environ["TEST_SRCDIR"], os.environ["TEST_WORKSPACE"], "docs/roundtrip/cases")


def records():
    """Each line of each case file is one record, as `dump` writes it."""
    for path in sorted(CASES.glob("*.txt")):
        for line in path.read_text().splitlines():
            yield dict(item.split("=", 1) for item in line.split(";") if item)


class RoundtripTest(unittest.TestCase):
    def test_roundtrip(self):
        for record in ({}, *records()):
            assert_equal(self, load(dump(record)), record)


if __name__ == "__main__":
    unittest.main()

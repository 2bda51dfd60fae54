"""Helpers the predicates share."""

import pathlib

CASES = pathlib.Path("fixtures/cases/cases.txt")


def load_cases():
    """(amounts, expected total) pairs from the sealed fixture."""
    cases = []
    for line in CASES.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            amounts, expected = line.split("=")
            cases.append(([float(a) for a in amounts.split()], float(expected)))
    return cases


def assert_equal(test, actual, expected, message=""):
    """The one comparison every predicate goes through."""
    test.assertEqual(actual, expected, message)

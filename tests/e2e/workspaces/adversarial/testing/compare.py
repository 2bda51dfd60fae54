"""Comparisons shared by tests across the repository."""


def assert_same_order(test, actual, expected):
    """Equal sequences, element by element, in order."""
    test.assertEqual(list(actual), list(expected))

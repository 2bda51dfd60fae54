"""Helper of predicate_main.py: a second source file of the wrapped py_test."""


def check() -> None:
    """Always holds."""

"""A second predicate source, reached through a filegroup."""


def check() -> None:
    pass

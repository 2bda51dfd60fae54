"""A priority queue: lower priority first, ties in arrival order."""


def drain(items):
    """Items as (priority, name) pairs, in the order they leave the queue."""
    return [name for _, _, name in sorted((p, i, n) for i, (p, n) in enumerate(items))]

"""A counter store rebuilt by replaying an append-only event log.

Each line of the log is `<seq> <counter> <op> <amount>` with op `incr` or `set`;
`set` may only raise a counter (a lower value is a stale write and is ignored).
"""


def replay(lines):
    counters = {}
    last_seq = -1
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        seq, name, op, amount = line.split()
        seq, amount = int(seq), int(amount)
        if seq <= last_seq:
            continue  # a duplicated delivery: replay must be idempotent
        last_seq = seq
        current = counters.get(name, 0)
        if op == "incr":
            counters[name] = current + max(amount, 0)
        elif op == "set":
            counters[name] = max(current, amount)
        else:
            raise ValueError(f"unknown op {op!r} at seq {seq}")
    return counters


def history(lines):
    """Counter values after each applied event, for monotonicity checks."""
    seen = []
    for end in range(1, len(lines) + 1):
        seen.append(replay(lines[:end]))
    return seen

"""A tiny key=value format: dump and load are inverses."""


def dump(record):
    return ";".join(f"{key}={record[key]}" for key in sorted(record))


def load(text):
    return dict(item.split("=", 1) for item in text.split(";") if item)

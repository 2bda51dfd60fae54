"""Turns stored user records into the public shape of an API response."""

PUBLIC_FIELDS = ("id", "name", "email", "created_at")


def serialize_user(record: dict) -> dict:
    """Only public fields leave the service; stored secrets never do."""
    return {field: record[field] for field in PUBLIC_FIELDS if field in record}

"""HTTP-ish handlers: a status code and a JSON body per request."""

from api.serializers.user import serialize_user


def get_user(store: dict, user_id: str) -> tuple[int, dict]:
    record = store.get(user_id)
    if record is None:
        return 404, {"error": "not_found", "id": user_id}
    return 200, serialize_user(record)


def list_users(store: dict) -> tuple[int, dict]:
    users = [serialize_user(store[key]) for key in sorted(store)]
    return 200, {"users": users, "count": len(users)}

"""Strong: no response body, success or error, carries a stored secret."""

import json
import pathlib
import unittest

from api.handlers.users import get_user, list_users

SECRET_MARKERS = ("password", "token", "secret", "ssn")
RECORDS = pathlib.Path("fixtures/responses/users.json")


def _keys(value):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key
            yield from _keys(inner)
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item)


class NoSecretFieldsTest(unittest.TestCase):
    def setUp(self):
        self.store = json.loads(RECORDS.read_text())

    def assert_clean(self, body):
        leaked = [k for k in _keys(body) if any(m in k.lower() for m in SECRET_MARKERS)]
        self.assertEqual(leaked, [], f"secret fields in response: {leaked}")

    def test_every_user(self):
        for user_id in self.store:
            status, body = get_user(self.store, user_id)
            self.assertEqual(status, 200)
            self.assert_clean(body)

    def test_list(self):
        self.assert_clean(list_users(self.store)[1])

    def test_not_found(self):
        status, body = get_user(self.store, "nobody")
        self.assertEqual(status, 404)
        self.assert_clean(body)


if __name__ == "__main__":
    unittest.main()

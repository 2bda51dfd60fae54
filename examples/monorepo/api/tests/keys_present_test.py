"""Weak: a serialized user has the keys clients rely on."""

import json
import pathlib
import unittest

from api.serializers.user import serialize_user

REQUIRED = {"id", "name", "email"}


class KeysPresentTest(unittest.TestCase):
    def test_required_keys(self):
        store = json.loads(pathlib.Path("fixtures/responses/users.json").read_text())
        for record in store.values():
            body = serialize_user(record)
            self.assertTrue(body.keys() >= REQUIRED, f"missing {REQUIRED - body.keys()}")


if __name__ == "__main__":
    unittest.main()

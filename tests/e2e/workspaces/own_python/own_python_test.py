"""The consumer's py_test: its own interpreter, and no package it did not declare."""

import importlib.util
import sys
import unittest

AGENT_GATE_PACKAGES = ("yaml", "google.protobuf", "absl", "hypothesis", "runfiles")


class OwnPythonTest(unittest.TestCase):
    def test_runs_on_the_consumers_interpreter(self):
        self.assertTrue(sys.prefix.endswith("/consumer_python"), sys.prefix)

    def test_agent_gates_packages_are_not_importable(self):
        for name in AGENT_GATE_PACKAGES:
            with self.subTest(name=name):
                try:
                    found = importlib.util.find_spec(name)
                except ModuleNotFoundError:  # a missing parent package
                    found = None
                self.assertIsNone(found, f"{name} imports undeclared: {found}")


if __name__ == "__main__":
    unittest.main()

"""The CLI's deadline: how it is given, and its clock."""

import os
import time
from unittest import mock

from absl.testing import absltest

from agent_gate.drive import deadline
from agent_gate.drive.exit_codes import CliError


class DeadlineTest(absltest.TestCase):
    def test_seconds_and_refusals(self):
        self.assertEqual(deadline.parse_seconds("90", "--deadline"), 90.0)
        for text in ("0", "-1", "nan", "inf", "1e400", "x", str(10**9)):
            with self.subTest(text), self.assertRaises(CliError):
                deadline.parse_seconds(text, "--deadline")

    def test_the_clock(self):
        deadline.start(0.2)
        self.assertGreater(deadline.remaining(), 0)
        time.sleep(0.3)
        self.assertTrue(deadline.passed())
        self.assertIn("deadline of 0s", str(deadline.error("a test")))
        with mock.patch.dict(os.environ, {deadline.ENV: "12"}):
            self.assertEqual(deadline.start(), 12.0)
        with mock.patch.dict(os.environ, {deadline.ENV: "soon"}), self.assertRaises(CliError):
            deadline.start()


if __name__ == "__main__":
    absltest.main()

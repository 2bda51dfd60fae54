"""Which Bazel binary the CLI runs, in what environment, and how one command is streamed
(a shell stands in for the client: no Bazel server needed)."""

import os
import shutil
import tempfile
import time
from pathlib import Path
from unittest import mock

from absl.testing import absltest

from agent_gate.drive import bazel_client

LAUNCHER = '#!/bin/bash\nexec "$(dirname "$0")/tools/bazel" "$@"\n'


class RealBinaryTest(absltest.TestCase):
    def setUp(self):
        super().setUp()
        self.dir = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value)).resolve()
        self.binary = shutil.which("true")
        assert self.binary is not None

    def put(self, name: str, script: bool = False) -> Path:
        path = self.dir / name
        if script:
            path.write_text(LAUNCHER)
        else:
            shutil.copy(self.binary, path)
        path.chmod(0o755)
        return path

    def test_a_binary_is_itself(self):
        self.assertEqual(bazel_client.real_binary(str(self.put("bazel"))), str(self.dir / "bazel"))

    def test_a_launcher_gives_the_real_binary_beside_it(self):
        launcher = self.put("bazel", script=True)
        self.put("bazel-4")
        self.put("bazel-10.1.0")
        self.assertEqual(bazel_client.real_binary(str(launcher)), str(self.dir / "bazel-10.1.0"))
        self.put("bazel-real")
        self.assertEqual(bazel_client.real_binary(str(launcher)), str(self.dir / "bazel-real"))

    def test_a_launcher_reached_through_a_symlink_looks_beside_its_target(self):
        launcher = self.put("bazel", script=True)
        self.put("bazel-4")
        other = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value))
        (other / "bazel").symlink_to(launcher)
        self.assertEqual(bazel_client.real_binary(str(other / "bazel")), str(self.dir / "bazel-4"))

    def test_a_launcher_alone_or_beside_scripts_is_refused(self):
        launcher = self.put("bazel", script=True)
        self.put("bazel-4", script=True)
        with self.assertRaises(bazel_client.BazelNotFoundError) as raised:
            bazel_client.real_binary(str(launcher))
        self.assertIn("AGENT_GATE_BAZEL", str(raised.exception))

    def test_agent_gate_bazel_is_used_as_given(self):
        script = self.put("my-bazel", script=True)
        with mock.patch.dict(os.environ, {"AGENT_GATE_BAZEL": str(script)}):
            self.assertEqual(bazel_client.find_bazel(), str(script))
        missing = {"AGENT_GATE_BAZEL": str(self.dir / "missing")}
        with (
            mock.patch.dict(os.environ, missing),
            self.assertRaises(bazel_client.BazelNotFoundError),
        ):
            bazel_client.find_bazel()

    def test_bazelisk_never_runs_a_wrapper(self):
        self.assertEqual(bazel_client.bazel_env({})["BAZELISK_SKIP_WRAPPER"], "1")

    def test_no_tmpdir_reaches_the_sandbox(self):
        # linux-sandbox would bind a TMPDIR below /tmp that its tmpfs hides: every action fails.
        env = bazel_client.bazel_env({"TMPDIR": "/tmp/ci-scratch", "PATH": "/usr/bin"})
        self.assertNotIn("TMPDIR", env)
        self.assertEqual(env["PATH"], "/usr/bin")


class RunStreamedTest(absltest.TestCase):
    def setUp(self):
        super().setUp()
        self.dir = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value))
        self.log = self.dir / "bazel.log"

    def test_every_line_reaches_the_log_and_the_callback(self):
        lines: list[str] = []
        code, timed_out = bazel_client.run_streamed(
            ["/bin/sh", "-c", "echo one; echo two >&2; exit 3"],
            self.dir,
            self.log,
            lines.append,
            what="a test",
        )
        self.assertEqual((code, timed_out), (3, False))
        self.assertEqual(lines, ["one", "two"])
        self.assertEqual(self.log.read_text(), "one\ntwo\n")

    def test_a_command_past_its_timeout_is_cancelled(self):
        started = time.monotonic()
        code, timed_out = bazel_client.run_streamed(
            ["/bin/sh", "-c", "echo started; exec sleep 60"],
            self.dir,
            self.log,
            lambda line: None,
            what="a test",
            timeout=0.5,
        )
        self.assertTrue(timed_out)
        self.assertNotEqual(code, 0)
        self.assertLess(time.monotonic() - started, 30)
        self.assertIn("started", self.log.read_text())

    def test_a_binary_that_cannot_start_names_the_bootstrap(self):
        with self.assertRaisesRegex(bazel_client.BazelNotFoundError, "tools/bootstrap"):
            bazel_client.run_streamed(
                [str(self.dir / "no-bazel"), "build"], self.dir, self.log, print, what="a test"
            )


class ConvenienceLinkTest(absltest.TestCase):
    """bazel-bin and bazel-testlogs are read only when they are Bazel's own symlinks."""

    def setUp(self):
        super().setUp()
        self.workspace = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value)).resolve()
        self.outputs = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value)).resolve()

    def test_a_symlink_to_a_directory_is_bazels(self):
        (self.workspace / "bazel-bin").symlink_to(self.outputs)
        self.assertEqual(bazel_client.bazel_bin(self.workspace), self.workspace / "bazel-bin")

    def test_a_planted_directory_or_a_missing_link_is_refused(self):
        with self.assertRaisesRegex(bazel_client.CliError, "missing"):
            bazel_client.bazel_bin(self.workspace)
        (self.workspace / "bazel-bin").mkdir()
        (self.workspace / "bazel-bin/agent_gate.gate.json").write_text("{}")
        with self.assertRaisesRegex(bazel_client.CliError, "do not commit bazel-"):
            bazel_client.bazel_bin(self.workspace)

    def test_planted_testlogs_are_never_read(self):
        planted = self.workspace / "bazel-testlogs"
        planted.mkdir()
        # A stand-in client: `info bazel-testlogs` prints where Bazel keeps them.
        client = self.outputs / "bazel"
        client.write_text(f'#!/bin/sh\necho "$@" >> {self.outputs}/asked\necho {self.outputs}\n')
        client.chmod(0o755)
        found = bazel_client.testlogs_root(str(client), self.workspace, (), ())
        self.assertEqual(found, self.outputs)
        self.assertIn("bazel-testlogs", (self.outputs / "asked").read_text())
        planted.rmdir()
        planted.symlink_to(self.outputs)
        self.assertEqual(bazel_client.testlogs_root(str(client), self.workspace, (), ()), planted)


if __name__ == "__main__":
    absltest.main()

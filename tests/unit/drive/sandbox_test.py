"""The sandbox flags of every Bazel action the CLI runs, and the checks before the first."""

import tempfile
from pathlib import Path

from absl.testing import absltest

from agent_gate.drive import sandbox
from agent_gate.drive.exit_codes import CliError


class SandboxFlagsTest(absltest.TestCase):
    def test_every_strategy_is_the_sandbox_and_nothing_falls_back(self):
        flags = sandbox.flags()
        self.assertIn("--spawn_strategy=linux-sandbox", flags)
        self.assertIn("--genrule_strategy=linux-sandbox", flags)
        self.assertIn("--strategy=TestRunner=linux-sandbox", flags)
        self.assertIn("--noincompatible_legacy_local_fallback", flags)
        self.assertIn("--sandbox_default_allow_network=false", flags)
        for path in ("/tmp", "/dev/shm"):
            self.assertIn(f"--sandbox_tmpfs_path={path}", flags)
        strategies = [flag for flag in flags if "strategy" in flag]
        self.assertTrue(all(flag.endswith("=linux-sandbox") for flag in strategies), strategies)

    def test_every_opt_out_requirement_is_removed(self):
        (modify,) = [flag for flag in sandbox.flags() if flag.startswith("--modify_execution_info")]
        removed = set(modify.split("=", 1)[1].split(","))
        for key in ("local", "no-sandbox", "no-remote", "no-remote-exec", "requires-network"):
            self.assertIn(f".*=-{key}", removed)
        self.assertTrue(all(item.startswith(".*=-") for item in removed), removed)

    def test_an_output_base_under_a_tmpfs_path_is_refused(self):
        for path in ("/tmp/x/output_base", "/dev/shm/ob", "/tmp"):
            with self.subTest(path), self.assertRaises(CliError) as raised:
                sandbox.check_layout([("Bazel output base", Path(path))])
            self.assertIn("tmpfs", str(raised.exception))
        sandbox.check_layout([("Bazel output base", Path("/var/tmp/ob")), ("w", Path("/tmpx"))])

    def test_no_sandbox_binary_fails_closed(self):
        empty = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value))
        with self.assertRaises(CliError) as raised:
            sandbox.probe(empty, str(empty / "bin" / "bazel"))
        self.assertIn("linux-sandbox", str(raised.exception))
        self.assertIn("nothing was scored", str(raised.exception))

    def test_a_sandbox_that_cannot_isolate_fails_closed(self):
        install = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value))
        (install / "linux-sandbox").write_text("#!/bin/sh\necho no user namespaces >&2\nexit 1\n")
        (install / "linux-sandbox").chmod(0o755)
        with self.assertRaises(CliError) as raised:
            sandbox.probe(install, str(install / "bazel"))
        self.assertIn("no user namespaces", str(raised.exception))


if __name__ == "__main__":
    absltest.main()

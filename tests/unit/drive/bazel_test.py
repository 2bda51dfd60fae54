"""The CLI's Bazel plumbing without a Bazel server: which binary runs, the sandbox flags,
the rc file's words, the digest flag, the trust check of a report, the deadline."""

import os
import shutil
import tempfile
import time
from pathlib import Path
from unittest import mock

from absl.testing import absltest
from google.protobuf import json_format

from agent_gate.core import pathdigest
from agent_gate.drive import bazel, deadline, sandbox
from agent_gate.drive.exit_codes import CliError
from proto import agent_gate_pb2

LAUNCHER = '#!/bin/bash\nexec "$(dirname "$0")/tools/bazel" "$@"\n'


class RealBinaryTest(absltest.TestCase):
    def setUp(self):
        super().setUp()
        self.dir = Path(tempfile.mkdtemp()).resolve()
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
        self.assertEqual(bazel.real_binary(str(self.put("bazel"))), str(self.dir / "bazel"))

    def test_a_launcher_gives_the_real_binary_beside_it(self):
        launcher = self.put("bazel", script=True)
        self.put("bazel-4")
        self.put("bazel-10.1.0")
        self.assertEqual(bazel.real_binary(str(launcher)), str(self.dir / "bazel-10.1.0"))
        self.put("bazel-real")
        self.assertEqual(bazel.real_binary(str(launcher)), str(self.dir / "bazel-real"))

    def test_a_launcher_reached_through_a_symlink_looks_beside_its_target(self):
        launcher = self.put("bazel", script=True)
        self.put("bazel-4")
        other = Path(tempfile.mkdtemp())
        (other / "bazel").symlink_to(launcher)
        self.assertEqual(bazel.real_binary(str(other / "bazel")), str(self.dir / "bazel-4"))

    def test_a_launcher_alone_or_beside_scripts_is_refused(self):
        launcher = self.put("bazel", script=True)
        self.put("bazel-4", script=True)
        with self.assertRaises(bazel.BazelNotFoundError) as raised:
            bazel.real_binary(str(launcher))
        self.assertIn("AGENT_GATE_BAZEL", str(raised.exception))

    def test_agent_gate_bazel_is_used_as_given(self):
        script = self.put("my-bazel", script=True)
        with mock.patch.dict(os.environ, {"AGENT_GATE_BAZEL": str(script)}):
            self.assertEqual(bazel.find_bazel(), str(script))
        missing = {"AGENT_GATE_BAZEL": str(self.dir / "missing")}
        with mock.patch.dict(os.environ, missing), self.assertRaises(bazel.BazelNotFoundError):
            bazel.find_bazel()

    def test_bazelisk_never_runs_a_wrapper(self):
        self.assertEqual(bazel.bazel_env({})["BAZELISK_SKIP_WRAPPER"], "1")

    def test_no_tmpdir_reaches_the_sandbox(self):
        # linux-sandbox would bind a TMPDIR below /tmp that its tmpfs hides: every action fails.
        env = bazel.bazel_env({"TMPDIR": "/tmp/ci-scratch", "PATH": "/usr/bin"})
        self.assertNotIn("TMPDIR", env)
        self.assertEqual(env["PATH"], "/usr/bin")


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
        empty = Path(tempfile.mkdtemp())
        with self.assertRaises(CliError) as raised:
            sandbox.probe(empty, str(empty / "bin" / "bazel"))
        self.assertIn("linux-sandbox", str(raised.exception))
        self.assertIn("nothing was scored", str(raised.exception))

    def test_a_sandbox_that_cannot_isolate_fails_closed(self):
        install = Path(tempfile.mkdtemp())
        (install / "linux-sandbox").write_text("#!/bin/sh\necho no user namespaces >&2\nexit 1\n")
        (install / "linux-sandbox").chmod(0o755)
        with self.assertRaises(CliError) as raised:
            sandbox.probe(install, str(install / "bazel"))
        self.assertIn("no user namespaces", str(raised.exception))


class GateFlagsTest(absltest.TestCase):
    def test_the_digest_of_the_exact_paths_travels_with_them(self):
        paths = ["a,b", "c%d", " e "]
        flags = bazel.gate_flags(changed_paths=paths, run_id="r", flag_prefix="//:")
        digest = pathdigest.changed_paths_digest(paths)
        self.assertIn(f"--//:changed_paths_sha256={digest}", flags)

    def test_names_a_flag_cannot_carry_are_refused(self):
        for path in ("a\nb", "a\rb", "a\0b", "caf\udce9", ""):
            with self.subTest(path=path), self.assertRaises(bazel.GateInputError):
                bazel.gate_flags(changed_paths=[path], run_id="r")

    def test_rc_words_escape_what_the_tokenizer_reads(self):
        self.assertEqual(bazel._rc_quote("--x=a b"), "--x=a\\ b")
        self.assertEqual(bazel._rc_quote("x\\'#\""), "x\\\\\\'\\#\\\"")
        self.assertEqual(bazel._rc_quote("é"), "é")
        self.assertTrue(bazel._rc_line("test", "x\\\\").endswith(" #"))
        with self.assertRaises(bazel.GateInputError):
            bazel._rc_quote("a\nb")


class TrustedReportTest(absltest.TestCase):
    def write(self, **fields) -> Path:
        report = agent_gate_pb2.GateReport(decision="promote", run_id="r", **fields)
        path = Path(tempfile.mkdtemp()) / "report.json"
        path.write_text(json_format.MessageToJson(report))
        return path

    def test_the_digest_must_match(self):
        paths = ["a", "b"]
        good = pathdigest.changed_paths_digest(paths)
        report, problem = bazel._trusted_report(
            self.write(changed_paths_sha256=good, changed_path_count=2), "r", paths
        )
        self.assertIsNone(problem)
        self.assertIsNotNone(report)
        shifted = pathdigest.changed_paths_digest(["a,b"])
        report, problem = bazel._trusted_report(
            self.write(changed_paths_sha256=shifted, changed_path_count=2), "r", paths
        )
        self.assertIsNone(report)
        self.assertIn("lost or shifted", problem)

    def test_a_report_without_the_digest_is_not_trusted(self):
        # Every evaluator of this rule set writes it: a report without one was written
        # by something else, or by a gate that did not see the paths the CLI sent.
        path = self.write(changed_paths=["a", "b"], changed_path_count=2)
        report, problem = bazel._trusted_report(path, "r", ["a", "b"])
        self.assertIsNone(report)
        self.assertIn("digest missing", problem)


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

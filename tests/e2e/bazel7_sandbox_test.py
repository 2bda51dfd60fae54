"""The Bazel 7.7.1 lane's own guarantees: bzlmod offline, and a real linux-sandbox.

tools/bazel7 runs Debian sid's Bazel 7.7.1 from the root tools/bootstrap_bazel7
builds. The gate's trust boundary needs a sandbox that holds, and Bazel falls
back to an unsandboxed strategy without a word when linux-sandbox cannot start,
so this test pins, on a tiny bzlmod workspace in a temporary directory:

* a genrule and an sh_test (from rules_shell, resolved offline through the
  lane's registry) build and pass with `--spawn_strategy=linux-sandbox`, and
  the default strategy also picks linux-sandbox;
* an action tagged `block-network` (what the gate's double runs ask for)
  cannot open a TCP connection to this machine's own non-loopback address,
  while the same untagged action can (Bazel's sandboxes allow network by
  default), so the blocked case is not blocked for some other reason;
* a sandboxed action cannot write into the home directory or into the
  workspace's source tree, and Bazel writes no MODULE.bazel.lock there.

Needs root and the sid root (tools/bootstrap_bazel7); without them it fails.
Run: .venv/bin/python3 tests/e2e/bazel7_sandbox_test.py
"""

import os
import socket
import subprocess
import threading
from pathlib import Path

from absl.testing import absltest
from bazel7_workspace import Bazel7Workspace

# A documentation-only address (RFC 5737): a UDP "connect" to it sends nothing
# and tells which local address the default route uses.
ROUTE_PROBE = ("198.51.100.1", 9)

MODULE = """module(name = "bazel7_probe")

bazel_dep(name = "rules_shell", version = "0.2.0")
"""

BUILD = """load("@rules_shell//shell:sh_test.bzl", "sh_test")

genrule(
    name = "hello",
    outs = ["hello.txt"],
    cmd = "echo hello > $@",
)

sh_test(
    name = "hello_test",
    srcs = ["hello_test.sh"],
    data = [":hello.txt"],
)

# $(probe_host) and $(probe_port) come from --define.
NET = ("python3 -c 'import socket; " +
       "socket.create_connection((\\"$(probe_host)\\", $(probe_port)), timeout=5)'")

genrule(
    name = "net_blocked",
    outs = ["net_blocked.txt"],
    cmd = NET + " && touch $@",
    tags = ["manual", "block-network"],
)

genrule(
    name = "net_allowed",
    outs = ["net_allowed.txt"],
    cmd = NET + " && touch $@",
    tags = ["manual"],
)

genrule(
    name = "escape",
    outs = ["escape.txt"],
    cmd = "echo escaped > $(escape_path) && touch $@",
    tags = ["manual"],
)
"""

TEST_SH = """#!/bin/sh
set -e
grep -q hello hello.txt
"""


def _route_address() -> str:
    """This machine's address on its default route (not loopback)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(ROUTE_PROBE)
        address = s.getsockname()[0]
    if address.startswith("127."):
        raise AssertionError(f"no non-loopback address to probe with (got {address})")
    return address


class _Listener:
    """A TCP server on a host address that counts the connections it accepts."""

    def __init__(self, host: str) -> None:
        self.sock = socket.create_server((host, 0))
        self.host, self.port = self.sock.getsockname()[:2]
        self.accepted = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


class Bazel7SandboxTest(absltest.TestCase):
    tmp: Path
    workspace: Path
    output_base: Path
    listener: _Listener

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.lane = Bazel7Workspace("bazel7_sandbox_")
        cls.tmp, cls.workspace = cls.lane.tmp, cls.lane.root
        cls.workspace.mkdir()
        (cls.workspace / "MODULE.bazel").write_text(MODULE)
        (cls.workspace / "BUILD.bazel").write_text(BUILD)
        script = cls.workspace / "hello_test.sh"
        script.write_text(TEST_SH)
        script.chmod(0o755)
        cls.output_base = cls.lane.output_base
        cls.listener = _Listener(_route_address())

    @classmethod
    def tearDownClass(cls) -> None:
        cls.listener.close()
        cls.lane.close()
        super().tearDownClass()

    @classmethod
    def _bazel(cls, *args: str) -> subprocess.CompletedProcess[str]:
        return cls.lane.bazel(*args)

    def _net_defines(self) -> list[str]:
        return [
            f"--define=probe_host={self.listener.host}",
            f"--define=probe_port={self.listener.port}",
        ]

    def test_genrule_and_sh_test_pass_in_linux_sandbox(self) -> None:
        result = self._bazel("test", "--spawn_strategy=linux-sandbox", "//:hello_test")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("PASSED", result.stdout + result.stderr)

    def test_no_lock_file_is_written_into_the_workspace(self) -> None:
        result = self._bazel("build", "//:hello")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertFalse((self.workspace / "MODULE.bazel.lock").exists())

    def test_default_strategy_is_linux_sandbox(self) -> None:
        # A fresh output of the genrule, so an action really runs.
        self._bazel("clean")
        result = self._bazel("build", "//:hello")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stderr, r"\d+ linux-sandbox")

    def test_block_network_action_cannot_reach_the_network(self) -> None:
        before = self.listener.accepted
        result = self._bazel(
            "build", "--spawn_strategy=linux-sandbox", *self._net_defines(), "//:net_blocked"
        )
        self.assertNotEqual(result.returncode, 0, result.stderr)
        self.assertIn("Network is unreachable", result.stderr)
        self.assertEqual(self.listener.accepted, before)

    def test_untagged_action_reaches_the_listener(self) -> None:
        # The control: the probe itself works when the action may use the network.
        before = self.listener.accepted
        result = self._bazel(
            "build", "--spawn_strategy=linux-sandbox", *self._net_defines(), "//:net_allowed"
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(self.listener.accepted, before + 1)

    def test_sandboxed_action_cannot_write_outside(self) -> None:
        home = Path(os.environ.get("HOME", "/root"))
        targets = [
            home / f".bazel7_escape_probe_{os.getpid()}",
            self.workspace / "escaped.txt",
        ]
        for target in targets:
            with self.subTest(target=str(target)):
                result = self._bazel(
                    "build",
                    "--spawn_strategy=linux-sandbox",
                    f"--define=escape_path={target}",
                    "//:escape",
                )
                self.assertNotEqual(result.returncode, 0, result.stderr)
                self.assertIn("Read-only file system", result.stderr)
                self.assertFalse(target.exists(), f"{target} was written from the sandbox")


if __name__ == "__main__":
    absltest.main()

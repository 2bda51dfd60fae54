"""Flags through the rc file round-trip exactly under the real Bazel (4.2.3, and 7.7.1).

Past 64 KiB the CLI hands the gate its flags in an rc file (`gate_flags.write_rc_file`).
Bazel's rc tokenizer takes a backslash as an escape even inside single quotes, and
`#` as a comment, so a crafted file name once shifted every later path. Here a
tiny workspace declares string build settings and a rule that writes their values
to a JSON file; the flags go through `write_rc_file` exactly as the CLI writes
them, and what Bazel handed the rule must be byte for byte what was sent: crafted
values, random ones (hypothesis), and a changed-path list encoded as the gate's
`changed_paths` flag. One Bazel server on a private output base (not under /tmp),
shut down and deleted at the end.

Run: .venv/bin/python3 tests/e2e/rc_roundtrip_test.py
"""

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from agent_gate.drive import protogen  # noqa: E402

protogen.ensure_proto_importable()

from absl.testing import absltest  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agent_gate.drive import bazel_client, gate_flags  # noqa: E402

SETTINGS = 8
DEFS = """
SettingInfo = provider(fields = ["value"])

def _setting_impl(ctx):
    return [SettingInfo(value = ctx.build_setting_value)]

setting = rule(implementation = _setting_impl, build_setting = config.string(flag = True))

def _dump_impl(ctx):
    out = ctx.actions.declare_file(ctx.label.name + ".json")
    ctx.actions.write(out, json.encode([s[SettingInfo].value for s in ctx.attr.settings]))
    return [DefaultInfo(files = depset([out]))]

dump = rule(implementation = _dump_impl, attrs = {"settings": attr.label_list()})
"""
# Bytes an rc line or a shell treats specially, and some that are not ASCII.
SPECIAL = "'\"\\ \t#$%,=@:;!*?[]{}()<>|&~`^é漢\U0001f600"
CRAFTED = [
    "x\\",
    "a'b\\'c",
    'q"\\"',
    "\\",
    "'",
    "''",
    '"',
    "#not a comment",
    "tab\there",
    "  edge spaces  ",
    "%workspace%/x",
    "-- --x=y",
    "caf\u00e9/\u6f22\u5b57",
    "",
]
# Any character a file name can hold that a flag can carry (no NUL, CR or LF).
TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(SPECIAL), st.characters(blacklist_characters="\0\r\n", codec="utf-8")
    ),
    max_size=40,
)


class RcRoundTripTest(absltest.TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.top = Path(tempfile.mkdtemp(prefix="agent_gate-rc-", dir="/var/tmp")).resolve()
        cls.workspace = cls.top / "ws"
        cls.workspace.mkdir()
        (cls.workspace / "WORKSPACE").write_text("")
        # The bzlmod entry, for the Bazel 7.7.1 lane (bazel7_rc_roundtrip_test.py).
        (cls.workspace / "MODULE.bazel").write_text('module(name = "rc_roundtrip")\n')
        (cls.workspace / "defs.bzl").write_text(DEFS)
        names = [f"s{index}" for index in range(SETTINGS)]
        (cls.workspace / "BUILD").write_text(
            'load(":defs.bzl", "dump", "setting")\n'
            + "".join(f'setting(name = "{name}", build_setting_default = "")\n' for name in names)
            + f"dump(name = 'values', settings = {[':' + name for name in names]!r})\n"
        )
        cls.output_base = cls.top / "output_base"
        cls.count = 0

    @classmethod
    def tearDownClass(cls):
        bazel_client.shutdown(cls.workspace, output_base=cls.output_base)
        shutil.rmtree(cls.top, ignore_errors=True)
        super().tearDownClass()

    def through_rc(self, values: list[str]) -> list[str]:
        """The values Bazel handed the rule after `write_rc_file` carried them."""
        type(self).count += 1
        rc = self.top / f"flags{self.count}.bazelrc"
        flags = [f"--//:s{index}={value}" for index, value in enumerate(values)]
        gate_flags.write_rc_file(rc, flags, "/dev/null")
        done = subprocess.run(
            [
                bazel_client.find_bazel(),
                f"--output_base={self.output_base}",
                f"--bazelrc={rc}",
                "test",  # the rc file's lines are `test` lines, as the CLI's
                "--color=no",
                "--curses=no",
                "//:values",
            ],
            cwd=self.workspace,
            capture_output=True,
            env=bazel_client.bazel_env(),
            check=False,
        )
        # 4: "no test targets"; the rule was built all the same.
        self.assertIn(done.returncode, (0, 4), done.stderr.decode("utf-8", "replace")[-2000:])
        seen = (self.workspace / "bazel-bin" / "values.json").read_bytes().decode("utf-8")
        return json.loads(seen)[: len(values)]

    def test_crafted_values(self):
        for start in range(0, len(CRAFTED), SETTINGS):
            chunk = CRAFTED[start : start + SETTINGS]
            self.assertEqual(self.through_rc(chunk), chunk)

    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(TEXT, min_size=1, max_size=SETTINGS))
    def test_random_values(self, values):
        self.assertEqual(self.through_rc(values), values)

    @settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(TEXT.filter(lambda text: text != ""), min_size=1, max_size=20))
    def test_changed_paths_flag_decodes_to_the_paths_sent(self, paths):
        """The gate's own encoding (`encode_path`), decoded as the rule decodes it."""
        encoded = ",".join(gate_flags.encode_path(path) for path in paths)
        (seen,) = self.through_rc([encoded])
        decoded = [item.replace("%2C", ",").replace("%25", "%") for item in seen.split(",")]
        self.assertEqual(decoded, paths)


if __name__ == "__main__":
    absltest.main()

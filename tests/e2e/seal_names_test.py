"""Fixture trees with random names and contents, sealed by the real FixtureSeal action.

For each example hypothesis draws a batch of fixture trees: file names in any
UTF-8 Bazel takes as a label (accents, CJK, emoji, spaces, quotes, `$`, `#`, a
leading `-`, names ending in `.seal`, dot files) and random bytes as contents
(CRLF, no final newline, empty files). Every tree becomes a `sealed_fixtures`
package of a scratch workspace, and one `bazel build` per lane seals the batch:
Bazel 4.2.3 with WORKSPACE, Bazel 7.7.1 with bzlmod. Each computed seal must equal
what the coreutils pipeline of docs/rules.md prints for the same tree.

Run: .venv/bin/python3 tests/e2e/seal_names_test.py (needs tools/bootstrap_bazel7's sid root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

from absl.testing import absltest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

sys.path[:0] = [str(Path(__file__).resolve().parent)]

from bazel7_workspace import BAZEL7, Bazel7Workspace  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = (
    "find {tree} -type f ! -name '*.seal' -print0 | LC_ALL=C sort -z "
    "| xargs -0 sha256sum | sha256sum"
)
# Bazel refuses these in a label; sha256sum escapes `\` and newlines. Names holding
# them are refused by the seal (tests/unit/seal_test.py), not sealed.
REFUSED = {"\\", ":", "/", "\x7f", *map(chr, range(0x20))}
# Files that would make a subpackage or a repository boundary of the tree.
BOUNDARIES = {"BUILD", "BUILD.bazel", "WORKSPACE", "WORKSPACE.bazel", "MODULE.bazel", "REPO.bazel"}
TREES_PER_BUILD = 6
EXAMPLES = 3
LATER_DEFAULTS = (
    "--noenable_workspace",
    "--incompatible_autoload_externally=",
    "--incompatible_disallow_empty_glob",
    "--incompatible_auto_exec_groups",
)

_BLACKLIST = {"blacklist_categories": ("Cs",), "blacklist_characters": "".join(REFUSED)}
# Mostly the alphabets names are written in, some of all Unicode (surrogates are not UTF-8).
_characters = st.one_of(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E, **_BLACKLIST),
    st.characters(max_codepoint=0x24F, **_BLACKLIST),
    st.characters(max_codepoint=0xFFFF, **_BLACKLIST),
    st.characters(**_BLACKLIST),
)
_segment = st.text(_characters, min_size=1, max_size=10).filter(
    lambda name: name not in {".", ".."} and name not in BOUNDARIES
)
_path = st.lists(_segment, min_size=1, max_size=3).map("/".join)
_content = st.one_of(
    st.binary(max_size=300),
    st.lists(st.sampled_from([b"line", b"\r\n", b"\n", b"caf\xc3\xa9", b"\xff\xfe"])).map(b"".join),
)


def _no_file_is_a_directory(files: dict[str, bytes]) -> bool:
    # `a` and `a/b` cannot both be files; names differing only in case are fine.
    return not any(other.startswith(path + "/") for path in files for other in files)


_tree = st.dictionaries(_path, _content, max_size=6).filter(_no_file_is_a_directory)
_batch = st.lists(_tree, min_size=TREES_PER_BUILD, max_size=TREES_PER_BUILD)

# Both lanes take these names; each tree must seal on both.
ACCEPTED_BY_BOTH = [
    {"café": b"x", "日本/名前.txt": b"y\r\n", "-leading": b"", "a b": b"no final newline"},
    {"q'uote\"s $HOME #x %20 @v ~ ?": b"1", "x.seal": b"skipped", ".hidden": b"dot"},
    {"\u00a0nbsp": b"", "c1\u0085": b"", "e\u0301"[0] + "é": b"", "ÿ/Ā": b"beyond Latin-1"},
    {},
    {"[a]*{b}|<c>!&;,+(d)^`": b"glob and shell characters", "Ω/ж/ب/अ": b"scripts"},
    {"z" * 10: b"z" * 70000},  # more than one read of the sealer
]
# Bazel 7.7.1 refuses these in a label (it reads them as '?'); 4.2.3 takes them.
REFUSED_BY_BAZEL_7 = [
    {"emoji 😀": b"\xf0\x9f\x98\x80"},
    {"e\u0301 combining": b""},
    {"\ufeffbom \u2028sep": b""},
]


def _pipeline(workspace: Path, tree: str) -> str:
    return subprocess.run(
        ["bash", "-c", PIPELINE.format(tree=tree)],
        cwd=workspace,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _write_batch(workspace: Path, batch: list[dict[str, bytes]], prefix: str) -> list[str]:
    """Writes each tree as a new package with its files under `<package>/tree`."""
    packages = []
    for index, files in enumerate(batch):
        name = f"{prefix}{index}"
        package = workspace / name
        tree = package / "tree"
        tree.mkdir(parents=True)
        for file_name, content in files.items():
            path = os.path.join(os.fsencode(tree), file_name.encode())
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(content)
        (package / "BUILD.bazel").write_text(
            'load("@agent_gate//rules:defs.bzl", "sealed_fixtures")\n\n'
            'sealed_fixtures(name = "fx", root = "tree")\n'
        )
        (package / "fx.seal").write_text(_pipeline(workspace, f"{name}/tree"))
        packages.append(name)
    return packages


class Sealed(NamedTuple):
    pipeline: str  # the coreutils pipeline's line
    action: str | None  # the FixtureSeal action's line; None: Bazel refused a name
    refusal: str | None  # Bazel's error for the tree's package, when it refused


class Lane:
    """A scratch workspace on one Bazel lane that seals a batch of trees."""

    def __init__(self, name: str, tmp: Path, workspace: Path) -> None:
        self.name = name
        self.tmp = tmp
        self.workspace = workspace
        self.workspace.mkdir()
        self.builds = 0

    def build(self, packages: list[str]) -> subprocess.CompletedProcess[str]:
        raise NotImplementedError

    def seal(self, batch: list[dict[str, bytes]]) -> list[Sealed]:
        """Seals every tree of the batch in one build (--keep_going: a refused name
        fails its own package only)."""
        self.builds += 1
        packages = _write_batch(self.workspace, batch, prefix=f"b{self.builds}_")
        done = self.build(packages)
        sealed = []
        for package in packages:
            pipeline = (self.workspace / package / "fx.seal").read_text()
            actual = self.workspace / "bazel-bin" / package / "fx.actual.seal"
            if actual.is_file():
                sealed.append(Sealed(pipeline, actual.read_text(), None))
                continue
            refusal = [
                line
                for line in done.stderr.splitlines()
                if f"//{package}:fx: invalid label" in line
            ]
            if not refusal:
                raise AssertionError(
                    f"{self.name}: //{package}:fx neither sealed nor refused a name:\n"
                    f"{done.stderr[-4000:]}"
                )
            sealed.append(Sealed(pipeline, None, refusal[0]))
        return sealed

    def close(self) -> None:
        subprocess.run(["chmod", "-R", "u+w", str(self.tmp)], check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)


class Bazel4Lane(Lane):
    def __init__(self) -> None:
        # Not below /tmp, like the Bazel 7.7.1 lane's workspace.
        tmp = Path(tempfile.mkdtemp(prefix="agent_gate-seal-bazel4-", dir="/var/tmp"))
        super().__init__("bazel 4.2.3", tmp, tmp / "ws")
        self.output_base = self.tmp / "output_base"
        (self.workspace / "WORKSPACE").write_text(
            'workspace(name = "seal_names")\n\n'
            f'local_repository(name = "agent_gate", path = "{ROOT}")\n\n'
            'load("@agent_gate//rules:repositories.bzl", "agent_gate_dependencies")\n\n'
            "agent_gate_dependencies()\n"
        )
        (self.workspace / "BUILD.bazel").write_text("")

    def _bazel(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bazel", f"--output_base={self.output_base}", *args],
            cwd=self.workspace,
            capture_output=True,
            text=True,
            errors="backslashreplace",  # Bazel prints some names as Latin-1
            timeout=600,
            check=False,
        )

    def build(self, packages: list[str]) -> subprocess.CompletedProcess[str]:
        return self._bazel(
            "build", "--keep_going", "--nosandbox_debug", *[f"//{p}:fx" for p in packages]
        )

    def close(self) -> None:
        self._bazel("shutdown")
        super().close()


class Bazel7Lane(Lane):
    def __init__(self) -> None:
        self.lane = Bazel7Workspace("agent_gate-seal-bazel7-")
        super().__init__("bazel 7.7.1", self.lane.tmp, self.lane.root)
        (self.workspace / "MODULE.bazel").write_text(
            'module(name = "seal_names")\n\n'
            'bazel_dep(name = "agent_gate", version = "0.1.0")\n'
            f'local_path_override(module_name = "agent_gate", path = "{ROOT}")\n'
        )
        (self.workspace / "BUILD.bazel").write_text("")

    def build(self, packages: list[str]) -> subprocess.CompletedProcess[str]:
        return self.lane.bazel(
            "build",
            "--keep_going",
            "--nosandbox_debug",
            *LATER_DEFAULTS,
            *[f"//{p}:fx" for p in packages],
        )

    def close(self) -> None:
        self.lane.close()


class SealNamesTest(absltest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        if not BAZEL7.is_file():
            raise AssertionError(f"{BAZEL7} is missing")
        cls.lanes = [Bazel4Lane(), Bazel7Lane()]

    @classmethod
    def tearDownClass(cls) -> None:
        for lane in cls.lanes:
            lane.close()
        super().tearDownClass()

    def test_hand_picked_names_seal_as_the_pipeline_does(self) -> None:
        batch = ACCEPTED_BY_BOTH + REFUSED_BY_BAZEL_7
        for lane in self.lanes:
            sealed = lane.seal(batch)
            for files, tree in zip(batch, sealed, strict=True):
                if files in REFUSED_BY_BAZEL_7 and lane is self.lanes[1]:
                    self.assertIsNotNone(tree.refusal, f"{lane.name}: {sorted(files)!r}")
                    self.assertIn("may not contain", tree.refusal)
                else:
                    self.assertEqual(tree.pipeline, tree.action, f"{lane.name}: {sorted(files)!r}")

    def test_random_names_seal_as_the_pipeline_does_or_bazel_refuses_them(self) -> None:
        compared = dict.fromkeys((lane.name for lane in self.lanes), 0)

        # No shrinking: every step would be two more Bazel builds. A failure names
        # the lane and the tree's files instead.
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        )
        @given(batch=_batch)
        def check(batch: list[dict[str, bytes]]) -> None:
            for lane in self.lanes:
                for files, tree in zip(batch, lane.seal(batch), strict=True):
                    if tree.refusal is None:
                        self.assertEqual(
                            tree.pipeline, tree.action, f"{lane.name}: {sorted(files)!r}"
                        )
                        compared[lane.name] += 1
                    else:
                        # Refused while loading the package: a label error, never a seal.
                        self.assertIn("may not contain", tree.refusal)

        check()
        print(f"random trees sealed and compared: {compared}")
        for lane, count in compared.items():
            self.assertGreater(count, 0, f"{lane} refused every random tree: nothing compared")


if __name__ == "__main__":
    absltest.main()

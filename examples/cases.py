"""Scores the example patches of `examples/patches/cases.yaml` against the example monorepo.

Shared by `examples/demo.py` (the README's main command) and
`tests/e2e/example_test.py`. `ExampleWorkspace.create` copies
`examples/monorepo` once, points its `local_repository(name = "agent_gate")` at
this checkout and commits it as the base; `ExampleWorkspace.score` then, for one
case, resets the copy to that base, commits the case's ledger and drift, applies
the patch with `git apply`, reads the touched paths from the patch
(`agent_gate.formats.patch`) and runs `bazel test //:agent_gate` with a fresh run id
(`agent_gate.drive.gate_target`). One workspace path for every case keeps one Bazel server
and output base warm.

Callers make `from proto import agent_gate_pb2` importable first
(`agent_gate.drive.protogen.ensure_proto_importable()`), with `tools/` on sys.path.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import wired_copy
import yaml
from google.protobuf import text_format

from agent_gate.drive import bazel_client, gate_target
from agent_gate.formats import patch
from proto import agent_gate_pb2

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = REPO_ROOT / "examples" / "monorepo"
PATCHES = REPO_ROOT / "examples" / "patches"
MANIFEST = PATCHES / "cases.yaml"
GATE_TARGET = "//:agent_gate"

DECISIONS = ("promote", "reject", "hold", "review", "fixture_fault", "stop_queue")
BASE_TAG = "agent-gate-base"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_REQUIRED = ("name", "patch", "expect", "why")
_OPTIONAL = ("ledger", "drift", "commit_counts", "rows", "rule_contains", "guarded")
_COPY_IGNORE = shutil.ignore_patterns("bazel-*", "__pycache__", "*.pyc")
# Fixed dates too: the base commit is the same for the same example.
_GIT_ENV = {
    **wired_copy.GIT_ENV,
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
}

Progress = Callable[[str], None]


class CaseError(RuntimeError):
    """A case cannot be set up (bad manifest, a patch that no longer applies, git failing)."""


@dataclass(frozen=True)
class Case:
    """One row of cases.yaml."""

    name: str
    patch: str  # relative to examples/patches/
    expect: str
    why: str
    ledger: str | None = None
    drift: str | None = None
    commit_counts: Mapping[str, int] = field(default_factory=dict)
    rows: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    rule_contains: str | None = None
    guarded: tuple[str, ...] = ()


@dataclass(frozen=True)
class CaseResult:
    """A scored case: the gate run and what the patch touched."""

    case: Case
    run: gate_target.GateRun
    touched: list[str]  # from the patch text (agent_gate.formats.patch)
    git_paths: list[str]  # what git says the applied patch changed
    prepare_seconds: float
    gate_seconds: float

    @property
    def decision(self) -> str | None:
        return self.run.decision

    @property
    def rule(self) -> str:
        report = self.run.report
        return report.rule if report is not None else f"no report: {self.run.problem}"


def _case_from(entry: Any, index: int, patches: Path) -> Case:
    where = f"{MANIFEST.name} case {index + 1}"
    if not isinstance(entry, dict):
        raise CaseError(f"{where}: expected a mapping, got {type(entry).__name__}")
    unknown = sorted(set(entry) - set(_REQUIRED) - set(_OPTIONAL))
    missing = [key for key in _REQUIRED if key not in entry]
    if unknown or missing:
        raise CaseError(f"{where}: unknown keys {unknown}, missing keys {missing}")
    name = str(entry["name"])
    where = f"{MANIFEST.name} case {name!r}"
    if not _NAME.match(name):
        raise CaseError(f"{where}: a name is lower_case letters, digits and '_'")
    if entry["expect"] not in DECISIONS:
        raise CaseError(f"{where}: expect {entry['expect']!r} is not one of {DECISIONS}")
    for key, folder in (("patch", patches), ("drift", patches), ("ledger", patches / "ledgers")):
        if entry.get(key) is not None and not (folder / str(entry[key])).is_file():
            raise CaseError(f"{where}: {key} file {folder / str(entry[key])} does not exist")
    counts = entry.get("commit_counts") or {}
    if not isinstance(counts, dict) or not all(
        isinstance(count, int) and not isinstance(count, bool) for count in counts.values()
    ):
        raise CaseError(f"{where}: commit_counts maps commit ids to integers")
    rows = entry.get("rows") or {}
    if not isinstance(rows, dict) or not all(isinstance(v, dict) for v in rows.values()):
        raise CaseError(f"{where}: rows maps property ids to field values")
    return Case(
        name=name,
        patch=str(entry["patch"]),
        expect=str(entry["expect"]),
        why=" ".join(str(entry["why"]).split()),
        ledger=entry.get("ledger"),
        drift=entry.get("drift"),
        commit_counts={str(commit): count for commit, count in counts.items()},
        rows=rows,
        rule_contains=entry.get("rule_contains"),
        guarded=tuple(entry.get("guarded") or ()),
    )


def load_cases(manifest: Path = MANIFEST) -> list[Case]:
    """Every case of the manifest, checked: names unique, files present, decisions known."""
    try:
        entries = yaml.safe_load(manifest.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise CaseError(f"cannot read {manifest}: {error}") from error
    if not isinstance(entries, list) or not entries:
        raise CaseError(f"{manifest}: expected a non-empty list of cases")
    cases = [_case_from(entry, index, manifest.parent) for index, entry in enumerate(entries)]
    names = [case.name for case in cases]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise CaseError(f"{manifest}: case names {duplicates} are used more than once")
    return cases


def _row_value(row: agent_gate_pb2.Row, key: str) -> Any:
    value = getattr(row, key)
    return list(value) if key == "exit_codes" else value


def check(result: CaseResult) -> list[str]:
    """What is wrong with a scored case, in words; empty when it is as the manifest says."""
    case, run = result.case, result.run
    report = run.report
    if report is None:
        return [f"no report ({run.problem}); bazel exited {run.exit_code}, log {run.log_path}"]
    problems: list[str] = []
    if report.decision != case.expect:
        problems.append(f"decision {report.decision!r}, expected {case.expect!r}: {report.rule}")
    promoted = report.decision == "promote"
    if (run.exit_code == gate_target.EXIT_TESTS_PASSED) != promoted:
        problems.append(f"bazel exited {run.exit_code} for decision {report.decision!r}")
    if sorted(result.touched) != sorted(result.git_paths):
        problems.append(f"touched paths {result.touched} differ from git's {result.git_paths}")
    rows = {row.property_id: row for row in report.rows}
    for property_id, expected in case.rows.items():
        row = rows.get(property_id)
        if row is None:
            problems.append(f"the report has no row for {property_id}")
            continue
        for key, value in expected.items():
            if not hasattr(row, key):
                problems.append(f"{case.name}: rows.{property_id}.{key} is not a report field")
            elif _row_value(row, key) != value:
                problems.append(
                    f"{property_id}.{key} is {_row_value(row, key)!r}, expected {value!r}"
                )
    for row in report.rows:
        if row.ledger_state == "open" and row.vote == "yes":
            problems.append(f"{row.property_id} has an open freeze but voted yes")
        if row.matched and row.ledger_state == "open" and row.vote != "excluded":
            problems.append(f"{row.property_id} has an open freeze but is not excluded")
        if row.classification == "flake" and len(set(row.exit_codes)) != 2:
            problems.append(f"{row.property_id} is a flake with exit codes {list(row.exit_codes)}")
    if case.rule_contains and case.rule_contains not in report.rule:
        problems.append(f"the rule does not say {case.rule_contains!r}: {report.rule}")
    guarded = [entry.split(" (", 1)[0] for entry in report.guarded_paths]
    problems.extend(
        f"{path} is not reported as guarded (guarded: {guarded})"
        for path in case.guarded
        if path not in guarded
    )
    return problems


def _git(cwd: Path, *arguments: str, stdin: bytes | None = None) -> str:
    try:
        out = wired_copy.git(cwd, *arguments, stdin=stdin, env=_GIT_ENV)
    except wired_copy.CopyError as error:
        raise CaseError(str(error)) from None
    return out.decode("utf-8", "surrogateescape")


remove_tree = wired_copy.remove_tree


@dataclass
class ExampleWorkspace:
    """A git copy of examples/monorepo that every case is scored in, one after another."""

    root: Path
    output_base: Path | None = None
    bazel_binary: str = "bazel"
    runs_dir: Path | None = None  # per-run logs and extracted reports

    @classmethod
    def create(
        cls,
        root: Path,
        *,
        output_base: Path | None = None,
        bazel_binary: str = "bazel",
        example: Path = EXAMPLE,
        repo_root: Path = REPO_ROOT,
    ) -> ExampleWorkspace:
        """Copy the example to `root` (which must not exist), wire it to this checkout, commit."""
        bazel_client.find_bazel(bazel_binary)  # fail early, naming tools/bootstrap
        if root.exists():
            raise CaseError(f"{root} exists; give a new directory for the example workspace")
        shutil.copytree(example, root, ignore=_COPY_IGNORE, symlinks=True)
        try:
            wired_copy.wire_copy(root, repo_root)
        except wired_copy.CopyError as error:
            raise CaseError(str(error)) from None
        _git(root, "init", "-q")
        # Bazel's convenience symlinks are not part of any patch.
        info = root / ".git" / "info"
        info.mkdir(parents=True, exist_ok=True)
        with (info / "exclude").open("a", encoding="utf-8") as exclude:
            exclude.write("/bazel-*\n")
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", "base: examples/monorepo")
        _git(root, "tag", BASE_TAG)
        return cls(
            root=root,
            output_base=output_base,
            bazel_binary=bazel_binary,
            runs_dir=root.parent / f"{root.name}.runs",
        )

    @property
    def startup_flags(self) -> list[str]:
        return [f"--output_base={self.output_base}"] if self.output_base else []

    def reset(self) -> None:
        """Back to the clean base commit; Bazel's convenience symlinks stay."""
        _git(self.root, "reset", "-q", "--hard", BASE_TAG)
        _git(self.root, "clean", "-q", "-fdx", "-e", "/bazel-*")

    def prepare(self, case: Case) -> tuple[list[str], list[str]]:
        """Reset, commit the case's base changes, apply its patch; return (touched, git's paths)."""
        self.reset()
        if case.ledger is not None:
            shutil.copyfile(PATCHES / "ledgers" / case.ledger, self.root / "ledger.txtpb")
            _git(self.root, "commit", "-q", "-a", "-m", f"base: ledger {case.ledger}")
        if case.drift is not None:
            self._apply(case.drift)
            _git(self.root, "add", "-A")
            _git(self.root, "commit", "-q", "-m", f"base: drift {case.drift} (seal not updated)")
        patch_file = PATCHES / case.patch
        touched = patch.touched_paths(patch.read_patch(patch_file))
        self._apply(case.patch)
        _git(self.root, "add", "-A")
        listed = _git(self.root, "diff", "--cached", "--no-renames", "--name-only", "-z", "HEAD")
        return touched, [path for path in listed.split("\0") if path]

    def _apply(self, relative: str) -> None:
        try:
            _git(self.root, "apply", "--whitespace=nowarn", str(PATCHES / relative))
        except CaseError as error:
            raise CaseError(
                f"{PATCHES / relative} no longer applies to examples/monorepo ({error}); "
                "regenerate it with `git diff` from a copy of the example"
            ) from error

    def run_gate(
        self,
        changed_paths: Sequence[str],
        *,
        run_id: str,
        commit_counts: Mapping[str, int] | None = None,
        progress: Progress | None = None,
        use_rc_file: bool | None = None,
    ) -> gate_target.GateRun:
        work_dir = (self.runs_dir or self.root.parent / "runs") / run_id
        return gate_target.run_gate(
            self.root,
            GATE_TARGET,
            changed_paths=changed_paths,
            run_id=run_id,
            commit_counts=commit_counts,
            bazel=self.bazel_binary,
            output_base=self.output_base,
            progress=progress,
            work_dir=work_dir,
            use_rc_file=use_rc_file,
        )

    def score(
        self, case: Case, *, run_id: str | None = None, progress: Progress | None = None
    ) -> CaseResult:
        """Prepare the case and run the gate on it with a fresh (or the given) run id."""
        started = time.monotonic()
        touched, git_paths = self.prepare(case)
        prepared = time.monotonic()
        run = self.run_gate(
            touched,
            run_id=run_id or gate_target.new_run_id(case.name),
            commit_counts=case.commit_counts,
            progress=progress,
        )
        return CaseResult(
            case=case,
            run=run,
            touched=touched,
            git_paths=git_paths,
            prepare_seconds=round(prepared - started, 3),
            gate_seconds=round(time.monotonic() - prepared, 3),
        )

    def run_result(self, property_id: str) -> agent_gate_pb2.RunResult | None:
        """The last double-run result Bazel kept for a property, if any."""
        path = self.root / "bazel-bin" / "agent_gate.runs" / f"{property_id}.result.txtpb"
        if not path.is_file():
            return None
        return text_format.Parse(path.read_text(encoding="utf-8"), agent_gate_pb2.RunResult())

    def bazel_test_all(self, progress: Progress | None = None) -> int:
        """`bazel test //...` without gate flags; return bazel's exit code."""
        command = [
            bazel_client.find_bazel(self.bazel_binary),
            *self.startup_flags,
            "test",
            "--color=no",
            "--curses=no",
            "//...",
        ]
        done = subprocess.run(
            command,
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        if progress is not None:
            for line in (done.stderr + done.stdout).splitlines():
                progress(line)
        return done.returncode

    def shutdown(self) -> int:
        return bazel_client.shutdown(
            self.root, bazel=self.bazel_binary, output_base=self.output_base
        )

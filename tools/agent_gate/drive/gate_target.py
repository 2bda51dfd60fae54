"""What the CLI does with a workspace's gate target, `//:agent_gate`.

It builds it (never tests it) to read the build graph (`build_gate`): without
changed paths Bazel runs no property and writes only the rule's config
(`bazel-bin/agent_gate.gate.json`: catalog, fixtures, ledger, debt cap); with a
changed path and a fresh run id it also runs the matched properties' double
runs (`bazel-bin/agent_gate.runs/<id>.result.txtpb`). A failed build is
explained from Bazel's console output (`explain_failure`).

It tests it for the decision (`run_gate`): `bazel test` with the patch's inputs
as flags (`gate_flags.py`). The decision comes from the JSON report the gate
test writes to its undeclared outputs
(`bazel-testlogs/<target>/test.outputs/outputs.zip`), never from Bazel's console
output, which is streamed line by line to a progress callback for people.
When there is no trustworthy report (a build failure, a crash, a timeout, a
report left over from another run) `GateRun.report` is None and callers fail
closed.

Bazel itself is run by `bazel_client.py`.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
import uuid
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import json_format

from agent_gate.core import bazel_config, pathdigest
from agent_gate.core.quorum import Override
from agent_gate.drive import bazel_client
from agent_gate.drive.exit_codes import CliError
from agent_gate.drive.gate_flags import (
    FLAG_PREFIX,
    GateInputError,
    fits_command_line,
    gate_flags,
    split_bazelrc,
    write_rc_file,
)
from agent_gate.drive.progress import Progress
from agent_gate.formats.report import JSON_NAME
from proto import agent_gate_pb2

GATE_TARGET = "//:agent_gate"
GATE_NAME = "agent_gate"
# bazel test's exit codes after which the gate test ran: passed (0) or failed (3).
EXIT_TESTS_PASSED = 0
EXIT_TESTS_FAILED = 3
_GATE_RAN = (EXIT_TESTS_PASSED, EXIT_TESTS_FAILED)
_WORKSPACE_FILES = ("WORKSPACE", "WORKSPACE.bazel", "MODULE.bazel")
_LABEL = re.compile(r"^(?:@@?)?//([A-Za-z0-9_./+-]*)(?::([^:]+))?$")
_NO_GATE = ("no such target '//:agent_gate'", "no such package ''")
_ERROR_LINES = 12
# Bazel's words when the forced linux-sandbox strategy cannot run an action.
_NO_SANDBOX = (
    "No usable spawn strategy",
    "linux-sandbox' was requested",
    "is an invalid value for",
)


@dataclass(frozen=True)
class GateRun:
    """One `bazel test` of a gate target and what it left behind."""

    command: tuple[str, ...]
    exit_code: int  # bazel's: 0 = the gate test passed (promote), 3 = it failed
    report: agent_gate_pb2.GateReport | None  # None: no trustworthy report, fail closed
    run_id: str
    log_path: Path  # bazel's console output of this invocation
    report_json_path: Path | None  # the extracted agent_gate_report.json
    outputs_dir: Path | None  # every undeclared output of the gate test, extracted
    test_log_path: Path | None  # the gate test's own log (bazel-testlogs/.../test.log)
    rc_path: Path | None  # the rc file carrying the gate flags, when they did not fit argv
    duration_seconds: float
    timed_out: bool = False
    problem: str | None = None  # why report is None, for a person to act on

    @property
    def decision(self) -> str | None:
        return self.report.decision if self.report is not None else None


def new_run_id(prefix: str = "run") -> str:
    """A run id no earlier run used, so both runs of every matched property really run."""
    return f"{prefix}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:12]}"


def default_work_dir(run_id: str) -> Path:
    """`$TMPDIR/agent_gate-runs/<run id>`: one place for every run's log and report."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", run_id)[:120].lstrip(".") or "no-run-id"
    return Path(tempfile.gettempdir()) / "agent_gate-runs" / name


def testlogs_subdir(target: str) -> str:
    """`//pkg:name` -> `pkg/name`, where bazel-testlogs keeps that test's outputs."""
    match = _LABEL.match(target)
    if match is None:
        raise GateInputError(
            f"gate target {target!r} is not a label of this workspace such as //:agent_gate"
        )
    package, name = match.group(1), match.group(2)
    if name is None:
        name = package.rsplit("/", 1)[-1]
    if not name:
        raise GateInputError(f"gate target {target!r} names no target")
    return f"{package}/{name}" if package else name


def explain_failure(log: str, workspace: str, what: str, code: int) -> str:
    """A message a person can act on, from bazel's console output."""
    first = bazel_client.first_error(log)
    if any(marker in log for marker in _NO_GATE):
        return (
            f"{workspace} has no {GATE_TARGET} target (bazel: "
            f"{first or 'no such target'}).\nDeclare the gate in the workspace's "
            'root BUILD.bazel: agent_gate(name = "agent_gate", properties = [...], '
            'ledger = "ledger.txtpb"), loaded from @agent_gate//rules:defs.bzl (docs/rules.md)'
        )
    if any(marker in log for marker in _NO_SANDBOX):
        return (
            f"`bazel build {GATE_TARGET}` ({what}) in {workspace} could not run an action in "
            "the linux-sandbox (bazel: "
            f"{first or 'no usable spawn strategy'}); the gate never runs a "
            "patch's actions outside it, so nothing was decided (fail closed). A target that "
            "cannot be sandboxed cannot be gated: a human must review it"
        )
    errors = [line for line in log.splitlines() if line.startswith("ERROR:")][-_ERROR_LINES:]
    shown = "\n  ".join(errors) if errors else "\n  ".join(log.splitlines()[-_ERROR_LINES:])
    return (
        f"`bazel build {GATE_TARGET}` ({what}) failed in {workspace} with exit {code}; nothing "
        f"was decided (fail closed). Fix the build and retry. Bazel said:\n  {shown}"
    )


def build_gate(
    workspace: Path,
    flags: Sequence[str],
    *,
    progress: Progress,
    log_path: Path,
    what: str,
    shown: str | None = None,
) -> None:
    """`bazel build //:agent_gate FLAGS` in `workspace`; CliError explaining any failure.

    `shown` names the workspace for people (the user's checkout and revision, not the
    scoring worktree's path).
    """
    started = time.monotonic()
    code = bazel_client.build_targets(
        workspace, [GATE_TARGET], flags, progress=progress, log_path=log_path, what=what
    )
    if code != 0:
        text = log_path.read_text(encoding="utf-8", errors="replace")
        where = shown or str(workspace)
        raise CliError(explain_failure(text, where, what, code) + f"\nFull log: {log_path}")
    progress.step(f"bazel build {GATE_TARGET} ({what}) done in {time.monotonic() - started:.1f}s")


def _extract_outputs(test_dir: Path, outputs_dir: Path) -> Path | None:
    """Extract the test's undeclared outputs; return the JSON report's path if there is one."""
    if outputs_dir.exists():
        shutil.rmtree(outputs_dir)  # nothing of an earlier run may pass for this one's
    archive = test_dir / "test.outputs" / "outputs.zip"
    loose = test_dir / "test.outputs" / JSON_NAME  # --nozip_undeclared_test_outputs
    if archive.is_file():
        with zipfile.ZipFile(archive) as outputs:
            outputs.extractall(outputs_dir)  # names with '..' or '/' prefixes are sanitized
    elif loose.is_file():
        shutil.copytree(test_dir / "test.outputs", outputs_dir, dirs_exist_ok=True)
    report = outputs_dir / JSON_NAME
    return report if report.is_file() else None


def _trusted_report(
    path: Path, run_id: str, changed_paths: Sequence[str]
) -> tuple[agent_gate_pb2.GateReport | None, str | None]:
    """The report at `path` if it is this run's, else None and why not."""
    try:
        report = json_format.Parse(
            path.read_text(encoding="utf-8"),
            agent_gate_pb2.GateReport(),
            ignore_unknown_fields=True,
        )
    except (OSError, UnicodeDecodeError, json_format.ParseError) as error:
        return None, f"the gate report {path} is unreadable ({error}); not a promote"
    if not report.decision:
        return None, f"the gate report {path} holds no decision; not a promote"
    sent = pathdigest.changed_paths_digest(changed_paths)
    if report.changed_paths_sha256 != sent:
        return None, (
            f"the gate report {path} saw other changed paths than the CLI sent (digest "
            f"{report.changed_paths_sha256[:16] or 'missing'}..., sent {sent[:16]}...): a path "
            "was lost or shifted on the way to the gate, or no evaluator of this rule set "
            "wrote the report; a configuration error, not a promote"
        )
    if report.run_id != run_id or report.changed_path_count != len(changed_paths):
        return None, (
            f"the gate report {path} is from another run (run id {report.run_id!r}, "
            f"{report.changed_path_count} changed paths; expected {run_id!r}, "
            f"{len(changed_paths)}): the gate test did not finish this time; not a promote"
        )
    return report, None


def _progress_parts(progress: Callable[[str], None] | None) -> bazel_client.OnLine:
    """Each non-blank part of a console line (Bazel rewrites a line with `\\r`) to `progress`."""

    def on_line(line: str) -> None:
        if progress is None:
            return
        for part in line.split("\r"):
            if part.strip():
                progress(part)

    return on_line


def run_gate(
    workspace: Path,
    target: str = GATE_TARGET,
    *,
    changed_paths: Sequence[str],
    run_id: str,
    commit_counts: Mapping[str, int] | None = None,
    override: Override | None = None,
    bazel: str = "bazel",
    extra_flags: Sequence[str] = (),
    startup_flags: Sequence[str] = (),
    output_base: Path | None = None,
    progress: Callable[[str], None] | None = None,
    work_dir: Path | None = None,
    timeout_seconds: float | None = None,
    use_rc_file: bool | None = None,
    flag_prefix: str = FLAG_PREFIX,
    env: Mapping[str, str] | None = None,
) -> GateRun:
    """Run `bazel test TARGET` with the gate flags in `workspace` and read the report.

    `work_dir` receives bazel's console log, the rc file and the extracted
    outputs (default: `default_work_dir(run_id)`, left for the caller to read).
    `use_rc_file` forces the flags into an rc file (True) or onto the command
    line (False); None decides by their size. Raises BazelNotFoundError without
    a bazel binary, and GateInputError for inputs the flags cannot carry or a diff
    touching what configures Bazel itself (`core/bazel_config.py`).
    """
    workspace = Path(workspace).absolute()
    if not any((workspace / name).is_file() for name in _WORKSPACE_FILES):
        raise GateInputError(f"{workspace} is not a Bazel workspace (no WORKSPACE or MODULE.bazel)")
    binary = bazel_client.find_bazel(bazel)
    subdir = testlogs_subdir(target)
    changed = list(changed_paths)
    control = bazel_config.bazel_config_paths(changed)
    if control:
        raise GateInputError(
            f"the diff touches {', '.join(control[:5])}, which decides how Bazel itself runs "
            "(its launcher, rc files, version or repositories): a gate run in that tree could "
            "be replaced or have its verdict rewritten, so it is not run; a human must review "
            "the patch (not a promote)"
        )
    flags = gate_flags(
        changed_paths=changed,
        run_id=run_id,
        commit_counts=commit_counts,
        override=override,
        flag_prefix=flag_prefix,
    )
    work = Path(work_dir) if work_dir is not None else default_work_dir(run_id)
    work.mkdir(parents=True, exist_ok=True)
    log_path = work / "bazel.log"

    startup, user_rc = split_bazelrc(startup_flags)
    if output_base is not None:
        startup.append(f"--output_base={Path(output_base).absolute()}")
    if use_rc_file is None:
        use_rc_file = not fits_command_line(flags)
    rc_path: Path | None = None
    if use_rc_file:
        rc_path = work / "agent_gate.bazelrc"
        write_rc_file(rc_path, flags, user_rc)
        startup.append(f"--bazelrc={rc_path}")
        command = [binary, *startup, "test", *bazel_client.UI_FLAGS]
    else:
        if user_rc is not None:
            startup.append(f"--bazelrc={user_rc}")
        command = [binary, *startup, "test", *bazel_client.UI_FLAGS, *flags]
    command += [*extra_flags, target]

    started = time.monotonic()
    exit_code, timed_out = bazel_client.run_streamed(
        command,
        workspace,
        log_path,
        _progress_parts(progress),
        what=f"bazel test {target}",
        startup=startup,
        env=env,
        timeout=timeout_seconds,
    )
    duration = round(time.monotonic() - started, 3)

    def finish(
        report: agent_gate_pb2.GateReport | None = None,
        report_json: Path | None = None,
        outputs_dir: Path | None = None,
        test_log: Path | None = None,
        problem: str | None = None,
    ) -> GateRun:
        return GateRun(
            command=tuple(command),
            exit_code=exit_code,
            report=report,
            run_id=run_id,
            log_path=log_path,
            report_json_path=report_json,
            outputs_dir=outputs_dir,
            test_log_path=test_log,
            rc_path=rc_path,
            duration_seconds=duration,
            timed_out=timed_out,
            problem=problem,
        )

    if timed_out:
        return finish(
            problem=f"bazel test {target} ran past {timeout_seconds}s and was cancelled; "
            "a gate that did not finish is never a promote"
        )
    if exit_code not in _GATE_RAN:
        return finish(
            problem=f"bazel test {target} exited {exit_code} before the gate could decide "
            f"(build failure or crash); see {log_path}"
        )
    testlogs = bazel_client.testlogs_root(binary, workspace, startup, extra_flags)
    if testlogs is None:
        return finish(problem=f"cannot find bazel-testlogs of {workspace}; not a promote")
    test_dir = testlogs / subdir
    test_log = test_dir / "test.log"
    outputs_dir = work / "outputs"
    try:
        report_json = _extract_outputs(test_dir, outputs_dir)
    except (OSError, zipfile.BadZipFile) as error:
        return finish(problem=f"cannot read the outputs of {target} ({error}); not a promote")
    test_log_path = test_log if test_log.is_file() else None
    if report_json is None:
        return finish(
            outputs_dir=outputs_dir,
            test_log=test_log_path,
            problem=f"{target} wrote no {JSON_NAME} (see {test_log}); not a promote",
        )
    report, problem = _trusted_report(report_json, run_id, changed)
    return finish(report, report_json, outputs_dir, test_log_path, problem)

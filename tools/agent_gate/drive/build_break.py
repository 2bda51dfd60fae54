"""A patch that breaks the build of a matched property's test, where the base built it: reject.

When `bazel test //:agent_gate` on the patched tree fails to build (Bazel's exit 1),
the CLI finds out whose fault it is before anything is decided. It builds each
matched property's wrapped test on the patched tree (`bazel build --keep_going`,
every action sandboxed as in the gate; the build event protocol names the targets
that failed), then the failing ones at the base. Only a test that fails to build on
the patched tree and builds at the base is the patch's doing: reject, with Bazel's
error as the row's evidence. Anything else stays no decision (exit 2, fail closed):
Bazel crashed or ran out of memory (another exit code, or an action killed), the
base does not build that test either, or nothing the patch could be blamed for
failed (a fixture seal, the gate target itself).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_gate.drive import bazel_client, worktree
from agent_gate.drive.exit_codes import CliError
from agent_gate.drive.progress import Progress
from agent_gate.formats import evidence

# Bazel's exit code for a failed build or analysis; any other is not the patch's.
BUILD_FAILED = 1
# Words in Bazel's output that mean the machine stopped the build, or that what
# failed was a fixture seal (a fixture fault, never a broken test).
_INFRASTRUCTURE = (
    "Sealing fixtures",
    "OutOfMemoryError",
    "out of memory",
    "Cannot allocate memory",
    "No space left on device",
    "Killed",
    "killed by signal",
    "Server terminated abruptly",
    "crashed",
    "FATAL:",
)
# Progress lines of Bazel's console output, which say nothing about the failure.
_NOISE = ("INFO:", "Loading:", "Analyzing:", "Computing main repo mapping", "[")


@dataclass(frozen=True)
class Break:
    """A matched property whose test the patch broke; the base builds it."""

    property_id: str
    test: str
    error: str  # Bazel's error lines, bounded like a run's tail
    omitted: int  # bytes of the error left out
    log: Path  # the full build log


def main_repository_label(label: str) -> str:
    """`//pkg:name` for a label of the main repository, however Bazel spelled it."""
    for prefix in ("@@//", "@//"):
        if label.startswith(prefix):
            return label[len(prefix) - 2 :]
    return label


def failed_labels(bep: Path) -> set[str]:
    """Targets the build event protocol file reports as failed to build or analyze."""
    failed: set[str] = set()
    try:
        lines = bep.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return failed
    for line in lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by a crash: the build is not blamed on it
        ids = event.get("id", {})
        target = ids.get("targetCompleted") or ids.get("targetConfigured")
        if not isinstance(target, dict) or "label" not in target:
            continue
        completed = event.get("completed")
        if "aborted" in event or (isinstance(completed, dict) and not completed.get("success")):
            failed.add(main_repository_label(str(target["label"])))
    return failed


def error_text(log: Path) -> tuple[str, int]:
    """Bazel's errors from a build log, without its progress lines, bounded."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        return f"(the build log could not be read: {error.strerror or error})", 0
    kept = [line for line in text.splitlines() if line and not line.startswith(_NOISE)]
    return evidence.bounded("\n".join(kept))


def infrastructure(log: Path) -> str:
    """Why the build log says the machine or a fixture seal stopped the build ("" if not)."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "its log is unreadable"
    found = [marker for marker in _INFRASTRUCTURE if marker in text]
    return f"its output says {found[0]!r}" if found else ""


def _build(
    workspace: Path, tests: Sequence[str], log: Path, progress: Progress, what: str
) -> tuple[int, set[str]]:
    bep = log.with_suffix(".bep.json")
    code = bazel_client.build_targets(
        workspace,
        tests,
        ["--keep_going", f"--build_event_json_file={bep}"],
        progress=progress,
        log_path=log,
        what=what,
    )
    return code, failed_labels(bep) & set(tests)


def find(
    repo: worktree.Repo,
    base: str,
    workspace: Path,
    tests: Mapping[str, str],
    *,
    progress: Progress,
    work: Path,
) -> list[Break]:
    """The matched properties whose test the patch broke (`tests`: id -> test label).

    `workspace` holds the patched tree; it is left at the base. CliError (no
    decision) unless at least one test fails on the patched tree and builds at
    the base, and nothing says the machine stopped the build.
    """
    labels = sorted({main_repository_label(label) for label in tests.values() if label})
    if not labels:
        raise CliError("no matched property names its test, so no build failure can be blamed")
    patched_log = work / "build_break.patched.log"
    progress.step(f"the gate's build failed: building the matched tests {', '.join(labels[:5])}")
    code, broken = _build(workspace, labels, patched_log, progress, "the patched tree's tests")
    infrastructure_said = infrastructure(patched_log)
    if code != BUILD_FAILED or not broken or infrastructure_said:
        why = (
            infrastructure_said
            or (f"bazel build exited {code}, not a build failure" if code != BUILD_FAILED else "")
            or "every matched property's test builds"
        )
        raise CliError(
            f"the build failed, but not as a matched property's test breaking ({why}): no "
            f"decision (fail closed, never a promote). Bazel's log: {patched_log}"
        )
    text, omitted = error_text(patched_log)
    progress.step(f"broken on the patched tree: {', '.join(sorted(broken))}; building at the base")
    worktree.prepare(repo, base, progress)
    base_log = work / "build_break.base.log"
    code, still_broken = _build(workspace, sorted(broken), base_log, progress, "the base's tests")
    if code != 0:
        shown = ", ".join(sorted(still_broken)) or "them"
        raise CliError(
            f"the patched tree breaks the build of {', '.join(sorted(broken))}, but the base "
            f"does not build {shown} either (bazel build exited {code}): not the patch's "
            f"doing; no decision (fail closed). Fix the base. Bazel's log: {base_log}"
        )
    return [
        Break(property_id=pid, test=label, error=text, omitted=omitted, log=patched_log)
        for pid, label in sorted(tests.items())
        if main_repository_label(label) in broken
    ]

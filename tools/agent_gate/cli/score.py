"""`agent-gate score`: one candidate patch in, one decision (and exit code) out.

In the scoring worktree at the base revision: read the catalog from the build
graph; seal every fixture tree on the real filesystem **before** the patch is
applied (drift: fixture_fault, the patch is never applied); `git apply --check`
and apply the patch; take the touched paths from the patch itself and check them
against git's own reading of the applied tree (any disagreement: exit 2); send a
symlink change or a file that configures Bazel (by name or where it resolves) to
review without running Bazel on the tree; count the commits since each open
ledger row was opened; `bazel test //:agent_gate` with those flags, a fresh run
id and every action sandboxed; before a promote, re-derive the decision from the
CLI's own inputs (verdict_check); print the decision and the rows; write the JSON
report and its Markdown summary; exit with the decision's code. Anything that
keeps the gate from deciding is exit 2, never a promote.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from agent_gate.cli import catalog, double_run, verdict_check
from agent_gate.core import bazel_config, quorum
from agent_gate.core.locality import LocalityIndex, covers, normalize_path
from agent_gate.drive import (
    applied_tree,
    bazel_client,
    build_break,
    gate_flags,
    gate_target,
    provided_repos,
    sandbox,
    sealcheck,
    worktree,
)
from agent_gate.drive.exit_codes import CliError, exit_code
from agent_gate.drive.progress import Progress
from agent_gate.formats import evidence, ledger, patch, report
from proto import agent_gate_pb2

_NO_OVERLAP = "review: no strong property's locality overlaps the diff"
_NOT_APPLIED = (
    "not run: a sealed fixture tree of the base drifted from its committed seal, so the "
    "patch was never applied"
)
_STOPPED = "not run: the ledger's debt alone exceeds the cap (stop_queue), so no property ran"
_RECONFIGURES_BAZEL = "not run: the diff reconfigures Bazel itself, so the gate was not run on it"
_NAMES_SHOWN = 5


@dataclass(frozen=True)
class ScoreOptions:
    patch: Path
    base: str = "HEAD"
    workspace: Path | None = None
    report: Path | None = None
    override_ignore: tuple[str, ...] = ()
    override_by: str | None = None
    keep_runs: int = worktree.DEFAULT_KEPT_RUNS


# A patch larger than this is refused before it is read whole: the reader keeps it, and
# a copy or two, in memory (a 50,000-path patch is about 10 MB).
MAX_PATCH_BYTES = 256 * 1024 * 1024
_CHUNK = 1024 * 1024


def read_bounded(path: Path, limit: int) -> bytes:
    """The file's bytes, or CliError past `limit` (`/dev/zero`, a runaway pipe).

    Opened without blocking, so a FIFO nobody writes to reads as empty rather than
    hanging the command; a pipe with a writer (`--patch <(git diff)`) is read to its end.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, _CHUNK):
            size += len(chunk)
            if size > limit:
                raise CliError(
                    f"patch file {path} is larger than {limit // (1024 * 1024)} MiB; the gate "
                    "does not score a patch that large automatically (split it, or review it)"
                )
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_candidate(path: Path, directory: str = "") -> tuple[bytes, list[str]]:
    """The patch's bytes and the names git apply gives its files, or CliError saying why not.

    `directory` is the `git apply --directory` the patch is applied with (the workspace
    relative to the repository top; "" at the top), under which git reads a few headers
    differently. Any bytes are read: text hunks in any encoding, CRLF, names that are
    not UTF-8 (surrogate escapes). PatchError's message says what to do; it is not
    followed by advice to send `git diff`, which may be exactly what was sent.
    """
    try:
        data = read_bounded(path, MAX_PATCH_BYTES)
    except FileNotFoundError:
        raise CliError(f"patch file {path} does not exist; pass the path of a `git diff`") from None
    except OSError as error:
        raise CliError(f"cannot read patch file {path}: {error.strerror or error}") from None
    try:
        touched = patch.touched_paths(data, directory)
    except patch.PatchError as error:
        raise CliError(f"{path} is not a patch the gate can score: {error}") from None
    for touched_path in touched:
        try:
            normalize_path(touched_path)
        except ValueError as error:
            raise CliError(f"{path} touches a path the gate refuses: {error}") from None
    return data, touched


def make_override(ignore: Sequence[str], by: str | None) -> quorum.Override | None:
    """A stop_queue override names both who and which open ledger ids, or is absent."""
    ids = tuple(item.strip() for item in ignore if item.strip())
    who = (by or "").strip()
    if not ids and not who:
        return None
    if not ids or not who:
        raise CliError(
            "an override needs both --override-ignore ID[,ID] (the open ledger rows it "
            "ignores) and --override-by NAME (the human who overrides)"
        )
    return quorum.Override(by=who, ignored_ids=ids)


def ledger_rows(
    path: Path, known_ids: Sequence[str], shown: str | None = None, base: str = ""
) -> tuple[quorum.LedgerRow, ...]:
    """The rows of a valid ledger; CliError naming `shown` (default: the path) and the line."""
    try:
        loaded = ledger.load_ledger(path, known_ids=known_ids)
    except ledger.LedgerError as error:
        message = str(error).replace(str(path), shown) if shown else str(error)
        raise CliError(
            f"the ledger at {base[:12] or 'the base'} is malformed, so nothing can be scored "
            f"(fail closed); fix it in a reviewed change:\n{message}"
        ) from None
    return ledger.ledger_rows(loaded)


def check_override(override: quorum.Override | None, rows: Sequence[quorum.LedgerRow]) -> None:
    if override is None:
        return
    open_ids = {row.property_id for row in rows if row.state == "open"}
    unknown = [item for item in override.ignored_ids if item not in open_ids]
    if unknown:
        raise CliError(
            f"--override-ignore names {', '.join(unknown)}, which has no open ledger row at "
            "the base; an override may only ignore open rows: "
            + (", ".join(sorted(open_ids)) or "(none is open)")
        )


def pre_apply_report(
    cat: catalog.Catalog,
    *,
    seals: Sequence[quorum.FixtureSeal],
    rows: Sequence[quorum.LedgerRow],
    commit_counts: Mapping[str, int],
    touched: Sequence[str],
    run_id: str,
    override: quorum.Override | None,
    note: str = _NOT_APPLIED,
) -> agent_gate_pb2.GateReport:
    """The report of a patch that was never applied, so nothing ran (drifted base fixtures).

    The quorum still weighs the ledger, so stop_queue keeps its precedence over the fault.
    """
    result = quorum.evaluate(
        verdict_check.gate_inputs(
            cat,
            changed_paths=(),
            outcomes={},
            seals=seals,
            rows=rows,
            commit_counts=commit_counts,
            override=override,
            run_id=run_id,
        )
    )
    kept = [reason for reason in result.reasons if not reason.startswith(_NO_OVERLAP)]
    del result.reasons[:]
    result.reasons.extend(kept)
    result.rule = kept[0] if kept else result.rule
    result.changed_paths.extend(_printable(path) for path in touched[: quorum.MAX_REPORTED_PATHS])
    result.changed_path_count = len(touched)
    matched = LocalityIndex((spec.id, spec.locality) for spec in cat.properties).match(touched)
    for row in result.rows:
        if row.property_id in matched:
            row.matched = True
            row.matched_by = matched[row.property_id]
        row.note = note
    return result


def build_break_report(
    cat: catalog.Catalog,
    broken: Sequence[build_break.Break],
    *,
    seals: Sequence[quorum.FixtureSeal],
    rows: Sequence[quorum.LedgerRow],
    commit_counts: Mapping[str, int],
    touched: Sequence[str],
    run_id: str,
    override: quorum.Override | None,
) -> agent_gate_pb2.GateReport:
    """The report of a patch that breaks the build of matched tests the base builds.

    The quorum weighs everything else as for any run (guards, ledger, seals), so
    review and stop_queue keep their precedence; each broken row carries Bazel's
    error as its evidence (run number 0: the build, not a run).
    """
    result = quorum.evaluate(
        verdict_check.gate_inputs(
            cat,
            changed_paths=touched,
            outcomes={},
            seals=seals,
            rows=rows,
            commit_counts=commit_counts,
            override=override,
            run_id=run_id,
            build_broken={item.property_id: item.test for item in broken},
        )
    )
    by_id = {item.property_id: item for item in broken}
    for row in result.rows:
        item = by_id.get(row.property_id)
        if item is None or not row.matched:
            continue
        row.evidence.add(
            run_number=evidence.BUILD_RUN_NUMBER,
            exit_code=build_break.BUILD_FAILED,
            output_tail=item.error,
            output_bytes_omitted=item.omitted,
            log=str(item.log),
        )
    return result


def gate_definition_paths(cat: catalog.Catalog, touched: Sequence[str]) -> list[str]:
    """Touched paths that can define the gate itself: any `.bzl` or `.scl`, and the rule set.

    The gate would judge them with the rules the patched tree builds: a `.bzl` that
    WORKSPACE loads can point @agent_gate elsewhere, a vendored copy can be rewritten.
    So, like the files that configure Bazel, they are review before Bazel runs.
    """
    return [
        path
        for path in touched
        if bazel_config.is_starlark(path)
        or any(covers(prefix, path) for prefix in cat.rule_set_paths)
    ]


def control_report(
    pre_apply: agent_gate_pb2.GateReport,
    control: Sequence[str],
    symlinks: Sequence[str] = (),
    gitlinks: Sequence[str] = (),
) -> agent_gate_pb2.GateReport:
    """Review for a diff that reconfigures Bazel itself: running the gate on it would trust it.

    `control`: paths that configure Bazel (by name or by where they resolve);
    `symlinks`: symlinks the diff adds, changes or retargets; `gitlinks`: submodule
    commits it adds, moves or replaces. `pre_apply` is the
    pre-apply report (ledger and seals weighed, nothing run); review joins its
    reasons at its precedence, so stop_queue and fixture_fault still win.
    """
    added = []
    if control:
        shown = ", ".join(_printable(path) for path in control[:_NAMES_SHOWN])
        added.append(
            f"review: the diff touches {shown}, which decide how Bazel itself runs or define "
            "the gate (launcher, rc files, WORKSPACE, MODULE.bazel and the *.MODULE.bazel it "
            "includes, .bazelignore, .bazelversion, "
            "Starlark, the rule set); the gate is not run on a patch that could replace it: a "
            "human must look"
        )
    if symlinks:
        shown = ", ".join(_printable(path) for path in symlinks[:_NAMES_SHOWN])
        added.append(
            f"review: the diff adds, changes or retargets the symlink(s) {shown}; a symlink is "
            "configuration (it can make a guarded file reachable under another name), so the "
            "gate is not run on it: a human must look"
        )
    if gitlinks:
        shown = ", ".join(_printable(path) for path in gitlinks[:_NAMES_SHOWN])
        added.append(
            f"review: the diff adds, moves or replaces the gitlink(s) {shown}; a submodule's "
            "code is not in the scoring tree, so no property ran on what a checkout with "
            "submodules would fetch: a human must look"
        )
    limit = quorum.MAX_REPORTED_PATHS
    pre_apply.guarded_paths.extend(
        f"{_printable(path)} (configures Bazel itself)" for path in control[:limit]
    )
    pre_apply.guarded_paths.extend(
        f"{_printable(path)} (a symlink: configuration)" for path in symlinks[:limit]
    )
    pre_apply.guarded_paths.extend(
        f"{_printable(path)} (a gitlink: code the gate cannot see)" for path in gitlinks[:limit]
    )
    reasons = [*pre_apply.reasons, *added]
    reasons.sort(key=lambda text: quorum.PRECEDENCE.index(text.split(":", 1)[0]))
    reasons = [text for text in reasons if not text.startswith("promote")]
    del pre_apply.reasons[:]
    pre_apply.reasons.extend(reasons)
    pre_apply.rule = reasons[0]
    pre_apply.decision = reasons[0].split(":", 1)[0]
    return pre_apply


def _printable(path: str) -> str:
    """A path as a report can hold it: undecodable bytes shown as escapes, never a crash."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def report_paths(requested: Path | None, default_dir: Path, run_id: str) -> tuple[Path, Path, Path]:
    """Where the JSON report, its Markdown summary and JUnit XML go (`OUT.json`, `.md`, `.xml`).

    An existing directory as `--report` holds `<run id>.json` and its siblings, as the
    state directory does: writing the report over the directory would fail after the score.
    """
    if requested is None:
        out = default_dir / f"{run_id}.json"
    elif requested.is_dir():
        out = requested.absolute() / f"{run_id}.json"
    else:
        out = requested.absolute()

    def beside(suffix: str) -> Path:
        return (
            out.with_suffix(suffix) if out.suffix == ".json" else out.with_name(out.name + suffix)
        )

    return out, beside(".md"), beside(".xml")


def _commit_counts(
    repo: worktree.Repo, base: str, rows: Sequence[quorum.LedgerRow]
) -> dict[str, int]:
    """Commits since each open row's opened_against_commit; an unknown commit is left out.

    The gate counts a row without a count as spent (fail closed).
    """
    counts: dict[str, int] = {}
    for row in rows:
        commit = row.opened_against_commit
        if row.state != "open" or not commit or commit in counts:
            continue
        since = worktree.commits_since(repo, commit, base)
        if since is not None:
            counts[commit] = since
    return counts


def _patched_rows(path: Path) -> tuple[quorum.LedgerRow, ...]:
    """Ledger rows after the patch, for their commit counts; the gate judges the file itself."""
    try:
        loaded = ledger.load_ledger(path)
    except ledger.LedgerError:
        return ()
    return tuple(
        quorum.LedgerRow(
            property_id=row.property_id,
            state=row.state,
            opened_against_commit=row.opened_against_commit,
        )
        for row in loaded.freeze
    )


def _property_seconds(
    workspace: Path, gate_report: agent_gate_pb2.GateReport
) -> tuple[float, float]:
    """(sum of the matched properties' run durations, the longest double run)."""
    total = longest = 0.0
    folder = double_run.results_dir(workspace)
    for row in gate_report.rows:
        if not row.matched:
            continue
        try:
            result = double_run.read_result(
                folder / f"{row.property_id}.result.txtpb", row.property_id, gate_report.run_id
            )
        except CliError:
            continue
        seconds = sum(run.duration_seconds for run in result.runs)
        total += seconds
        longest = max(longest, seconds)
    return total, longest


def _finish(
    gate_report: agent_gate_pb2.GateReport,
    paths: tuple[Path, Path, Path],
    progress: Progress,
    out: TextIO,
    timing: dict[str, float],
) -> int:
    json_path, markdown_path, junit_path = paths
    json_path.parent.mkdir(parents=True, exist_ok=True)
    report.write_atomically(markdown_path, report.to_markdown(gate_report))
    report.write_atomically(junit_path, report.to_junit(gate_report))
    # The JSON, which machines read the decision from, last: a failed write leaves none.
    report.write_atomically(json_path, report.to_json(gate_report))
    progress.step(f"report: {json_path} (summary {markdown_path}, JUnit {junit_path})")
    progress.step(progress.timing_line(timing))
    lines = report.summary_lines(gate_report)
    if gate_report.HasField("override"):
        ignored = ", ".join(gate_report.override.ignored_ids)
        lines.append(f"  override: by {gate_report.override.by}, ignoring {ignored}")
    out.write("\n".join(lines) + "\n")
    out.flush()
    if gate_report.errors:
        raise CliError(
            f"the gate reported {len(gate_report.errors)} configuration error(s) and failed "
            f"closed (decision {gate_report.decision}, never a promote): "
            + "; ".join(gate_report.errors)
            + f"\nFix them and score again; the report is {json_path}"
        )
    return exit_code(gate_report.decision)


def _expected_gate_flags(
    touched: Sequence[str], run_id: str, override: quorum.Override | None, flag_prefix: str
) -> list[str]:
    """The gate's flags as they will be unless a ledger row needs a commit count.

    The catalog build passes them so that Bazel analyses the graph once per score,
    not twice (it drops its analysis cache whenever a flag's value changes). Empty
    when they cannot be spelled or would not fit a command line: the catalog is then
    read under the default values, which costs only that second analysis.
    """
    try:
        flags = gate_flags.gate_flags(
            changed_paths=touched,
            run_id=run_id,
            override=override,
            flag_prefix=flag_prefix,
        )
    except gate_flags.GateInputError:
        return []  # run_gate raises it again, where it is reported
    return flags if gate_flags.fits_command_line(flags) else []


_PROVIDED_STATE = "provided_repositories.json"


def _heal_provided_repositories(
    repo: worktree.Repo, workspace: Path, progress: Progress
) -> Path | None:
    """The output base, after regenerating any agent_gate repository changed since last time."""
    binary = bazel_client.bazel_binary()
    _, output_base = bazel_client.server_info(binary, workspace)
    if output_base is None:
        return None
    changed = provided_repos.tampered(output_base, repo.state_dir / _PROVIDED_STATE)
    if changed:
        progress.step(
            f"the output base's {', '.join(changed)} changed since the last score; deleted, "
            "and the server restarts so Bazel regenerates them before anything is judged"
        )
        bazel_client.stop_server(binary, workspace)
    return output_base


def score(options: ScoreOptions, progress: Progress, out: TextIO) -> int:
    """Score one patch; returns the decision's exit code (CliError: exit 2)."""
    data, touched = read_candidate(options.patch)
    for path in touched:  # before anything runs: a name no flag can carry is refused
        try:
            gate_flags.encode_path(path)
        except gate_flags.GateInputError as error:
            raise CliError(f"the patch cannot be scored automatically: {error}") from None
    override = make_override(options.override_ignore, options.override_by)
    bazel_client.bazel_binary()
    repo = worktree.open_repo(options.workspace)
    base = worktree.resolve_rev(repo, options.base)
    run_id = gate_target.new_run_id("score")
    work = repo.state_dir / "runs" / run_id
    paths = report_paths(options.report, repo.state_dir / "reports", run_id)
    progress.step(
        f"scoring {options.patch} ({len(touched)} touched path(s)) against {options.base} "
        f"= {base[:12]} in {repo.workspace}"
    )
    with worktree.locked(repo, progress):
        # Room for this score's own run folder among the newest `keep_runs`.
        worktree.prune_runs(work.parent, options.keep_runs - 1, progress)
        with progress.timed("worktree"):
            workspace = worktree.prepare(repo, base, progress)
        # Read once: a diff that could change it (WORKSPACE) is never applied.
        flag_prefix = gate_flags.flag_prefix(workspace)
        output_base = _heal_provided_repositories(repo, workspace, progress)
        with progress.timed("catalog"):
            cat = catalog.build(
                workspace,
                progress,
                work,
                worktree.describe(repo, base),
                gate_flags=_expected_gate_flags(touched, run_id, override, flag_prefix),
            )
        repository_inputs: set[str] = set()
        if output_base is not None:  # after a build of the base alone: what is trusted
            provided_repos.record(output_base, repo.state_dir / _PROVIDED_STATE)
            repository_inputs = applied_tree.repository_inputs(output_base, workspace)
        rows = ledger_rows(workspace / cat.ledger_path, cat.ids, cat.ledger_path, base)
        check_override(override, rows)
        try:
            matched = LocalityIndex((s.id, s.locality) for s in cat.properties).match(touched)
        except ValueError as error:
            raise CliError(f"cannot match the touched paths to the catalog: {error}") from None
        progress.step(
            "matched: "
            + (", ".join(f"{pid} (by {path})" for pid, path in matched.items()) or "nothing")
        )
        with progress.timed("seals"):
            seals = sealcheck.check(workspace, cat.fixtures)
        counts = _commit_counts(repo, base, rows)
        drift = sealcheck.drifted(seals)
        control = bazel_config.bazel_config_paths(touched) + gate_definition_paths(cat, touched)
        # What a repository rule of the base reads runs on the host when it changes.
        control += [
            path
            for path in applied_tree.read_by_repository_rules(touched, repository_inputs)
            if path not in control
        ]
        # A new file below bazel-out would be written into the output base by git apply.
        control += [p for p in applied_tree.beyond_symlinks(workspace, touched) if p not in control]

        def not_run(note: str) -> agent_gate_pb2.GateReport:
            """The report of this patch with nothing run: ledger and seals weighed."""
            return pre_apply_report(
                cat,
                seals=seals,
                rows=rows,
                commit_counts=counts,
                touched=touched,
                run_id=run_id,
                override=override,
                note=note,
            )

        if not drift and not control:
            # stop_queue is known from the base's ledger alone: decide without running.
            stopped = not_run(_STOPPED)
            if stopped.decision == "stop_queue":
                progress.step("the ledger's debt exceeds the cap: stop_queue, nothing is run")
                return _finish(stopped, paths, progress, out, {})
        if drift or control:
            # The patch is never applied: the base drifted, or the diff could replace
            # Bazel itself. Drift wins, as fixture_fault outranks review.
            for tree in drift:
                progress.step(f"fixture drift before apply: {sealcheck.describe(tree)}")
            if drift:
                progress.step("the patch is not applied: the base tree itself drifted")
            else:
                progress.step(
                    f"the diff reconfigures Bazel itself ({', '.join(control[:3])}): review"
                )
            unapplied = not_run(_NOT_APPLIED if drift else _RECONFIGURES_BAZEL)
            if not drift:
                unapplied = control_report(unapplied, control)
            return _finish(unapplied, paths, progress, out, {})
        progress.step(f"fixture seals match ({len(seals)} tree(s)); applying the patch")
        with progress.timed("apply"):
            worktree.apply_patch(repo, data, str(options.patch), base)
            changes = worktree.staged_changes(repo)
            applied_tree.cross_check(touched, changes)
            links = applied_tree.symlink_changes(changes)
            gitlinks = applied_tree.gitlink_changes(changes)
            control = applied_tree.control_paths(workspace, touched)
            control += [p for p in gate_definition_paths(cat, touched) if p not in control]
        if links or gitlinks or control:
            # Before Bazel reads the patched tree: it could reconfigure Bazel itself.
            progress.step(
                "the applied tree changes a symlink or a gitlink, or reconfigures Bazel: review"
            )
            unrun = not_run(_RECONFIGURES_BAZEL)
            refused = control_report(unrun, control, links, gitlinks)
            return _finish(refused, paths, progress, out, {})
        counts.update(_commit_counts(repo, base, _patched_rows(workspace / cat.ledger_path)))
        progress.step(f"bazel test {gate_target.GATE_TARGET} (run id {run_id})")
        try:
            with progress.timed("gate"):
                run = gate_target.run_gate(
                    workspace,
                    gate_target.GATE_TARGET,
                    changed_paths=touched,
                    run_id=run_id,
                    commit_counts=counts,
                    override=override,
                    progress=progress.bazel_line,
                    work_dir=work,
                    flag_prefix=flag_prefix,
                    extra_flags=sandbox.flags(),
                )
        except gate_flags.GateInputError as error:
            raise CliError(f"the patch cannot be scored automatically: {error}") from None
        except bazel_client.BazelNotFoundError as error:
            raise CliError(str(error)) from None
        if run.report is None and run.exit_code == build_break.BUILD_FAILED and not run.timed_out:
            # Whose fault is the failed build? Only the patch's breaking a matched test rejects.
            tests = {pid: cat.get(pid).test for pid in matched if pid not in cat.unsandboxed}
            broken = build_break.find(repo, base, workspace, tests, progress=progress, work=work)
            broke = build_break_report(
                cat,
                broken,
                seals=seals,
                rows=rows,
                commit_counts=counts,
                touched=touched,
                run_id=run_id,
                override=override,
            )
            return _finish(broke, paths, progress, out, {})
        if run.report is None:
            raise CliError(
                f"no decision (fail closed, never a promote): {run.problem}\nBazel's log: "
                f"{run.log_path}"
            )
        if (run.report.decision == "promote") != (run.exit_code == gate_target.EXIT_TESTS_PASSED):
            raise CliError(
                f"bazel exited {run.exit_code} but the report says {run.report.decision}; "
                f"they must agree, so nothing is promoted. Log: {run.log_path}"
            )
        if run.report.decision == "promote":
            verdict_check.check(
                cat,
                run.report,
                results=double_run.results_dir(workspace),
                changed_paths=touched,
                seals=seals,
                rows=rows,
                commit_counts=counts,
                override=override,
                run_id=run_id,
            )
            progress.step("the CLI's own evaluation of the run results agrees: promote")
        total, longest = _property_seconds(workspace, run.report)
        timing = {"property runs": total, "longest double run": longest}
        return _finish(run.report, paths, progress, out, timing)

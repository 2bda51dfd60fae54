"""`agent-gate admit`: a property earns a vote only if it can tell a broken invariant.

The admission procedure of docs/article.md, run for real: in the scoring worktree at a base
revision the property must **pass twice** on the unmodified tree, and **fail
twice, stably** (the same non-zero code both times) with a mutant applied: a
patch that deletes its invariant and changes nothing else. Both halves run
against the same fixture seal. Anything else is a refusal that says which half
failed. A mutant may change the property's locality only, past none of the
gate's own guards (fixtures, seals, any predicate and its BUILD files, the
catalog, `.bzl` files): otherwise it would test the test, not the invariant.

Mutants come from `--mutant PATCH`, or, with `--all-declared`, from the
`admission_mutants` attribute of every `strong_property` in the catalog, so a
CI job can re-check them all with one command.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from agent_gate.cli import catalog, double_run, score, verdict_check
from agent_gate.core import quorum
from agent_gate.core.locality import covers
from agent_gate.drive import bazel_client, gate_target, sealcheck, worktree
from agent_gate.drive.exit_codes import EXIT_NOT_ADMITTED, CliError
from agent_gate.drive.progress import Progress
from agent_gate.formats import patch
from proto import agent_gate_pb2


@dataclass(frozen=True)
class Mutant:
    property_id: str
    name: str  # as shown to people: the path given or declared
    data: bytes


@dataclass(frozen=True)
class Verdict:
    property_id: str
    mutant: str
    admitted: bool
    message: str

    def line(self) -> str:
        word = "admitted" if self.admitted else "not admitted"
        return f"{word}: {self.property_id} with mutant {self.mutant}: {self.message}"


def clean_problem(result: agent_gate_pb2.RunResult) -> str | None:
    """Why the clean half failed, or None when the property passed twice."""
    kind = double_run.classification(result)
    if kind == "pass":
        return None
    return (
        f"clean half failed: on the unmodified tree it was {kind} "
        f"({double_run.exits(result)}), not a pass twice; a property must pass there before "
        "it can vote"
    )


def mutant_problem(result: agent_gate_pb2.RunResult, clean_seal: str | None) -> str | None:
    """Why the mutant half failed, or None when the property failed twice, stably."""
    kind = double_run.classification(result)
    exits = double_run.exits(result)
    if kind == "pass":
        return (
            f"mutant half failed: with the mutant applied it still passes twice ({exits}): "
            "the predicate does not observe the invariant the mutant deletes; keep it out "
            "of the catalog"
        )
    if kind == "flake":
        return (
            f"mutant half failed: with the mutant applied the two runs split ({exits}); a "
            "flaky failure is not a stable one"
        )
    seen = double_run.seen_seal(result)
    if seen is None or seen != clean_seal:
        return (
            "mutant half failed: the runs with the mutant did not see the fixture seal of "
            f"the clean runs ({clean_seal or 'none'} vs {seen or 'changing'})"
        )
    return None


def guard_problem(
    cat: catalog.Catalog, spec: quorum.PropertySpec, touched: Sequence[str]
) -> str | None:
    """Why a mutant is refused: it must change the property's locality only, past no guard.

    The guards are the gate's own (quorum.evaluate's guarded paths): a mutant that edits
    a helper beside the test, swaps the test's `srcs` in its BUILD file or the property's
    `test` in the catalog would test the test, not the invariant.
    """
    report = quorum.evaluate(
        verdict_check.gate_inputs(
            cat,
            changed_paths=touched,
            outcomes={},
            seals=[quorum.FixtureSeal(tree, None, None) for tree in cat.fixtures],
            rows=(),
            commit_counts={},
            override=None,
            run_id="",
        )
    )
    outside = [path for path in touched if not any(covers(p, path) for p in spec.locality)]
    # Only the guards count here: nothing ran, so the report's run errors say nothing.
    if not report.guarded_paths and not outside:
        return None
    hits = list(report.guarded_paths)
    hits += [f"{path} (outside the locality of {spec.id})" for path in outside]
    return (
        f"mutant half refused: the mutant touches {'; '.join(hits)}; a mutant deletes the "
        "invariant in the code the property observes and changes nothing else"
    )


def _mutant_verdict(
    repo: worktree.Repo,
    *,
    base: str,
    cat: catalog.Catalog,
    mutant: Mutant,
    clean_seal: str | None,
    progress: Progress,
    log_dir: Path,
) -> Verdict:
    spec = cat.get(mutant.property_id)

    def refused(message: str) -> Verdict:
        return Verdict(spec.id, mutant.name, False, message)

    try:
        touched = patch.touched_paths(mutant.data)
    except patch.PatchError as error:
        return refused(f"mutant half refused: {mutant.name} is not a patch ({error})")
    problem = guard_problem(cat, spec, touched)
    if problem is not None:
        return refused(problem)
    scoring = worktree.prepare(repo, base, progress)
    try:
        worktree.apply_patch(repo, mutant.data, mutant.name, base)
    except CliError as error:
        return refused(f"mutant half refused: {error}")
    progress.step(f"mutant {mutant.name} applied for {spec.id}")
    results = double_run.run_properties(
        scoring, cat, [spec.id], progress=progress, log_dir=log_dir, label="mutant"
    )
    result = results[spec.id]
    problem = mutant_problem(result, clean_seal)
    if problem is not None:
        return refused(problem)
    return Verdict(
        spec.id,
        mutant.name,
        True,
        f"passes twice on the clean tree, fails twice with the mutant "
        f"({double_run.exits(result)}), same fixture seal {(clean_seal or 'none')[:12]}",
    )


def check(
    repo: worktree.Repo,
    base: str,
    *,
    scoring: Path,
    cat: catalog.Catalog,
    mutants: Sequence[Mutant],
    progress: Progress,
    log_dir: Path,
) -> list[Verdict]:
    """Both halves for every mutant; one clean double run per property."""
    ids = list(dict.fromkeys(mutant.property_id for mutant in mutants))
    # Each tree once, however many of the properties read it.
    trees = {tree.root: tree for property_id in ids for tree in cat.fixtures_of(property_id)}
    drift = sealcheck.drifted(sealcheck.check(scoring, list(trees.values())))
    if drift:
        raise CliError(
            "cannot judge admission on a drifted base: "
            + "; ".join(sealcheck.describe(tree) for tree in drift)
            + ". Restore the fixtures or re-seal them in a reviewed change"
        )
    clean = double_run.run_properties(
        scoring, cat, ids, progress=progress, log_dir=log_dir, label="clean"
    )
    verdicts: list[Verdict] = []
    for mutant in mutants:
        result = clean[mutant.property_id]
        problem = clean_problem(result)
        if problem is not None:
            verdicts.append(Verdict(mutant.property_id, mutant.name, False, problem))
            continue
        seal_seen = double_run.seen_seal(result)
        verdicts.append(
            _mutant_verdict(
                repo,
                base=base,
                cat=cat,
                mutant=mutant,
                clean_seal=seal_seen,
                progress=progress,
                log_dir=log_dir,
            )
        )
    worktree.prepare(repo, base, progress)  # leave the worktree clean
    return verdicts


def _report(verdicts: Sequence[Verdict], out: TextIO) -> int:
    for verdict in verdicts:
        out.write(verdict.line() + "\n")
    refused = [verdict for verdict in verdicts if not verdict.admitted]
    if refused:
        out.write(f"{len(refused)} of {len(verdicts)} admission check(s) refused\n")
        return EXIT_NOT_ADMITTED
    return 0


def admit(
    workspace: Path | None,
    property_id: str | None,
    mutant_path: Path | None,
    *,
    all_declared: bool,
    base: str,
    progress: Progress,
    out: TextIO,
) -> int:
    """`admit PROPERTY --mutant PATCH` or `admit --all-declared`; 0 admitted, 1 refused."""
    if all_declared == (property_id is not None):
        raise CliError("name one PROPERTY with --mutant PATCH, or pass --all-declared")
    given: bytes | None = None
    if not all_declared:
        if mutant_path is None:
            raise CliError(
                f"admit {property_id} needs --mutant PATCH: a patch deleting its invariant"
            )
        try:
            given = score.read_bounded(mutant_path, score.MAX_PATCH_BYTES)
        except OSError as error:
            raise CliError(f"cannot read mutant {mutant_path}: {error.strerror or error}") from None
    elif mutant_path is not None:
        raise CliError("--all-declared uses the catalog's admission_mutants; drop --mutant")
    bazel_client.bazel_binary()
    repo = worktree.open_repo(workspace)
    sha = worktree.resolve_rev(repo, base)
    log_dir = repo.state_dir / "runs" / gate_target.new_run_id("admit")
    with worktree.locked(repo, progress):
        scoring = worktree.prepare(repo, sha, progress)
        cat = catalog.build(scoring, progress, log_dir, worktree.describe(repo, sha))
        mutants: list[Mutant] = []
        if given is not None and property_id is not None:
            cat.get(property_id)
            mutants.append(Mutant(property_id, str(mutant_path), given))
        else:
            for declared_id, paths in cat.admission_mutants.items():
                for relative in paths:
                    try:
                        data = (scoring / relative).read_bytes()
                    except OSError as error:
                        raise CliError(
                            f"{declared_id} declares mutant {relative}, which cannot be read at "
                            f"{sha[:12]} ({error.strerror or error})"
                        ) from None
                    mutants.append(Mutant(declared_id, relative, data))
            if not mutants:
                out.write(
                    f"no property of {cat.gate_label} declares admission_mutants: "
                    "nothing to check\n"
                )
                return 0
        verdicts = check(
            repo,
            sha,
            scoring=scoring,
            cat=cat,
            mutants=mutants,
            progress=progress,
            log_dir=log_dir,
        )
        return _report(verdicts, out)

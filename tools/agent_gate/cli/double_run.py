"""Run chosen properties twice, outside a score: for `freeze open` and `admit`.

The runs are the gate's own PropertyDoubleRun actions: `bazel build //:agent_gate`
with one of each property's locality prefixes as the changed path and a fresh
run id (so Bazel cannot serve an old run), then the run-result proto each action
wrote to `bazel-bin/agent_gate.runs/<id>.result.txtpb`. Same runner, same
sandbox, same pinned environment as in the merge queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agent_gate.cli.catalog import Catalog
from agent_gate.core import quorum
from agent_gate.core.locality import LocalityIndex
from agent_gate.drive import bazel_client, gate_flags, gate_target
from agent_gate.drive.exit_codes import CliError
from agent_gate.drive.progress import Progress
from agent_gate.formats import run_result
from proto import agent_gate_pb2


def probe_paths(catalog: Catalog, ids: Sequence[str]) -> list[str]:
    """One changed path per property that makes the gate run it, co-running as few others."""
    index = LocalityIndex((spec.id, spec.locality) for spec in catalog.properties)
    chosen: list[str] = []
    for property_id in ids:
        spec = catalog.get(property_id)
        if not spec.locality:
            raise CliError(f"property {property_id} has no locality; the gate cannot run it")
        best = min(spec.locality, key=lambda prefix: (len(index.match([prefix])), prefix))
        if best not in chosen:
            chosen.append(best)
    return chosen


def results_dir(workspace: Path) -> Path:
    return bazel_client.bazel_bin(workspace) / f"{gate_target.GATE_NAME}.runs"


def read_result(path: Path, property_id: str, run_id: str) -> agent_gate_pb2.RunResult:
    """A property's run result of this run id, or CliError (fail closed)."""
    try:
        return run_result.read(path, property_id, run_id)
    except run_result.ResultError as error:
        raise CliError(str(error)) from None


def classification(result: agent_gate_pb2.RunResult) -> str:
    """pass / fail / flake, read literally from the two runs (quorum.classify)."""
    return quorum.classify(run_result.outcome(result))


def exits(result: agent_gate_pb2.RunResult) -> str:
    runs = sorted(result.runs, key=lambda run: run.run_number)
    return "exit " + ", ".join("timeout" if run.timed_out else str(run.exit_code) for run in runs)


def seen_seal(result: agent_gate_pb2.RunResult) -> str | None:
    """The fixture seal both runs saw, unchanged; None if they saw different ones."""
    seals = {run.fixture_seal_before for run in result.runs}
    seals |= {run.fixture_seal_after for run in result.runs}
    if len(seals) != 1:
        return None
    (value,) = seals
    return None if value.startswith("error:") else value


def run_properties(
    workspace: Path,
    catalog: Catalog,
    ids: Sequence[str],
    *,
    progress: Progress,
    log_dir: Path,
    label: str,
) -> dict[str, agent_gate_pb2.RunResult]:
    """Run each property twice in `workspace` as it is now; results by property id."""
    run_id = gate_target.new_run_id(label)
    paths = probe_paths(catalog, ids)
    # Only the properties judged here run, not every other one the probe paths match.
    flags = gate_flags.gate_flags(
        changed_paths=paths,
        run_id=run_id,
        flag_prefix=gate_flags.flag_prefix(workspace),
        only_properties=ids,
    )
    progress.step(f"running {', '.join(ids)} twice (changed path {', '.join(paths)}, {run_id})")
    gate_target.build_gate(
        workspace, flags, progress=progress, log_path=log_dir / f"{run_id}.log", what=label
    )
    folder = results_dir(workspace)
    results = {
        property_id: read_result(folder / f"{property_id}.result.txtpb", property_id, run_id)
        for property_id in ids
    }
    for property_id, result in results.items():
        progress.step(f"{property_id}: {classification(result)} ({exits(result)})")
    return results

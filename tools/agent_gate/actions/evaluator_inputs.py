"""The evaluator's inputs: the gate config plus the files it names, read from runfiles.

Every problem found while loading becomes a configuration error in the inputs, so
the evaluator fails closed with the message, instead of this module crashing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agent_gate.core import quorum
from agent_gate.formats import gate_config, ledger, run_result, seal
from proto import agent_gate_pb2

Resolve = Callable[[str], Path | None]


@dataclass(frozen=True)
class LoadedGate:
    mode: str  # "gate" or "full_strong_pass"
    label: str
    inputs: quorum.GateInputs
    logs: dict[str, list[Path]]
    # The run results that held runs 1 and 2 of their property, by property id.
    results: dict[str, agent_gate_pb2.RunResult] = field(default_factory=dict)
    # How each property's run logs are named for people: bazel-bin/..., by property id.
    log_names: dict[str, list[str]] = field(default_factory=dict)
    # Every run result was written for this invocation's run id (and there was one).
    runs_fresh: bool = False


def _read_seal(path: Path | None, what: str, errors: list[str]) -> str | None:
    if path is None:
        errors.append(f"{what}: not found in the gate's runfiles")
        return None
    try:
        return seal.read_seal_file(path)
    except seal.SealError as error:
        errors.append(str(error))
        return None


def _ledger_rows(
    path: Path | None, shown: str, known_ids: set[str], errors: list[str]
) -> tuple[quorum.LedgerRow, ...]:
    if path is None:
        errors.append(f"{shown}: the ledger is not in the gate's runfiles")
        return ()
    try:
        loaded = ledger.load_ledger(path, known_ids=known_ids)
    except ledger.LedgerError as error:
        errors.append(str(error).replace(str(path), shown, 1))
        return ()
    return ledger.ledger_rows(loaded)


def load(config: agent_gate_pb2.GateConfig, resolve: Resolve) -> LoadedGate:
    """GateInputs from the rule's config; files are looked up with `resolve` (runfiles)."""
    errors: list[str] = []
    catalog = gate_config.property_specs(config)
    fixtures = tuple(
        quorum.FixtureSeal(
            tree=tree,
            expected=_read_seal(resolve(tree.expected), tree.seal_file, errors),
            actual=_read_seal(resolve(tree.actual), f"computed seal of {tree.root}", errors),
        )
        for tree in config.fixtures
    )
    outcomes: dict[str, quorum.RunOutcome] = {}
    logs: dict[str, list[Path]] = {}
    results: dict[str, agent_gate_pb2.RunResult] = {}
    log_names: dict[str, list[str]] = {}
    for property_id, files in sorted(config.results.items()):
        try:
            result = run_result.read(resolve(files.result), property_id, config.run_id)
        except run_result.ResultError as error:
            errors.append(str(error))
            result = error.result  # untrusted runs: evidence, and an error that blocks
        if result is not None:
            results[property_id] = result
            outcomes[property_id] = run_result.outcome(result)
        logs[property_id] = [p for p in (resolve(log) for log in files.logs) if p is not None]
        log_names[property_id] = [_bazel_bin_name(log) for log in files.logs]
    rows = _ledger_rows(
        resolve(config.ledger.rlocation),
        config.ledger.path,
        {spec.id for spec in catalog},
        errors,
    )
    override = None
    if config.override.by or config.override.ignored_ids:
        if not config.override.by or not config.override.ignored_ids:
            errors.append(
                "an override needs both --@agent_gate//:override_by (who) and "
                "--@agent_gate//:override_ignore (which open ledger ids)"
            )
        override = quorum.Override(
            by=config.override.by, ignored_ids=tuple(config.override.ignored_ids)
        )
    if not config.run_id:
        # Bazel re-runs no action whose inputs did not change: without a fresh run id the
        # double runs would be an earlier invocation's, a verdict served from a cache.
        errors.append(
            "no run id: pass a fresh one on every invocation, e.g. "
            "--@agent_gate//:run_id=$(date +%s%N), so both runs of every matched property "
            "really run (agent-gate score does it for you)"
        )
    inputs = quorum.GateInputs(
        catalog=catalog,
        changed_paths=tuple(config.changed_paths),
        outcomes=outcomes,
        fixtures=fixtures,
        ledger=rows,
        commit_counts=dict(config.commit_counts),
        debt_cap=config.debt_cap,
        ledger_path=config.ledger.path,
        gate_package=config.gate_package,
        rule_set_paths=tuple(config.rule_set_paths),
        errors=tuple(errors),
        override=override,
        run_id=config.run_id,
        unobserved_ok=tuple(config.unobserved_ok),
        unsandboxed=gate_config.unsandboxed(config),
        changed_paths_sha256=config.changed_paths_sha256,
        full_pass=config.mode == "full_strong_pass",
    )
    return LoadedGate(
        mode=config.mode,
        label=config.gate_label,
        inputs=inputs,
        logs=logs,
        results=results,
        log_names=log_names,
        # run_result.read refuses a result of another run id, so each one it returned
        # ran in this invocation.
        runs_fresh=bool(config.run_id)
        and bool(config.results)
        and all(property_id in results for property_id in config.results),
    )


def _bazel_bin_name(rlocation: str) -> str:
    """`<repo>/pkg/x.run1.log` -> `bazel-bin/pkg/x.run1.log`, where a person finds it."""
    return "bazel-bin/" + rlocation.partition("/")[2]


def load_file(config_path: Path, resolve: Resolve) -> LoadedGate:
    """The config file's inputs; gate_config.ConfigError when it is not a GateConfig."""
    return load(gate_config.parse(config_path.read_bytes()), resolve)

"""Loads what the `agent_gate` rule hands the test (a JSON config in runfiles) into GateInputs.

Every problem found while loading becomes a configuration error in the inputs, so
the evaluator fails closed with the message, instead of this module crashing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import text_format

from agent_gate import ledger, quorum, run_result, seal
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


def parse_result(
    path: Path | None, property_id: str
) -> tuple[agent_gate_pb2.RunResult | None, str]:
    """The run-result file of a property holding its runs 1 and 2, or None and why not."""
    if path is None or not path.is_file():
        return None, f"{property_id}: run result {path} is missing; the runner did not finish"
    try:
        result = text_format.Parse(path.read_text(encoding="utf-8"), agent_gate_pb2.RunResult())
    except (text_format.ParseError, UnicodeDecodeError, OSError) as error:
        return None, f"{property_id}: run result {path} is corrupt ({error}); re-run the gate"
    runs = sorted(result.runs, key=lambda run: run.run_number)
    if result.property_id != property_id or [run.run_number for run in runs] != [1, 2]:
        return None, (
            f"{property_id}: run result {path} does not hold runs 1 and 2 of this property; "
            "re-run the gate"
        )
    return result, ""


def read_result(path: Path | None, property_id: str) -> tuple[quorum.RunOutcome | None, str | None]:
    """The two runs of a property from its run-result file, or why they cannot be trusted."""
    result, problem = parse_result(path, property_id)
    if result is None:
        return None, problem
    return _trusted_outcome(result, property_id)


def _trusted_outcome(
    result: agent_gate_pb2.RunResult, property_id: str
) -> tuple[quorum.RunOutcome, str | None]:
    runs = sorted(result.runs, key=lambda run: run.run_number)
    outcome = quorum.RunOutcome(
        exit_codes=(runs[0].exit_code, runs[1].exit_code),
        timed_out=(runs[0].timed_out, runs[1].timed_out),
    )
    if untrusted := run_result.untrusted(result):
        return outcome, f"{property_id}: {untrusted}"
    for run in runs:
        # The runner writes "error: ..." for a seal it could not compute (runner.py);
        # two equal errors must not pass for an untouched tree.
        unsealed = [
            seal
            for seal in (run.fixture_seal_before, run.fixture_seal_after)
            if seal.startswith("error:")
        ]
        if unsealed:
            return outcome, (
                f"{property_id}: run {run.run_number} could not seal its fixtures "
                f"({unsealed[0]}), so nothing shows it left them unchanged"
            )
        if run.fixture_seal_before != run.fixture_seal_after:
            return outcome, (
                f"{property_id}: run {run.run_number} changed its fixtures "
                f"({run.fixture_seal_before} -> {run.fixture_seal_after}); a property may "
                "read its fixtures, never write them"
            )
    return outcome, None


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


def load(config: dict[str, Any], resolve: Resolve) -> LoadedGate:
    """GateInputs from the rule's config; files are looked up with `resolve` (runfiles)."""
    errors: list[str] = []
    catalog = tuple(
        quorum.PropertySpec(
            id=row["id"],
            strength=row["strength"],
            locality=tuple(row["locality"]),
            fixture_roots=tuple(row["fixture_roots"]),
            predicate_srcs=tuple(row["predicate_srcs"]),
            package=row["package"],
            label=row["label"],
            test_packages=tuple(row.get("test_packages", ())),
        )
        for row in config["catalog"]
    )
    fixtures = tuple(
        quorum.FixtureSeal(
            root=tree["root"],
            seal_file=tree["seal_file"],
            expected=_read_seal(resolve(tree["expected"]), tree["seal_file"], errors),
            actual=_read_seal(resolve(tree["actual"]), f"computed seal of {tree['root']}", errors),
        )
        for tree in config["fixtures"]
    )
    outcomes: dict[str, quorum.RunOutcome] = {}
    logs: dict[str, list[Path]] = {}
    results: dict[str, agent_gate_pb2.RunResult] = {}
    log_names: dict[str, list[str]] = {}
    for property_id, files in config["results"].items():
        result, problem = parse_result(resolve(files["result"]), property_id)
        outcome = None
        if result is not None:
            results[property_id] = result
            outcome, problem = _trusted_outcome(result, property_id)
        if outcome is not None:
            outcomes[property_id] = outcome
        if problem:
            errors.append(problem)
        logs[property_id] = [p for p in (resolve(log) for log in files["logs"]) if p is not None]
        log_names[property_id] = [_bazel_bin_name(log) for log in files["logs"]]
    ledger_config = config["ledger"]
    rows = _ledger_rows(
        resolve(ledger_config["rlocation"]),
        ledger_config["path"],
        {spec.id for spec in catalog},
        errors,
    )
    override_config = config["override"]
    override = None
    if override_config["by"] or override_config["ignored_ids"]:
        if not override_config["by"] or not override_config["ignored_ids"]:
            errors.append(
                "an override needs both --@agent_gate//:override_by (who) and "
                "--@agent_gate//:override_ignore (which open ledger ids)"
            )
        override = quorum.Override(
            by=override_config["by"], ignored_ids=tuple(override_config["ignored_ids"])
        )
    run_id = config["run_id"]
    if not run_id:
        # Bazel re-runs no action whose inputs did not change: without a fresh run id the
        # double runs would be an earlier invocation's, a verdict served from a cache.
        errors.append(
            "no run id: pass a fresh one on every invocation, e.g. "
            "--@agent_gate//:run_id=$(date +%s%N), so both runs of every matched property "
            "really run (agent-gate score does it for you)"
        )
    inputs = quorum.GateInputs(
        catalog=catalog,
        changed_paths=tuple(config["changed_paths"]),
        outcomes=outcomes,
        fixtures=fixtures,
        ledger=rows,
        commit_counts=dict(config["commit_counts"]),
        debt_cap=int(config["debt_cap"]),
        ledger_path=ledger_config["path"],
        gate_package=config["gate_package"],
        rule_set_paths=tuple(config["rule_set_paths"]),
        errors=tuple(errors),
        override=override,
        run_id=run_id,
        unobserved_ok=tuple(config.get("unobserved_ok", ())),
        unsandboxed={key: tuple(value) for key, value in config.get("unsandboxed", {}).items()},
        changed_paths_sha256=config.get("changed_paths_sha256", ""),
    )
    return LoadedGate(
        mode=config["mode"],
        label=config["gate_label"],
        inputs=inputs,
        logs=logs,
        results=results,
        log_names=log_names,
    )


def _bazel_bin_name(rlocation: str) -> str:
    """`<repo>/pkg/x.run1.log` -> `bazel-bin/pkg/x.run1.log`, where a person finds it."""
    return "bazel-bin/" + rlocation.partition("/")[2]


def load_file(config_path: Path, resolve: Resolve) -> LoadedGate:
    return load(json.loads(config_path.read_text(encoding="utf-8")), resolve)

"""3. Evaluator scale: locality matching + the quorum on monorepo-sized inputs.

A synthetic catalog of P properties (one service directory each; every fifth also
observes a shared library directory other properties observe too; every fiftieth
reads a sealed fixture tree) and a diff of D paths (half under the catalog's
localities, a few under the shared libraries, the rest elsewhere). Matching is
`locality.LocalityIndex(...).match(paths)`; the quorum is `quorum.evaluate` with a
passing double run for every matched property, as the gate test would see it.
Measured in-process, median of repetitions, over a grid of catalog and diff
sizes, so the growth in each is visible and a product P x D would stand out.
"""

from __future__ import annotations

import importlib
import sys
import time
from types import ModuleType

from harness import TOOLS, BenchError, Check, Context, Section, Series, Table


def _modules() -> tuple[ModuleType, ModuleType]:
    """agent_gate.core.locality and agent_gate.core.quorum, with the generated proto importable."""
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    importlib.import_module("agent_gate.drive.protogen").ensure_proto_importable()
    return importlib.import_module("agent_gate.core.locality"), importlib.import_module(
        "agent_gate.core.quorum"
    )


def catalog(quorum: ModuleType, count: int) -> tuple[list[object], list[object]]:
    """(PropertySpecs, FixtureSeals) of a synthetic catalog of `count` properties."""
    specs: list[object] = []
    seals: list[object] = []
    fixture_tree = importlib.import_module("proto.agent_gate_pb2").FixtureTree
    for i in range(count):
        service = f"svc{i:05d}"
        locality = [f"{service}/src"]
        if i % 5 == 0:
            locality.append(f"shared/lib{i % 50:02d}")
        roots: tuple[str, ...] = ()
        if i % 50 == 0:
            root = f"fixtures/f{i:05d}"
            roots = (root,)
            digest = f"{i:064x}"
            seals.append(
                quorum.FixtureSeal(
                    fixture_tree(root=root, seal_file=f"{root}.seal"),
                    expected=digest,
                    actual=digest,
                )
            )
        specs.append(
            quorum.PropertySpec(
                id=f"prop.{i:05d}",
                strength="weak" if i % 10 == 9 else "strong",
                locality=tuple(locality),
                fixture_roots=roots,
                predicate_srcs=(f"{service}/tests/prop_{i}_test.py",),
                package=service,
                label=f"//{service}:prop.{i:05d}",
            )
        )
    return specs, seals


def diff(count: int, properties: int) -> list[str]:
    """`count` distinct changed paths: half under strong services' sources, 1% shared, the rest
    elsewhere (`other/`, which the gate declares needs no vote)."""
    paths: list[str] = []
    for j in range(count):
        if j % 100 == 1:
            paths.append(f"shared/lib{j % 10 * 5:02d}/z{j}.py")  # a lib some property shares
        elif j % 2 == 0:
            service = (j // 2 * 7919) % properties
            service -= service % 10 == 9  # a weak property's service: no strong voter there
            paths.append(f"svc{service:05d}/src/m{j % 13}/deep/er/f{j}.py")
        else:
            paths.append(f"other/o{j % 1000:03d}/x{j}/data.json")
    return paths


def measure(
    locality: ModuleType, quorum: ModuleType, properties: int, paths: int
) -> tuple[float, float, int]:
    """(match seconds, evaluate seconds, matched count) of one catalog x diff."""
    specs, seals = catalog(quorum, properties)
    changed = diff(paths, properties)
    started = time.perf_counter()
    matched = locality.LocalityIndex((spec.id, spec.locality) for spec in specs).match(changed)
    matched_at = time.perf_counter()
    outcomes = {property_id: quorum.RunOutcome(exit_codes=(0, 0)) for property_id in matched}
    inputs = quorum.GateInputs(
        catalog=tuple(specs),
        changed_paths=tuple(changed),
        outcomes=outcomes,
        fixtures=tuple(seals),
        ledger_path="ledger.txtpb",
        gate_package="",
        rule_set_paths=("MODULE.bazel", "WORKSPACE", "WORKSPACE.bazel", ".bazelrc"),
        run_id="bench",
        # The "elsewhere" paths need no vote; everything else has a strong voter.
        unobserved_ok=("other",),
    )
    evaluate_started = time.perf_counter()
    report = quorum.evaluate(inputs)
    finished = time.perf_counter()
    if report.decision != "promote":
        raise BenchError(
            f"evaluator benchmark expected promote for {properties} x {paths}, got "
            f"{report.decision}: {report.rule[:500]}"
        )
    return matched_at - started, finished - evaluate_started, len(matched)


def bench(ctx: Context) -> Section:
    plan = ctx.plan
    locality, quorum = _modules()
    section = Section(key="evaluator", title="3. Evaluator scale")
    big_p, big_d = max(plan.evaluator_catalogs), max(plan.evaluator_diffs)
    grid = [(p, d) for p in plan.evaluator_catalogs for d in plan.evaluator_diffs]
    totals: dict[tuple[int, int], Series] = {}
    table = Table(["properties", "changed paths", "matched", "match", "quorum.evaluate", "total"])
    for properties, paths in grid:
        ctx.log(f"evaluator: {properties:,} properties x {paths:,} paths")
        match_s: list[float] = []
        evaluate_s: list[float] = []
        matched = 0
        measure(locality, quorum, properties, paths)  # warm-up: imports, allocator
        for _ in range(plan.evaluator_reps):
            match_seconds, evaluate_seconds, matched = measure(locality, quorum, properties, paths)
            match_s.append(match_seconds)
            evaluate_s.append(evaluate_seconds)
        total = Series(tuple(a + b for a, b in zip(match_s, evaluate_s, strict=True)))
        totals[(properties, paths)] = total
        table.rows.append(
            [
                f"{properties:,}",
                f"{paths:,}",
                f"{matched:,}",
                Series(tuple(match_s)).show(),
                Series(tuple(evaluate_s)).show(),
                total.show(),
            ]
        )
    section.tables.append(("Median (min-max) seconds", table))
    headline = totals[(big_p, big_d)]
    section.checks.append(
        Check(
            f"evaluator: {big_p:,} properties x {big_d:,} paths, match + quorum",
            headline.median,
            1.0,
            unit=" s",
            fmt=".3f",
        )
    )
    small_p, small_d = min(plan.evaluator_catalogs), min(plan.evaluator_diffs)
    if small_p < big_p and small_d < big_d:
        growth = Table(["growth", "size factor", "time factor", "a product P x D would be"])
        p_factor = big_p / small_p
        d_factor = big_d / small_d
        growth.rows.append(
            [
                f"catalog {small_p:,} -> {big_p:,} at {big_d:,} paths",
                f"{p_factor:g}x",
                f"{totals[(big_p, big_d)].median / totals[(small_p, big_d)].median:.2f}x",
                f"{p_factor:g}x",
            ]
        )
        growth.rows.append(
            [
                f"diff {small_d:,} -> {big_d:,} at {big_p:,} properties",
                f"{d_factor:g}x",
                f"{totals[(big_p, big_d)].median / totals[(big_p, small_d)].median:.2f}x",
                f"{d_factor:g}x",
            ]
        )
        growth.rows.append(
            [
                "both",
                f"{p_factor * d_factor:g}x",
                f"{totals[(big_p, big_d)].median / totals[(small_p, small_d)].median:.2f}x",
                f"{p_factor * d_factor:g}x",
            ]
        )
        section.tables.append(("Growth (ratios of median totals)", growth))
    section.method = [
        "In-process, after one untimed warm-up per size; "
        f"{plan.evaluator_reps} repetitions, median and min-max.",
        "Catalog: one `svcNNNNN/src` locality per property, every fifth also one of 50 shared "
        "`shared/libNN` prefixes, every tenth weak, every fiftieth reading a sealed fixture tree.",
        "Diff: distinct paths, half four levels under a service's `src`, 1% under a shared "
        "library, the rest outside every locality. Every run must decide promote.",
        "`match` = `LocalityIndex(catalog).match(paths)`; `quorum.evaluate` repeats that matching "
        "internally and adds the guards, ledger, fixtures and the report rows.",
    ]
    return section

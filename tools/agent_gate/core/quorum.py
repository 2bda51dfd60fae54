"""The quorum evaluator: one candidate patch's inputs in, one gate report out.

Pure and I/O-free so every branch of the decision table (docs/decision-table.md)
can be tested exhaustively. Each rule that fires adds a reason; the decision is the
reason of highest precedence (stop_queue > fixture_fault > review > reject > hold >
promote), and promote is only what is left when nothing else fired.

The scheduled full strong pass is a mode of the same table (`GateInputs.full_pass`):
every strong property is matched, whatever the diff (there is none), weak ones do
not run, and every other rule is the gate's own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from agent_gate.core.locality import (
    LocalityIndex,
    component_prefixes,
    normalize_path,
    validate_prefix,
)

# Also quorum.RunOutcome and quorum.classify: they live apart so the runner, which
# classifies its two runs in every PropertyDoubleRun action, need not import this module.
from agent_gate.core.outcome import RunOutcome, classify
from agent_gate.core.path_guards import (
    SHADOWED_MODULES,
    PathGuards,
    PrefixGuards,
    by_key,
    module_at,
)
from agent_gate.core.pathdigest import changed_paths_digest
from agent_gate.core.wording import names, plural
from proto import agent_gate_pb2

PRECEDENCE: tuple[str, ...] = (
    "stop_queue",
    "fixture_fault",
    "review",
    "reject",
    "hold",
    "promote",
)
STRENGTHS = ("strong", "weak")
LEDGER_STATES = ("open", "retired")
MAX_REPORTED_PATHS = 1000
# What a full strong pass reports as the matching path of every strong row.
FULL_PASS_MATCH = "(full strong pass)"


@dataclass(frozen=True)
class PropertySpec:
    """One catalog row, as the build graph declares it."""

    id: str
    strength: str  # "strong" | "weak"
    locality: tuple[str, ...]
    fixture_roots: tuple[str, ...] = ()  # repo-relative fixture tree roots this property reads
    predicate_srcs: tuple[str, ...] = ()  # repo-relative srcs of the wrapped test
    package: str = ""  # repo-relative package of the BUILD file defining it ("" = root)
    label: str = ""
    # Repo-relative packages whose BUILD files declare the wrapped test (an alias, its target).
    test_packages: tuple[str, ...] = ()
    test: str = ""  # label of the wrapped test, as Bazel spells it on its command line
    # Packages of the test's closure at or above a touched path under `unobserved_ok`.
    touched_closure_packages: tuple[str, ...] = ()
    # Directories on the test's Python import path holding a touched top-level module.
    touched_import_roots: tuple[str, ...] = ()
    # Generated modules at the top of the test's import path (matched properties only).
    generated_modules: tuple[str, ...] = ()


@dataclass(frozen=True)
class FixtureSeal:
    """The two seals of a fixture tree: the committed one and the one computed on the base."""

    tree: agent_gate_pb2.FixtureTree  # as the gate config declares it
    expected: str | None  # None = the seal file was unreadable/garbage
    actual: str | None  # None = could not be computed


@dataclass(frozen=True)
class LedgerRow:
    """One freeze row of the ledger."""

    property_id: str
    state: str  # "open" | "retired"
    opened_against_commit: str = ""
    retire_by_commit_count: int = 0
    owner: str = ""


@dataclass(frozen=True)
class Override:
    """A human's stop_queue override: who, and which ledger ids it ignores."""

    by: str
    ignored_ids: tuple[str, ...]


@dataclass(frozen=True)
class GateInputs:
    """Everything the gate knows about one candidate patch."""

    catalog: tuple[PropertySpec, ...]
    changed_paths: tuple[str, ...]
    outcomes: Mapping[str, RunOutcome]  # by property id; matched properties should have one
    fixtures: tuple[FixtureSeal, ...] = ()
    ledger: tuple[LedgerRow, ...] = ()
    # opened_against_commit -> commits since; missing = unknown
    commit_counts: Mapping[str, int] = field(default_factory=dict)
    debt_cap: int = 5
    ledger_path: str = ""  # repo-relative path of the ledger file
    gate_package: str = ""  # package of the BUILD file declaring the agent_gate target
    rule_set_paths: tuple[str, ...] = ()  # prefixes of the rule set / its pin
    errors: tuple[str, ...] = ()  # configuration errors found while loading inputs
    override: Override | None = None
    run_id: str = ""
    # Prefixes a patch may touch with no strong property observing them (`unobserved_ok`).
    unobserved_ok: tuple[str, ...] = ()
    # Matched property id -> targets of its test's closure that would run unsandboxed.
    unsandboxed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # The digest of the path list the CLI sent (pathdigest); "" when no CLI sent one.
    changed_paths_sha256: str = ""
    # The scheduled full strong pass: every strong property matched, no weak one run.
    full_pass: bool = False
    # Matched property id -> its test's label, for each test the patch broke the build
    # of where the base built it (agent_gate/drive/build_break.py); no property ran then.
    build_broken: Mapping[str, str] = field(default_factory=dict)


def _exits(outcome: RunOutcome) -> str:
    tokens = (
        "timeout" if timed_out else str(code)
        for code, timed_out in zip(outcome.exit_codes, outcome.timed_out, strict=True)
    )
    return "exit " + ", ".join(tokens)


@dataclass
class _Catalog:
    """The catalog after validation: what can be indexed, and normalized fixture roots."""

    entries: list[tuple[str, tuple[str, ...]]]
    roots: dict[str, tuple[str, ...]]  # property id -> normalized fixture roots
    ids: set[str]


def _prefixes_or_errors(prefixes: Iterable[str], where: str, errors: list[str]) -> tuple[str, ...]:
    """The valid prefixes, normalized; each invalid one becomes an error naming `where`."""
    valid: list[str] = []
    for prefix in prefixes:
        problem = validate_prefix(prefix)
        if problem is None:
            valid.append(prefix.removesuffix("/"))
        else:
            errors.append(f"{where}: {problem}")
    return tuple(valid)


def _check_catalog(catalog: Sequence[PropertySpec], errors: list[str]) -> _Catalog:
    entries: list[tuple[str, tuple[str, ...]]] = []
    roots: dict[str, tuple[str, ...]] = {}
    ids: set[str] = set()
    for spec in catalog:
        where = f"property {spec.id or '<empty id>'}"
        if spec.id in ids:
            errors.append(f"{where} is declared twice in the catalog; give each a unique id")
        ids.add(spec.id)
        if spec.strength not in STRENGTHS:
            errors.append(f"{where} has strength {spec.strength!r}; use 'strong' or 'weak'")
        if not spec.locality:
            errors.append(f"{where} has an empty locality; list the path prefixes it observes")
        prefixes = _prefixes_or_errors(spec.locality, where, errors)
        entries.append((spec.id, prefixes))
        roots[spec.id] = _prefixes_or_errors(spec.fixture_roots, f"{where}: fixture root", errors)
    return _Catalog(entries=entries, roots=roots, ids=ids)


def _check_paths(raw: Sequence[str], errors: list[str]) -> tuple[list[str], list[str]]:
    """Return (normalized valid paths, paths as the report shows them)."""
    valid: list[str] = []
    shown: list[str] = []
    for path in raw:
        try:
            normal = normalize_path(path)
        except ValueError as err:
            errors.append(f"changed path rejected: {err}")
            shown.append(path)
        else:
            valid.append(normal)
            shown.append(normal)
    return valid, shown


@dataclass
class _LedgerView:
    open_ids: set[str]
    retired_ids: set[str]
    statuses: list[agent_gate_pb2.LedgerStatus]
    debt: int
    counted: list[str]  # open rows counted in the debt
    spent: list[str]  # counted rows whose budget is spent, with why


def _check_ledger(inputs: GateInputs, known_ids: set[str], errors: list[str]) -> _LedgerView:
    ignored = set(inputs.override.ignored_ids) if inputs.override else set()
    view = _LedgerView(set(), set(), [], 0, [], [])
    where = inputs.ledger_path or "the ledger"
    for row in inputs.ledger:
        if row.state not in LEDGER_STATES:
            errors.append(
                f"{where}: row for {row.property_id} has state {row.state!r}; "
                "use 'open' or 'retired'"
            )
        if row.property_id not in known_ids:
            errors.append(
                f"{where}: row names {row.property_id!r}, which is not in the catalog; "
                "retire the row or fix the id"
            )
        since = inputs.commit_counts.get(row.opened_against_commit)
        is_open = row.state == "open"
        # An unknown commit count fails closed: the budget is treated as spent.
        spent = is_open and (since is None or since >= row.retire_by_commit_count)
        view.statuses.append(
            agent_gate_pb2.LedgerStatus(
                property_id=row.property_id,
                state=row.state,
                opened_against_commit=row.opened_against_commit,
                retire_by_commit_count=row.retire_by_commit_count,
                commits_since_open=-1 if since is None else since,
                spent=spent,
                owner=row.owner,
            )
        )
        if row.state == "retired":
            view.retired_ids.add(row.property_id)
        if not is_open:
            continue
        if row.property_id in view.open_ids:
            errors.append(
                f"{where}: {row.property_id} has more than one open row; keep one open row"
            )
        view.open_ids.add(row.property_id)
        if row.property_id in ignored:
            continue
        view.debt += 2 if spent else 1
        view.counted.append(row.property_id)
        if spent and since is None:
            view.spent.append(
                f"{row.property_id} (commits since "
                f"{row.opened_against_commit or '<no commit>'} unknown, counted as spent)"
            )
        elif spent:
            view.spent.append(
                f"{row.property_id} ({since} of {row.retire_by_commit_count} commits)"
            )
    if inputs.override is not None:
        if not inputs.override.by:
            errors.append("the override does not say who overrides; name the person")
        if not inputs.override.ignored_ids:
            errors.append("the override names no ledger ids; list the open rows it ignores")
        for property_id in inputs.override.ignored_ids:
            if property_id not in view.open_ids:
                errors.append(
                    f"the override ignores {property_id}, which has no open ledger row; "
                    "remove it from the override"
                )
    if inputs.debt_cap < 0:
        errors.append(f"debt cap {inputs.debt_cap} is negative; use 0 or more")
    return view


def _normal_or_error(path: str, what: str, errors: list[str]) -> str | None:
    try:
        return normalize_path(path)
    except ValueError as err:
        errors.append(f"{what}: {err}")
        return None


@dataclass
class _Fixtures:
    statuses: list[agent_gate_pb2.FixtureStatus]
    status_by_root: dict[str, str]  # normalized sealed root -> its FixtureStatus.status
    touched: set[str]  # every guarded prefix the diff touched
    faults: list[str]
    guarded_paths: set[str]  # the touched paths a guard caught
    # Sealed trees the diff edits without their seal file (merged: a stale seal),
    # and those it edits together with it (the new seal needs a human's check).
    stale: list[str] = field(default_factory=list)
    resealed: list[str] = field(default_factory=list)

    def status_of(self, root: str) -> str | None:
        """Status of the sealed tree holding `root` (the root itself or an ancestor)."""
        if root in self.touched:
            return "touched"
        for candidate in reversed(list(component_prefixes(root))):
            if candidate in self.status_by_root:
                return self.status_by_root[candidate]
        return None


def _scan_diff(
    inputs: GateInputs,
    paths: Sequence[str],
    catalog: _Catalog,
    errors: list[str],
) -> tuple[list[str], _Fixtures]:
    """Find guarded paths the diff touched, and the state of every sealed fixture."""
    guards = PrefixGuards()
    seals: list[tuple[FixtureSeal, str | None, str | None]] = []
    for seal in inputs.fixtures:
        root = _normal_or_error(seal.tree.root, "fixture seal root", errors)
        seal_file = _normal_or_error(seal.tree.seal_file, f"seal file of {seal.tree.root}", errors)
        seals.append((seal, root, seal_file))
        if root is not None:
            guards.add(root, f"fixture tree {root}")
        if root is not None and seal_file is not None:
            guards.add(seal_file, f"seal file of {root}")
    for roots in catalog.roots.values():
        for root in roots:
            guards.add(root, f"fixture tree {root}")
    if inputs.ledger_path:
        ledger = _normal_or_error(inputs.ledger_path, "ledger path", errors)
        if ledger is not None:
            guards.add(ledger, "the ledger")
    for prefix in _prefixes_or_errors(inputs.rule_set_paths, "rule set path", errors):
        guards.add(prefix, f"the rule set ({prefix})")
    # Every row's predicate, matched or not: a patch that guts an unmatched predicate
    # would let the next patch break what it observed.
    srcs = by_key((src, spec.id) for spec in inputs.catalog for src in spec.predicate_srcs)
    beside = PrefixGuards()  # directory of a predicate source -> its owners
    for src, owners in srcs.items():
        normal = _normal_or_error(src, f"predicate source of {names(owners)}", errors)
        if normal is not None:
            guards.add(normal, f"predicate source of {names(owners)}")
            for owner in owners:
                beside.add(normal.rpartition("/")[0], owner)
    path_guards = PathGuards(
        guards=guards,
        beside=beside,
        observed={prefix for _, prefixes in catalog.entries for prefix in prefixes},
        strong=_strong_prefixes(inputs, catalog),
        # Errors in these prefixes are reported once, by _unobserved.
        excused={prefix for prefix in _prefixes_or_errors(inputs.unobserved_ok, "", []) if prefix},
        gate_package=inputs.gate_package.removesuffix("/"),
        packages=by_key((spec.package.removesuffix("/"), spec.id) for spec in inputs.catalog),
        test_packages=by_key(
            (package.removesuffix("/"), spec.id)
            for spec in inputs.catalog
            for package in spec.test_packages
        ),
        closure=by_key(
            (package.removesuffix("/"), spec.id)
            for spec in inputs.catalog
            for package in spec.touched_closure_packages
        ),
        import_roots=by_key(
            (root.removesuffix("/"), spec.id)
            for spec in inputs.catalog
            for root in (
                *spec.touched_import_roots,
                # A test's own directory is first on its import path.
                *(src.rpartition("/")[0] for src in spec.predicate_srcs),
            )
        ),
    )
    guarded: list[str] = []
    guarded_set: set[str] = set()
    touched: set[str] = set()
    for path in dict.fromkeys(paths):
        if path_guards.clear(path):
            continue
        hits, whys = path_guards.whys(path)
        touched.update(prefix for prefix, _ in hits)
        if whys:
            guarded.append(f"{path} ({'; '.join(whys)})")
            guarded_set.add(path)

    fixtures = _Fixtures([], {}, touched, [], guarded_set)
    for seal, root, seal_file in seals:
        hit = root in touched or seal_file in touched
        if root in touched:
            where = f"{root} (seal file {seal.tree.seal_file})"
            (fixtures.resealed if seal_file in touched else fixtures.stale).append(where)
        status = "touched" if hit else _compare(seal)
        if root is not None:
            fixtures.status_by_root[root] = status
        if seal.expected is None or seal.actual is None:
            problems = []
            if seal.expected is None:
                problems.append(f"its seal file {seal.tree.seal_file} is unreadable")
            if seal.actual is None:
                problems.append("its actual seal could not be computed")
            errors.append(
                f"fixture tree {seal.tree.root}: {' and '.join(problems)}; the gate fails closed "
                "until the tree is sealed and readable (agent-gate seal DIR)"
            )
        elif status == "mismatch":
            fixtures.faults.append(
                f"{seal.tree.root} (expected {seal.expected}, actual {seal.actual}, "
                f"seal file {seal.tree.seal_file})"
            )
        fixtures.statuses.append(
            agent_gate_pb2.FixtureStatus(
                root=seal.tree.root,
                seal_file=seal.tree.seal_file,
                expected=seal.expected or "",
                actual=seal.actual or "",
                status=status,
            )
        )
    return guarded, fixtures


def _strong_prefixes(inputs: GateInputs, catalog: _Catalog) -> set[str]:
    """Every prefix of a strong locality: the paths that have a voter."""
    strong = {spec.id for spec in inputs.catalog if spec.strength == "strong"}
    return {prefix for pid, prefixes in catalog.entries if pid in strong for prefix in prefixes}


def _unobserved(
    paths: Sequence[str], inputs: GateInputs, catalog: _Catalog, errors: list[str]
) -> list[str]:
    """Touched paths in no strong property's locality and under no `unobserved_ok` prefix.

    A weak property's locality does not count: weak never fills a strong gap.
    """
    voters = PrefixGuards()
    for prefix in _strong_prefixes(inputs, catalog):
        voters.add(prefix, "strong locality")
    for prefix in _prefixes_or_errors(inputs.unobserved_ok, "unobserved_ok prefix", errors):
        voters.add(prefix, "unobserved_ok")
    return [path for path in dict.fromkeys(paths) if not voters.hits(path)]


def _compare(seal: FixtureSeal) -> str:
    if seal.expected is None or seal.actual is None:
        return "unknown"
    return "match" if seal.expected == seal.actual else "mismatch"


def _seal_status(roots: Sequence[str], fixtures: _Fixtures) -> str:
    """A property's seal status: the worst over its trees, an unsealed tree is unknown."""
    if not roots:
        return "none"
    states = {fixtures.status_of(root) or "unknown" for root in roots}
    for status in ("touched", "unknown", "mismatch"):
        if status in states:
            return status
    return "match"


def _vote(matched: bool, frozen: bool, classification: str) -> str:
    if not matched:
        return "not_voting"
    if frozen:
        return "excluded"
    return "yes" if classification == "pass" else "no"


def _frozen(row: agent_gate_pb2.Row) -> str:
    return "; excluded by its open freeze" if row.vote == "excluded" else ""


def _note(
    spec: PropertySpec,
    row: agent_gate_pb2.Row,
    outcome: RunOutcome | None,
    *,
    full_pass: bool = False,
    broken: str | None = None,
    build_stopped: bool = False,
) -> str:
    if not row.matched and full_pass:
        return "weak: a full strong pass runs strong properties only; not voting"
    if not row.matched:
        return "not matched: no changed path under its locality; not voting"
    ran = f"{row.classification}, {_exits(outcome)}" if outcome else "no run outcome"
    if broken is not None:
        return (
            f"the patch breaks the build of its test {broken}, which builds at the base: fix "
            f"the build (Bazel's error is in the evidence); not a pass{_frozen(row)}"
        )
    if row.vote == "excluded":
        return f"excluded: open freeze; not a pass ({ran})"
    if row.classification == "not_run" and build_stopped:
        return "not run: the build stopped at a matched property's broken test; not a pass"
    if row.classification == "not_run":
        return "not run: its test's closure would run outside the sandbox; not a pass"
    if outcome is None:
        return "error: matched but no run outcome; the gate fails closed"
    if row.classification == "pass":
        if spec.strength == "weak":
            return f"passed twice ({_exits(outcome)}); a weak pass never fills a strong gap"
        return f"passed twice ({_exits(outcome)}); votes yes"
    if row.classification == "fail":
        return f"failed twice ({_exits(outcome)}): a stable failure; reject, do not freeze"
    return f"split ({_exits(outcome)}): a flake is not a pass; hold"


@dataclass
class _Tally:
    """What the matched rows say, grouped the way the table's rows ask for it."""

    strong_matched: list[str] = field(default_factory=list)
    strong_voting: list[str] = field(default_factory=list)
    frozen_matched: list[str] = field(default_factory=list)
    strong_failed: list[str] = field(default_factory=list)
    weak_failed: list[str] = field(default_factory=list)
    flaked: list[str] = field(default_factory=list)
    build_broken: list[str] = field(default_factory=list)

    def count(
        self,
        spec: PropertySpec,
        frozen: bool,
        row: agent_gate_pb2.Row,
        outcome: RunOutcome | None,
        broken: str | None = None,
    ) -> None:
        if not row.matched:
            return
        if frozen:
            self.frozen_matched.append(spec.id)
        if spec.strength == "strong":
            self.strong_matched.append(spec.id)
            if not frozen:
                self.strong_voting.append(spec.id)
        if frozen:
            return
        if row.classification == "error" and broken is not None:
            self.build_broken.append(f"{spec.strength} property {spec.id} ({broken})")
        if outcome is None:
            return
        if row.classification == "flake":
            self.flaked.append(f"{spec.strength} property {spec.id} split ({_exits(outcome)})")
        elif row.classification == "fail" and spec.strength == "strong":
            self.strong_failed.append(f"{spec.id} failed twice ({_exits(outcome)})")
        elif row.classification == "fail" and spec.strength == "weak":
            self.weak_failed.append(f"{spec.id} failed twice ({_exits(outcome)})")


def _fill_row(
    row: agent_gate_pb2.Row,
    spec: PropertySpec,
    inputs: GateInputs,
    context: tuple[Mapping[str, str], _LedgerView, _Catalog, _Fixtures],
    errors: list[str],
) -> bool:
    """Fill one report row; return whether the property is frozen."""
    matched, ledger, catalog, fixtures = context
    row.matched = spec.id in matched
    row.matched_by = matched.get(spec.id, "")
    if spec.id in ledger.open_ids:
        row.ledger_state = "open"
    elif spec.id in ledger.retired_ids:
        row.ledger_state = "retired"
    frozen = row.ledger_state == "open"
    outcome = inputs.outcomes.get(spec.id) if row.matched else None
    broken = inputs.build_broken.get(spec.id) if row.matched else None
    # A broken test whose property votes stops the build for a reason that rejects;
    # any other property without an outcome is then not run, not an error.
    blamed = [pid for pid in inputs.build_broken if pid in matched and pid not in ledger.open_ids]
    if not row.matched:
        row.classification = "not_run"
    elif outcome is None and broken is not None:
        row.classification = "error"
    elif outcome is None and spec.id in inputs.unsandboxed:
        row.classification = "not_run"  # never built: the unsandboxed reason says why
    elif outcome is None and blamed:
        row.classification = "not_run"
    elif outcome is None:
        row.classification = "error"
        errors.append(
            f"property {spec.id} matched ({row.matched_by}) but has no run outcome; "
            "the gate fails closed"
        )
    else:
        row.classification = classify(outcome)
        row.exit_codes.extend(outcome.exit_codes)
    row.vote = _vote(row.matched, frozen, row.classification)
    roots = catalog.roots[spec.id]
    row.seal_status = _seal_status(roots, fixtures)
    unsealed = [root for root in roots if fixtures.status_of(root) is None]
    if row.matched and unsealed:
        errors.append(
            f"property {spec.id} reads fixture tree {names(unsealed)} but no seal "
            "was given for it; declare it with sealed_fixtures"
        )
    row.note = _note(
        spec, row, outcome, full_pass=inputs.full_pass, broken=broken, build_stopped=bool(blamed)
    )
    return frozen


def _seal_advice(fixtures: _Fixtures) -> str:
    """What merging a fixture edit does to its seal, for the reviewer (guard reason's tail)."""
    advice = ""
    if fixtures.stale:
        advice += (
            f". It edits the sealed fixture tree {names(fixtures.stale)} but not its seal "
            "file: merged as it is, the committed seal is stale and every later score is "
            "fixture_fault until it is resealed; reseal in the same change, from the workspace "
            "root: `agent-gate seal ROOT > SEAL_FILE` (or `bazel run` the tree's "
            "`<name>.update_seal` target)"
        )
    if fixtures.resealed:
        advice += (
            f". It edits the sealed fixture tree {names(fixtures.resealed)} and its seal file "
            "together: check that the new seal is the tree's (`agent-gate seal ROOT`) and that "
            "the fixtures should change"
        )
    return advice


def _reasons(
    inputs: GateInputs,
    *,
    ledger: _LedgerView,
    fixtures: _Fixtures,
    errors: Sequence[str],
    guarded: Sequence[str],
    unobserved: Sequence[str],
    unsandboxed: Sequence[str],
    tally: _Tally,
) -> dict[str, list[str]]:
    """Every rule of the table that fires, by decision."""
    reasons: dict[str, list[str]] = {decision: [] for decision in PRECEDENCE}
    if ledger.debt > inputs.debt_cap:
        spent = f"; spent budgets count twice: {names(ledger.spent)}" if ledger.spent else ""
        reasons["stop_queue"].append(
            f"stop_queue: ledger debt {ledger.debt} exceeds the debt cap {inputs.debt_cap} "
            f"({plural(len(ledger.counted), 'open row')}: {names(ledger.counted)}{spent}); "
            "every agent patch stops until freezes are retired or a human overrides"
        )
    if fixtures.faults:
        reasons["fixture_fault"].append(
            f"fixture_fault: sealed fixture tree {names(fixtures.faults)} no longer matches "
            "its committed seal and the diff did not touch it; the base tree drifted: "
            "no freeze, not a flake"
        )
    if errors:
        reasons["review"].append(
            f"review: {plural(len(errors), 'configuration error')}, the gate fails closed: "
            f"{names(errors)}"
        )
    if guarded:
        reasons["review"].append(
            f"review: the diff touches what an agent may not touch: {names(guarded)}; "
            f"a human must look{_seal_advice(fixtures)}"
        )
    if unsandboxed:
        reasons["review"].append(
            f"review: the build of a matched property's test would run unsandboxed or with the "
            f"network: {names(unsandboxed)}; the gate does not run what it cannot sandbox: a "
            "human must look"
        )
    if unobserved:
        reasons["review"].append(
            f"review: {plural(len(unobserved), 'touched path')} in no strong property's "
            f"locality, so no one votes on them: {names(unobserved)}; a human must look (a "
            "gate may list prefixes that need no vote in unobserved_ok)"
        )
    if not tally.strong_matched and inputs.full_pass:
        reasons["reject"].append(
            "reject: empty strong quorum: the catalog has no strong property, so a full "
            "strong pass has no one to vote"
        )
    elif not tally.strong_matched:
        reasons["review"].append(
            "review: no strong property's locality overlaps the diff "
            f"({plural(len(inputs.changed_paths), 'changed path')}); do not invent a "
            "locality, hand the diff to a reviewer"
        )
    if tally.build_broken:
        reasons["reject"].append(
            f"reject: the patch breaks the build of the test of {names(tally.build_broken)}, "
            "which builds at the base; fix the build (Bazel's error is in the report)"
        )
    if tally.strong_failed:
        noun = "property" if len(tally.strong_failed) == 1 else "properties"
        reasons["reject"].append(
            f"reject: strong {noun} {names(tally.strong_failed)}; do not freeze"
        )
    if tally.strong_matched and not tally.strong_voting:
        reasons["reject"].append(
            "reject: empty strong quorum: every matched strong property is frozen "
            f"({names(tally.strong_matched)}); excluded is not a pass"
        )
    if tally.weak_failed:
        noun = "property" if len(tally.weak_failed) == 1 else "properties"
        reasons["reject"].append(f"reject: weak {noun} {names(tally.weak_failed)}; do not freeze")
    if tally.flaked:
        reasons["hold"].append(
            f"hold: {names(tally.flaked)} across two runs; a flake is not a pass; open a "
            "freeze only after the same split on the unmodified tree with the same seal"
        )
    if not any(reasons.values()):
        excluded = (
            f"; excluded by open freezes, not passes: {names(tally.frozen_matched)}"
            if tally.frozen_matched
            else ""
        )
        reasons["promote"].append(
            "promote: every voting strong property passed twice "
            f"({names(tally.strong_voting)}); no matched weak property failed{excluded}"
        )
    return reasons


def _matched(inputs: GateInputs, catalog: _Catalog, paths: Sequence[str]) -> dict[str, str]:
    """Matched property id -> the path that matched it (the marker on a full pass)."""
    if inputs.full_pass:
        return {spec.id: FULL_PASS_MATCH for spec in inputs.catalog if spec.strength == "strong"}
    return LocalityIndex(catalog.entries).match(paths, normalized=True)


def evaluate(inputs: GateInputs) -> agent_gate_pb2.GateReport:
    """Apply the decision table to one patch and return the full report."""
    errors = list(inputs.errors)
    paths, shown = _check_paths(inputs.changed_paths, errors)
    catalog = _check_catalog(inputs.catalog, errors)
    matched = _matched(inputs, catalog, paths)
    ledger = _check_ledger(inputs, catalog.ids, errors)
    guarded, fixtures = _scan_diff(inputs, paths, catalog, errors)
    # A module the build generates at the top of a matched test's import path, named
    # like one it imports, runs in that module's place: no touched path is named so.
    guarded += [
        f"{path} (generated by the build of the test of {spec.id}, at the top of its import "
        f"path: it shadows the module {module!r} the test imports)"
        for spec in inputs.catalog
        if spec.id in matched
        for path in spec.generated_modules
        if (module := module_at(path)[1]) in SHADOWED_MODULES
    ]
    # A guarded path is review for a reason of its own; "no voter" would only repeat it.
    unobserved = [
        path
        for path in _unobserved(paths, inputs, catalog, errors)
        if path not in fixtures.guarded_paths
    ]
    unsandboxed = [
        f"{target} (in the closure of {property_id})"
        for property_id in sorted(inputs.unsandboxed)
        if property_id in matched
        for target in inputs.unsandboxed[property_id]
    ]
    digest = changed_paths_digest(inputs.changed_paths)
    if inputs.changed_paths_sha256 and inputs.changed_paths_sha256 != digest:
        errors.append(
            f"the changed paths the gate received (sha256 {digest[:16]}) are not the ones the "
            f"CLI sent (sha256 {inputs.changed_paths_sha256[:16]}): a path was lost or altered "
            "on its way through Bazel's flags; the gate fails closed"
        )

    report = agent_gate_pb2.GateReport(
        debt=ledger.debt,
        debt_cap=inputs.debt_cap,
        fixtures=fixtures.statuses,
        ledger=ledger.statuses,
        changed_paths=shown[:MAX_REPORTED_PATHS],
        changed_path_count=len(inputs.changed_paths),
        run_id=inputs.run_id,
        guarded_paths=guarded,
        unobserved_paths=unobserved[:MAX_REPORTED_PATHS],
        unsandboxed_targets=unsandboxed,
        changed_paths_sha256=digest,
    )
    if inputs.override is not None:
        report.override.by = inputs.override.by
        report.override.ignored_ids.extend(inputs.override.ignored_ids)

    tally = _Tally()
    context = (matched, ledger, catalog, fixtures)
    for spec in inputs.catalog:
        row = report.rows.add(property_id=spec.id, strength=spec.strength, label=spec.label)
        frozen = _fill_row(row, spec, inputs, context, errors)
        broken = inputs.build_broken.get(spec.id) if row.matched else None
        tally.count(spec, frozen, row, inputs.outcomes.get(spec.id), broken)

    reasons = _reasons(
        inputs,
        ledger=ledger,
        fixtures=fixtures,
        errors=errors,
        guarded=guarded,
        unobserved=unobserved,
        unsandboxed=unsandboxed,
        tally=tally,
    )
    report.errors.extend(errors)
    report.reasons.extend(reason for decision in PRECEDENCE for reason in reasons[decision])
    report.decision = next(decision for decision in PRECEDENCE if reasons[decision])
    report.rule = report.reasons[0]
    return report

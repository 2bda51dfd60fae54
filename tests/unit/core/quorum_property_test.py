"""Property-based test of the quorum evaluator: nothing but an earned pass promotes.

Hypothesis draws random catalogs (strengths, localities, fixture roots, predicate
sources, packages, some of them invalid), diffs (valid, unnormalized and invalid
paths, BUILD files, ledgers, seals), two-run outcomes (passes, failures, splits,
signals, timeouts, missing results), fixture seals (matching, drifted,
unreadable), ledgers (open, retired, bogus and unknown rows), commit counts,
debt caps and overrides, and checks every report against an oracle written here
from docs/decision-table.md and docs/ledger.md, sharing no code with quorum.py
beyond its input types:

* promote implies: no configuration error; every matched strong property that
  is not frozen passed twice (two zero exits, no timeout); at least one voted;
  no matched weak property that is not frozen failed or split; debt <= cap; no
  guard fired (fixtures, seals, ledger, rule set, BUILD files of the gate's and
  the properties' and their tests' packages, every row's predicate sources and
  what sits beside them outside every locality, `.bzl` files, import hooks);
  every touched path lies in a strong locality or under `unobserved_ok`, and
  none outside a strong locality lies in a package of a test's closure or is a
  BUILD file under `unobserved_ok`; no
  touched top-level module on a test's import path shadows one it imports; no
  matched test's closure runs unsandboxed; the paths the gate saw are the ones
  sent; no fixture tree drifted;
* and the converse: when the oracle finds nothing that blocks, it is a promote;
* a row votes `yes` only when matched, not frozen and classified `pass`; a
  matched frozen row is `excluded`, never `yes`, and its note says "not a pass";
* the decision is the highest-precedence reason, the rule is the first reason,
  reasons come in precedence order;
* the report writers (JSON, JUnit) never turn an excluded row into a pass.

10,000 examples, derandomized (the same examples on every run), no database.
"""

import collections
import json
import sys
import xml.etree.ElementTree as ET

from absl.testing import absltest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from agent_gate.core.pathdigest import changed_paths_digest
from agent_gate.core.quorum import (
    FixtureSeal,
    GateInputs,
    LedgerRow,
    Override,
    PropertySpec,
    RunOutcome,
    evaluate,
)
from agent_gate.formats import report
from proto import agent_gate_pb2

# The precedence of docs/decision-table.md, written out here, not imported.
ORDER = ("stop_queue", "fixture_fault", "review", "reject", "hold", "promote")
RANK = {decision: rank for rank, decision in enumerate(ORDER)}

EXAMPLES = 10_000
WRITER_EXAMPLES = 1_500

DIRS = ("a", "a/b", "b", "c", "c/d", "e")
FIXTURE_ROOTS = ("fx/one", "fx/two", "a/fx")
PACKAGES = ("", "a", "t", "pk")
OTHER_DIRS = ("t", "pk", "gate", "rules", "tools", "docs", "seals", "fx", "google/protobuf")
FILE_NAMES = (
    "x.py",
    "BUILD",
    "BUILD.bazel",
    "ledger.txtpb",
    "p0.py",
    "one.seal",
    "defs.bzl",
    "consts.scl",
    "conftest.py",
    "x.pth",
    "deps.MODULE.bazel",
    "ci.bazelrc",
    ".bazelversion",
    "bazel",
    "unittest.py",
    "lib.zip",
)
UNOBSERVED_OK = ("docs", "a/b", "t", "e", "c", "b")
# Packages of a test's closure the gate found holding a changed path ("": the root).
CLOSURE_PACKAGES = ("docs", "c", "t", "")
# Directories on a test's import path holding a changed top-level module.
IMPORT_ROOTS = ("", "docs", "fx", "a", "fx/lib.zip")
# Generated modules at the top of a test's import path, as the gate lists them.
GENERATED = ("a/unittest.py", "a/os/__init__.py", "a/fine.py")
# What a predicate imports: a top-level module of one of these names shadows it.
SHADOWED = frozenset(sys.stdlib_module_names) | {"pytest", "absl", "hypothesis"}
BAD_PREFIXES = ("/abs", "a/../b", "", "a//b", ".", "a\\b")
BAD_PATHS = ("/etc/passwd", "a/../../x", "", "a/\nb", "..")
RULE_SET = ("rules", "WORKSPACE", "tools", ".bazelrc")
COMMITS = ("c1", "c2", "")

# Two-run outcomes, weighted towards passes so promotes are common enough to test.
RUNS = (
    ((0, 0), (False, False)),
    ((0, 0), (False, False)),
    ((0, 0), (False, False)),
    ((0, 0), (False, False)),
    ((1, 1), (False, False)),
    ((0, 1), (False, False)),
    ((2, 3), (False, False)),
    ((-9, -9), (False, False)),
    ((0, 0), (False, True)),
    ((0, 0), (True, True)),
    ((-9, 0), (True, False)),
)


def _is_valid_prefix(prefix: str) -> bool:
    if not prefix or prefix.startswith("/") or any(c in prefix for c in "\\\n\r\0"):
        return False
    body = prefix[:-1] if prefix.endswith("/") else prefix
    return all(part not in ("", ".", "..") for part in body.split("/"))


def _normal_path(path: str) -> str | None:
    """A repo-relative path with empty and '.' components dropped; None if it escapes."""
    if path.startswith("/") or any(c in path for c in "\n\r\0"):
        return None
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def _covers(prefix: str, path: str) -> bool:
    prefix = prefix.removesuffix("/")
    return path == prefix or path.startswith(prefix + "/")


class Genome:
    """Decodes one Hypothesis byte string into choices: one draw per example keeps
    10,000 examples fast, and Hypothesis still shrinks the bytes (towards zeros,
    i.e. towards the first choice of every pick) when an invariant breaks."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def byte(self) -> int:
        value = self.data[self.at] if self.at < len(self.data) else 0
        self.at += 1
        return value

    def pick(self, choices):
        return choices[self.byte() % len(choices)]

    def rare(self, one_in: int) -> bool:
        """True about once in `one_in` draws (never for the all-zero genome)."""
        return self.byte() % one_in == one_in - 1

    def subset(self, choices, most: int) -> tuple:
        picked = [self.pick(choices) for _ in range(self.byte() % (most + 1))]
        return tuple(dict.fromkeys(picked))


def _prefix(g: Genome, pool) -> str:
    if g.rare(200):
        return g.pick(BAD_PREFIXES)
    prefix = g.pick(pool)
    return prefix + "/" if g.rare(10) else prefix


def _spec(g: Genome, index: int) -> PropertySpec:
    strength = "medium" if g.rare(200) else g.pick(("strong", "strong", "weak"))
    locality = () if g.rare(200) else tuple(_prefix(g, DIRS) for _ in range(1 + g.byte() % 3))
    roots = tuple(_prefix(g, FIXTURE_ROOTS) for _ in range(g.pick((0, 0, 1, 1, 2))))
    src_dir = g.pick(("t", "t", "a/b", "pk", "t", "t", "a/b", "pk", "t/u", ""))
    srcs = (f"{src_dir}/p{index}.py" if src_dir else f"p{index}.py",)
    if g.rare(200):
        srcs = ("../escape.py",)
    pid = "p0" if g.rare(150) else f"p{index}"  # sometimes a duplicate id
    return PropertySpec(
        id=pid,
        strength=strength,
        locality=locality,
        fixture_roots=roots,
        predicate_srcs=srcs,
        package=g.pick(PACKAGES),
        label=f"//:{pid}",
        test_packages=g.subset((*PACKAGES, "t/u"), 2),
        touched_closure_packages=g.subset(CLOSURE_PACKAGES, 2) if g.rare(3) else (),
        touched_import_roots=g.subset(IMPORT_ROOTS, 2) if g.rare(4) else (),
        generated_modules=g.subset(GENERATED, 1) if g.rare(10) else (),
    )


def _changed_path(
    g: Genome, specials: tuple[str, ...], observed: tuple[str, ...], excused: tuple[str, ...]
) -> str:
    kind = g.byte() % 100  # 0 (what an all-zero genome decodes to) is a plain path
    if kind == 99:
        return g.pick(BAD_PATHS)
    if kind >= 88 and specials:
        return g.pick(specials)  # the ledger, a seal file, a predicate source, the rule set
    if kind >= 80:
        directory = g.pick(FIXTURE_ROOTS + OTHER_DIRS + ("",))
        name = g.pick(FILE_NAMES)
        return f"{directory}/{name}" if directory else name
    if kind == 79:
        return f"./{g.pick(observed)}//x.py"  # same file, unnormalized spelling
    if kind >= 74 and excused:
        return f"{g.pick(excused)}/notes.md"  # needs no vote, unless a test reads it
    if kind >= 72 and excused:
        return f"{g.pick(excused)}/BUILD.bazel"  # build configuration: never excused
    if kind >= 25:
        return f"{g.pick(observed)}/{g.pick(FILE_NAMES)}"
    return f"{g.pick(DIRS)}/x.py"


def decode(data: bytes) -> GateInputs:
    """Random gate inputs: mostly valid and passing, with every kind of trouble mixed in."""
    g = Genome(data)
    catalog = tuple(_spec(g, index) for index in range(g.pick((1, 2, 2, 3, 3, 4, 5, 0))))
    ids = [spec.id for spec in catalog]

    seals = []
    used = [r.removesuffix("/") for spec in catalog for r in spec.fixture_roots]
    for root in dict.fromkeys(
        r for r in (*used, *g.subset(FIXTURE_ROOTS, 2)) if r in FIXTURE_ROOTS
    ):
        if g.rare(60):
            continue  # a tree read but never sealed
        name = root.rsplit("/", 1)[-1]
        seal_file = g.pick((f"{root}/{name}.seal", f"seals/{name}.seal"))
        expected = None if g.rare(80) else ("h2" if g.rare(40) else "h1")
        actual = None if g.rare(80) else ("h2" if g.rare(40) else "h1")
        seals.append(
            FixtureSeal(
                agent_gate_pb2.FixtureTree(root=root, seal_file=seal_file), expected, actual
            )
        )

    ledger_path = g.pick(("ledger.txtpb", "gate/ledger.txtpb"))
    rule_set = g.subset(RULE_SET, 3)
    specials = (
        ledger_path,
        *(seal.tree.seal_file for seal in seals),
        *(src for spec in catalog for src in spec.predicate_srcs),
        *rule_set,
    )
    # Mostly strong localities: a path only a weak one observes has no voter (review).
    strong = [spec for spec in catalog if spec.strength == "strong"] or catalog
    observed = tuple(p.removesuffix("/") for s in strong for p in s.locality if p) or DIRS
    # The scheduled full strong pass: the same evaluator, with no diff.
    full_pass = g.rare(6)
    unobserved_ok = g.subset(UNOBSERVED_OK, 4)
    changed = tuple(
        _changed_path(g, specials, observed, unobserved_ok)
        for _ in range(0 if full_pass or g.rare(50) else g.pick((1, 1, 2, 2, 3, 4, 6)))
    )

    outcomes = {}
    for pid in ids:
        if not g.rare(25):
            codes, timeouts = g.pick(RUNS)
            outcomes[pid] = RunOutcome(exit_codes=codes, timed_out=timeouts)

    rows = []
    for _ in range(g.pick((0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 3)) if ids else 0):
        rows.append(
            LedgerRow(
                property_id=g.pick(ids) if ids and not g.rare(40) else "ghost",
                state="bogus" if g.rare(50) else g.pick(("open", "open", "retired")),
                opened_against_commit=g.pick(COMMITS),
                retire_by_commit_count=g.byte() % 6,
                owner=g.pick(("", "owner")),
            )
        )
    counts = {commit: g.byte() % 7 for commit in g.subset(COMMITS, 3)}
    unsandboxed = {pid: ("//a:gen (local = True)",) for pid in ids if g.rare(80)}
    sent_digest = ""
    if g.rare(4):
        sent_digest = "0" * 64 if g.rare(10) else changed_paths_digest(changed)
    override = None
    if g.rare(20):
        override = Override(
            by=g.pick(("", "alice", "alice")), ignored_ids=g.subset((*ids, "ghost"), 2)
        )
    return GateInputs(
        catalog=catalog,
        changed_paths=changed,
        outcomes=outcomes,
        fixtures=tuple(seals),
        ledger=tuple(rows),
        commit_counts=counts,
        debt_cap=-1 if g.rare(100) else g.pick((5, 5, 5, 5, 3, 2, 1, 0)),
        ledger_path=ledger_path,
        gate_package=g.pick(("", "gate")),
        rule_set_paths=rule_set,
        errors=("a loader error",) if g.rare(100) else (),
        override=override,
        run_id="prop",
        unobserved_ok=unobserved_ok,
        unsandboxed=unsandboxed,
        changed_paths_sha256=sent_digest,
        full_pass=full_pass,
    )


GENOMES = st.binary(min_size=160, max_size=400)


def _debt(inputs: GateInputs) -> int:
    ignored = set(inputs.override.ignored_ids) if inputs.override else set()
    debt = 0
    for row in inputs.ledger:
        if row.state != "open" or row.property_id in ignored:
            continue
        since = inputs.commit_counts.get(row.opened_against_commit)
        debt += 2 if since is None or since >= row.retire_by_commit_count else 1
    return debt


def _frozen(inputs: GateInputs) -> set[str]:
    return {row.property_id for row in inputs.ledger if row.state == "open"}


def _matched(inputs: GateInputs, paths: list[str]) -> set[str]:
    if inputs.full_pass:
        return {spec.id for spec in inputs.catalog if spec.strength == "strong"}
    return {
        spec.id
        for spec in inputs.catalog
        if any(_covers(p, path) for p in spec.locality if _is_valid_prefix(p) for path in paths)
    }


def _classify(outcome: RunOutcome) -> str:
    tokens = [
        "timeout" if t else c for c, t in zip(outcome.exit_codes, outcome.timed_out, strict=True)
    ]
    if tokens == [0, 0]:
        return "pass"
    return "fail" if tokens[0] == tokens[1] else "flake"


def blockers(inputs: GateInputs) -> list[str]:
    """Everything that must keep this patch from promoting, found without quorum.py."""
    found: list[str] = []
    if inputs.errors:
        found.append("loader errors")
    paths = [_normal_path(path) for path in inputs.changed_paths]
    if None in paths:
        found.append("an invalid changed path")
    paths = [path for path in paths if path is not None]

    ids = [spec.id for spec in inputs.catalog]
    if len(set(ids)) != len(ids):
        found.append("duplicate ids")
    for spec in inputs.catalog:
        if spec.strength not in ("strong", "weak"):
            found.append(f"{spec.id}: bad strength")
        if not spec.locality or not all(_is_valid_prefix(p) for p in spec.locality):
            found.append(f"{spec.id}: bad locality")
        if not all(_is_valid_prefix(root) for root in spec.fixture_roots):
            found.append(f"{spec.id}: bad fixture root")

    opened = collections.Counter(row.property_id for row in inputs.ledger if row.state == "open")
    for row in inputs.ledger:
        if row.state not in ("open", "retired"):
            found.append(f"ledger row of {row.property_id}: bad state")
        if row.property_id not in ids:
            found.append(f"ledger row of unknown {row.property_id}")
    if any(n > 1 for n in opened.values()):
        found.append("two open rows for one property")
    if inputs.override is not None:
        override = inputs.override
        if not override.by or not override.ignored_ids:
            found.append("incomplete override")
        if any(pid not in opened for pid in override.ignored_ids):
            found.append("override of a row that is not open")
    if inputs.debt_cap < 0:
        found.append("negative debt cap")
    if _debt(inputs) > inputs.debt_cap:
        found.append("debt over the cap")

    matched = _matched(inputs, paths)
    frozen = _frozen(inputs)
    guards = [root for spec in inputs.catalog for root in spec.fixture_roots]
    for seal in inputs.fixtures:
        guards += [seal.tree.root, seal.tree.seal_file]
        if seal.expected is None or seal.actual is None:
            found.append(f"unreadable seal of {seal.tree.root}")
        elif seal.expected != seal.actual:
            found.append(f"{seal.tree.root} drifted")
    guards += [inputs.ledger_path, *inputs.rule_set_paths]
    # Every row's predicate is guarded, matched or not.
    for spec in inputs.catalog:
        for src in spec.predicate_srcs:
            if _normal_path(src) is None:
                found.append(f"{spec.id}: bad predicate source")
            else:
                guards.append(_normal_path(src))
    for spec in inputs.catalog:
        if spec.id not in matched:
            continue
        if spec.id in inputs.unsandboxed:
            found.append(f"{spec.id}: its test's closure would run unsandboxed")
        for module in spec.generated_modules:
            if module.removesuffix("/__init__.py").rpartition("/")[2].split(".")[0] in SHADOWED:
                found.append(f"{spec.id}: its build generates {module}, shadowing an import")
        for root in spec.fixture_roots:
            if not any(_covers(seal.tree.root, root) for seal in inputs.fixtures):
                found.append(f"{spec.id}: reads the unsealed tree {root}")
        if spec.id not in inputs.outcomes:
            found.append(f"{spec.id}: no run outcome")
    if inputs.changed_paths_sha256 not in ("", changed_paths_digest(inputs.changed_paths)):
        found.append("the paths the gate saw are not the ones sent")
    packages = {spec.package for spec in inputs.catalog} | {inputs.gate_package}
    packages |= {package for spec in inputs.catalog for package in spec.test_packages}
    # Beside a predicate: the tree of its srcs' directories (only the files of the root
    # directory itself), minus what any property's locality observes.
    beside = {
        _normal_path(src).rpartition("/")[0]
        for spec in inputs.catalog
        for src in spec.predicate_srcs
        if _normal_path(src) is not None
    }
    observed = [p for spec in inputs.catalog for p in spec.locality if _is_valid_prefix(p)]
    # Who may vote on a path: a strong locality; a weak one never fills the gap.
    voters = [
        p
        for spec in inputs.catalog
        if spec.strength == "strong"
        for p in spec.locality
        if _is_valid_prefix(p)
    ]
    read_by_tests = [p for spec in inputs.catalog for p in spec.touched_closure_packages]
    # Where a touched top-level module would be imported: the test's own directory,
    # the import roots the gate found.
    import_path = {
        root
        for spec in inputs.catalog
        for root in (
            *spec.touched_import_roots,
            *(s.rpartition("/")[0] for s in spec.predicate_srcs),
        )
    }
    for path in paths:
        if not any(_covers(prefix, path) for prefix in (*voters, *inputs.unobserved_ok)):
            found.append(f"{path} has no voter")
        # A test may read anything at or below a package of its closure: no excuse.
        if not any(_covers(prefix, path) for prefix in voters) and any(
            package == "" or _covers(package, path) for package in read_by_tests
        ):
            found.append(f"{path} is in a package a test reads, with no voter")
        # An alias in a BUILD file redirects a test's data, unseen by any closure.
        if (
            path.rpartition("/")[2] in ("BUILD", "BUILD.bazel")
            and not any(_covers(prefix, path) for prefix in voters)
            and any(_covers(prefix, path) for prefix in inputs.unobserved_ok)
        ):
            found.append(f"BUILD file {path} under unobserved_ok, with no voter")
        # An archive (`imports = ["x.zip"]`) is an import root, or holds one.
        if any(root == path or root.startswith(path + "/") for root in import_path):
            found.append(f"{path} is an archive on a test's import path")
        module_dir, _, module_file = path.rpartition("/")
        if module_file.split(".")[0] in SHADOWED and module_dir in import_path:
            found.append(f"{path} shadows a module a test imports")
        # A directory named like protobuf's namespace package joins it, at any depth.
        components = path.split("/")
        if any(
            components[end] == "google" and "/".join(components[:end]) in import_path
            for end in range(len(components) - 1)
        ):
            found.append(f"{path} joins the namespace package google")
        if path.rpartition("/")[2] in ("conftest.py",) or path.endswith(".pth"):
            found.append(f"import hook {path}")
        if any(_is_valid_prefix(guard) and _covers(guard, path) for guard in guards):
            found.append(f"guarded path {path}")
        directory, _, name = path.rpartition("/")
        if name in ("BUILD", "BUILD.bazel") and directory in packages:
            found.append(f"guarded BUILD file {path}")
        if name.endswith((".bzl", ".scl")):
            found.append(f"Starlark file {path}")
        # What configures Bazel itself, by name, wherever it is.
        if (
            name in (".bazelignore", ".bazelversion", ".bazeliskrc", "REPO.bazel")
            or name.startswith(("WORKSPACE", "MODULE.bazel"))
            or name.endswith(("bazelrc", ".MODULE.bazel"))
            or path == "tools/bazel"
            or path.endswith("/tools/bazel")
        ):
            found.append(f"Bazel configuration {path}")
        near = any(
            (folder == "" and directory == "") or (folder and _covers(folder, directory))
            for folder in beside
        )
        if near and not any(_covers(prefix, path) for prefix in observed):
            found.append(f"{path} beside a predicate")

    strong = [s for s in inputs.catalog if s.id in matched and s.strength == "strong"]
    if not strong:
        found.append("no strong property matched")
    elif all(spec.id in frozen for spec in strong):
        found.append("empty strong quorum")
    for spec in inputs.catalog:
        if spec.id in matched and spec.id not in frozen and spec.id in inputs.outcomes:
            kind = _classify(inputs.outcomes[spec.id])
            if kind != "pass":
                found.append(f"{spec.strength} {spec.id}: {kind}")
    return found


def check_report(test: absltest.TestCase, inputs: GateInputs, result) -> None:
    """Every invariant of one evaluated example."""
    why_not = blockers(inputs)
    decision = result.decision
    if decision == "promote":
        test.assertEqual(why_not, [], "promoted although something blocks")
        test.assertEmpty(result.errors)
        test.assertEmpty(result.guarded_paths)
        test.assertLessEqual(result.debt, result.debt_cap)
        votes = [row for row in result.rows if row.vote == "yes" and row.strength == "strong"]
        test.assertNotEmpty(votes, "promoted on an empty strong quorum")
        for row in result.rows:
            if row.matched and row.ledger_state != "open":
                test.assertEqual(row.classification, "pass", row.property_id)
                test.assertEqual(list(row.exit_codes), [0, 0], row.property_id)
            if row.ledger_state != "open":  # an excluded row's runs do not vote
                test.assertNotIn(row.classification, ("error", "fail", "flake"))
        test.assertTrue(all(f.status in ("match", "touched") for f in result.fixtures))
    else:
        test.assertNotEqual(why_not, [], f"{decision} although nothing blocks: {result.reasons}")
    test.assertEqual(_debt(inputs), result.debt)

    # Votes: yes only for a matched, unfrozen pass; a matched frozen row is excluded.
    test.assertEqual([row.property_id for row in result.rows], [s.id for s in inputs.catalog])
    for row in result.rows:
        if row.vote == "yes":
            test.assertTrue(row.matched, row.property_id)
            test.assertEqual(row.classification, "pass", row.property_id)
            test.assertNotEqual(row.ledger_state, "open", row.property_id)
        if row.matched and row.ledger_state == "open":
            test.assertEqual(row.vote, "excluded", row.property_id)
            test.assertIn("not a pass", row.note)
        if not row.matched:
            test.assertEqual((row.vote, row.classification), ("not_voting", "not_run"))
            test.assertEmpty(row.exit_codes)

    # The decision is the reason of highest precedence; reasons come in that order.
    test.assertNotEmpty(result.reasons)
    ranks = [RANK[reason.split(":", 1)[0]] for reason in result.reasons]
    test.assertEqual(ranks, sorted(ranks), result.reasons)
    test.assertEqual(decision, ORDER[ranks[0]])
    test.assertEqual(result.rule, result.reasons[0])
    if decision == "promote":
        test.assertLen(result.reasons, 1)


def _reproducible(examples: int):
    """Hypothesis settings for a fixed, derandomized run of `examples` inputs."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


class QuorumPropertyTest(absltest.TestCase):
    def test_only_an_earned_pass_promotes(self):
        seen: collections.Counter[str] = collections.Counter()

        @_reproducible(EXAMPLES)
        @given(GENOMES)
        def check(genome: bytes) -> None:
            inputs = decode(genome)
            note(repr(inputs))
            result = evaluate(inputs)
            seen[result.decision] += 1
            if inputs.full_pass:
                seen_full_pass[result.decision] += 1
            check_report(self, inputs, result)

        seen_full_pass: collections.Counter[str] = collections.Counter()
        check()
        print(f"decisions over {sum(seen.values())} examples: {dict(seen)}")
        print(f"of them full strong passes: {dict(seen_full_pass)}")
        for decision in ("promote", "reject", "hold", "fixture_fault"):
            self.assertGreater(seen_full_pass[decision], 10, dict(seen_full_pass))
        self.assertGreaterEqual(sum(seen.values()), EXAMPLES)
        for decision in ORDER:
            self.assertGreater(seen[decision], 200, f"too few {decision} examples: {dict(seen)}")

    def test_writers_never_report_an_excluded_row_as_passed(self):
        @_reproducible(WRITER_EXAMPLES)
        @given(GENOMES)
        def check(genome: bytes) -> None:
            result = evaluate(decode(genome))
            data = json.loads(report.to_json(result))
            self.assertEqual(data["decision"], result.decision)
            votes = {row["property_id"]: row["vote"] for row in data["rows"]}
            for row in result.rows:
                self.assertEqual(votes[row.property_id], row.vote)

            suite = ET.fromstring(report.to_junit(result)).find("testsuite")
            cases = {case.get("name"): case for case in suite.iter("testcase")}
            decision_failed = cases["decision"].find("failure") is not None
            self.assertEqual(decision_failed, result.decision != "promote")
            for row in result.rows:
                if row.vote == "excluded":
                    case = cases[row.property_id]
                    self.assertIsNotNone(case.find("skipped"), row.property_id)
                    self.assertIn("not a pass", case.find("skipped").get("message"))
            first = report.to_markdown(result).splitlines()[0].replace("\\", "")
            self.assertTrue(first.startswith(f"**agent_gate: {result.decision}**"), first)

        check()


# Directories a patch touches and a test's closure may hold: nested, siblings alike
# in name, the root.
CLOSURE_DIRS = ("", "docs", "docs/golden", "docs/golden/deep", "docs/golden_v2", "notes", "lib")


class ClosurePackagesPropertyTest(absltest.TestCase):
    """`unobserved_ok` excuses a path only when no test's closure holds it, and never a BUILD file.

    Each example is one passing strong property on `lib` plus paths under
    `unobserved_ok = ("docs", "notes")`, with random closure packages: the main
    test above rarely reaches this rule with nothing else blocking.
    """

    def test_a_path_a_test_may_read_is_never_excused(self):
        @_reproducible(2_000)
        @given(
            st.lists(st.sampled_from(CLOSURE_DIRS), max_size=3),
            st.lists(
                st.tuples(st.sampled_from(CLOSURE_DIRS[1:]), st.sampled_from(("a.md", "BUILD"))),
                min_size=1,
                max_size=3,
            ),
        )
        def check(packages: list[str], touched: list[tuple[str, str]]) -> None:
            paths = ["lib/x.py", *(f"{directory}/{name}" for directory, name in touched)]
            inputs = GateInputs(
                catalog=(
                    PropertySpec(
                        "lib.ok",
                        "strong",
                        ("lib",),
                        touched_closure_packages=tuple(packages),
                    ),
                ),
                changed_paths=tuple(paths),
                outcomes={"lib.ok": RunOutcome(exit_codes=(0, 0))},
                unobserved_ok=("docs", "notes", "lib"),
            )
            result = evaluate(inputs)
            # A BUILD file under unobserved_ok is never excused either (an alias there
            # redirects what a test reads, unseen by its closure).
            read = [
                path
                for path in paths
                if not _covers("lib", path)
                and (
                    any(package == "" or _covers(package, path) for package in packages)
                    or path.endswith("/BUILD")
                )
            ]
            if read:
                self.assertEqual(result.decision, "review", (packages, paths))
                self.assertLen(result.guarded_paths, len(set(read)), result.guarded_paths)
            else:
                self.assertEqual(
                    result.decision, "promote", str((packages, paths, list(result.reasons)))
                )

        check()


if __name__ == "__main__":
    absltest.main()

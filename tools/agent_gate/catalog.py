"""The catalog as the build graph declares it, and as reviewers read it.

`bazel build --output_groups=agent_gate_config //:agent_gate` runs no property; it
writes the rule's config, `bazel-bin/agent_gate.gate.json` (see rules/private/gate.bzl): the
catalog rows, the sealed fixture trees, the ledger path and the debt cap. That
file, not a re-parse of BUILD text, is where the CLI learns the catalog.
`render` prints it in the article's YAML shape (or JSON).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

from agent_gate import bazel, bazel_build, quorum, worktree
from agent_gate.progress import Progress
from agent_gate.usage import CliError

CONFIG_NAME = "agent_gate.gate.json"
CONFIG_GROUP = "agent_gate_config"  # the output group holding only that file
FORMATS = ("yaml", "json")


@dataclass(frozen=True)
class Fixture:
    """A sealed fixture tree: its root and its committed seal file, repo-relative."""

    root: str
    seal_file: str
    label: str


@dataclass(frozen=True)
class Catalog:
    """What the gate target declares."""

    gate_label: str
    gate_package: str
    properties: tuple[quorum.PropertySpec, ...]
    fixtures: tuple[Fixture, ...]
    ledger_path: str
    debt_cap: int
    rule_set_paths: tuple[str, ...]
    admission_mutants: Mapping[str, tuple[str, ...]]  # property id -> repo-relative patches
    unobserved_ok: tuple[str, ...] = ()
    # Matched property id -> targets of its test's closure that would run unsandboxed
    # (only under the gate flags the catalog was built with).
    unsandboxed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def ids(self) -> list[str]:
        return [spec.id for spec in self.properties]

    def get(self, property_id: str) -> quorum.PropertySpec:
        """The property with this id, or CliError naming the ids that exist."""
        for spec in self.properties:
            if spec.id == property_id:
                return spec
        close = difflib.get_close_matches(property_id, self.ids, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise CliError(
            f"unknown property {property_id!r}: {self.gate_label} has no such catalog row; "
            f"{hint}known ids: {', '.join(self.ids) or '(none)'} (see `agent-gate catalog`)"
        )

    def fixtures_of(self, property_id: str) -> tuple[Fixture, ...]:
        roots = set(self.get(property_id).fixture_roots)
        return tuple(tree for tree in self.fixtures if tree.root in roots)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{where} is not a list of strings")
    return tuple(value)


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where} is not a string")
    return value


def _unsandboxed(value: Any) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        raise ValueError("unsandboxed is not an object")
    return {str(key): _strings(targets, f"unsandboxed[{key}]") for key, targets in value.items()}


def parse_config(data: Any) -> Catalog:
    """The Catalog of a gate config (the rule's JSON); ValueError if it is not one."""
    if not isinstance(data, dict):
        raise ValueError("the gate config is not a JSON object")
    try:
        rows = data["catalog"]
        if not isinstance(rows, list):
            raise ValueError("catalog is not a list")
        properties = []
        mutants: dict[str, tuple[str, ...]] = {}
        for index, row in enumerate(rows):
            where = f"catalog[{index}]"
            if not isinstance(row, dict):
                raise ValueError(f"{where} is not an object")
            spec = quorum.PropertySpec(
                id=_string(row["id"], f"{where}.id"),
                strength=_string(row["strength"], f"{where}.strength"),
                locality=_strings(row["locality"], f"{where}.locality"),
                fixture_roots=_strings(row["fixture_roots"], f"{where}.fixture_roots"),
                predicate_srcs=_strings(row["predicate_srcs"], f"{where}.predicate_srcs"),
                package=_string(row["package"], f"{where}.package"),
                label=_string(row["label"], f"{where}.label"),
                test_packages=_strings(row.get("test_packages", []), f"{where}.test_packages"),
                test=_string(row.get("test", ""), f"{where}.test"),
            )
            properties.append(spec)
            declared = _strings(row.get("admission_mutants", []), f"{where}.admission_mutants")
            if declared:
                mutants[spec.id] = declared
        fixtures = tuple(
            Fixture(
                root=_string(tree["root"], "fixtures[].root"),
                seal_file=_string(tree["seal_file"], "fixtures[].seal_file"),
                label=_string(tree.get("label", ""), "fixtures[].label"),
            )
            for tree in data["fixtures"]
        )
        debt_cap = data["debt_cap"]
        if isinstance(debt_cap, bool) or not isinstance(debt_cap, int):
            raise ValueError("debt_cap is not an integer")
        return Catalog(
            gate_label=_string(data["gate_label"], "gate_label"),
            gate_package=_string(data["gate_package"], "gate_package"),
            properties=tuple(properties),
            fixtures=fixtures,
            ledger_path=_string(data["ledger"]["path"], "ledger.path"),
            debt_cap=debt_cap,
            rule_set_paths=_strings(data["rule_set_paths"], "rule_set_paths"),
            admission_mutants=mutants,
            unobserved_ok=_strings(data.get("unobserved_ok", []), "unobserved_ok"),
            unsandboxed=_unsandboxed(data.get("unsandboxed", {})),
        )
    except (KeyError, TypeError) as error:
        raise ValueError(f"the gate config lacks {error}") from None


def read_config(path: Path) -> Catalog:
    try:
        return parse_config(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as error:
        raise CliError(
            f"cannot read the gate's config {path} ({error}); the agent_gate rule set and this "
            "CLI disagree: use the CLI of the same agent_gate checkout as the workspace pins"
        ) from None


def build(
    workspace: Path,
    progress: Progress,
    log_dir: Path,
    shown: str | None = None,
    gate_flags: Sequence[str] = (),
) -> Catalog:
    """Build //:agent_gate's config alone (it runs no property) and read it.

    `gate_flags`: the flags the gate will run with next, if known. The catalog does
    not depend on them, but Bazel re-analyses the whole graph whenever they change:
    with them, the gate's own run after the patch is only incremental.
    """
    progress.step(f"reading the catalog: bazel build {bazel_build.GATE_TARGET} in {workspace}")

    def build_config(flags: Sequence[str]) -> None:
        bazel_build.build_gate(
            workspace,
            [f"--output_groups={CONFIG_GROUP}", *flags],
            progress=progress,
            log_path=log_dir / "catalog.log",
            what="catalog",
            shown=shown,
        )

    try:
        build_config(gate_flags)
    except CliError:
        if not gate_flags:
            raise
        # The flags themselves can be what fails (a workspace without @agent_gate):
        # build as without them, so that a failure names its real cause.
        build_config(())
    return read_config(bazel_build.bazel_bin(workspace) / CONFIG_NAME)


def _fixtures_value(roots: tuple[str, ...], article_shape: bool) -> str | list[str]:
    """The article writes one fixture directory as `fixtures/responses/`; JSON keeps a list."""
    shown = [root.rstrip("/") + "/" for root in roots]
    return shown[0] if article_shape and len(shown) == 1 else shown


def as_document(catalog: Catalog, article_shape: bool = True) -> dict[str, Any]:
    """The catalog as reviewers read it: properties with id, strength, locality, fixtures.

    `article_shape`: one fixture tree is a string, as the article's YAML writes it;
    otherwise `fixtures` is always a list, so a machine reading JSON sees one type.
    """
    rows: list[dict[str, Any]] = []
    for spec in catalog.properties:
        row: dict[str, Any] = {
            "id": spec.id,
            "strength": spec.strength,
            "locality": list(spec.locality),
            "fixtures": _fixtures_value(spec.fixture_roots, article_shape),
            "label": spec.label,
        }
        mutants = catalog.admission_mutants.get(spec.id)
        if mutants:
            row["admission_mutants"] = list(mutants)
        rows.append(row)
    return {
        "gate": catalog.gate_label,
        "ledger": catalog.ledger_path,
        "debt_cap": catalog.debt_cap,
        "properties": rows,
    }


class _ArticleDumper(yaml.SafeDumper):
    """Indents list items under their key (`properties:` then `  - id: ...`), as the article."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def render(catalog: Catalog, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(as_document(catalog, article_shape=False), indent=2) + "\n"
    document = as_document(catalog)
    if fmt != "yaml":
        raise CliError(f"unknown catalog format {fmt!r}; use one of {', '.join(FORMATS)}")
    header = f"# catalog of {catalog.gate_label}, read from the build graph\n"
    body = yaml.dump(
        document, Dumper=_ArticleDumper, sort_keys=False, default_flow_style=None, width=100
    )
    return header + body


def show(workspace: Path | None, base: str, fmt: str, progress: Progress, out: TextIO) -> int:
    """`agent-gate catalog`: build the graph at `base` in the scoring worktree, print it."""
    bazel_build.bazel_binary()
    repo = worktree.open_repo(workspace)
    sha = worktree.resolve_rev(repo, base)
    with worktree.locked(repo, progress):
        scoring = worktree.prepare(repo, sha, progress)
        log_dir = repo.state_dir / "runs" / bazel.new_run_id("catalog")
        catalog = build(scoring, progress, log_dir, worktree.describe(repo, sha))
    out.write(render(catalog, fmt))
    return 0

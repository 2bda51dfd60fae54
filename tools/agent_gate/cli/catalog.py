"""The catalog as the build graph declares it, and as reviewers read it.

`bazel build --output_groups=agent_gate_config //:agent_gate` runs no property; it
writes the rule's config, `bazel-bin/agent_gate.gate.json` (an `agent_gate.GateConfig`,
read by gate_config.py): the catalog rows, the sealed fixture trees, the ledger path
and the debt cap. That file, not a re-parse of BUILD text, is where the CLI learns
the catalog.
`render` prints it in the YAML shape of docs/article.md (or JSON).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

from agent_gate.core import quorum
from agent_gate.drive import bazel_client, gate_target, worktree
from agent_gate.drive.exit_codes import CliError
from agent_gate.drive.progress import Progress
from agent_gate.formats import gate_config
from proto import agent_gate_pb2

CONFIG_NAME = "agent_gate.gate.json"
CONFIG_GROUP = "agent_gate_config"  # the output group holding only that file
FORMATS = ("yaml", "json")


@dataclass(frozen=True)
class Catalog:
    """What the gate target declares."""

    gate_label: str
    gate_package: str
    properties: tuple[quorum.PropertySpec, ...]
    fixtures: tuple[agent_gate_pb2.FixtureTree, ...]
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

    def fixtures_of(self, property_id: str) -> tuple[agent_gate_pb2.FixtureTree, ...]:
        roots = set(self.get(property_id).fixture_roots)
        return tuple(tree for tree in self.fixtures if tree.root in roots)


def from_config(config: agent_gate_pb2.GateConfig) -> Catalog:
    """The Catalog a gate config declares."""
    return Catalog(
        gate_label=config.gate_label,
        gate_package=config.gate_package,
        properties=gate_config.property_specs(config),
        fixtures=tuple(config.fixtures),
        ledger_path=config.ledger.path,
        debt_cap=config.debt_cap,
        rule_set_paths=tuple(config.rule_set_paths),
        admission_mutants={
            row.id: tuple(row.admission_mutants) for row in config.catalog if row.admission_mutants
        },
        unobserved_ok=tuple(config.unobserved_ok),
        unsandboxed=gate_config.unsandboxed(config),
    )


def read_config(path: Path) -> Catalog:
    try:
        return from_config(gate_config.parse(path.read_bytes()))
    except (OSError, gate_config.ConfigError) as error:
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
    progress.step(f"reading the catalog: bazel build {gate_target.GATE_TARGET} in {workspace}")

    def build_config(flags: Sequence[str]) -> None:
        gate_target.build_gate(
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
    return read_config(bazel_client.bazel_bin(workspace) / CONFIG_NAME)


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
    bazel_client.bazel_binary()
    repo = worktree.open_repo(workspace)
    sha = worktree.resolve_rev(repo, base)
    with worktree.locked(repo, progress):
        scoring = worktree.prepare(repo, sha, progress)
        log_dir = repo.state_dir / "runs" / gate_target.new_run_id("catalog")
        catalog = build(scoring, progress, log_dir, worktree.describe(repo, sha))
    out.write(render(catalog, fmt))
    return 0

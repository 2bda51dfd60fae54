"""Every sealed fixture tree of a checkout, sealed on the real filesystem and compared.

This is "seal before the patch is applied" (docs/article.md): `seal.seal_tree` over the
tree as `find` would walk it from the workspace root, against the committed seal
file. A seal file that cannot be read is a configuration error (CliError); a
mismatch is data (`drifted`): the base tree drifted, a fixture fault.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agent_gate.core import quorum
from agent_gate.drive.exit_codes import CliError
from agent_gate.formats import seal
from proto import agent_gate_pb2


def check(
    workspace: Path, trees: Sequence[agent_gate_pb2.FixtureTree]
) -> tuple[quorum.FixtureSeal, ...]:
    """The expected and actual seal of each tree, relative to `workspace`."""
    seals: list[quorum.FixtureSeal] = []
    for tree in trees:
        try:
            expected = seal.read_seal_file(workspace / tree.seal_file)
            # bazel_names: a name Bazel refuses would fail the gate's build later,
            # or (not UTF-8, Bazel 7) be left out of its seal.
            actual = seal.seal_tree(workspace, tree.root, bazel_names=True)
        except seal.SealError as error:
            raise CliError(
                f"fixture tree {tree.root} ({tree.label or 'sealed_fixtures'}): {error}"
            ) from None
        seals.append(quorum.FixtureSeal(tree=tree, expected=expected, actual=actual))
    return tuple(seals)


def drifted(seals: Sequence[quorum.FixtureSeal]) -> list[quorum.FixtureSeal]:
    return [one for one in seals if one.expected != one.actual]


def describe(seals: quorum.FixtureSeal) -> str:
    return (
        f"{seals.tree.root}: committed seal {seals.tree.seal_file} says "
        f"{(seals.expected or '?')[:12]}, the tree seals to {(seals.actual or '?')[:12]}"
    )

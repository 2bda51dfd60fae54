"""The one reader of the gate config: what an `agent_gate` target hands its test and the CLI.

rules/private/gate.bzl writes an `agent_gate.GateConfig` message in the proto's JSON
form, `bazel-bin/<gate>.gate.json`. Both the evaluator (inside the test) and the CLI
(which builds only that file to learn the catalog) read it here, strictly: a field
the proto does not know, a value of the wrong type or an unknown mode is an error,
never a default. So the rule set and this tool cannot drift apart silently.
"""

from __future__ import annotations

from google.protobuf import json_format

from agent_gate.core import quorum
from proto import agent_gate_pb2

MODES = ("gate", "full_strong_pass")


class ConfigError(ValueError):
    """The file is not a GateConfig this tool can read."""


def parse(text: str | bytes) -> agent_gate_pb2.GateConfig:
    """The GateConfig in `text` (JSON), or ConfigError saying what is wrong."""
    config = agent_gate_pb2.GateConfig()
    try:
        json_format.Parse(text, config)
    except (json_format.ParseError, ValueError, TypeError) as error:
        raise ConfigError(str(error)) from None
    if config.mode not in MODES:
        raise ConfigError(f"mode {config.mode!r} is not one of {', '.join(MODES)}")
    if not config.gate_label:
        raise ConfigError("gate_label is empty")
    if config.debt_cap < 0:
        raise ConfigError(f"debt_cap {config.debt_cap} is negative")
    return config


def property_spec(row: agent_gate_pb2.Property) -> quorum.PropertySpec:
    """A catalog row as the evaluator takes it."""
    return quorum.PropertySpec(
        id=row.id,
        strength=row.strength,
        locality=tuple(row.locality),
        fixture_roots=tuple(row.fixture_roots),
        predicate_srcs=tuple(row.predicate_srcs),
        package=row.package,
        label=row.label,
        test_packages=tuple(row.test_packages),
        test=row.test,
        touched_closure_packages=tuple(row.touched_closure_packages),
        touched_import_roots=tuple(row.touched_import_roots),
        generated_modules=tuple(row.generated_modules),
    )


def property_specs(config: agent_gate_pb2.GateConfig) -> tuple[quorum.PropertySpec, ...]:
    return tuple(property_spec(row) for row in config.catalog)


def unsandboxed(config: agent_gate_pb2.GateConfig) -> dict[str, tuple[str, ...]]:
    """Matched property id -> targets of its test's closure that would run unsandboxed."""
    return {key: tuple(value.targets) for key, value in config.unsandboxed.items()}

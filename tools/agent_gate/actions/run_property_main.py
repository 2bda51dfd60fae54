"""Entry point of the PropertyDoubleRun action: run a property twice, write the result.

Fixture names come in a params file after the flags, behind a probe line
(`--names_probe`; see params_names.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from agent_gate.actions import runner
from agent_gate.formats import params_names, run_result


def _arguments(argv: list[str]) -> argparse.Namespace:
    # No fromfile_prefix_chars: the params file of names is read as bytes, below.
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--property_id", required=True)
    parser.add_argument("--label", required=True)
    parser.add_argument("--executable", required=True, type=Path)
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--timeout_seconds", required=True, type=float)
    parser.add_argument("--run_id", default="")
    parser.add_argument("--test_arg", action="append", default=[])
    parser.add_argument("--test_env", action="append", default=[])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--log", action="append", type=Path, required=True)
    parser.add_argument("--repo_root", type=Path, default=Path("."))
    parser.add_argument("--names_probe", default="")
    parser.add_argument("fixture_params", metavar="@PARAMS", nargs="?")
    args = parser.parse_args(argv)
    if args.fixture_params is not None and (
        not args.fixture_params.startswith("@") or not args.names_probe
    ):
        parser.error("fixture names come in a params file, @PARAMS, with --names_probe")
    return args


def _fixture_names(args: argparse.Namespace) -> tuple[bytes, ...]:
    if args.fixture_params is None:
        return ()
    probe = os.fsencode(args.names_probe)
    return tuple(params_names.read_names(Path(args.fixture_params[1:]), probe))


def _pair(item: str) -> tuple[str, str]:
    key, _, value = item.partition("=")
    return key, value


def main(argv: list[str]) -> int:
    args = _arguments(argv)
    if len(args.log) != 2:
        print("run_property: need exactly two --log paths", file=sys.stderr)
        return 2
    try:
        fixture_names = _fixture_names(args)
    except params_names.ParamsError as error:
        print(f"run_property: {error}", file=sys.stderr)
        return 2
    spec = runner.RunSpec(
        property_id=args.property_id,
        label=args.label,
        executable=args.executable.absolute(),
        workspace=args.workspace,
        timeout_seconds=args.timeout_seconds,
        run_id=args.run_id,
        repo_root=args.repo_root,
        fixture_paths=fixture_names,
        test_args=tuple(args.test_arg),
        test_env=tuple(_pair(item) for item in args.test_env),
    )
    double_run = runner.run_twice(spec, args.log)
    # Write then rename, so a killed runner leaves no half-written result.
    partial = args.out.with_name(args.out.name + ".partial")
    partial.write_text(run_result.to_text(double_run), encoding="utf-8")
    os.replace(partial, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

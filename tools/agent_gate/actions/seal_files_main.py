"""Entry point of the FixtureSeal action: seal a list of repo-relative files.

    seal_files --out OUT --repo_root ROOT --names_probe PROBE @PARAMS

PARAMS holds PROBE on its first line, then one name a line; see params_names.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from agent_gate.formats import params_names, seal


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--repo_root", required=True, type=Path)
    parser.add_argument("--names_probe", required=True)
    # The params file is read here, as bytes, not by argparse: it would decode names
    # with the locale and take a name starting with '-' for an option.
    parser.add_argument("params", metavar="@PARAMS")
    args = parser.parse_args(argv)
    if not args.params.startswith("@"):
        parser.error("the file names come in a params file: @PARAMS")
    try:
        names = params_names.read_names(Path(args.params[1:]), os.fsencode(args.names_probe))
        digest = seal.seal_files(args.repo_root, names)
    except (params_names.ParamsError, seal.SealError) as error:
        # Unsealable names fail the build: there is no digest to compare.
        print(f"agent_gate: FixtureSeal: {error}", file=sys.stderr)
        return 1
    args.out.write_text(seal.seal_line(digest), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

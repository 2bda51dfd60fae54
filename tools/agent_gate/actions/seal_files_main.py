"""Entry point of the FixtureSeal action: seal a list of repo-relative files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agent_gate.formats import seal


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(fromfile_prefix_chars="@", description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--repo_root", required=True, type=Path)
    parser.add_argument("paths", nargs="*")
    args = parser.parse_intermixed_args(argv)
    try:
        digest = seal.seal_files(args.repo_root, args.paths)
    except seal.SealError as error:
        # Unsealable names fail the build: there is no digest to compare.
        print(f"agent_gate: {error}", file=sys.stderr)
        return 1
    args.out.write_text(seal.seal_line(digest), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

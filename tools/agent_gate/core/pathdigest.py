"""The digest of a changed-path list: how the CLI and the gate agree they saw the same paths.

The CLI hands the gate its changed paths through Bazel flags (argv or an rc file).
Both sides digest the exact list, in order, so any byte lost or shifted on the way
is a configuration error instead of a silently different diff.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def changed_paths_digest(paths: Iterable[str]) -> str:
    """sha256 over the paths' bytes (UTF-8, undecodable bytes kept), each ended by NUL."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.encode("utf-8", "surrogateescape"))
        digest.update(b"\0")
    return digest.hexdigest()

"""Entry point of the PythonBytecode action: modules compiled into their __pycache__.

Arguments: a cache directory, then `--source FILE` for each module beside it,
repeated for every directory. It imports nothing of agent_gate: it compiles it.
"""

from __future__ import annotations

import importlib.util
import py_compile
import sys
from pathlib import Path


def compile_all(argv: list[str]) -> None:
    cache: Path | None = None
    words = iter(argv)
    for word in words:
        if word != "--source":
            cache = Path(word)
            cache.mkdir(parents=True, exist_ok=True)
            continue
        source = next(words)
        if cache is None:
            raise SystemExit("bytecode: a --source before its cache directory")
        # The interpreter's own name for it (`quorum.cpython-311.pyc`), and a hash of
        # the source in it: a .pyc for other bytes is never used.
        name = Path(importlib.util.cache_from_source(source)).name
        py_compile.compile(
            source,
            cfile=str(cache / name),
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
        )


if __name__ == "__main__":
    try:
        compile_all(sys.argv[1:])
    except (OSError, py_compile.PyCompileError) as error:
        sys.exit(f"bytecode: {error}")

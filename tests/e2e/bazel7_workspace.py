"""A scratch workspace driven by the Bazel 7.7.1 lane, for the end-to-end tests that use it.

Not below /tmp: Bazel 7's hermetic /tmp would hide the workspace from the
sandbox. Each workspace has a private output base; `close` shuts its server
down and deletes everything, read-only trees Bazel leaves included.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BAZEL7 = ROOT / "tools" / "bazel7"


class Bazel7Workspace:
    def __init__(self, prefix: str, name: str = "ws") -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
        self.root = self.tmp / name
        self.output_base = self.tmp / "output_base"

    def bazel(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """`tools/bazel7 ARGS` in the workspace, on its private output base."""
        return subprocess.run(
            [str(BAZEL7), f"--output_base={self.output_base}", *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            errors="backslashreplace",  # Bazel 7.7.1 prints some file names as Latin-1
            timeout=timeout,
            check=False,
        )

    def close(self) -> None:
        if self.root.is_dir():
            self.bazel("shutdown")
        subprocess.run(["chmod", "-R", "u+w", str(self.tmp)], check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)

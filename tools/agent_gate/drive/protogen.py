"""Makes `from proto import agent_gate_pb2` work outside Bazel.

Inside Bazel the generated module comes from `//proto:agent_gate_py_pb2`. Entry
points that run outside Bazel (the end-to-end tests, the demo, the CLI) call
`ensure_proto_importable()` before importing any `agent_gate` module that uses the
proto. When the module is not importable already, it is generated once with
`python -m grpc_tools.protoc` (or a `protoc` on PATH) into
`.venv/agent_gate_proto/<sha256 of agent_gate.proto>/proto/`, and that directory
is put first on `sys.path`. The key is the proto's content, so an edited proto
gets a fresh module and an unchanged one is never regenerated.

This module imports nothing generated, so it is safe to import first.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
PROTO_RELATIVE = "proto/agent_gate.proto"
MODULE = "proto.agent_gate_pb2"


class ProtoGenError(RuntimeError):
    """The proto module could not be imported or generated; the message says what to install."""


def proto_file(repo_root: Path = REPO_ROOT) -> Path:
    return repo_root / PROTO_RELATIVE


def cache_root(repo_root: Path = REPO_ROOT) -> Path:
    return repo_root / ".venv" / "agent_gate_proto"


def proto_digest(repo_root: Path = REPO_ROOT) -> str:
    try:
        return hashlib.sha256(proto_file(repo_root).read_bytes()).hexdigest()
    except OSError as error:
        raise ProtoGenError(f"cannot read {proto_file(repo_root)}: {error}") from None


def _protoc_command(out_dir: Path, repo_root: Path) -> list[str]:
    arguments = [f"-I{repo_root}", f"--python_out={out_dir}", PROTO_RELATIVE]
    try:
        importlib.import_module("grpc_tools.protoc")
    except ImportError:
        protoc = shutil.which("protoc")
        if protoc is None:
            raise ProtoGenError(
                "cannot generate proto/agent_gate_pb2.py: neither grpc_tools (pip package "
                "grpcio-tools, installed by tools/bootstrap into .venv) nor a `protoc` on PATH "
                "(Debian package protobuf-compiler) is available; run tools/bootstrap and use "
                ".venv/bin/python3"
            ) from None
        return [protoc, *arguments]
    return [sys.executable, "-m", "grpc_tools.protoc", *arguments]


def generate(repo_root: Path = REPO_ROOT) -> Path:
    """Generate the module unless it is cached; return the directory to put on sys.path."""
    target = cache_root(repo_root) / proto_digest(repo_root)
    if (target / "proto" / "agent_gate_pb2.py").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # Generate beside the target and rename: concurrent callers never see half a module.
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=target.parent))
    try:
        command = _protoc_command(staging, repo_root)
        done = subprocess.run(command, cwd=repo_root, capture_output=True, text=True, check=False)
        generated = staging / "proto" / "agent_gate_pb2.py"
        if done.returncode != 0 or not generated.is_file():
            raise ProtoGenError(
                f"`{' '.join(command)}` failed (exit {done.returncode}): "
                f"{done.stderr.strip() or done.stdout.strip() or 'no output'}"
            )
        # A regular package, so no unrelated `proto` namespace or package shadows it.
        (staging / "proto" / "__init__.py").write_text("", encoding="utf-8")
        staging.chmod(0o755)  # mkdtemp makes it private; the cache is shared like .venv
        try:
            os.rename(staging, target)
        except OSError:
            if not (target / "proto" / "agent_gate_pb2.py").is_file():
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _importable() -> bool:
    try:
        importlib.import_module(MODULE)
    except ImportError:
        return False
    return True


def ensure_proto_importable(repo_root: Path = REPO_ROOT) -> None:
    """Make `from proto import agent_gate_pb2` importable, generating it if needed."""
    if _importable():
        return
    directory = str(generate(repo_root))
    if directory not in sys.path:
        sys.path.insert(0, directory)
    # A `proto` package imported before (a namespace without the module, or an
    # unrelated package of that name) is cached in sys.modules: let it find ours too.
    package = sys.modules.get("proto")
    package_path = getattr(package, "__path__", None)
    ours = str(Path(directory) / "proto")
    if package_path is not None and ours not in list(package_path):
        package_path.append(ours)
    importlib.invalidate_caches()
    try:
        importlib.import_module(MODULE)
    except ImportError as error:
        raise ProtoGenError(
            f"generated {ours}/agent_gate_pb2.py but it does not import ({error}); the "
            "protobuf runtime and the generator disagree: run tools/bootstrap, then delete "
            f"{cache_root(repo_root)}"
        ) from error

"""The layers of tools/agent_gate import only downward (docs/architecture.md).

core <- formats <- actions, drive <- cli: each layer may import its own modules and
those of the layers it sits on, nothing above or beside it. Actions, which Bazel runs
in every double run, import neither pyyaml nor subprocess (so no git, no Bazel).
Read from the sources with `ast`, so an import inside a function counts too.
"""

import ast
from pathlib import Path

from absl.testing import absltest
from runfiles import runfiles

# Which layers each layer may import, itself included.
ALLOWED = {
    "core": {"core"},
    "formats": {"core", "formats"},
    "actions": {"core", "formats", "actions"},
    "drive": {"core", "formats", "drive"},
    "cli": {"core", "formats", "drive", "cli"},
}
# Modules the code Bazel runs must not need.
FORBIDDEN_IN = {
    "core": {"yaml", "subprocess"},
    "formats": {"yaml", "subprocess"},
    "actions": {"yaml", "subprocess"},
}


def _package() -> Path:
    marker = runfiles.Create().Rlocation("agent_gate/tools/agent_gate/__init__.py")
    return Path(marker).parent


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, dotted module) of every import in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "agent_gate":
            found.extend((node.lineno, f"agent_gate.{a.name}") for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return found


def violations(package: Path) -> list[str]:
    problems = []
    for path in sorted(package.glob("*/*.py")):
        layer = path.parent.name
        if layer not in ALLOWED:
            problems.append(f"{path.relative_to(package)}: in no layer ({', '.join(ALLOWED)})")
            continue
        for line, module in imports(path):
            parts = module.split(".")
            where = f"{layer}/{path.name}:{line}"
            if parts[0] == "agent_gate":
                if len(parts) < 2 or parts[1] not in ALLOWED:
                    problems.append(f"{where}: imports {module}, which names no layer")
                elif parts[1] not in ALLOWED[layer]:
                    problems.append(f"{where}: {layer} may not import {parts[1]} ({module})")
            elif parts[0] in FORBIDDEN_IN.get(layer, ()):
                problems.append(f"{where}: {layer} may not import {parts[0]}")
    return problems


class LayersTest(absltest.TestCase):
    def test_every_layer_imports_only_downward(self):
        package = _package()
        self.assertGreater(len(list(package.glob("*/*.py"))), 20, "the sources are missing")
        self.assertEqual(violations(package), [])

    def test_a_violation_is_found(self):
        # The check itself: a core module that imports the CLI, and an action using yaml.
        root = Path(absltest.TEST_TMPDIR.value) / "agent_gate"
        for layer, text in {
            "core": "from agent_gate.cli import score\n",
            "actions": "def f():\n    import yaml\n",
            "drive": "from agent_gate import actions\n",
        }.items():
            (root / layer).mkdir(parents=True, exist_ok=True)
            (root / layer / "bad.py").write_text(text)
        found = violations(root)
        self.assertLen(found, 3, found)
        self.assertIn("core may not import cli", found[2] + found[1] + found[0])
        self.assertTrue(any("actions may not import yaml" in p for p in found), found)
        self.assertTrue(any("drive may not import actions" in p for p in found), found)


if __name__ == "__main__":
    absltest.main()

"""//tools:bytecode: every module the actions import is compiled, where Python looks.

The `.pyc` must sit in runfiles beside its source, under the interpreter's own
name, hold a hash of exactly that source, and be what an import loads: otherwise
each action compiles the tool again in its sandbox.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from absl.testing import absltest

import agent_gate

# importlib's pyc header: magic (4), flags (4; bit 0 = hash-based, bit 1 = checked), hash (8).
_HASH_BASED, _CHECKED = 0b01, 0b10


def _modules() -> list[Path]:
    package = Path(agent_gate.__file__).parent
    return sorted(
        path
        for layer in ("", "core", "formats", "actions")
        for path in (package / layer).glob("*.py")
        if not path.name.endswith("_main.py")
    )


class BytecodeTest(absltest.TestCase):
    def test_every_module_has_a_checked_pyc_of_its_own_source(self):
        modules = _modules()
        self.assertGreater(len(modules), 20, "the tool's modules were not found")
        for source in modules:
            with self.subTest(module=source.name):
                cached = Path(importlib.util.cache_from_source(str(source)))
                self.assertTrue(cached.is_file(), f"no {cached}")
                header = cached.read_bytes()[:16]
                self.assertEqual(header[:4], importlib.util.MAGIC_NUMBER)
                flags = int.from_bytes(header[4:8], "little")
                self.assertEqual(flags, _HASH_BASED | _CHECKED)
                self.assertEqual(header[8:16], importlib.util.source_hash(source.read_bytes()))

    def test_importing_the_actions_compiles_none_of_the_tool(self):
        """Python audits every compile(): a fresh interpreter importing the runner and
        the evaluator's modules must compile nothing under agent_gate/."""
        probe = (
            "import sys\n"
            "compiled = []\n"
            "def audit(event, args):\n"
            "    if event == 'compile':\n"
            "        compiled.append(str(args[1]))\n"
            "sys.addaudithook(audit)\n"
            "import agent_gate.actions.runner, agent_gate.actions.evaluator_inputs\n"
            "ours = [n for n in compiled if '/tools/agent_gate/' in n or n.endswith('_pb2.py')]\n"
            "print('\\n'.join(ours))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            capture_output=True,
            text=True,
            check=False,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip(), "", "compiled at import")


if __name__ == "__main__":
    absltest.main()

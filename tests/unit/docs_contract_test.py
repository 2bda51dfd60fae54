"""Strong: the docs state the contract the code implements.

Every `--@agent_gate//:NAME` flag the docs name is defined in the root BUILD file,
every flag defined there is documented, and the decision-table doc lists the six
decisions in the precedence the evaluator applies.
"""

import re
from pathlib import Path

from absl.testing import absltest

from agent_gate.core import quorum

FLAG = re.compile(r"--@agent_gate//:([a-z0-9_]+)")
DEFINED = re.compile(r'string_flag\(\s*name = "([a-z0-9_]+)"', re.MULTILINE)


def _docs_text() -> str:
    docs = [Path("README.md"), *sorted(Path("docs").glob("*.md"))]
    return "\n".join(doc.read_text(encoding="utf-8") for doc in docs)


class DocsContractTest(absltest.TestCase):
    def test_documented_flags_exist_and_defined_flags_are_documented(self):
        defined = set(DEFINED.findall(Path("BUILD.bazel").read_text(encoding="utf-8")))
        documented = set(FLAG.findall(_docs_text()))
        self.assertTrue(defined, "no flags found in BUILD.bazel")
        self.assertEqual(documented - defined, set(), "docs name flags that do not exist")
        self.assertEqual(defined - documented, set(), "flags without docs")

    def test_decision_doc_lists_the_precedence(self):
        text = Path("docs/decision-table.md").read_text(encoding="utf-8")
        line = next(line for line in text.splitlines() if line.startswith("Precedence:"))
        self.assertEqual(re.findall(r"`([a-z_]+)`", line), list(quorum.PRECEDENCE))


if __name__ == "__main__":
    absltest.main()

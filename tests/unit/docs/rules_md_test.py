"""docs/rules.md is what the generator writes from the docstrings of rules/*.bzl.

On Bazel >= 7 the test is given Bazel's ModuleInfo of each rule file
(`--module_info`, tools/docgen/module_info.bzl), as the update target is: the
reference must be what Bazel's own extraction documents, and the syntax-tree
front-end (what Bazel 4.2.3 uses) must render the same file from the same
sources. On Bazel 4.2.3 it is the syntax trees alone.

The .bzl files reach the test through the bzl_library targets of rules/, so a
bzl_library that misses a file some public file loads fails here too.
"""

import difflib
from pathlib import Path

from absl import flags
from absl.testing import absltest
from docgen import update_rules_md
from docgen.starlark_doc import DocError
from runfiles import runfiles

_MODULE_INFO = flags.DEFINE_multi_string(
    "module_info", [], "rlocation path of a ModuleInfo text file Bazel extracted"
)


def _root() -> Path:
    """This repository's root in the runfiles tree."""
    return Path(runfiles.Create().Rlocation(f"agent_gate/{update_rules_md.DOC}")).parents[1]


def _module_infos() -> list[Path]:
    return [update_rules_md.runfile(path) for path in _MODULE_INFO.value]


class RulesMdTest(absltest.TestCase):
    def generated(self, module_infos: list[Path]) -> str:
        try:
            return update_rules_md.expected(_root(), module_infos)
        except DocError as err:
            self.fail(f"the generator refuses the .bzl files: {err}")

    def assert_same(self, actual: str, expected: str, names: tuple[str, str], fix: str) -> None:
        if actual != expected:
            diff = difflib.unified_diff(
                actual.splitlines(), expected.splitlines(), *names, lineterm=""
            )
            self.fail(f"{fix}\n" + "\n".join(list(diff)[:80]))

    def test_docs_rules_md_is_what_the_generator_writes(self) -> None:
        actual = (_root() / update_rules_md.DOC).read_text(encoding="utf-8")
        self.assert_same(
            actual,
            self.generated(_module_infos()),
            (f"{update_rules_md.DOC} (checked in)", f"{update_rules_md.DOC} (generated)"),
            f"{update_rules_md.DOC} is stale; regenerate it with "
            f"`{update_rules_md.REGENERATE}` and commit the result.",
        )

    def test_both_front_ends_write_the_same_file(self) -> None:
        module_infos = _module_infos()
        if not module_infos:
            self.skipTest("this Bazel has no starlark_doc_extract: one front-end only")
        self.assertLen(module_infos, 7)  # the srcs of tools/docgen/module_info.bzl
        self.assert_same(
            self.generated(module_infos),
            self.generated([]),
            ("from Bazel's ModuleInfo", "from the syntax trees"),
            "the syntax-tree front-end (Bazel 4.2.3's) reads the .bzl files otherwise than "
            "Bazel does; fix tools/docgen/starlark_doc.py (or module_info.py)",
        )

    def test_every_public_file_is_in_runfiles(self) -> None:
        root = _root()
        for path in update_rules_md.PUBLIC:
            self.assertTrue((root / path).is_file(), path)


if __name__ == "__main__":
    absltest.main()

"""docs/rules.md is what the generator writes from the docstrings of rules/*.bzl.

The .bzl files reach the test through the bzl_library targets of rules/, so a
bzl_library that misses a file some public file loads fails here too.
"""

import difflib
from pathlib import Path

from absl.testing import absltest
from docgen import update_rules_md
from docgen.starlark_doc import DocError
from runfiles import runfiles


def _root() -> Path:
    """This repository's root in the runfiles tree."""
    return Path(runfiles.Create().Rlocation(f"agent_gate/{update_rules_md.DOC}")).parents[1]


class RulesMdTest(absltest.TestCase):
    def test_docs_rules_md_is_what_the_generator_writes(self) -> None:
        root = _root()
        try:
            expected = update_rules_md.expected(root)
        except DocError as err:
            self.fail(f"the generator refuses the .bzl files: {err}")
        actual = (root / update_rules_md.DOC).read_text(encoding="utf-8")
        if actual != expected:
            diff = difflib.unified_diff(
                actual.splitlines(),
                expected.splitlines(),
                f"{update_rules_md.DOC} (checked in)",
                f"{update_rules_md.DOC} (generated)",
                lineterm="",
            )
            self.fail(
                f"{update_rules_md.DOC} is stale; regenerate it with "
                f"`{update_rules_md.REGENERATE}` and commit the result.\n"
                + "\n".join(list(diff)[:80])
            )

    def test_every_public_file_is_in_runfiles(self) -> None:
        root = _root()
        for path in update_rules_md.PUBLIC:
            self.assertTrue((root / path).is_file(), path)


if __name__ == "__main__":
    absltest.main()

"""The ModuleInfo front-end on a small rule set: the ModuleInfo texts are written
here as Bazel 7.7.1's `starlark_doc_extract` writes them, so it runs on every lane.

It must fill the model as the syntax-tree front-end does (the same rendered
reference), and refuse what it cannot document.
"""

import textwrap
from pathlib import Path

from absl.testing import absltest
from docgen.module_info import parse_textproto, read_module_infos
from docgen.starlark_doc import DocError, fill, read_syntax_trees

PRIVATE = '''
"""Private rules."""

thing_rule = rule(
    implementation = lambda ctx: [],
    doc = "A thing.",
    attrs = {
        "src": attr.label(mandatory = True, doc = "The input."),
        "mode": attr.string(default = "fast", doc = "How."),
    },
)

def thing(name, src, level = 1, **kwargs):
    """Declares a thing.

    Args:
      name: target name.
      src: the input.
      level: how deep,
        across lines.
      **kwargs: `mode`, common attributes.
    """
    thing_rule(name = name, src = src, **kwargs)
'''

PUBLIC = '''
"""Public API."""

load("//lib/private:things.bzl", _thing = "thing")

thing = _thing
'''

PUBLIC_INFO = r"""
func_info {
  function_name: "thing"
  parameter { name: "name" doc_string: "target name." mandatory: true }
  parameter { name: "src" doc_string: "the input." mandatory: true }
  parameter { name: "level" doc_string: "how deep,\nacross lines." default_value: "1" }
  parameter { name: "kwargs" doc_string: "`mode`, common attributes." }
  doc_string: "Declares a thing.\n"
  origin_key { name: "thing" file: "//lib/private:things.bzl" }
}
module_docstring: "Public API."
file: "//lib:defs.bzl"
"""

PRIVATE_INFO = r"""
rule_info {
  rule_name: "thing_rule"
  doc_string: "A thing."
  attribute { name: "name" doc_string: "A unique name for this target." type: NAME mandatory: true }
  attribute { name: "src" doc_string: "The input." type: LABEL mandatory: true }
  attribute { name: "mode" doc_string: "How." type: STRING default_value: "\"fast\"" }
  origin_key { name: "thing_rule" file: "//lib/private:things.bzl" }
}
file: "//lib/private:things.bzl"
"""

TEMPLATE = """# Things

<!-- BEGIN GENERATED defs.bzl -->
<!-- END GENERATED defs.bzl -->

<!-- BEGIN GENERATED defs.bzl:thing -->
<!-- END GENERATED defs.bzl:thing -->
"""


class ModuleInfoTest(absltest.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.root = Path(self.create_tempdir().full_path)
        for path, text in (("lib/private/things.bzl", PRIVATE), ("lib/defs.bzl", PUBLIC)):
            (self.root / path).parent.mkdir(parents=True, exist_ok=True)
            (self.root / path).write_text(textwrap.dedent(text).lstrip())

    def test_renders_what_the_syntax_trees_render(self) -> None:
        ours = fill(TEMPLATE, read_syntax_trees(self.root, ["lib/defs.bzl"]), "make docs")
        bazel = read_module_infos(self.root, [PUBLIC_INFO, PRIVATE_INFO], ["lib/defs.bzl"])
        self.assertEqual(fill(TEMPLATE, bazel, "make docs"), ours)
        self.assertIn("thing(name, src, level = 1, **kwargs)", ours)
        self.assertIn("| `level` | `1` | how deep, across lines. |", ours)

    def test_rule_of_a_file_bazel_did_not_extract_is_refused(self) -> None:
        with self.assertRaisesRegex(DocError, "declares rule thing_rule of lib/private/things"):
            read_module_infos(self.root, [PUBLIC_INFO], ["lib/defs.bzl"])

    def test_public_file_bazel_did_not_extract_is_refused(self) -> None:
        with self.assertRaisesRegex(DocError, "no ModuleInfo of lib/other.bzl"):
            read_module_infos(self.root, [PUBLIC_INFO, PRIVATE_INFO], ["lib/other.bzl"])

    def test_undocumented_attribute_is_refused(self) -> None:
        undocumented = PRIVATE_INFO.replace('doc_string: "How." ', "")
        reference = read_module_infos(self.root, [PUBLIC_INFO, undocumented], ["lib/defs.bzl"])
        with self.assertRaisesRegex(DocError, "attribute mode has no `doc`"):
            fill(TEMPLATE, reference, "make docs")

    def test_textproto_escapes(self) -> None:
        message = parse_textproto(r'a { b: "it\'s \"x\"\n" } # comment' + "\nc: NAME")
        self.assertEqual(message, {"a": [{"b": ['it\'s "x"\n']}], "c": ["NAME"]})


if __name__ == "__main__":
    absltest.main()

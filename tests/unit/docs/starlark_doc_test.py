"""The reference generator against small rule sets written for each case."""

import textwrap
from pathlib import Path

from absl.testing import absltest
from docgen.starlark_doc import DocError, fill, parse_docstring, read_syntax_trees

PRIVATE = '''
"""Private rules."""

load("@other//:defs.bzl", "OtherInfo")
load(":extra.bzl", "EXTRA_ATTRS")

_BASE = {
    "src": attr.label(mandatory = True, doc = "The " + "input."),
    "_tool": attr.label(default = Label("//:tool")),
}

thing_rule = rule(
    implementation = lambda ctx: [],
    doc = """A thing.

    Built from `src`.""",
    attrs = dict(_BASE, **EXTRA_ATTRS),
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

ThingInfo = provider(doc = "What a thing provides.", fields = {"depth": "How deep."})
'''

EXTRA = '''
"""Extra attributes."""

EXTRA_ATTRS = {
    "mode": attr.string(default = "fast", doc = "How."),
    "level": attr.int(doc = "How deep."),
}
'''

PUBLIC = '''
"""Public API.

Load it.
"""

load("//lib/private:things.bzl", _ThingInfo = "ThingInfo", _thing = "thing")

thing = _thing
ThingInfo = _ThingInfo
'''

TEMPLATE = """# Things

Hand-written.

<!-- BEGIN GENERATED defs.bzl -->
stale
<!-- END GENERATED defs.bzl -->

<!-- BEGIN GENERATED defs.bzl:thing -->
<!-- END GENERATED defs.bzl:thing -->

More prose.

<!-- BEGIN GENERATED defs.bzl:ThingInfo -->
<!-- END GENERATED defs.bzl:ThingInfo -->
"""


class StarlarkDocTest(absltest.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.root = Path(self.create_tempdir().full_path)
        self.write("lib/private/things.bzl", PRIVATE)
        self.write("lib/private/extra.bzl", EXTRA)
        self.write("lib/defs.bzl", PUBLIC)

    def write(self, path: str, text: str) -> None:
        (self.root / path).parent.mkdir(parents=True, exist_ok=True)
        (self.root / path).write_text(textwrap.dedent(text).lstrip())

    def fill(self, template: str = TEMPLATE) -> str:
        return fill(template, read_syntax_trees(self.root, ["lib/defs.bzl"]), "make docs")

    def test_renders_macro_rule_attributes_and_provider(self) -> None:
        text = self.fill()
        self.assertIn("Hand-written.", text)
        self.assertIn("More prose.", text)
        self.assertNotIn("stale", text)
        self.assertIn("Public API.\n\nLoad it.", text)
        self.assertIn("thing(name, src, level = 1, **kwargs)", text)
        self.assertIn("| `level` | `1` | how deep, across lines. |", text)
        self.assertIn("| `src` | label | — | yes | The input. |", text)
        self.assertIn('| `mode` | string | `"fast"` | no | How. |', text)
        self.assertNotIn("_tool", text)
        self.assertIn("Declares the rule `thing_rule` (lib/private/things.bzl): A thing.", text)
        self.assertIn("| `depth` | How deep. |", text)
        self.assertIn("make docs", text)

    def test_idempotent(self) -> None:
        once = self.fill()
        self.assertEqual(once, self.fill(once))

    def test_attribute_without_doc_is_refused(self) -> None:
        self.write("lib/private/extra.bzl", EXTRA.replace(', doc = "How."', ""))
        with self.assertRaisesRegex(DocError, "attribute mode has no `doc`"):
            self.fill()

    def test_argument_missing_from_args_is_refused(self) -> None:
        self.write("lib/private/things.bzl", PRIVATE.replace("      level: how deep,\n", ""))
        with self.assertRaisesRegex(DocError, "does not describe level"):
            self.fill()

    def test_argument_described_but_not_taken_is_refused(self) -> None:
        self.write("lib/private/things.bzl", PRIVATE.replace("level = 1, ", ""))
        with self.assertRaisesRegex(DocError, "describes level, which it does not take"):
            self.fill()

    def test_attribute_the_macro_never_mentions_is_refused(self) -> None:
        self.write("lib/private/things.bzl", PRIVATE.replace("`mode`, common", "common"))
        with self.assertRaisesRegex(DocError, "attribute mode of rule thing_rule is neither"):
            self.fill()

    def test_attribute_set_by_the_macro_needs_no_mention(self) -> None:
        self.write(
            "lib/private/extra.bzl",
            EXTRA.replace('doc = "How."', 'doc = "Set by the macro: how."'),
        )
        self.write("lib/private/things.bzl", PRIVATE.replace("`mode`, common", "common"))
        self.assertIn("Set by the macro: how.", self.fill())

    def test_public_symbol_without_block_is_refused(self) -> None:
        template = TEMPLATE.replace("<!-- BEGIN GENERATED defs.bzl:ThingInfo -->\n", "")
        template = template.replace("<!-- END GENERATED defs.bzl:ThingInfo -->\n", "")
        with self.assertRaisesRegex(DocError, "no generated block: defs.bzl:ThingInfo"):
            self.fill(template)

    def test_marker_of_unknown_symbol_is_refused(self) -> None:
        template = TEMPLATE.replace("defs.bzl:ThingInfo", "defs.bzl:Nothing")
        with self.assertRaisesRegex(DocError, "exports no Nothing"):
            self.fill(template)

    def test_unclosed_block_is_refused(self) -> None:
        template = TEMPLATE.replace("<!-- END GENERATED defs.bzl:ThingInfo -->\n", "")
        with self.assertRaisesRegex(DocError, "never closed"):
            self.fill(template)

    def test_undocumented_public_symbol_is_refused(self) -> None:
        self.write("lib/defs.bzl", PUBLIC + "\nVERSION = 3\n")
        with self.assertRaisesRegex(DocError, "VERSION is public but neither"):
            self.fill()

    def test_missing_loaded_file_names_the_bzl_library(self) -> None:
        (self.root / "lib/private/extra.bzl").unlink()
        with self.assertRaisesRegex(DocError, "cannot read lib/private/extra.bzl.*bzl_library"):
            self.fill()

    def test_google_style_docstring(self) -> None:
        description, arguments, returns = parse_docstring(
            "Summary.\n\n    Body.\n\n    Args:\n      a: one\n        more.\n      **kw: rest.\n\n"
            "    Returns:\n      A value.\n"
        )
        self.assertEqual("Summary.\n\nBody.", description)
        self.assertEqual({"a": "one more.", "**kw": "rest."}, arguments)
        self.assertEqual("A value.", returns)


if __name__ == "__main__":
    absltest.main()

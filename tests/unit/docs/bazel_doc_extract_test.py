"""docs/rules.md's generator reads the .bzl files as Bazel itself does (Bazel >= 7 only).

Bazel 7's `starlark_doc_extract` evaluates each file and writes what it documents
(a `ModuleInfo` text proto); the generator reads the same files as syntax trees,
which is what it must do on Bazel 4.2.3. For every rule, macro and provider Bazel
extracted, the generator has to find the same attributes, arguments, fields,
docs, defaults and mandatory flags.
"""

import codecs
import re
from pathlib import Path

from absl.testing import absltest
from docgen.starlark_doc import Macro, Provider, Rule, definition, parse_docstring
from runfiles import runfiles

Message = dict[str, list[object]]

# Attributes every rule (or every build setting) has without declaring them.
_IMPLICIT = ("name", "build_setting_default")

_TOKEN = re.compile(r'\s*(?:(#[^\n]*)|("(?:[^"\\]|\\.)*")|([{}:])|([^\s{}:"]+))', re.S)


def parse_textproto(text: str) -> Message:
    """A text-format message as nested dicts of lists, enough for a ModuleInfo."""
    tokens = [
        (string, punct, word)
        for comment, string, punct, word in _TOKEN.findall(text)
        if not comment and (string or punct or word)
    ]
    position = 0

    def message() -> Message:
        nonlocal position
        fields: Message = {}
        while position < len(tokens) and tokens[position][1] != "}":
            _, _, name = tokens[position]
            position += 1
            if tokens[position][1] == ":":
                position += 1
            string, punct, word = tokens[position]
            position += 1
            if punct == "{":
                value: object = message()
                position += 1  # the closing brace
            elif string:
                raw = string[1:-1].encode("latin-1", "backslashreplace")
                value = codecs.escape_decode(raw)[0].decode("utf-8")
            else:
                value = word
            fields.setdefault(name, []).append(value)
        return fields

    return message()


def _one(fields: Message, name: str, default: str = "") -> str:
    values = fields.get(name, [default])
    return str(values[0])


def _words(text: str) -> str:
    return " ".join(text.split())


def _path(origin: Message) -> str:
    """`//rules/private:gate.bzl` as a repo-relative path."""
    package, _, name = _one(origin, "file").removeprefix("//").partition(":")
    return f"{package}/{name}" if package else name


def _extracts() -> list[Path]:
    manifest = runfiles.Create()
    root = Path(manifest.Rlocation("agent_gate/tests/unit/docs"))
    return sorted(root.glob("bazel_doc_extracts_*.textproto"))


def _root() -> Path:
    return Path(runfiles.Create().Rlocation("agent_gate/rules/defs.bzl")).parents[1]


class BazelDocExtractTest(absltest.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.modules = [parse_textproto(path.read_text(encoding="utf-8")) for path in _extracts()]
        self.assertLen(self.modules, 7)  # the srcs of bazel_doc_extract_test

    def symbol(self, info: Message) -> object:
        origin = info["origin_key"][0]
        assert isinstance(origin, dict)
        return definition(_root(), _path(origin), _one(origin, "name"))

    def test_rules(self) -> None:
        seen = 0
        for module in self.modules:
            for info in module.get("rule_info", []):
                assert isinstance(info, dict)
                rule = self.symbol(info)
                with self.subTest(rule=_one(info, "rule_name")):
                    self.assertIsInstance(rule, Rule)
                    assert isinstance(rule, Rule)
                    self.assertEqual(_words(_one(info, "doc_string")), _words(rule.doc))
                    bazel = {
                        _one(a, "name"): a
                        for a in info.get("attribute", [])
                        if isinstance(a, dict) and _one(a, "name") not in _IMPLICIT
                    }
                    ours = {attribute.name: attribute for attribute in rule.attributes}
                    self.assertEqual(sorted(bazel), sorted(ours))
                    for name, attribute in ours.items():
                        theirs = bazel[name]
                        self.assertEqual(_words(_one(theirs, "doc_string")), _words(attribute.doc))
                        mandatory = _one(theirs, "mandatory", "false") == "true"
                        self.assertEqual(mandatory, attribute.mandatory, name)
                        if not mandatory:
                            self.assertEqual(
                                _words(_one(theirs, "default_value")), attribute.default, name
                            )
                seen += 1
        self.assertGreaterEqual(seen, 7)

    def test_macros(self) -> None:
        seen = 0
        for module in self.modules:
            for info in module.get("func_info", []):
                assert isinstance(info, dict)
                macro = self.symbol(info)
                with self.subTest(macro=_one(info, "function_name")):
                    self.assertIsInstance(macro, Macro)
                    assert isinstance(macro, Macro)
                    description, _, _ = parse_docstring(_one(info, "doc_string"))
                    self.assertEqual(_words(description), _words(macro.description))
                    parameters = [p for p in info.get("parameter", []) if isinstance(p, dict)]
                    self.assertEqual(
                        [_one(p, "name") for p in parameters],
                        [p.name.lstrip("*") for p in macro.parameters],
                    )
                    for theirs, ours in zip(parameters, macro.parameters, strict=True):
                        self.assertEqual(
                            _words(_one(theirs, "doc_string")), _words(macro.arguments[ours.name])
                        )
                        if ours.default is not None:
                            self.assertEqual(_one(theirs, "default_value"), ours.default)
                seen += 1
        self.assertGreaterEqual(seen, 7)

    def test_providers(self) -> None:
        seen = 0
        for module in self.modules:
            for info in module.get("provider_info", []):
                assert isinstance(info, dict)
                provider = self.symbol(info)
                with self.subTest(provider=_one(info, "provider_name")):
                    self.assertIsInstance(provider, Provider)
                    assert isinstance(provider, Provider)
                    self.assertEqual(_words(_one(info, "doc_string")), _words(provider.doc))
                    fields = {
                        _one(f, "name"): _words(_one(f, "doc_string"))
                        for f in info.get("field_info", [])
                        if isinstance(f, dict)
                    }
                    self.assertEqual(fields, {n: _words(d) for n, d in provider.fields})
                seen += 1
        self.assertGreaterEqual(seen, 3)


if __name__ == "__main__":
    absltest.main()

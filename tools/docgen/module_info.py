"""The reference of agent_gate's rules as Bazel itself documents them (Bazel >= 7).

`starlark_doc_extract` evaluates a .bzl file and writes what it documents, a
`ModuleInfo` message, here in its text form (the `.textproto` output: Bazel
7.7.1 ships no `stardoc_output.proto` to read the binary form with). This
front-end fills the model of `starlark_doc.py` from those messages, so the
renderer and the checks are the same on both lanes.

Two facts are not in a ModuleInfo, and come from the files' syntax trees
(`starlark_doc.declared_rules`, `starlark_doc.build_setting`): which rules a
macro's body declares (Bazel never runs a macro to extract it), and a rule's
`build_setting`. Bazel 7.7.1 does not mark a parameter as `*args` or
`**kwargs` either: a parameter with neither a default nor `mandatory` is
variadic, `**` when it is the last one.
"""

from __future__ import annotations

import codecs
import inspect
import re
from collections.abc import Sequence
from pathlib import Path

from docgen.starlark_doc import (
    Attribute,
    DocError,
    Exported,
    Macro,
    Parameter,
    Provider,
    Reference,
    Rule,
    Symbol,
    build_setting,
    declared_rules,
)

Message = dict[str, list[object]]

# `AttributeType` of a ModuleInfo, as the `attr.<kind>` of the model.
_KINDS = {
    "BOOLEAN": "bool",
    "INT": "int",
    "INT_LIST": "int_list",
    "LABEL": "label",
    "LABEL_STRING_DICT": "label_keyed_string_dict",
    "LABEL_LIST": "label_list",
    "OUTPUT": "output",
    "OUTPUT_LIST": "output_list",
    "STRING": "string",
    "STRING_DICT": "string_dict",
    "STRING_LIST": "string_list",
    "STRING_LIST_DICT": "string_list_dict",
}

# Attributes every rule has without declaring them; the renderer adds them itself.
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
            if position < len(tokens) and tokens[position][1] == ":":
                position += 1
            if position >= len(tokens):
                raise DocError(f"the ModuleInfo text ends inside field {name}")
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


def _messages(fields: Message, name: str) -> list[Message]:
    return [value for value in fields.get(name, []) if isinstance(value, dict)]


def _path(label: str) -> str:
    """`//rules/private:gate.bzl` as the repo-relative `rules/private/gate.bzl`."""
    package, _, name = label.removeprefix("@").removeprefix("//").partition(":")
    return f"{package}/{name}" if package else name


def _origin(info: Message) -> tuple[str, str]:
    origins = _messages(info, "origin_key")
    if not origins:
        raise DocError(f"a ModuleInfo entry has no origin_key: {sorted(info)}")
    return _path(_one(origins[0], "file")), _one(origins[0], "name")


def _rule(root: Path, info: Message) -> Rule:
    path, name = _origin(info)
    attributes = []
    for attribute in _messages(info, "attribute"):
        attribute_name = _one(attribute, "name")
        if attribute_name in _IMPLICIT:
            continue
        kind = _one(attribute, "type")
        if kind not in _KINDS:
            raise DocError(f"{path}: rule {name}: attribute {attribute_name} is of type {kind}")
        attributes.append(
            Attribute(
                attribute_name,
                _KINDS[kind],
                _one(attribute, "default_value"),
                _one(attribute, "mandatory", "false") == "true",
                inspect.cleandoc(_one(attribute, "doc_string")),
            )
        )
    return Rule(
        name,
        path,
        inspect.cleandoc(_one(info, "doc_string")),
        tuple(sorted(attributes, key=lambda attribute: attribute.name)),
        build_setting(root, path, name),
        _one(info, "test", "false") == "true",
    )


def _parameters(info: Message) -> list[tuple[Parameter, str]]:
    """The macro's parameters, each with its `Args:` text."""
    raw = _messages(info, "parameter")
    result = []
    for index, parameter in enumerate(raw):
        name = _one(parameter, "name")
        default = parameter.get("default_value")
        mandatory = _one(parameter, "mandatory", "false") == "true"
        if default is None and not mandatory:
            name = ("**" if index == len(raw) - 1 else "*") + name
        value = None if default is None else str(default[0])
        result.append((Parameter(name, value), _one(parameter, "doc_string")))
    return result


def _macro(root: Path, info: Message, rules: dict[tuple[str, str], Message]) -> Macro:
    path, name = _origin(info)
    parameters = _parameters(info)
    declared = []
    for key in declared_rules(root, path, name):
        if key not in rules:
            raise DocError(
                f"{path}: macro {name} declares rule {key[1]} of {key[0]}, which Bazel did not "
                "extract; add that file to the srcs of the extracts in tools/docgen/module_info.bzl"
            )
        declared.append(_rule(root, rules[key]))
    returns = " ".join(
        line.strip()
        for message in _messages(info, "return")
        for line in _one(message, "doc_string").splitlines()
    )
    return Macro(
        name,
        path,
        tuple(parameter for parameter, _ in parameters),
        inspect.cleandoc(_one(info, "doc_string")).strip(),
        {parameter.name: _one_line(doc) for parameter, doc in parameters if doc.strip()},
        returns.strip(),
        tuple(declared),
    )


def _one_line(text: str) -> str:
    """An `Args:` entry as the syntax-tree front-end reads it: its lines joined by spaces."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _provider(info: Message) -> Provider:
    path, name = _origin(info)
    fields = tuple(
        sorted(
            (_one(field, "name"), _one(field, "doc_string"))
            for field in _messages(info, "field_info")
        )
    )
    return Provider(name, path, inspect.cleandoc(_one(info, "doc_string")), fields)


def read_module_infos(root: Path, texts: Sequence[str], public: Sequence[str]) -> Reference:
    """The reference of the `public` files from the ModuleInfo texts Bazel wrote.

    `texts` holds one ModuleInfo per extracted file: the public files and every
    file that defines a rule one of their macros declares. `root` is the
    repository, read only for what a ModuleInfo does not hold.
    """
    modules = {}
    for text in texts:
        module = parse_textproto(text)
        modules[_path(_one(module, "file"))] = module
    rules = {
        _origin(info): info
        for module in modules.values()
        for info in _messages(module, "rule_info")
    }
    docstrings: dict[str, str] = {}
    symbols: dict[str, dict[str, Exported]] = {}
    for path in public:
        module = modules.get(path)
        if module is None:
            raise DocError(
                f"Bazel extracted no ModuleInfo of {path}; add it to the srcs of the extracts "
                "in tools/docgen/module_info.bzl"
            )
        docstrings[path] = inspect.cleandoc(_one(module, "module_docstring"))
        entries: dict[str, Exported] = {}
        readers = (
            ("rule_info", "rule_name", lambda info: _rule(root, info)),
            ("func_info", "function_name", lambda info: _macro(root, info, rules)),
            ("provider_info", "provider_name", _provider),
        )
        for field, name_field, read in readers:
            for info in _messages(module, field):
                symbol: Symbol = read(info)
                entries[_one(info, name_field)] = Exported(_origin(info), symbol)
        for field in ("aspect_info", "repository_rule_info", "module_extension_info"):
            for info in _messages(module, field):
                raise DocError(
                    f"{path}: {_origin(info)[1]} is public but neither a macro, a rule nor a "
                    "provider; make it private (a leading `_`) or teach the generator its kind"
                )
        symbols[path] = entries
    return Reference(docstrings, symbols)

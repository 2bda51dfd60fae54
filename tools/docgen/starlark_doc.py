"""A Markdown reference of agent_gate's rules: the model, its checks, its renderer, and
the front-end that reads the syntax trees of the .bzl files.

Two front-ends fill the same model (Macro, Rule, Provider), which one renderer
writes: this module's, on every Bazel lane, and `module_info.py`'s, from the
ModuleInfo that Bazel >= 7's `starlark_doc_extract` writes. Both lanes write the
same docs/rules.md.

Starlark is close enough to Python that `ast` parses every .bzl file of `rules/`.
The generator follows `load()` from the public files to the private ones,
evaluates the little it must (`rule()`, `provider()`, `attr.*()`, `dict(...)`,
string concatenation) and renders each exported symbol: a macro with its
arguments (Google-style `Args:`) and the attributes of the rules it declares, a
rule with its attributes, a provider with its fields.

It works the same on Bazel 4.2.3, which has no `starlark_doc_extract`, and on any
later Bazel: nothing runs Bazel. Whichever front-end filled the model, `check`
refuses (DocError) what a reader would miss:
an exported symbol without a docstring, an attribute without `doc`, a macro
argument missing from `Args:`, or a rule attribute the macro neither takes,
names in its docstring, nor sets itself (an attribute doc that begins
"Set by the macro").

The reference goes into a hand-written Markdown file between marker pairs,

    <!-- BEGIN GENERATED defs.bzl:agent_gate -->
    <!-- END GENERATED defs.bzl:agent_gate -->

(`defs.bzl` alone: that file's module docstring), so the prose around stays
hand-written. Every exported symbol must have a marker pair.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

# What an attribute without `default` holds, by `attr.<kind>`.
_IMPLICIT_DEFAULTS = {
    "bool": "False",
    "int": "0",
    "int_list": "[]",
    "label": "None",
    "label_keyed_string_dict": "{}",
    "label_list": "[]",
    "output": "None",
    "output_list": "[]",
    "string": '""',
    "string_dict": "{}",
    "string_list": "[]",
    "string_list_dict": "{}",
}

_KIND_NAMES = {
    "bool": "boolean",
    "int": "integer",
    "int_list": "list of integers",
    "label": "label",
    "label_keyed_string_dict": "dict: label to string",
    "label_list": "list of labels",
    "output": "output file",
    "output_list": "list of output files",
    "string": "string",
    "string_dict": "dict: string to string",
    "string_list": "list of strings",
    "string_list_dict": "dict: string to list of strings",
}

_SET_BY_MACRO = "Set by the macro"
_MARKER = re.compile(r"<!-- (BEGIN|END) GENERATED ([A-Za-z0-9_./]+\.bzl)(?::([A-Za-z0-9_]+))? -->")
_GENERATED_NOTE = "<!-- Generated from rules/*.bzl: edit the docstrings, then run {command} -->"


class DocError(Exception):
    """The .bzl files cannot be documented as they are; the message says what to fix."""


@dataclass(frozen=True)
class Attribute:
    name: str
    kind: str
    default: str
    mandatory: bool
    doc: str


@dataclass(frozen=True)
class Rule:
    name: str
    file: str
    doc: str
    attributes: tuple[Attribute, ...]
    build_setting: str | None = None
    test: bool = False


@dataclass(frozen=True)
class Provider:
    name: str
    file: str
    doc: str
    fields: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Parameter:
    name: str  # with its `*` or `**`
    default: str | None  # source text; None when the argument is mandatory


@dataclass(frozen=True)
class Macro:
    name: str
    file: str
    parameters: tuple[Parameter, ...]
    description: str
    arguments: dict[str, str]
    returns: str
    rules: tuple[Rule, ...]


Symbol = Macro | Rule | Provider


@dataclass
class _AttrCall:
    """An unevaluated `attr.<kind>(...)` call, kept with its module for source text."""

    module: _Module
    kind: str
    keywords: dict[str, ast.expr]


@dataclass
class _Module:
    path: str  # repo-relative
    source: str
    tree: ast.Module
    docstring: str
    assigned: dict[str, ast.expr] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    loaded: dict[str, tuple[str, str]] = field(default_factory=dict)  # local -> (file, name)

    def segment(self, node: ast.AST) -> str:
        text = ast.get_source_segment(self.source, node) or ""
        return " ".join(text.split())


def _load_target(path: str, label: str) -> str | None:
    """The repo-relative file a `load()` label names, or None for another repository."""
    if label.startswith("@"):
        return None
    package = str(Path(path).parent)
    if label.startswith("//"):
        package, _, name = label[2:].partition(":")
    elif label.startswith(":"):
        name = label[1:]
    else:
        raise DocError(f"{path}: load label {label!r} is not `//pkg:file.bzl` or `:file.bzl`")
    return f"{package}/{name}" if package not in ("", ".") else name


class _Reader:
    """Parses .bzl files under `root` on demand, each once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules: dict[str, _Module] = {}

    def module(self, path: str) -> _Module:
        if path in self.modules:
            return self.modules[path]
        try:
            source = (self.root / path).read_text(encoding="utf-8")
        except OSError as err:
            raise DocError(
                f"cannot read {path} ({err.strerror}); is it in the srcs of a bzl_library "
                "the generator depends on?"
            ) from None
        try:
            tree = ast.parse(source, filename=path)
        except SyntaxError as err:
            raise DocError(
                f"{path}:{err.lineno}: the generator cannot parse it: {err.msg}"
            ) from None
        module = _Module(path, source, tree, ast.get_docstring(tree, clean=True) or "")
        for statement in tree.body:
            if isinstance(statement, ast.FunctionDef):
                module.functions[statement.name] = statement
            elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target = statement.targets[0]
                if isinstance(target, ast.Name):
                    module.assigned[target.id] = statement.value
            elif (
                isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Call)
                and isinstance(statement.value.func, ast.Name)
                and statement.value.func.id == "load"
            ):
                self._read_load(module, statement.value)
        self.modules[path] = module
        return module

    @staticmethod
    def _read_load(module: _Module, call: ast.Call) -> None:
        label = _string(module, call.args[0])
        target = _load_target(module.path, label)
        if target is None:
            return  # another repository's symbols stay opaque
        for arg in call.args[1:]:
            name = _string(module, arg)
            module.loaded[name] = (target, name)
        for keyword in call.keywords:
            if keyword.arg is not None:
                module.loaded[keyword.arg] = (target, _string(module, keyword.value))

    def resolve(self, module: _Module, name: str) -> tuple[_Module, str]:
        """The module that defines `name` as seen from `module`, and its name there."""
        seen = set()
        while (module.path, name) not in seen:
            seen.add((module.path, name))
            if name in module.loaded:
                path, name = module.loaded[name]
                module = self.module(path)
                continue
            value = module.assigned.get(name)
            if isinstance(value, ast.Name):
                name = value.id  # `x = _x`: a re-export
                continue
            return module, name
        raise DocError(f"{module.path}: {name} is defined in a cycle of loads")


def _string(module: _Module, node: ast.expr) -> str:
    value = _evaluate(module, node, None)
    if not isinstance(value, str):
        raise DocError(
            f"{module.path}:{node.lineno}: expected a string, got {module.segment(node)}"
        )
    return value


def _evaluate(module: _Module, node: ast.expr, reader: _Reader | None) -> object:
    """The value of the few expression forms rule declarations use."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _evaluate(module, node.left, reader)
        right = _evaluate(module, node.right, reader)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
        if isinstance(left, list) and isinstance(right, list):
            return left + right
    if isinstance(node, ast.List):
        return [_evaluate(module, item, reader) for item in node.elts]
    if isinstance(node, ast.Dict):
        result: dict[object, object] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                result.update(_as_dict(module, value, reader))
            else:
                result[_evaluate(module, key, reader)] = _evaluate(module, value, reader)
        return result
    if isinstance(node, ast.Name) and reader is not None:
        owner, name = reader.resolve(module, node.id)
        if name in owner.assigned:
            return _evaluate(owner, owner.assigned[name], reader)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "dict":
            result = {}
            for arg in node.args:
                result.update(_as_dict(module, arg, reader))
            for keyword in node.keywords:
                if keyword.arg is None:
                    result.update(_as_dict(module, keyword.value, reader))
                else:
                    result[keyword.arg] = _evaluate(module, keyword.value, reader)
            return result
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "attr"
        ):
            keywords = {k.arg: k.value for k in node.keywords if k.arg is not None}
            return _AttrCall(module, func.attr, keywords)
    raise DocError(
        f"{module.path}:{node.lineno}: the generator cannot evaluate {module.segment(node)!r}; "
        "write it as a literal, a `dict(...)` or a name bound to one"
    )


def _as_dict(module: _Module, node: ast.expr, reader: _Reader | None) -> dict[object, object]:
    value = _evaluate(module, node, reader)
    if not isinstance(value, dict):
        raise DocError(f"{module.path}:{node.lineno}: {module.segment(node)} is not a dict")
    return value


def _call_keywords(call: ast.Call) -> dict[str, ast.expr]:
    return {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg is not None}


def _called(value: ast.expr | None, function: str) -> ast.Call | None:
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == function
    ):
        return value
    return None


def _rule(reader: _Reader, module: _Module, name: str) -> Rule | None:
    call = _called(module.assigned.get(name), "rule")
    if call is None:
        return None
    keywords = _call_keywords(call)
    where = f"{module.path}: rule {name}"
    doc = _string(module, keywords["doc"]) if "doc" in keywords else ""
    attributes = []
    if "attrs" in keywords:
        attrs = _as_dict(module, keywords["attrs"], reader)
        for attribute_name, spec in sorted(attrs.items(), key=lambda item: str(item[0])):
            if not isinstance(attribute_name, str) or not isinstance(spec, _AttrCall):
                raise DocError(f"{where}: attribute {attribute_name!r} is not an `attr.*()` call")
            if attribute_name.startswith("_"):
                continue  # private: no BUILD file can set it
            attributes.append(_attribute(where, attribute_name, spec, reader))
    build_setting = None
    if "build_setting" in keywords:
        build_setting = module.segment(keywords["build_setting"])
    test = "test" in keywords and _evaluate(module, keywords["test"], reader) is True
    return Rule(name, module.path, inspect.cleandoc(doc), tuple(attributes), build_setting, test)


def _attribute(where: str, name: str, spec: _AttrCall, reader: _Reader) -> Attribute:
    if spec.kind not in _IMPLICIT_DEFAULTS:
        raise DocError(f"{where}: attribute {name} is `attr.{spec.kind}`, unknown to the generator")
    doc_node = spec.keywords.get("doc")
    doc = _evaluate(spec.module, doc_node, reader) if doc_node is not None else ""
    if not isinstance(doc, str):
        raise DocError(f"{where}: the `doc` of attribute {name} is not a string")
    mandatory_node = spec.keywords.get("mandatory")
    mandatory = (
        mandatory_node is not None and _evaluate(spec.module, mandatory_node, reader) is True
    )
    default_node = spec.keywords.get("default")
    if default_node is not None:
        default = spec.module.segment(default_node)
    else:
        default = _IMPLICIT_DEFAULTS[spec.kind]
    return Attribute(name, spec.kind, default, mandatory, inspect.cleandoc(doc))


def _provider(module: _Module, name: str) -> Provider | None:
    call = _called(module.assigned.get(name), "provider")
    if call is None:
        return None
    keywords = _call_keywords(call)
    doc_node = keywords.get("doc", call.args[0] if call.args else None)
    doc = _string(module, doc_node) if doc_node is not None else ""
    fields_node = keywords.get("fields")
    fields = _evaluate(module, fields_node, None) if fields_node is not None else {}
    if not isinstance(fields, dict) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in fields.items()
    ):
        raise DocError(f"{module.path}: provider {name}: give `fields` as a dict of name to doc")
    return Provider(name, module.path, inspect.cleandoc(doc), tuple(sorted(fields.items())))


def parse_docstring(text: str) -> tuple[str, dict[str, str], str]:
    """Description, `Args:` entries (name to text) and `Returns:` of a Google-style docstring."""
    description: list[str] = []
    arguments: dict[str, str] = {}
    returns: list[str] = []
    section = "description"
    entry_indent = None
    current = None
    for line in inspect.cleandoc(text).splitlines():
        stripped = line.strip()
        if line in ("Args:", "Returns:"):
            section = line[:-1].lower()
            entry_indent = None
            continue
        if section == "description":
            description.append(line)
        elif section == "returns":
            returns.append(stripped)
        elif stripped:
            indent = len(line) - len(line.lstrip())
            entry = re.match(r"(\*{0,2}\w+):\s*(.*)", stripped)
            if entry and (entry_indent is None or indent == entry_indent):
                entry_indent = indent
                current = entry.group(1)
                arguments[current] = entry.group(2)
            elif current is not None:
                arguments[current] = f"{arguments[current]} {stripped}".strip()
    return "\n".join(description).strip(), arguments, " ".join(returns).strip()


def _rules_declared(reader: _Reader, module: _Module, function: ast.FunctionDef) -> list[Rule]:
    """The rules a macro's body calls, in order of first call."""
    rules: list[Rule] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            owner, name = reader.resolve(module, node.func.id)
            rule = _rule(reader, owner, name)
            if rule is not None and rule not in rules:
                rules.append(rule)
    return rules


def _macro(reader: _Reader, module: _Module, name: str) -> Macro | None:
    function = module.functions.get(name)
    if function is None:
        return None
    docstring = ast.get_docstring(function, clean=True) or ""
    description, arguments, returns = parse_docstring(docstring)
    parameters = _parameters(module, function.args)
    rules = _rules_declared(reader, module, function)
    return Macro(
        name, module.path, tuple(parameters), description, arguments, returns, tuple(rules)
    )


def _check_macro(macro: Macro) -> None:
    where = f"{macro.file}: macro {macro.name}"
    if not macro.description:
        raise DocError(f"{where} has no docstring; say what it declares, with `Args:`")
    names = [parameter.name for parameter in macro.parameters]
    missing = [name for name in names if not macro.arguments.get(name)]
    if missing:
        raise DocError(f"{where}: `Args:` does not describe {', '.join(missing)}")
    unknown = [name for name in macro.arguments if name not in names]
    if unknown:
        raise DocError(f"{where}: `Args:` describes {', '.join(unknown)}, which it does not take")
    texts = [macro.description, macro.returns, *macro.arguments.values()]
    mentioned = {word for text in texts for word in re.findall(r"`(\w+)`", text)}
    mentioned |= {name.lstrip("*") for name in names}
    for rule in macro.rules:
        _check_rule(rule)
        for attribute in rule.attributes:
            if attribute.name in mentioned or attribute.doc.startswith(_SET_BY_MACRO):
                continue
            raise DocError(
                f"{where}: attribute {attribute.name} of rule {rule.name} is neither an argument, "
                f"nor named (`{attribute.name}`) in the docstring, nor documented as "
                f'"{_SET_BY_MACRO}"; say how a BUILD file sets it (e.g. under **kwargs)'
            )


def _check_rule(rule: Rule) -> None:
    where = f"{rule.file}: rule {rule.name}"
    if not rule.doc.strip():
        raise DocError(f"{where} has no `doc`; say what the rule is for")
    for attribute in rule.attributes:
        if attribute.kind not in _KIND_NAMES:
            raise DocError(
                f"{where}: attribute {attribute.name} is `attr.{attribute.kind}`, "
                "unknown to the generator"
            )
        if not attribute.doc.strip():
            raise DocError(
                f'{where}: attribute {attribute.name} has no `doc`; add `doc = "..."` '
                "saying what it is"
            )


def _check_provider(provider: Provider) -> None:
    where = f"{provider.file}: provider {provider.name}"
    if not provider.doc.strip():
        raise DocError(f"{where} has no `doc`")
    for name, doc in provider.fields:
        if not doc.strip():
            raise DocError(f"{where}: field {name} has no doc")


def check(symbol: Symbol) -> None:
    """Refuses (DocError) a symbol a reader of the reference would miss something of."""
    if isinstance(symbol, Macro):
        _check_macro(symbol)
    elif isinstance(symbol, Rule):
        _check_rule(symbol)
    else:
        _check_provider(symbol)


def _parameters(module: _Module, args: ast.arguments) -> list[Parameter]:
    positional = args.posonlyargs + args.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += args.defaults
    parameters = [
        Parameter(arg.arg, module.segment(default) if default is not None else None)
        for arg, default in zip(positional, defaults, strict=True)
    ]
    if args.vararg is not None:
        parameters.append(Parameter("*" + args.vararg.arg, None))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        parameters.append(Parameter(arg.arg, module.segment(default) if default else None))
    if args.kwarg is not None:
        parameters.append(Parameter("**" + args.kwarg.arg, None))
    return parameters


def declared_rules(root: Path, path: str, name: str) -> list[tuple[str, str]]:
    """(file, name) of each rule the macro `name` of `path` calls, in order of first call.

    Bazel's doc extraction evaluates a file but never runs a macro, so it cannot
    say which rules a macro declares: the ModuleInfo front-end asks this.
    """
    reader = _Reader(root)
    macro = _macro(reader, reader.module(path), name)
    if macro is None:
        raise DocError(f"{path} defines no macro {name}")
    return [(rule.file, rule.name) for rule in macro.rules]


def build_setting(root: Path, path: str, name: str) -> str | None:
    """The `build_setting` of rule `name` of `path`, as source text; None for a plain rule.

    Bazel's doc extraction does not record it, so the ModuleInfo front-end asks this.
    """
    reader = _Reader(root)
    rule = _rule(reader, reader.module(path), name)
    if rule is None:
        raise DocError(f"{path} defines no rule {name}")
    return rule.build_setting


@dataclass(frozen=True)
class Exported:
    """A public name of a public file, and where its definition lives."""

    definition: tuple[str, str]  # (file, name) of the definition
    symbol: Symbol


@dataclass(frozen=True)
class Reference:
    """What a front-end read: per public file, its module docstring and exported symbols."""

    docstrings: dict[str, str]
    symbols: dict[str, dict[str, Exported]]


def read_syntax_trees(root: Path, public: Sequence[str]) -> Reference:
    """The reference of the public .bzl files under `root`, read as syntax trees."""
    reader = _Reader(root)
    docstrings: dict[str, str] = {}
    symbols: dict[str, dict[str, Exported]] = {}
    for path in public:
        module = reader.module(path)
        docstrings[path] = module.docstring
        entries: dict[str, Exported] = {}
        for name in sorted({*module.functions, *module.assigned}):
            if name.startswith("_"):
                continue
            owner, defined = reader.resolve(module, name)
            symbol = (
                _macro(reader, owner, defined)
                or _rule(reader, owner, defined)
                or _provider(owner, defined)
            )
            if symbol is None:
                raise DocError(
                    f"{path}: {name} is public but neither a documented macro, a rule nor a "
                    "provider; make it private (a leading `_`) or document it"
                )
            entries[name] = Exported((owner.path, defined), symbol)
        symbols[path] = entries
    return Reference(docstrings, symbols)


def _cell(text: str) -> str:
    """One table cell: line breaks (and the indentation after them) become one space."""
    return re.sub(r"\s*\n\s*", " ", text.strip()).replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{text}`" if "`" not in text else f"`` {text} ``"


def _render_attributes(rule: Rule) -> list[str]:
    if not rule.attributes:
        return []
    lines = [
        "| attribute | type | default | mandatory | description |",
        "| --- | --- | --- | --- | --- |",
    ]
    for attribute in rule.attributes:
        lines.append(
            f"| `{attribute.name}` | {_KIND_NAMES[attribute.kind]} | "
            f"{_cell(_code(attribute.default)) if not attribute.mandatory else '—'} | "
            f"{'yes' if attribute.mandatory else 'no'} | {_cell(attribute.doc)} |"
        )
    return lines


def _render_rule(rule: Rule, heading: str) -> list[str]:
    implicit = ["name"] + (["build_setting_default"] if rule.build_setting else [])
    signature = ", ".join(implicit + [attribute.name for attribute in rule.attributes])
    lines = [f"```starlark\n{rule.name}({signature})\n```", "", rule.doc, ""]
    if rule.build_setting:
        lines += [f"A build setting: `{rule.build_setting}`.", ""]
    table = _render_attributes(rule)
    if table:
        lines += [heading, "", *table, ""]
    return lines


def _render_macro(macro: Macro) -> list[str]:
    signature = ", ".join(
        parameter.name if parameter.default is None else f"{parameter.name} = {parameter.default}"
        for parameter in macro.parameters
    )
    lines = [f"```starlark\n{macro.name}({signature})\n```", "", macro.description, ""]
    if macro.parameters:
        lines += ["| argument | default | description |", "| --- | --- | --- |"]
        for parameter in macro.parameters:
            if parameter.default is not None:
                default = _cell(_code(parameter.default))
            elif parameter.name.startswith("*"):
                default = ""
            else:
                default = "mandatory"
            lines.append(
                f"| `{parameter.name}` | {default} | {_cell(macro.arguments[parameter.name])} |"
            )
        lines.append("")
    if macro.returns:
        lines += [f"Returns: {macro.returns}", ""]
    for rule in macro.rules:
        kind = "test rule" if rule.test else "rule"
        lines += [
            f"Declares the {kind} `{rule.name}` ({rule.file}): {_cell(rule.doc)}",
            "",
            *_render_attributes(rule),
            "",
        ]
    return lines


def _render_provider(provider: Provider) -> list[str]:
    lines = [f"`{provider.name}`: {provider.doc}", ""]
    if provider.fields:
        lines += ["| field | description |", "| --- | --- |"]
        lines += [f"| `{name}` | {_cell(doc)} |" for name, doc in provider.fields]
        lines.append("")
    return lines


def render_symbol(symbol: Symbol) -> str:
    if isinstance(symbol, Macro):
        lines = _render_macro(symbol)
    elif isinstance(symbol, Rule):
        lines = _render_rule(symbol, "Attributes:")
    else:
        lines = _render_provider(symbol)
    return "\n".join(lines).strip()


def fill(template: str, reference: Reference, command: str) -> str:
    """`template` with every marker pair's body generated from `reference`, checked."""
    for path, docstring in reference.docstrings.items():
        if not docstring.strip():
            raise DocError(f"{path} has no module docstring; say what to load it for")
    symbols = reference.symbols
    for entries in symbols.values():
        for entry in entries.values():
            check(entry.symbol)
    by_file = {Path(path).name: path for path in reference.docstrings}
    out: list[str] = []
    placed: set[tuple[str, str]] = set()
    open_marker: tuple[str, str | None] | None = None
    for line in template.splitlines():
        marker = _MARKER.fullmatch(line.strip())
        if marker is None:
            if open_marker is None:
                out.append(line)
            continue
        which, file, name = marker.groups()
        if which == "END":
            if open_marker != (file, name):
                raise DocError(f"marker {line.strip()} closes no open block of that name")
            open_marker = None
            out.append(line)
            continue
        if open_marker is not None:
            raise DocError(f"marker {line.strip()} opens inside another generated block")
        if file not in by_file:
            raise DocError(f"marker {line.strip()}: {file} is not one of {', '.join(by_file)}")
        open_marker = (file, name)
        out += [line, _GENERATED_NOTE.format(command=command), ""]
        if name is None:
            out.append(reference.docstrings[by_file[file]])
        else:
            entry = symbols[by_file[file]].get(name)
            if entry is None:
                raise DocError(f"marker {line.strip()}: {file} exports no {name}")
            placed.add(entry.definition)
            out.append(render_symbol(entry.symbol))
        out.append("")
    if open_marker is not None:
        raise DocError(f"the generated block {open_marker} is never closed")
    missing = sorted(
        {
            f"{Path(path).name}:{name}"
            for path, entries in symbols.items()
            for name, entry in entries.items()
            if entry.definition not in placed
        }
    )
    if missing:
        raise DocError(
            "these public symbols have no generated block: "
            + ", ".join(missing)
            + "; add `<!-- BEGIN GENERATED FILE:NAME -->` and `<!-- END GENERATED FILE:NAME -->`"
        )
    return "\n".join(out) + "\n"

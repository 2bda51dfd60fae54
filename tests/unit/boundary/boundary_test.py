"""The Python half of the shared boundary cases: every row, through tools/agent_gate.

The tables are Starlark files of literal data (prefix_cases.bzl, locality_cases.bzl,
encoding_cases.bzl, module_cases.bzl) that boundary_tests.bzl runs through
rules/private/paths.bzl; this test reads the same files, so a row added once is
checked in both languages.
"""

import ast
from pathlib import Path
from typing import Any

from absl.testing import absltest
from runfiles import runfiles

from agent_gate.core.locality import (
    LocalityIndex,
    covers,
    normalize_path,
    normalize_prefix,
    validate_prefix,
)
from agent_gate.core.path_guards import module_at
from agent_gate.drive.gate_flags import GateInputError, encode_path


def _table(file: str, name: str) -> Any:
    """The literal value assigned to `name` in a cases file of this package."""
    path = Path(runfiles.Create().Rlocation(f"agent_gate/tests/unit/boundary/{file}"))
    module = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for statement in module.body:
        if isinstance(statement, ast.Assign) and [
            target.id for target in statement.targets if isinstance(target, ast.Name)
        ] == [name]:
            return ast.literal_eval(statement.value)
    raise AssertionError(f"{file} assigns no {name}")


def _evaluator_paths(paths: list[str]) -> list[str]:
    """The changed paths as the evaluator keeps them: normalized, rejected ones dropped."""
    kept = []
    for path in paths:
        try:
            kept.append(normalize_path(path))
        except ValueError:
            continue  # the evaluator records an error: never a promote
    return kept


class PrefixCasesTest(absltest.TestCase):
    def test_every_row(self) -> None:
        cases = _table("prefix_cases.bzl", "PREFIX_CASES")
        self.assertGreater(len(cases), 30)
        for case in cases:
            prefix = case["prefix"]
            with self.subTest(prefix=prefix):
                problem = validate_prefix(prefix)
                self.assertEqual(case["valid"], problem is None, problem)
                if problem is None:
                    self.assertEqual(case["normal"], normalize_prefix(prefix))
                else:
                    with self.assertRaises(ValueError):
                        normalize_prefix(prefix)


class LocalityCasesTest(absltest.TestCase):
    def test_every_path_row(self) -> None:
        for case in _table("locality_cases.bzl", "PATH_CASES"):
            with self.subTest(path=case["path"]):
                if case["normal"] is None:
                    with self.assertRaises(ValueError):
                        normalize_path(case["path"])
                else:
                    self.assertEqual(case["normal"], normalize_path(case["path"]))

    def test_every_match_row(self) -> None:
        cases = _table("locality_cases.bzl", "MATCH_CASES")
        self.assertGreater(len(cases), 20)
        for case in cases:
            with self.subTest(case=case["name"]):
                localities = case["localities"]
                paths = _evaluator_paths(case["paths"])
                index = LocalityIndex(localities.items())
                self.assertEqual(
                    sorted(case["matched"]), sorted(index.match(paths, normalized=True))
                )
                # The CLI's per-pair check (admit, the rule-set guard) agrees.
                covered = {
                    property_id
                    for property_id, prefixes in localities.items()
                    if any(covers(prefix, path) for prefix in prefixes for path in paths)
                }
                self.assertEqual(sorted(case["matched"]), sorted(covered))


class EncodingCasesTest(absltest.TestCase):
    def test_the_cli_writes_each_flag(self) -> None:
        cases = _table("encoding_cases.bzl", "ENCODING_CASES")
        self.assertGreater(len(cases), 15)
        for case in cases:
            with self.subTest(paths=case["paths"]):
                self.assertEqual(case["flag"], ",".join(encode_path(p) for p in case["paths"]))

    def test_the_cli_never_writes_a_decode_only_flag(self) -> None:
        for case in _table("encoding_cases.bzl", "DECODE_ONLY_CASES"):
            with self.subTest(flag=case["flag"]):
                self.assertNotEqual(case["flag"], ",".join(encode_path(p) for p in case["paths"]))

    def test_unencodable_paths_are_refused(self) -> None:
        for path in _table("encoding_cases.bzl", "UNENCODABLE_PATHS"):
            with self.subTest(path=path), self.assertRaises(GateInputError):
                encode_path(path)


class ModuleCasesTest(absltest.TestCase):
    def test_every_row(self) -> None:
        cases = _table("module_cases.bzl", "MODULE_CASES")
        self.assertGreater(len(cases), 10)
        for case in cases:
            with self.subTest(path=case["path"]):
                self.assertEqual((case["root"], case["module"]), module_at(case["path"]))


if __name__ == "__main__":
    absltest.main()

"""The gate config's one reader: the file the real rule writes, and what it refuses."""

import json
from pathlib import Path

from absl.testing import absltest
from runfiles import runfiles

from agent_gate.cli import catalog
from agent_gate.formats import gate_config

# Written by //tests/analysis/testdata:config_gate (rules/private/gate.bzl).
WRITTEN = "agent_gate/tests/analysis/testdata/config_gate.gate.json"


def _written() -> bytes:
    path = runfiles.Create().Rlocation(WRITTEN)
    return Path(path).read_bytes()


class WrittenConfigTest(absltest.TestCase):
    def test_the_rule_writes_what_the_reader_reads(self):
        config = gate_config.parse(_written())
        self.assertEqual(config.mode, "gate")
        self.assertEqual(
            config.gate_label.rpartition("//")[2], "tests/analysis/testdata:config_gate"
        )
        self.assertEqual(config.gate_package, "tests/analysis/testdata")
        self.assertEqual(config.debt_cap, 2)
        self.assertEqual(list(config.unobserved_ok), ["docs"])
        self.assertEqual(config.ledger.path, "tests/analysis/testdata/ledger.txtpb")
        (row,) = config.catalog
        self.assertEqual(
            (row.id, row.strength, list(row.locality)),
            ("config.probe", "strong", ["tests/analysis/testdata/src"]),
        )
        self.assertEqual(list(row.fixture_roots), ["tests/analysis/testdata/fix"])
        self.assertEqual(list(row.predicate_srcs), ["tests/analysis/testdata/pass.sh"])
        (tree,) = config.fixtures
        self.assertEqual(tree.root, "tests/analysis/testdata/fix")
        self.assertEqual(tree.seal_file, "tests/analysis/testdata/fix/fix.seal")
        self.assertTrue(tree.expected.endswith("tests/analysis/testdata/fix/fix.seal"))
        self.assertTrue(tree.label.endswith("//tests/analysis/testdata/fix:fix"), tree.label)
        # No changed paths: nothing matched, nothing ran.
        self.assertEmpty(config.results)

    def test_the_cli_reads_the_same_catalog(self):
        cat = catalog.from_config(gate_config.parse(_written()))
        self.assertEqual(cat.ids, ["config.probe"])
        self.assertEqual(cat.debt_cap, 2)
        (tree,) = cat.fixtures_of("config.probe")
        self.assertEqual(tree.seal_file, "tests/analysis/testdata/fix/fix.seal")


class StrictTest(absltest.TestCase):
    def test_what_is_not_a_gate_config_is_refused(self):
        good = json.loads(_written())
        broken = {
            "not JSON": b"{",
            "not UTF-8": b'{"mode": "\xff"}',
            "a list": b"[]",
            "an unknown field": json.dumps({**good, "debt_cap_v2": 1}),
            "a string debt cap": json.dumps({**good, "debt_cap": "a lot"}),
            "a negative debt cap": json.dumps({**good, "debt_cap": -1}),
            "an unknown mode": json.dumps({**good, "mode": "promote_everything"}),
            "no gate label": json.dumps({**good, "gate_label": ""}),
            "a locality that is a string": json.dumps(
                {**good, "catalog": [{**good["catalog"][0], "locality": 7}]}
            ),
            "an unknown catalog field": json.dumps(
                {**good, "catalog": [{**good["catalog"][0], "vote": "yes"}]}
            ),
        }
        for what, text in broken.items():
            with self.subTest(what), self.assertRaises(gate_config.ConfigError):
                gate_config.parse(text)

    def test_a_field_left_out_takes_the_proto_default_never_a_pass(self):
        config = gate_config.parse(json.dumps({"mode": "gate", "gate_label": "//:g"}))
        self.assertEqual((config.debt_cap, len(config.catalog), config.run_id), (0, 0, ""))


if __name__ == "__main__":
    absltest.main()

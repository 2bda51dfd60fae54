"""The catalog read from the gate rule's config, and rendered in the shape of docs/article.md."""

import json
import tempfile
from pathlib import Path

import yaml
from absl.testing import absltest

from agent_gate.cli import catalog
from agent_gate.drive.exit_codes import CliError
from agent_gate.formats import gate_config

# What rules/private/gate.bzl writes to bazel-bin/agent_gate.gate.json for the example.
CONFIG = {
    "mode": "gate",
    "gate_label": "//:agent_gate",
    "gate_package": "",
    "catalog": [
        {
            "id": "resp.no_secret_fields",
            "strength": "strong",
            "locality": ["api/handlers", "api/serializers"],
            "fixture_roots": ["fixtures/responses"],
            "predicate_srcs": ["api/tests/no_secret_fields_test.py"],
            "package": "",
            "label": "//:resp.no_secret_fields",
            "admission_mutants": ["mutants/leak.patch"],
        },
        {
            "id": "resp.keys_present",
            "strength": "weak",
            "locality": ["api/serializers"],
            "fixture_roots": ["fixtures/responses"],
            "predicate_srcs": ["api/tests/keys_present_test.py"],
            "package": "",
            "label": "//:resp.keys_present",
            "admission_mutants": [],
        },
        {
            # A config written before admission_mutants existed still reads.
            "id": "counter.monotonic_under_replay",
            "strength": "strong",
            "locality": ["store/counters"],
            "fixture_roots": ["fixtures/replays"],
            "predicate_srcs": ["store/tests/monotonic_under_replay_test.py"],
            "package": "",
            "label": "//:counter.monotonic_under_replay",
        },
    ],
    "fixtures": [
        {
            "root": "fixtures/replays",
            "seal_file": "fixtures/replays/replays.seal",
            "expected": "monorepo/fixtures/replays/replays.seal",
            "actual": "monorepo/fixtures/replays/replays.actual.seal",
            "label": "//fixtures/replays:replays",
        },
        {
            "root": "fixtures/responses",
            "seal_file": "fixtures/responses/responses.seal",
            "expected": "monorepo/fixtures/responses/responses.seal",
            "actual": "monorepo/fixtures/responses/responses.actual.seal",
            "label": "//fixtures/responses:responses",
        },
    ],
    "results": {},
    "ledger": {"path": "ledger.txtpb", "rlocation": "monorepo/ledger.txtpb"},
    "changed_paths": [],
    "debt_cap": 5,
    "rule_set_paths": ["MODULE.bazel", "WORKSPACE"],
    "commit_counts": {},
    "override": {"by": "", "ignored_ids": []},
    "run_id": "",
}


def _parse(config) -> catalog.Catalog:
    return catalog.from_config(gate_config.parse(json.dumps(config)))


# The article's catalog, as it prints it.
ARTICLE_ROWS = [
    "  - id: resp.no_secret_fields",
    "    strength: strong",
    "    locality: [api/handlers, api/serializers]",
    "    fixtures: fixtures/responses/",
    "  - id: resp.keys_present",
    "    strength: weak",
    "    locality: [api/serializers]",
    "  - id: counter.monotonic_under_replay",
    "    locality: [store/counters]",
    "    fixtures: fixtures/replays/",
]


class ParseTest(absltest.TestCase):
    def test_reads_every_field(self):
        cat = _parse(CONFIG)
        self.assertEqual(
            cat.ids,
            ["resp.no_secret_fields", "resp.keys_present", "counter.monotonic_under_replay"],
        )
        spec = cat.get("resp.no_secret_fields")
        self.assertEqual(spec.strength, "strong")
        self.assertEqual(spec.locality, ("api/handlers", "api/serializers"))
        self.assertEqual(spec.predicate_srcs, ("api/tests/no_secret_fields_test.py",))
        self.assertEqual(cat.ledger_path, "ledger.txtpb")
        self.assertEqual(cat.debt_cap, 5)
        self.assertEqual(cat.admission_mutants, {"resp.no_secret_fields": ("mutants/leak.patch",)})
        (tree,) = cat.fixtures_of("counter.monotonic_under_replay")
        self.assertEqual(tree.seal_file, "fixtures/replays/replays.seal")

    def test_unknown_property_names_the_known_ones(self):
        cat = _parse(CONFIG)
        with self.assertRaises(CliError) as raised:
            cat.get("resp.no_secret_field")
        message = str(raised.exception)
        self.assertIn("did you mean 'resp.no_secret_fields'", message)
        self.assertIn("counter.monotonic_under_replay", message)
        self.assertEqual(raised.exception.code, 2)

    def test_malformed_configs_are_refused_with_what_to_do(self):
        broken = [
            [],
            {**CONFIG, "catalog": "x"},
            {**CONFIG, "debt_cap": "five"},
            {**CONFIG, "debt_cap": True},
            {**CONFIG, "catalog": [{**CONFIG["catalog"][0], "locality": "api"}]},
        ]
        folder = Path(tempfile.mkdtemp(dir=absltest.TEST_TMPDIR.value))
        for index, config in enumerate(broken):
            path = folder / f"{index}.gate.json"
            path.write_text(json.dumps(config))
            with self.subTest(config=str(config)[:60]):
                with self.assertRaises(CliError) as raised:
                    catalog.read_config(path)
                self.assertIn("use the CLI of the same agent_gate checkout", str(raised.exception))


class RenderTest(absltest.TestCase):
    def test_yaml_has_the_article_shape(self):
        text = catalog.render(_parse(CONFIG), "yaml")
        lines = text.splitlines()
        self.assertTrue(lines[0].startswith("# catalog of //:agent_gate"))
        for row in ARTICLE_ROWS:
            self.assertIn(row, lines)
        document = yaml.safe_load(text)
        self.assertEqual(document["debt_cap"], 5)
        self.assertEqual(
            [row["id"] for row in document["properties"]],
            ["resp.no_secret_fields", "resp.keys_present", "counter.monotonic_under_replay"],
        )
        self.assertEqual(document["properties"][0]["admission_mutants"], ["mutants/leak.patch"])
        self.assertNotIn("admission_mutants", document["properties"][1])

    def test_json_is_the_same_document_with_fixtures_always_a_list(self):
        cat = _parse(CONFIG)
        from_json = json.loads(catalog.render(cat, "json"))
        from_yaml = yaml.safe_load(catalog.render(cat, "yaml"))
        for row in from_yaml["properties"]:
            self.assertIsInstance(row["fixtures"], str)  # the article's shape: one tree
            row["fixtures"] = [row["fixtures"]]
        self.assertEqual(from_json, from_yaml)
        config = json.loads(json.dumps(CONFIG))
        config["catalog"][1]["fixture_roots"] = []
        rows = json.loads(catalog.render(_parse(config), "json"))["properties"]
        self.assertEqual(rows[1]["fixtures"], [])
        self.assertEqual(rows[0]["fixtures"], ["fixtures/responses/"])

    def test_several_or_no_fixture_trees_are_a_list(self):
        config = json.loads(json.dumps(CONFIG))
        config["catalog"][0]["fixture_roots"] = ["fixtures/responses", "fixtures/replays"]
        config["catalog"][1]["fixture_roots"] = []
        rows = catalog.as_document(_parse(config))["properties"]
        self.assertEqual(rows[0]["fixtures"], ["fixtures/responses/", "fixtures/replays/"])
        self.assertEqual(rows[1]["fixtures"], [])

    def test_unknown_format(self):
        with self.assertRaises(CliError):
            catalog.render(_parse(CONFIG), "toml")


if __name__ == "__main__":
    absltest.main()

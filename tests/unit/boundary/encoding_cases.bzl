"""Cases of the `changed_paths` flag's encoding, shared by Starlark and Python.

The CLI writes the flag with `encode_path` (tools/agent_gate/drive/gate_flags.py), items
joined by `,`; the gate rule reads it with `decode_paths`
(rules/private/paths.bzl). boundary_tests.bzl and boundary_test.py run every
row in both directions. Keep this file literal data only: the Python test reads it
with ast.literal_eval.

ENCODING_CASES: the paths and the flag the CLI writes for them, which the rule
decodes back to the same paths, byte for byte (no normalizing: that is the
evaluator's job, see locality_cases.bzl).

DECODE_ONLY_CASES: flags the CLI never writes (the Python test checks that), and
what the rule reads from them when someone hand-writes one.

UNENCODABLE_PATHS: paths the CLI refuses to send; the rule would never match them.
"""

ENCODING_CASES = [
    {"paths": [], "flag": ""},
    {"paths": ["a/b.py"], "flag": "a/b.py"},
    {"paths": ["a/b.py", "c/d.txt"], "flag": "a/b.py,c/d.txt"},
    {"paths": ["a,b"], "flag": "a%2Cb"},
    {"paths": [","], "flag": "%2C"},
    {"paths": [",", ","], "flag": "%2C,%2C"},
    {"paths": ["%"], "flag": "%25"},
    {"paths": ["%%"], "flag": "%25%25"},
    {"paths": ["%2C"], "flag": "%252C"},
    {"paths": ["%2c"], "flag": "%252c"},
    {"paths": ["%25"], "flag": "%2525"},
    {"paths": ["%252C"], "flag": "%25252C"},
    {"paths": ["%,"], "flag": "%25%2C"},
    {"paths": [",%"], "flag": "%2C%25"},
    {"paths": [",25"], "flag": "%2C25"},
    {"paths": ["%2C,%25"], "flag": "%252C%2C%2525"},
    {"paths": ["a%", "b"], "flag": "a%25,b"},
    {"paths": [" a ", "b "], "flag": " a ,b "},
    {"paths": ["src/ü/ñ.py", "日本/語"], "flag": "src/ü/ñ.py,日本/語"},
    {"paths": ["a/", "/b", "./c", "a//b", "..", "."], "flag": "a/,/b,./c,a//b,..,."},
    {"paths": ["a", "a"], "flag": "a,a"},
]

DECODE_ONLY_CASES = [
    {"flag": "a,,b", "paths": ["a", "b"]},
    {"flag": ",a,", "paths": ["a"]},
    {"flag": ",", "paths": []},
    {"flag": "%2c", "paths": ["%2c"]},
    {"flag": "%", "paths": ["%"]},
    {"flag": "%2", "paths": ["%2"]},
    {"flag": "%2C%2", "paths": [",%2"]},
    {"flag": "%41", "paths": ["%41"]},
    {"flag": "%%2C", "paths": ["%,"]},
]

UNENCODABLE_PATHS = [
    "",
    "a\nb",
    "a\rb",
    "a\0b",
]

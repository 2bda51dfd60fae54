"""Tests for agent_gate.core.locality: prefix validation, per-component matching, the index."""

from absl.testing import absltest

from agent_gate.core.locality import (
    LocalityIndex,
    component_prefixes,
    covers,
    normalize_path,
    normalize_prefix,
    validate_prefix,
)


class ValidatePrefixTest(absltest.TestCase):
    def test_valid_prefixes(self):
        for prefix in ("api", "api/handlers", "api/handlers/", "MODULE.bazel", "a.b/c-d_e"):
            with self.subTest(prefix=prefix):
                self.assertIsNone(validate_prefix(prefix))

    def test_invalid_prefixes_say_what_and_how(self):
        cases = {
            "": ("empty", "api/handlers"),
            "/abs/path": ("absolute", "'abs/path'"),
            "/": ("absolute", "relative to the repo root"),
            "a/../b": ("'..'", "without"),
            "..": ("'..'", "without"),
            "./a": ("'.'", "without"),
            "a/./b": ("'.'", "without"),
            "a\\b": ("backslash", "use '/'"),
            "a//b": ("empty path component", "'a/b'"),
            "a//": ("empty path component", "write each '/' once"),
            "a\0b": ("NUL", "remove it"),
            "a\nb": ("newline", "remove it"),
        }
        for prefix, (what, fix) in cases.items():
            with self.subTest(prefix=prefix):
                message = validate_prefix(prefix)
                self.assertIsNotNone(message)
                self.assertIn(what, message)
                self.assertIn(fix, message)

    def test_normalize_prefix_strips_one_trailing_slash(self):
        self.assertEqual(normalize_prefix("api/handlers/"), "api/handlers")
        self.assertEqual(normalize_prefix("api"), "api")
        with self.assertRaisesRegex(ValueError, "empty path component"):
            normalize_prefix("api//")
        with self.assertRaisesRegex(ValueError, "absolute"):
            normalize_prefix("/api")


class NormalizePathTest(absltest.TestCase):
    def test_strips_leading_dot_slash(self):
        self.assertEqual(normalize_path("./api/x.py"), "api/x.py")
        self.assertEqual(normalize_path("././api/x.py"), "api/x.py")
        self.assertEqual(normalize_path("api/x.py"), "api/x.py")

    def test_collapses_harmless_spellings(self):
        self.assertEqual(normalize_path("api//./x.py"), "api/x.py")

    def test_rejects_paths_outside_the_repo(self):
        with self.assertRaisesRegex(ValueError, "absolute"):
            normalize_path("/etc/passwd")
        with self.assertRaisesRegex(ValueError, r"'\.\.'"):
            normalize_path("api/../../etc/passwd")
        with self.assertRaisesRegex(ValueError, "names no file"):
            normalize_path("./")
        with self.assertRaisesRegex(ValueError, "newline"):
            normalize_path("a\nb")


class CoversTest(absltest.TestCase):
    def test_per_component(self):
        self.assertTrue(covers("api/handlers", "api/handlers"))
        self.assertTrue(covers("api/handlers", "api/handlers/x.py"))
        self.assertTrue(covers("api/handlers/", "api/handlers/deep/x.py"))
        self.assertTrue(covers("api", "./api/handlers/x.py"))
        self.assertFalse(covers("api/handlers", "api/handlers_v2/x.py"))
        self.assertFalse(covers("api/handlers", "api/handler"))
        self.assertFalse(covers("api/handlers", "api"))
        self.assertFalse(covers("api/handlers", "other/api/handlers/x.py"))

    def test_file_prefix(self):
        self.assertTrue(covers("MODULE.bazel", "MODULE.bazel"))
        self.assertFalse(covers("MODULE.bazel", "MODULE.bazel.lock"))

    def test_component_prefixes(self):
        self.assertEqual(list(component_prefixes("a/b/c.py")), ["a", "a/b", "a/b/c.py"])
        self.assertEqual(list(component_prefixes("x")), ["x"])


class LocalityIndexTest(absltest.TestCase):
    def test_matches_the_article_catalog(self):
        index = LocalityIndex(
            [
                ("resp.no_secret_fields", ["api/handlers", "api/serializers"]),
                ("resp.keys_present", ["api/serializers/"]),
                ("counter.monotonic_under_replay", ["store/counters"]),
            ]
        )
        self.assertEqual(
            index.match(["store/counters/inc.py"]),
            {"counter.monotonic_under_replay": "store/counters/inc.py"},
        )
        self.assertEqual(
            index.match(["docs/x.md", "api/serializers/user.py", "api/handlers/a.py"]),
            {
                "resp.no_secret_fields": "api/serializers/user.py",
                "resp.keys_present": "api/serializers/user.py",
            },
        )
        self.assertEqual(index.match([]), {})
        self.assertEqual(index.match(["README.md"]), {})

    def test_per_component_not_string_prefix(self):
        index = LocalityIndex([("h", ["api/handlers"])])
        self.assertEqual(index.match(["api/handlers_v2/x.py", "api/handlersx"]), {})
        self.assertEqual(index.match(["api/handlers"]), {"h": "api/handlers"})

    def test_first_path_in_input_order_wins(self):
        index = LocalityIndex([("deep", ["a/b/c"]), ("shallow", ["a"])])
        self.assertEqual(
            index.match(["z.txt", "a/x.py", "a/b/c/y.py", "a/b/c/z.py"]),
            {"shallow": "a/x.py", "deep": "a/b/c/y.py"},
        )
        self.assertEqual(
            index.match(["a/b/c/z.py", "a/x.py"]),
            {"shallow": "a/b/c/z.py", "deep": "a/b/c/z.py"},
        )

    def test_shared_and_repeated_prefixes(self):
        index = LocalityIndex([("p", ["lib", "lib/", "lib/sub"]), ("q", ["lib"])])
        self.assertEqual(index.match(["lib/sub/x", "lib/y"]), {"p": "lib/sub/x", "q": "lib/sub/x"})

    def test_reports_the_path_as_given(self):
        index = LocalityIndex([("p", ["api"])])
        self.assertEqual(index.match(["./api/x.py"]), {"p": "./api/x.py"})

    def test_bad_prefix_names_the_property(self):
        with self.assertRaisesRegex(ValueError, r"property bad\.one: .*absolute"):
            LocalityIndex([("ok", ["api"]), ("bad.one", ["/api"])])

    def test_bad_path_raises(self):
        index = LocalityIndex([("p", ["api"])])
        with self.assertRaisesRegex(ValueError, "absolute"):
            index.match(["api/x.py", "/etc/passwd"])
        with self.assertRaisesRegex(ValueError, r"'\.\.'"):
            index.match(["../api/x.py"])

    def test_large_catalog_and_diff_smoke(self):
        # 10,000 properties x 100,000 paths: correctness only; timing lives in bench/.
        properties = [(f"p{i}", [f"svc/m{i}/src", f"shared/lib{i % 100}"]) for i in range(10_000)]
        paths = [f"svc/m{j % 20_000}/src/pkg/file{j}.py" for j in range(100_000)]
        paths.append("shared/lib7_v2/x.py")
        matched = LocalityIndex(properties).match(paths)
        self.assertLen(matched, 10_000)
        for i in (0, 1, 4_999, 9_999):
            self.assertEqual(matched[f"p{i}"], f"svc/m{i}/src/pkg/file{i}.py")
        unmatched = LocalityIndex([("x", ["svc/m20000"]), ("y", ["shared/lib7"])]).match(paths)
        self.assertEqual(unmatched, {})


if __name__ == "__main__":
    absltest.main()

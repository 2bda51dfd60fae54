"""`tools/agent-gate`, the merge-queue CLI, end to end: real git, real Bazel.

One copy of examples/monorepo, made a git repository in a temporary directory
and wired to this checkout (`local_repository(path = <this checkout>)`), is the
user's monorepo for every test. Base trees the cases need (a ledger, a drifted
fixture, a flaky property, a malformed ledger, declared admission mutants) are
branches of it; the user's checkout stays on `main` and must be left exactly
as it was (`git status --porcelain` empty, HEAD unchanged) by every command
that is not meant to edit the ledger. The CLI always runs as a subprocess from
a directory outside the repository, and every score reuses the one scoring
worktree (and so its Bazel server). The first score is cold, the second warm:
both wall times are printed.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tools"), str(ROOT / "examples")]

from agent_gate.drive import protogen  # noqa: E402

protogen.ensure_proto_importable()

import wired_copy  # noqa: E402
import yaml  # noqa: E402
from absl.testing import absltest  # noqa: E402
from google.protobuf import json_format, text_format  # noqa: E402

from agent_gate.drive import bazel_client  # noqa: E402
from agent_gate.formats import seal  # noqa: E402
from proto import agent_gate_pb2  # noqa: E402

CLI = ROOT / "tools" / "agent-gate"
EXAMPLE = ROOT / "examples" / "monorepo"
PATCHES = ROOT / "examples" / "patches"
MANIFEST = PATCHES / "cases.yaml"
EXIT = {
    "promote": 0,
    "reject": 10,
    "hold": 11,
    "review": 12,
    "fixture_fault": 13,
    "stop_queue": 14,
}
COUNTER = "counter.monotonic_under_replay"
SECRETS = "resp.no_secret_fields"
REPLAYS_SEAL = "416d960d4898a0da240b55f5ae292c791583126bb0cb12867f156e79aad8bab1"


def _git(cwd: Path, *args: str) -> str:
    return wired_copy.git(cwd, *args).decode()


def _processes_naming(path: Path) -> list[int]:
    """Live processes whose command line names `path` (a bazel client or server in it)."""
    needle = str(path).encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline:
            found.append(int(proc.name))
    return found


def _output_base_of(output_base: Path, cache: Path) -> bool:
    """Whether Bazel made `output_base` for a workspace in `cache` (DO_NOT_BUILD_HERE names it)."""
    try:
        named = (output_base / "DO_NOT_BUILD_HERE").read_text(encoding="utf-8").strip()
    except OSError:
        return False
    return cache in Path(named).parents


def _report(path: Path) -> agent_gate_pb2.GateReport:
    return json_format.Parse(path.read_text(encoding="utf-8"), agent_gate_pb2.GateReport())


class CliTest(absltest.TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # Not /tmp: every sandboxed action gets a private tmpfs there, which
        # linux-sandbox cannot mount over a scoring worktree below it.
        cls.tmp = Path(tempfile.mkdtemp(prefix="agent_gate-cli-", dir="/var/tmp")).resolve()
        cls.cache = cls.tmp / "cache"
        cls.elsewhere = cls.tmp / "elsewhere"
        cls.elsewhere.mkdir()
        cls.repo = cls.tmp / "monorepo"
        shutil.copytree(EXAMPLE, cls.repo, ignore=shutil.ignore_patterns("bazel-*", "__pycache__"))
        wired_copy.wire_copy(cls.repo, ROOT)
        _git(cls.repo, "init", "-q", "-b", "main")
        _git(cls.repo, "add", "-A")
        _git(cls.repo, "commit", "-q", "-m", "base: examples/monorepo")
        cls.base = _git(cls.repo, "rev-parse", "HEAD").strip()
        cls.cases = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
        cls.nogate = cls.tmp / "nogate"
        try:
            cls._make_branches()
            cls._make_workspace_without_gate()
            # The first score is cold (new worktree, new Bazel server), the second warm.
            cls.first = cls._timed_score("first", "promote_refactor.patch")
            cls.second = cls._timed_score("second", "promote_refactor.patch")
            # Asked of the warm server now: asking in tearDownClass could start a cold one.
            (scoring,) = (cls.cache / "agent_gate").glob("*/scoring")
            binary = bazel_client.find_bazel()
            cls.scoring_output_base = bazel_client.server_info(binary, scoring)[1]
        except BaseException:
            cls.tearDownClass()  # absltest skips it when setUpClass fails: no server may leak
            raise

    @classmethod
    def tearDownClass(cls):
        for worktree in (cls.cache / "agent_gate").glob("*/scoring"):
            if worktree.is_dir():
                bazel_client.shutdown(worktree)
        # The scoring worktree's output base is keyed by its path, so never used again.
        output_base = getattr(cls, "scoring_output_base", None)
        if output_base is not None and _output_base_of(output_base, cls.cache):
            wired_copy.remove_tree(output_base)
        shutil.rmtree(cls.tmp, ignore_errors=True)
        super().tearDownClass()

    # --- set-up helpers ------------------------------------------------------

    @classmethod
    def _branch(cls, name: str, edit) -> str:
        """A branch off the base, with `edit(repo)` committed; the checkout goes back to main."""
        _git(cls.repo, "checkout", "-q", "-b", name, cls.base)
        try:
            edit(cls.repo)
            _git(cls.repo, "add", "-A")
            _git(cls.repo, "commit", "-q", "-m", name)
        finally:
            _git(cls.repo, "checkout", "-q", "main")
        return _git(cls.repo, "rev-parse", name).strip()

    @classmethod
    def _apply(cls, relative: str):
        return lambda repo: _git(repo, "apply", str(PATCHES / relative))

    @classmethod
    def _make_branches(cls):
        cls._branch("drift", cls._apply("drift/events_log_appended.patch"))
        cls._branch("flaky", cls._apply("replay_retry_shortcut.patch"))

        def flaky_and_drifted(repo):
            cls._apply("replay_retry_shortcut.patch")(repo)
            cls._apply("drift/events_log_appended.patch")(repo)

        cls._branch("flaky-drift", flaky_and_drifted)
        cls._branch("refactored", cls._apply("promote_refactor.patch"))

        def bad_ledger(repo):
            with (repo / "ledger.txtpb").open("a") as ledger:
                ledger.write(f'\nfreeze {{\n  property_id: "{COUNTER}"\n  state: "frozen"\n}}\n')

        cls._branch("bad-ledger", bad_ledger)
        for case in cls.cases:
            if case.get("ledger") and not _branch_exists(cls.repo, _ledger_branch(case)):
                cls._branch(_ledger_branch(case), _ledger_edit(case, cls.base))

        def declare_mutants(repo):
            counter = repo / "store" / "counters" / "counter.py"
            original = counter.read_text()
            counter.write_text(
                original.replace("counters[name] = max(current, amount)", "counters[name] = amount")
            )
            mutant = _git(repo, "diff")
            counter.write_text(original)
            (repo / "mutants").mkdir()
            (repo / "mutants" / "set_lowers_counter.patch").write_text(mutant)
            shutil.copy(PATCHES / "leak_password_hash.patch", repo / "mutants")
            build = repo / "BUILD.bazel"
            text = build.read_text()
            for test, mutant_file in (
                ("//api/tests:no_secret_fields_test", "leak_password_hash.patch"),
                ("//store/tests:monotonic_under_replay_test", "set_lowers_counter.patch"),
            ):
                text = text.replace(
                    f'    test = "{test}",',
                    f'    admission_mutants = ["mutants/{mutant_file}"],\n    test = "{test}",',
                )
            build.write_text(text)

        cls._branch("mutants", declare_mutants)

        def generator_failing_at_base(repo):
            # The counter's test needs a generated file whose generator always fails:
            # the base does not build it, whatever a patch does.
            build = repo / "store" / "tests" / "BUILD.bazel"
            text = build.read_text()
            text = text.replace(
                'data = ["//fixtures/replays"],', 'data = ["//fixtures/replays", ":generated"],'
            )
            text += 'genrule(name = "generated", outs = ["generated.txt"], cmd = "exit 1")\n'
            build.write_text(text)

        cls._branch("broken-base", generator_failing_at_base)

    @classmethod
    def _make_workspace_without_gate(cls):
        nogate = cls.nogate
        nogate.mkdir()
        (nogate / "WORKSPACE").write_text('workspace(name = "nogate")\n')
        (nogate / "BUILD.bazel").write_text('filegroup(name = "docs", srcs = ["README.md"])\n')
        (nogate / "README.md").write_text("No agent_gate here.\n")
        _git(nogate, "init", "-q", "-b", "main")
        _git(nogate, "add", "-A")
        _git(nogate, "commit", "-q", "-m", "no gate")

    @classmethod
    def _timed_score(cls, name: str, patch: str) -> dict:
        out = cls.tmp / f"{name}.json"
        started = time.monotonic()
        done = cls.run_cli("score", "--patch", str(PATCHES / patch), "--report", str(out))
        seconds = time.monotonic() - started
        timing = next(
            (line for line in done.stderr.splitlines() if "timing:" in line), "(no timing line)"
        )
        print(f"agent-gate score ({name}): {seconds:.1f}s wall; {timing}", file=sys.stderr)
        # Read now: later scores prune old run folders (--keep-runs).
        logs = cls.state() / "runs" / _report(out).run_id if out.is_file() else None
        texts = {
            name: (logs / name).read_text() if logs and (logs / name).is_file() else ""
            for name in ("catalog.log", "bazel.log")
        }
        return {"done": done, "seconds": seconds, "report": out, "timing": timing, "logs": texts}

    @classmethod
    def env(cls, **extra: str) -> dict:
        """The CLI's environment: its cache (so the scoring worktree) inside the temp dir."""
        return {
            **os.environ,
            "GIT_CEILING_DIRECTORIES": str(cls.tmp),
            "XDG_CACHE_HOME": str(cls.cache),
            **extra,
        }

    @classmethod
    def state(cls, name: str = "monorepo") -> Path:
        """The repository's agent_gate directory in the cache (never in its .git)."""
        (found,) = (cls.cache / "agent_gate").glob(f"{name}-*")
        return found

    @classmethod
    def run_cli(cls, *args: str, cwd: Path | None = None, env: dict | None = None, workspace=True):
        command = [str(CLI), *args]
        if workspace and args and args[0] in ("score", "freeze", "admit", "catalog"):
            command += ["--workspace", str(cls.repo)]
        return subprocess.run(
            command,
            cwd=cwd or cls.elsewhere,
            env=env if env is not None else cls.env(),
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )

    # --- assertions ----------------------------------------------------------

    def assertUntouched(self, head: str | None = None):
        self.assertEqual(_git(self.repo, "status", "--porcelain"), "", "the checkout changed")
        self.assertEqual(_git(self.repo, "rev-parse", "HEAD").strip(), head or self.base)

    def assertExit(self, done, code: int, *needles: str):
        self.assertEqual(done.returncode, code, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}")
        for needle in needles:
            self.assertIn(needle, done.stdout + done.stderr)

    def assertUsageError(self, done, *needles: str):
        self.assertExit(done, 2, "agent-gate: error:", *needles)

    def score(self, patch: str, *args: str, report: str = "report.json"):
        out = self.tmp / report
        done = self.run_cli("score", "--patch", str(PATCHES / patch), "--report", str(out), *args)
        return done, out

    # --- score -----------------------------------------------------------------

    def test_first_score_cold_second_warm(self):
        for run in (self.first, self.second):
            self.assertExit(run["done"], 0)
            self.assertEqual(_report(run["report"]).decision, "promote")
        self.assertLess(self.second["seconds"], self.first["seconds"] + 5)
        # One analysis per score: the catalog build runs under the gate's coming flags,
        # so only it finds them changed; the gate's run after the patch is incremental.
        logs = self.second["logs"]
        dropped = "discarding analysis cache"
        self.assertIn(dropped, logs["catalog.log"])
        self.assertNotIn(dropped, logs["bazel.log"])
        self.assertUntouched()

    def test_every_manifest_case_exits_with_its_decision_code(self):
        seen = set()
        for case in self.cases:
            with self.subTest(case=case["name"]):
                base = _ledger_branch(case) if case.get("ledger") else "main"
                if case.get("drift"):
                    self.assertEqual(case["drift"], "drift/events_log_appended.patch")
                    self.assertIsNone(case.get("ledger"))
                    base = "drift"
                done, out = self.score(case["patch"], "--base", base, "--quiet")
                self.assertExit(done, EXIT[case["expect"]], f"agent_gate: {case['expect']}")
                self.assertEqual(done.stderr, "", "--quiet prints no progress")
                report = _report(out)
                self.assertEqual(report.decision, case["expect"], report.reasons)
                rows = {row.property_id: row for row in report.rows}
                for property_id, fields in (case.get("rows") or {}).items():
                    for key, value in fields.items():
                        actual = getattr(rows[property_id], key)
                        actual = list(actual) if key == "exit_codes" else actual
                        self.assertEqual(actual, value, f"{property_id}.{key}")
                guarded = [entry.split(" (", 1)[0] for entry in report.guarded_paths]
                for path in case.get("guarded") or ():
                    self.assertIn(path, guarded)
                self.assertTrue(out.with_suffix(".md").is_file())
                self.assertUntouched()
                seen.add(case["expect"])
        self.assertEqual(seen, set(EXIT), "the manifest covers every decision")

    def _patch_of(self, name: str, edit) -> Path:
        """A patch made with git diff from `edit(repo)` on main; the checkout is restored."""
        edit(self.repo)
        try:
            text = _git(self.repo, "diff")
        finally:
            _git(self.repo, "checkout", "-q", "--", ".")
        path = self.tmp / name
        path.write_text(text)
        return path

    def test_a_patch_breaking_a_matched_tests_build_is_reject(self):
        def rename_the_library(repo):
            build = repo / "store" / "counters" / "BUILD.bazel"
            build.write_text(build.read_text().replace('name = "counters"', 'name = "counter_lib"'))

        patch = self._patch_of("break_build.patch", rename_the_library)
        out = self.tmp / "break_build.json"
        done = self.run_cli("score", "--patch", str(patch), "--report", str(out))
        self.assertExit(done, 10, "agent_gate: reject", "breaks the build of the test of")
        report = _report(out)
        self.assertEqual(report.decision, "reject", report.reasons)
        self.assertIn("which builds at the base", report.rule)
        row = next(row for row in report.rows if row.property_id == COUNTER)
        self.assertEqual((row.classification, row.vote), ("error", "no"))
        (build,) = row.evidence
        self.assertEqual((build.run_number, build.exit_code), (0, 1))
        self.assertIn("//store/counters:counters", build.output_tail)
        self.assertLessEqual(len(build.output_tail.encode()), 64 * 1024)
        self.assertTrue(Path(build.log).is_file())
        markdown = out.with_suffix(".md").read_text()
        self.assertLess(markdown.index("### What to fix"), markdown.index("| property |"))
        self.assertIn("build of its test: bazel build exit 1", markdown)
        self.assertIn("//store/counters:counters", markdown)
        junit = out.with_suffix(".xml").read_text()
        self.assertIn('name="counter.monotonic_under_replay"', junit)
        self.assertIn("//store/counters:counters", junit)
        self.assertUntouched()

    def test_a_build_break_the_base_shares_is_no_decision(self):
        def comment_the_counter(repo):
            counter = repo / "store" / "counters" / "counter.py"
            counter.write_text(counter.read_text() + "# a comment\n")

        patch = self._patch_of("comment_counter.patch", comment_the_counter)
        out = self.tmp / "broken_base.json"
        done = self.run_cli(
            "score", "--patch", str(patch), "--base", "broken-base", "--report", str(out)
        )
        self.assertUsageError(done, "does not build", "either", "not the patch's")
        self.assertFalse(out.exists(), "no report claims a decision")
        self.assertUntouched()

    def test_keep_runs_bounds_the_run_folders(self):
        done, out = self.score("promote_refactor.patch", "--keep-runs", "2", report="keep.json")
        self.assertExit(done, 0)
        runs = [path.name for path in (self.state() / "runs").iterdir()]
        self.assertLen(runs, 2, runs)
        self.assertIn(_report(out).run_id, runs)
        refused = self.run_cli(
            "score", "--patch", str(PATCHES / "promote_refactor.patch"), "--keep-runs", "0"
        )
        self.assertExit(refused, 2, "keeps no run")

    def test_fixture_fault_is_found_before_the_patch_is_applied(self):
        done, out = self.score("promote_refactor.patch", "--base", "drift")
        self.assertExit(done, 13, "fixture drift before apply", "the patch is not applied")
        report = _report(out)
        self.assertEqual(report.decision, "fixture_fault")
        self.assertEqual(report.changed_path_count, 2)
        row = next(row for row in report.rows if row.property_id == COUNTER)
        self.assertEqual((row.seal_status, row.classification), ("mismatch", "not_run"))
        self.assertIn("never applied", row.note)
        scoring = self.state() / "scoring"
        self.assertEqual(
            (scoring / "store" / "counters" / "counter.py").read_text(),
            _git(self.repo, "show", "drift:store/counters/counter.py"),
        )
        self.assertUntouched()

    def test_progress_report_and_markdown(self):
        done, out = self.score("leak_password_hash.patch", report="leak.json")
        self.assertExit(done, 10, "agent_gate: reject")
        self.assertRegex(done.stderr, r"agent-gate \[ *\d+\.\ds\] ")
        for step in ("reusing the scoring worktree", "reading the catalog", "matched: ", "timing:"):
            self.assertIn(step, done.stderr)
        self.assertRegex(done.stdout, rf"{re.escape(SECRETS)} +strong +fail +vote=no")
        markdown = out.with_suffix(".md").read_text()
        self.assertTrue(markdown.startswith("**agent_gate: reject**"))
        self.assertEqual(_report(out).decision, "reject")

    def test_override_gets_past_stop_queue_only_naming_open_rows(self):
        all_open = next(case for case in self.cases if case["expect"] == "stop_queue")
        base = _ledger_branch(all_open)
        done, out = self.score(all_open["patch"], "--base", base)
        self.assertExit(done, 14, "agent_gate: stop_queue")
        # The ledger alone decides: no property ran, and the report and the rows say so.
        self.assertIn("nothing is run", done.stderr)
        self.assertIn("  runs: no property ran", done.stdout)
        self.assertIn("no property ran", out.with_suffix(".md").read_text())
        self.assertFalse(_report(out).runs_fresh)
        for row in _report(out).rows:
            self.assertEqual(list(row.exit_codes), [], row.property_id)
            self.assertIn("no property ran", row.note)
        ids = "resp.no_secret_fields,resp.keys_present,counter.monotonic_under_replay"
        done, out = self.score(
            all_open["patch"], "--base", base, "--override-ignore", ids, "--override-by", "alice"
        )
        self.assertExit(done, 12, "agent_gate: review", "override: by alice")
        report = _report(out)
        self.assertEqual(report.override.by, "alice")
        self.assertEqual(list(report.override.ignored_ids), ids.split(","))
        done, _ = self.score(
            all_open["patch"], "--base", "main", "--override-ignore", COUNTER, "--override-by", "al"
        )
        self.assertUsageError(done, "has no open ledger row")
        done, _ = self.score(all_open["patch"], "--base", base, "--override-ignore", COUNTER)
        self.assertUsageError(done, "--override-by NAME")
        self.assertUntouched()

    def test_runs_from_inside_the_workspace_without_flags(self):
        cwd = self.repo / "api" / "handlers"
        done = self.run_cli(
            "score", "--patch", str(PATCHES / "docs_only.patch"), cwd=cwd, workspace=False
        )
        self.assertExit(done, 12, "agent_gate: review")
        self.assertUntouched()

    # --- bad input: exit 2, a message that says what to do, the checkout untouched ---

    def test_bad_patches(self):
        bad = self.tmp / "bad"
        bad.mkdir(exist_ok=True)
        (bad / "binary.patch").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
        (bad / "garbage.patch").write_text("Please merge my change, it is fine.\n")
        (bad / "empty.patch").write_text("")
        for name, needles in (
            ("missing.patch", ("does not exist",)),
            ("binary.patch", ("binary data", "git diff")),
            ("garbage.patch", ("not a patch", "git diff")),
            ("empty.patch", ("empty patch",)),
        ):
            with self.subTest(name):
                done = self.run_cli("score", "--patch", str(bad / name))
                self.assertUsageError(done, *needles)
                self.assertUntouched()

    def test_patch_against_another_base(self):
        done, _ = self.score("promote_refactor.patch", "--base", "refactored")
        self.assertUsageError(done, "does not apply to base", "rebase it", "--base")
        self.assertUntouched()
        done, _ = self.score("promote_refactor.patch", "--base", "no-such-branch")
        self.assertUsageError(done, "is not a commit")

    def test_workspace_not_a_git_repository(self):
        plain = self.tmp / "plain"
        shutil.copytree(self.repo, plain, ignore=shutil.ignore_patterns(".git", "bazel-*"))
        done = self.run_cli(
            "score",
            "--patch",
            str(PATCHES / "docs_only.patch"),
            "--workspace",
            str(plain),
            workspace=False,
        )
        self.assertUsageError(done, "not inside a git repository", "git init")
        self.assertFalse((plain / ".git").exists())

    def test_workspace_without_the_gate_target(self):
        done = self.run_cli(
            "score",
            "--patch",
            str(PATCHES / "docs_only.patch"),
            "--workspace",
            str(self.nogate),
            workspace=False,
        )
        self.assertUsageError(done, "has no //:agent_gate target", 'agent_gate(name = "agent_gate"')
        self.assertEqual(_git(self.nogate, "status", "--porcelain"), "")

    def test_unknown_property(self):
        for args in (
            ("freeze", "open", "resp.no_secret_field", "--reason", "split"),
            ("admit", "resp.no_secret_field", "--mutant", str(PATCHES / "docs_only.patch")),
        ):
            with self.subTest(args[0]):
                done = self.run_cli(*args)
                self.assertUsageError(
                    done, "unknown property", "did you mean 'resp.no_secret_fields'"
                )
                self.assertUntouched()

    def test_malformed_ledger(self):
        done, _ = self.score("docs_only.patch", "--base", "bad-ledger")
        self.assertUsageError(done, "ledger.txtpb:", "state 'frozen'", '"open" or "retired"')
        self.assertUntouched()
        ledger = self.repo / "ledger.txtpb"
        original = ledger.read_text()
        edited = original + 'freeze {\n  property_id: "x"\n  state: open\n'
        ledger.write_text(edited)
        try:
            for args in (("freeze", "list"), ("freeze", "retire", COUNTER)):
                with self.subTest(args[1]):
                    done = self.run_cli(*args)
                    self.assertUsageError(done, f"{ledger}:", "not a valid text-format ledger")
                    self.assertEqual(ledger.read_text(), edited)
        finally:
            ledger.write_text(original)
        self.assertUntouched()

    def test_a_report_with_errors_fails_closed(self):
        """A patch that breaks the ledger: the gate reports the error, the CLI exits 2."""
        ledger = self.repo / "ledger.txtpb"
        original = ledger.read_text()
        ledger.write_text(original + f'\nfreeze {{\n  property_id: "{COUNTER}"\n  state: "x"\n}}\n')
        candidate = self.tmp / "break_ledger.patch"
        candidate.write_text(_git(self.repo, "diff"))
        ledger.write_text(original)
        self.assertUntouched()
        out = self.tmp / "errors.json"
        done = self.run_cli("score", "--patch", str(candidate), "--report", str(out), "--quiet")
        self.assertUsageError(done, "configuration error", "failed closed", "ledger.txtpb:")
        report = _report(out)
        self.assertNotEqual(report.decision, "promote")
        self.assertTrue(report.errors)
        self.assertUntouched()

    def test_bazel_missing_from_path(self):
        tools = self.tmp / "no-bazel-bin"
        tools.mkdir(exist_ok=True)
        for name in ("bash", "env", "git", "readlink", "dirname"):
            found = shutil.which(name)
            if found and not (tools / name).exists():
                (tools / name).symlink_to(found)
        env = {**self.env(), "PATH": str(tools)}
        for args in (
            ("score", "--patch", str(PATCHES / "docs_only.patch")),
            ("freeze", "list"),
            ("catalog",),
        ):
            with self.subTest(args[0]):
                done = self.run_cli(*args, env=env)
                self.assertUsageError(done, "bazel is not on PATH", "tools/bootstrap")
                self.assertUntouched()

    def test_usage_errors_and_missing_environment(self):
        self.assertEqual(self.run_cli().returncode, 2)
        self.assertEqual(self.run_cli("score").returncode, 2)
        self.assertUsageError(self.run_cli("admit", SECRETS), "--mutant PATCH")
        fake = self.tmp / "fake-checkout" / "tools"
        fake.mkdir(parents=True, exist_ok=True)
        shutil.copy(CLI, fake / "agent-gate")
        link = self.tmp / "agent-gate-link"
        if not link.exists():
            link.symlink_to(fake / "agent-gate")
        done = subprocess.run(
            [str(link), "seal", "x"],
            cwd=self.elsewhere,
            capture_output=True,
            text=True,
            check=False,
        )
        self.assertEqual(done.returncode, 2)
        self.assertIn(f"{fake.parent}/.venv", done.stderr)
        self.assertIn("tools/bootstrap", done.stderr)

    def test_scoring_worktree_lives_outside_the_repository(self):
        """Nothing of agent_gate's state is in the checkout or its .git: `..` cannot reach it."""
        state = self.state()
        scoring = state / "scoring"
        self.assertTrue((scoring / ".git").is_file())
        for inside in (self.repo, self.repo / ".git"):
            self.assertNotIn(inside, scoring.resolve().parents)
        self.assertFalse((self.repo / ".git" / "agent_gate").exists())
        self.assertTrue((state / "lock").is_file())
        self.assertTrue((state / "runs").is_dir())
        # The key is the repository's git directory: another repository gets another one.
        self.assertIn(state.name.split("-", 1)[0], ("monorepo",))

    def test_arguments_no_ledger_can_hold_are_refused_before_anything_runs(self):
        ledger = (self.repo / "ledger.txtpb").read_bytes()
        for budget in ("9223372036854775808", "-1", "1e3", "99999999999999999999999"):
            with self.subTest(budget=budget):
                started = time.monotonic()
                done = self.run_cli("freeze", "open", COUNTER, "--reason", "r", "--budget", budget)
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertIn("--budget", done.stderr)
                self.assertNotIn("Traceback", done.stderr)
                self.assertLess(time.monotonic() - started, 10)  # no Bazel ran
        done = self.run_cli("score", "--patch", str(PATCHES / "docs_only.patch"), "--deadline", "0")
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("--deadline", done.stderr)
        self.assertEqual((self.repo / "ledger.txtpb").read_bytes(), ledger)
        self.assertUntouched()

    def test_past_the_deadline_nothing_is_decided_and_no_bazel_is_left(self):
        """A cold server cannot start in 2 s: the CLI stops, says so, kills client and server."""
        scoring = self.state() / "scoring"
        bazel_client.shutdown(scoring)
        done, out = self.score("promote_refactor.patch", "--deadline", "2", report="late.json")
        self.assertUsageError(done, "deadline of 2s")
        self.assertFalse(out.exists())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _processes_naming(scoring):
            time.sleep(0.5)
        self.assertEqual(_processes_naming(scoring), [], "a bazel process outlived the deadline")
        self.assertUntouched()

    # --- freeze ----------------------------------------------------------------

    def test_freeze_workflow(self):
        ledger = self.repo / "ledger.txtpb"
        original = ledger.read_text()
        _git(self.repo, "checkout", "-q", "flaky")
        flaky = _git(self.repo, "rev-parse", "HEAD").strip()
        try:
            done = self.run_cli("freeze", "open", SECRETS, "--reason", "split")
            self.assertUsageError(done, "passed twice on the unmodified tree")
            self.assertUntouched(flaky)

            reason = "exit mismatch across two runs on sealed fixtures"
            done = self.run_cli(
                "freeze",
                "open",
                COUNTER,
                "--reason",
                reason,
                "--owner",
                "store-team",
                "--budget",
                "10",
            )
            self.assertExit(done, 0, "opened: ", "exit 0, 1")
            text = ledger.read_text()
            self.assertTrue(text.startswith(original), "comments and rows kept")
            rows = text_format.Parse(text, agent_gate_pb2.Ledger()).freeze
            self.assertLen(rows, 1)
            self.assertEqual(
                (rows[0].property_id, rows[0].state, rows[0].seal, rows[0].reason),
                (COUNTER, "open", REPLAYS_SEAL, reason),
            )
            self.assertEqual(
                (rows[0].opened_against_commit, rows[0].retire_by_commit_count, rows[0].owner),
                (flaky, 10, "store-team"),
            )

            done = self.run_cli("freeze", "open", COUNTER, "--reason", "again")
            self.assertUsageError(done, "already has an open freeze", "freeze retire")
            self.assertEqual(ledger.read_text(), text, "an open row is never extended")

            done = self.run_cli("freeze", "list")
            self.assertExit(done, 0, COUNTER, "store-team", "0/10", "debt 1")

            done = self.run_cli("freeze", "retire", COUNTER)
            self.assertExit(done, 0, "retired: ")
            rows = text_format.Parse(ledger.read_text(), agent_gate_pb2.Ledger()).freeze
            self.assertEqual(rows[0].state, "retired")
            done = self.run_cli("freeze", "retire", COUNTER)
            self.assertUsageError(done, "is already retired")
            done = self.run_cli("freeze", "list", "--quiet")
            self.assertExit(done, 0, "retired", "debt 0")
        finally:
            ledger.write_text(original)
            _git(self.repo, "checkout", "-q", "main")
        self.assertUntouched()

    def test_freeze_refused_on_a_drifted_seal(self):
        _git(self.repo, "checkout", "-q", "flaky-drift")
        head = _git(self.repo, "rev-parse", "HEAD").strip()
        try:
            done = self.run_cli("freeze", "open", COUNTER, "--reason", "split")
            self.assertUsageError(done, "drifted", "never a freeze")
            self.assertUntouched(head)
        finally:
            _git(self.repo, "checkout", "-q", "main")

    # --- admit -------------------------------------------------------------------

    def test_admit(self):
        done = self.run_cli("admit", SECRETS, "--mutant", str(PATCHES / "leak_password_hash.patch"))
        self.assertExit(done, 0, f"admitted: {SECRETS}", "exit 1, 1")
        done = self.run_cli(
            "admit", "resp.keys_present", "--mutant", str(PATCHES / "leak_password_hash.patch")
        )
        self.assertExit(done, 1, "not admitted", "mutant half failed", "still passes twice")
        done = self.run_cli(
            "admit", COUNTER, "--base", "flaky", "--mutant", str(PATCHES / "refactor_counter.patch")
        )
        self.assertExit(done, 1, "not admitted", "clean half failed", "flake")
        done = self.run_cli("admit", SECRETS, "--mutant", str(PATCHES / "weaken_predicate.patch"))
        self.assertExit(done, 1, "mutant half refused", "predicate source")
        self.assertUntouched()

    def test_admit_all_declared(self):
        done = self.run_cli("admit", "--all-declared", "--base", "mutants")
        self.assertExit(
            done,
            0,
            f"admitted: {SECRETS} with mutant mutants/leak_password_hash.patch",
            f"admitted: {COUNTER} with mutant mutants/set_lowers_counter.patch",
        )
        done = self.run_cli("admit", "--all-declared")
        self.assertExit(done, 0, "declares admission_mutants: nothing to check")
        self.assertUntouched()

    # --- catalog and seal ---------------------------------------------------------

    def test_catalog(self):
        done = self.run_cli("catalog", "--quiet")
        self.assertExit(done, 0)
        for line in (
            "properties:",
            "  - id: resp.no_secret_fields",
            "    strength: strong",
            "    locality: [api/handlers, api/serializers]",
            "    fixtures: fixtures/responses/",
            "  - id: resp.keys_present",
            "    strength: weak",
            "  - id: counter.monotonic_under_replay",
            "    locality: [store/counters]",
            "    fixtures: fixtures/replays/",
        ):
            self.assertIn(line, done.stdout.splitlines())
        as_yaml = yaml.safe_load(done.stdout)
        done = self.run_cli("catalog", "--format", "json", "--base", "mutants", "--quiet")
        self.assertExit(done, 0)
        as_json = json.loads(done.stdout)
        self.assertEqual(as_json["debt_cap"], as_yaml["debt_cap"])
        self.assertEqual(
            as_json["properties"][0]["admission_mutants"], ["mutants/leak_password_hash.patch"]
        )
        self.assertUntouched()

    def test_seal_matches_coreutils(self):
        pipeline = (
            "find fixtures/replays -type f ! -name '*.seal' -print0 | LC_ALL=C sort -z "
            "| xargs -0 sha256sum | sha256sum"
        )
        expected = subprocess.run(
            ["bash", "-c", pipeline], cwd=self.repo, capture_output=True, text=True, check=True
        ).stdout
        done = self.run_cli("seal", "fixtures/replays", cwd=self.repo)
        self.assertExit(done, 0)
        self.assertEqual(done.stdout, expected)
        self.assertEqual(done.stdout, (self.repo / "fixtures/replays/replays.seal").read_text())
        self.assertEqual(done.stdout, seal.seal_line(REPLAYS_SEAL))
        done = self.run_cli("seal", "fixtures/replays", "--repo-root", str(self.repo))
        self.assertEqual(done.stdout, expected)
        self.assertUsageError(self.run_cli("seal", "no/such/dir", cwd=self.repo), "no/such/dir")


def _ledger_branch(case: dict) -> str:
    return "ledger-" + Path(case["ledger"]).stem.replace("_", "-")


def _branch_exists(repo: Path, name: str) -> bool:
    return bool(_git(repo, "branch", "--list", name).strip())


def _ledger_edit(case: dict, base: str):
    """Replace ledger.txtpb; rows the manifest gives a commit count are opened at the base.

    The manifest's commits do not exist in this repository; the CLI counts real
    commits, so those rows are re-pointed at the base commit (a count it can
    know, as the manifest intends), and rows without a count keep an unknown
    commit (spent, as the manifest intends).
    """

    def edit(repo: Path):
        text = (PATCHES / "ledgers" / case["ledger"]).read_text()
        for commit in case.get("commit_counts") or {}:
            text = text.replace(str(commit), base)
        (repo / "ledger.txtpb").write_text(text)

    return edit


if __name__ == "__main__":
    absltest.main()

"""4. Analysis scale: `bazel build --nobuild //:agent_gate` vs the same number of plain tests.

For each K, one consumer workspace with two packages:

* the root package: K `sh_test`s `t<i>`, K `strong_property` targets `p<i>` (locality
  `p<i>`, each declared after the test it wraps, so the macro reads the test's `srcs`
  from its declaration) and `//:agent_gate` over all of them;
* `plain/`: K `sh_test`s and a `test_suite` `//plain:all` of them: what the same
  number of tests costs Bazel without the gate;
* `elsewhere/`: K properties wrapping the tests of `plain/` and a gate over them:
  a test in another package is read by the property rule's aspect instead;
* `floor/`: K `sh_test`s, each wrapped by the thinnest Starlark test rule there can
  be (one label attribute, an empty executable): what Bazel charges for one more
  test target per test, before any work of ours. The design makes every property a
  test target, so the gate cannot go below this.

Measured: `bazel build --nobuild` (loading + analysis, no execution) of the gate with
changed paths matching every property (K double-run actions are created) and
with none, of the `elsewhere/` gate with none, and of `//plain:all`. Before each
measurement `bazel clean` drops Bazel's in-memory graph and outputs (every package
is loaded and every target analysed again) while the server's JVM stays warm; one
untimed round first.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from harness import (
    Bazel,
    BenchError,
    Check,
    Context,
    Section,
    Series,
    Table,
    consumer_workspace,
    gated_build,
    ratio,
    ratio_spread,
)

_TEST_SH = "#!/bin/sh\nexit 0\n"


_PLAIN_BUILD = """load("@rules_shell//shell:sh_test.bzl", "sh_test")

package(default_visibility = ["//visibility:public"])

COUNT = {count}

[sh_test(
    name = "t%d" % i,
    size = "small",
    srcs = ["t.sh"],
) for i in range(COUNT)]

test_suite(
    name = "all",
    tests = [":t%d" % i for i in range(COUNT)],
)
"""

_THIN_BZL = """\"\"\"The thinnest wrapping test rule: Bazel's price of a test target.\"\"\"

def _thin_test_impl(ctx):
    executable = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.write(executable, "", is_executable = True)
    return [DefaultInfo(executable = executable)]

thin_test = rule(
    implementation = _thin_test_impl,
    attrs = {"test": attr.label(mandatory = True)},
    test = True,
)
"""

_FLOOR_BUILD = """load("@rules_shell//shell:sh_test.bzl", "sh_test")
load(":thin.bzl", "thin_test")

COUNT = {count}

[sh_test(
    name = "t%d" % i,
    size = "small",
    srcs = ["t.sh"],
) for i in range(COUNT)]

[thin_test(
    name = "p%d" % i,
    size = "small",
    test = ":t%d" % i,
) for i in range(COUNT)]

test_suite(
    name = "all",
    tests = [":p%d" % i for i in range(COUNT)],
)
"""

_ELSEWHERE_BUILD = """load("@agent_gate//rules:defs.bzl", "agent_gate", "strong_property")

COUNT = {count}

[strong_property(
    name = "p%d" % i,
    locality = ["p%d" % i],
    test = "//plain:t%d" % i,
) for i in range(COUNT)]

agent_gate(
    name = "agent_gate",
    ledger = "ledger.txtpb",
    properties = [":p%d" % i for i in range(COUNT)],
)
"""

VARIANTS = (
    "gate, all matched",
    "gate, none matched",
    "gate, tests elsewhere",
    "floor",
    "plain tests",
)


def write_workspace(root: Path, count: int) -> None:
    consumer_workspace(root, f"analysis_{count}")
    plain = root / "plain"
    floor = root / "floor"
    for directory in (root, plain, floor):
        directory.mkdir(exist_ok=True)
        script = directory / "t.sh"
        script.write_text(_TEST_SH)
        script.chmod(0o755)
    (root / "BUILD.bazel").write_text(gated_build(count, "sh_test", "t.sh"))
    (plain / "BUILD.bazel").write_text(_PLAIN_BUILD.format(count=count))
    (floor / "thin.bzl").write_text(_THIN_BZL)
    (floor / "BUILD.bazel").write_text(_FLOOR_BUILD.format(count=count))
    (root / "elsewhere").mkdir(exist_ok=True)
    (root / "elsewhere" / "BUILD.bazel").write_text(_ELSEWHERE_BUILD.format(count=count))
    (root / "elsewhere" / "ledger.txtpb").write_text((root / "ledger.txtpb").read_text())


def _command(bazel: Bazel, variant: str, count: int) -> list[str]:
    if variant == "plain tests":
        return ["build", "--nobuild", "//plain:all"]
    if variant == "floor":
        return ["build", "--nobuild", "//floor:all"]
    if variant == "gate, tests elsewhere":
        return ["build", "--nobuild", "//elsewhere:agent_gate"]
    paths = ",".join(f"p{i}/x" for i in range(count)) if variant == "gate, all matched" else ""
    return [
        "build",
        "--nobuild",
        "//:agent_gate",
        *bazel.flags([f"--@agent_gate//:changed_paths={paths}"]),
    ]


def bench(ctx: Context) -> Section:
    plan = ctx.plan
    section = Section(key="analysis", title="4. Analysis scale")
    table = Table(
        [
            "targets K",
            *VARIANTS,
            "all / plain (range)",
            "none / plain (range)",
            "elsewhere / plain (range)",
            "floor / plain (range)",
            "other processes (cores)",
        ]
    )
    for count in plan.analysis_counts:
        workspace = ctx.scratch(f"analysis-{count}") / "ws"
        write_workspace(workspace, count)
        bazel = Bazel(
            workspace,
            output_base=workspace.parent / "output",
            rc_file=workspace.parent / "flags.bazelrc",
        )
        samples: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
        others: list[float] = []
        try:
            first = 0 if plan.warmup else 1
            ctx.log(f"analysis: K={count}, {plan.analysis_reps} rounds + {1 - first} warm-up")
            for rep in range(first, plan.analysis_reps + 1):
                shift = rep % len(VARIANTS)
                for variant in VARIANTS[shift:] + VARIANTS[:shift]:
                    bazel("clean")
                    usage, result = bazel.measured(*_command(bazel, variant, count))
                    if b"Build completed successfully" not in result.stderr:
                        raise BenchError(f"{variant}, K={count}: {result.stderr[-2000:].decode()}")
                    if rep > 0:
                        samples[variant].append(usage.wall)
                        others.append(usage.others_cores)
        finally:
            bazel.shutdown()
            ctx.discard(workspace.parent)
        series = {variant: Series(tuple(values)) for variant, values in samples.items()}
        plain = series["plain tests"]
        every, none = series["gate, all matched"], series["gate, none matched"]
        elsewhere = series["gate, tests elsewhere"]
        table.rows.append(
            [
                f"{count:,}",
                every.show(),
                none.show(),
                elsewhere.show(),
                series["floor"].show(),
                plain.show(),
                ratio_spread(every, plain),
                ratio_spread(none, plain),
                ratio_spread(elsewhere, plain),
                ratio_spread(series["floor"], plain),
                f"{statistics.median(others):.2f}",
            ]
        )
        section.checks.append(
            Check(
                f"analysis, K={count:,}, all matched: gate / plain tests", ratio(every, plain), 1.5
            )
        )
        section.checks.append(
            Check(
                f"analysis, K={count:,}, none matched: gate / plain tests", ratio(none, plain), 1.5
            )
        )
        section.checks.append(
            Check(
                f"analysis, K={count:,}, tests in another package: gate / plain tests",
                ratio(elsewhere, plain),
                1.5,
            )
        )
    section.tables.append(("`bazel build --nobuild` after `bazel clean`, median (min-max)", table))
    section.commands = [
        "bazel clean && bazel build --nobuild //:agent_gate "
        "--@agent_gate//:changed_paths=p0/x,...,p{K-1}/x    # all matched",
        "bazel clean && bazel build --nobuild //:agent_gate    # none matched",
        "bazel clean && bazel build --nobuild //elsewhere:agent_gate    # wrapping //plain's tests",
        "bazel clean && bazel build --nobuild //floor:all    # K sh_tests, each in a thin_test",
        "bazel clean && bazel build --nobuild //plain:all    # K plain sh_tests in a test_suite",
    ]
    section.method = [
        "One workspace per K; the gated package holds K tests + K properties (each after "
        "its test, so the macro reads the test's declaration) + the gate, `plain/` the same "
        "K tests alone, `elsewhere/` K properties of `plain/`'s tests + a gate (the "
        "property rule's aspect reads each test), `floor/` the K tests each wrapped by "
        "`thin_test`, "
        "a Starlark test rule with one label attribute that writes an empty executable: the "
        "least one more test target per test costs (a property is a test target, as "
        "docs/rules.md). All load the same WORKSPACE (`agent_gate_dependencies()`).",
        "`bazel clean` (untimed) before every timed command: packages are loaded and targets "
        "analysed from scratch, the JVM stays warm (a fresh server would add the same JVM "
        "start-up to both sides). The order of the commands rotates each round; "
        f"{plan.analysis_reps} timed rounds after one untimed round.",
        "`other processes`: cores the rest of this shared machine kept busy during the timed "
        "commands (all CPU in /proc/stat minus the client's and the server's), median.",
        "Changed paths longer than 60,000 bytes would go through an rc file "
        "(`--bazelrc`), as docs/rules.md says; at these sizes they fit argv.",
    ]
    return section

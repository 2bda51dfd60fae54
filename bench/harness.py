"""What every benchmark shares: the plan (sizes), timing, Bazel servers, results.

A benchmark is one function `bench(ctx: Context) -> Section`. It measures our
side and the alternative side by side, in the same run, and returns a Section:
tables for the report plus `Check`s (a measured ratio or figure against its
goal). `run.py` holds the registry of benchmarks and writes RESULTS.md.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "tools"
PYTHON = ROOT / ".venv" / "bin" / "python3"
BAZEL = "/usr/bin/bazel"
BAZEL7 = str(TOOLS / "bazel7")
GIB = 1 << 30
MIB = 1 << 20


class BenchError(RuntimeError):
    """A benchmark could not measure what it claims: a command failed, digests differ."""


@dataclass(frozen=True)
class Lane:
    """The Bazel a benchmark drives: Debian's 4.2.3 (WORKSPACE) or the 7.7.1 lane (bzlmod).

    On 7.7.1, tools/bazel7 runs Debian sid's Bazel with tools/bazel7.bazelrc (offline
    modules, and the defaults Bazel 8 and 9 flipped); its workspaces get a
    MODULE.bazel and live outside /tmp, which Bazel 7's sandbox replaces with its own.
    """

    version: str
    binary: str
    bzlmod: bool

    @property
    def suffix(self) -> str:
        """What a figure's name adds on this lane ("" on 4.2.3, which the goals were set on)."""
        return f", Bazel {self.version}" if self.bzlmod else ""

    def env(self) -> dict[str, str]:
        """The environment of an `agent-gate` CLI that must run this lane's Bazel."""
        env = dict(os.environ)
        if self.bzlmod:
            env["AGENT_GATE_BAZEL"] = self.binary
        return env


BAZEL_4 = Lane("4.2.3", BAZEL, bzlmod=False)
BAZEL_7 = Lane("7.7.1", BAZEL7, bzlmod=True)


def _scaled(value: int, scale: float, minimum: int) -> int:
    return max(minimum, round(value * scale))


def _scaled_set(values: Iterable[int], scale: float, minimum: int) -> tuple[int, ...]:
    return tuple(sorted({_scaled(value, scale, minimum) for value in values}))


@dataclass(frozen=True)
class Plan:
    """Sizes and repetitions. `Plan.for_scale(1.0)` is the documented full run."""

    scale: float
    seal_large_bytes: int
    seal_large_files: int
    seal_tiny_files: int
    seal_reps: int
    openssl_seconds: int
    gate_counts: tuple[int, ...]
    gate_sleep_seconds: float
    gate_work_mib: int  # MiB the "work" property hashes per run
    gate_work_sieve: int  # primes below this are sieved per run
    gate_reps: int
    gate_reps_large: int  # repetitions for the largest N (each one is long)
    evaluator_catalogs: tuple[int, ...]
    evaluator_diffs: tuple[int, ...]
    evaluator_reps: int
    analysis_counts: tuple[int, ...]
    analysis_reps: int
    score_reps: int  # second scores of the CLI (and as many baseline runs)
    warmup: bool  # an untimed warm-up round before timing (skipped by the smoke run)

    @classmethod
    def for_scale(cls, scale: float, reps: int | None = None) -> Plan:
        if scale <= 0:
            raise ValueError(f"--scale must be positive, got {scale}")
        small = scale < 1
        return cls(
            scale=scale,
            seal_large_bytes=_scaled(2 * GIB, scale, 64 * 1024),
            seal_large_files=_scaled(4000, scale, 8),
            seal_tiny_files=_scaled(200_000, scale, 20),
            seal_reps=reps or 3,
            openssl_seconds=1 if small else 3,
            gate_counts=_scaled_set((1, 8, 64), scale, 1),
            gate_sleep_seconds=0.2 if scale >= 0.1 else 0.01,
            gate_work_mib=64 if scale >= 0.1 else 1,
            gate_work_sieve=_scaled(700_000, min(scale, 1.0), 1000),
            gate_reps=reps or 5,
            gate_reps_large=reps or 3,
            evaluator_catalogs=_scaled_set((1_000, 10_000), scale, 10),
            evaluator_diffs=_scaled_set((10_000, 100_000), scale, 100),
            evaluator_reps=reps or 3,
            analysis_counts=_scaled_set((1_000, 5_000), scale, 2),
            analysis_reps=reps or 3,
            score_reps=reps or 5,
            warmup=scale >= 0.1,
        )


@dataclass
class Context:
    """What a benchmark gets: the plan, a scratch directory of its own, a logger."""

    plan: Plan
    workdir: Path
    keep: bool = False

    def log(self, message: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        print(f"[{stamp}] {message}", file=sys.stderr, flush=True)

    def scratch(self, name: str, lane: Lane = BAZEL_4) -> Path:
        """A new directory for one benchmark; for the 7.7.1 lane, one outside /tmp."""
        if lane.bzlmod:
            return Path(tempfile.mkdtemp(prefix=f"agent_gate-bench-{name}-", dir="/var/tmp"))
        path = self.workdir / name
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path

    def discard(self, path: Path) -> None:
        if not self.keep:
            # Bazel leaves read-only directories in its output bases.
            subprocess.run(["chmod", "-R", "u+w", str(path)], capture_output=True, check=False)
            shutil.rmtree(path, ignore_errors=True)


@dataclass(frozen=True)
class Series:
    """Repeated wall-clock measurements of one command."""

    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def low(self) -> float:
        return min(self.samples)

    @property
    def high(self) -> float:
        return max(self.samples)

    def show(self, unit: str = "s", digits: int = 3) -> str:
        """`1.234 s (1.200-1.300, n=3)`: the median, then the spread."""
        if len(self.samples) == 1:
            return f"{self.median:.{digits}f} {unit} (n=1)"
        return (
            f"{self.median:.{digits}f} {unit} "
            f"({self.low:.{digits}f}-{self.high:.{digits}f}, n={len(self.samples)})"
        )


def ratio(ours: Series, theirs: Series) -> float:
    """Ratio of medians, ours over the alternative's."""
    return ours.median / theirs.median


def ratio_spread(ours: Series, theirs: Series) -> str:
    """Median ratio and the range of per-repetition ratios (runs were interleaved)."""
    pairs = [a / b for a, b in zip(ours.samples, theirs.samples, strict=False) if b > 0]
    middle = ratio(ours, theirs)
    if len(pairs) < 2:
        return f"{middle:.2f}"
    return f"{middle:.2f} ({min(pairs):.2f}-{max(pairs):.2f})"


@dataclass(frozen=True)
class Check:
    """One figure against its goal, for the summary table."""

    name: str
    value: float
    goal: float
    higher_is_better: bool = False
    unit: str = ""
    fmt: str = ".2f"

    @property
    def met(self) -> bool:
        return self.value >= self.goal if self.higher_is_better else self.value <= self.goal

    def goal_text(self) -> str:
        op = ">=" if self.higher_is_better else "<="
        return f"{op} {self.goal:{self.fmt}}{self.unit}"

    def value_text(self) -> str:
        return f"{self.value:{self.fmt}}{self.unit}"


@dataclass
class Table:
    headers: Sequence[str]
    rows: list[Sequence[str]] = field(default_factory=list)

    def markdown(self) -> str:
        lines = [
            "| " + " | ".join(self.headers) + " |",
            "|" + "|".join(" --- " for _ in self.headers) + "|",
        ]
        lines.extend("| " + " | ".join(str(cell) for cell in row) + " |" for row in self.rows)
        return "\n".join(lines)


@dataclass
class Section:
    """One benchmark's results, as they go into RESULTS.md."""

    key: str
    title: str
    method: list[str] = field(default_factory=list)  # bullet lines: what was measured, how
    commands: list[str] = field(default_factory=list)  # the exact commands compared
    tables: list[tuple[str, Table]] = field(default_factory=list)  # (caption, table)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0  # how long the benchmark took, setup included


def run(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    input_bytes: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run a command, capture its output, and raise BenchError (with its stderr) on failure."""
    result = subprocess.run(
        [os.fspath(arg) for arg in argv],
        cwd=cwd,
        env=dict(env) if env is not None else None,
        input=input_bytes,
        capture_output=True,
        check=False,
    )
    if check and result.returncode != 0:
        raise BenchError(
            f"command failed with exit {result.returncode}: {shlex.join(map(str, argv))}\n"
            f"(cwd {cwd})\n{result.stderr.decode(errors='replace')[-4000:]}"
        )
    return result


def timed(
    argv: Sequence[str | os.PathLike[str]],
    **kwargs: object,
) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    """Wall-clock seconds of one command (process start to exit), and its result."""
    started = time.perf_counter()
    result = run(argv, **kwargs)  # type: ignore[arg-type]
    return time.perf_counter() - started, result


def _machine_cpu_seconds() -> float:
    """CPU seconds every process on the machine has used since boot (/proc/stat)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return float("nan")
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Usage:
    """One command's wall time, its own CPU time, and what everything else used meanwhile."""

    wall: float
    own_cpu: float  # user + sys of the command and every descendant it waited for
    machine_cpu: float  # every process on the machine during the same window

    @property
    def others_cores(self) -> float:
        """Cores other processes kept busy on average: this machine is shared."""
        return max(0.0, self.machine_cpu - self.own_cpu) / self.wall if self.wall > 0 else 0.0


def measured(
    argv: Sequence[str | os.PathLike[str]], **kwargs: object
) -> tuple[Usage, subprocess.CompletedProcess[bytes]]:
    """Like `timed`, with the command's CPU time and the rest of the machine's."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    machine = _machine_cpu_seconds()
    seconds, result = timed(argv, **kwargs)
    machine = _machine_cpu_seconds() - machine
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Usage(wall=seconds, own_cpu=own, machine_cpu=machine), result


def _process_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and of every child it has waited for (/proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return float("nan")
    fields = stat.rpartition(")")[2].split()
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return (utime + stime + cutime + cstime) / os.sysconf("SC_CLK_TCK")


def time_call(function: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    value = function()
    return time.perf_counter() - started, value


class Bazel:
    """One Bazel server: a workspace and an output base of its own.

    Two `Bazel`s on one workspace (two output bases) keep two warm servers whose
    analysis caches do not evict each other when their flags differ. With
    `rc_file`, every command passes `--bazelrc=rc_file` (the same startup option
    each time, so the server is never restarted) and `flags()` moves flags too
    long for one argv string (Linux caps one at 128 KiB) into that file, as
    docs/rules.md tells users to do.
    """

    def __init__(
        self,
        workspace: Path,
        output_base: Path | None = None,
        rc_file: Path | None = None,
        lane: Lane = BAZEL_4,
    ) -> None:
        self.workspace = workspace
        self.output_base = output_base
        self.rc_file = rc_file
        self.lane = lane
        self._pid: int | None = None
        if rc_file is not None:
            rc_file.write_text("")

    def argv(self, *args: str) -> list[str]:
        head = [self.lane.binary]
        if self.output_base is not None:
            head.append(f"--output_base={self.output_base}")
        if self.rc_file is not None:
            head.append(f"--bazelrc={self.rc_file}")
        return [*head, *args]

    def flags(self, flags: Sequence[str]) -> list[str]:
        """Command-line flags carrying `flags` for the next command."""
        if self.rc_file is None:
            return list(flags)
        if sum(len(flag) for flag in flags) < 60_000:
            self.rc_file.write_text("")
            return list(flags)
        self.rc_file.write_text("".join(f"build {flag}\n" for flag in flags))
        return []

    def __call__(
        self, *args: str, check: bool = True
    ) -> tuple[float, subprocess.CompletedProcess[bytes]]:
        return timed(self.argv(*args), cwd=self.workspace, check=check)

    def measured(self, *args: str) -> tuple[Usage, subprocess.CompletedProcess[bytes]]:
        """One command, with the CPU of this server and of every action it ran.

        Actions are descendants of the server, so their CPU time reaches the server's
        waited-for children counters; the rest of the machine's CPU is other work.
        """
        pid = self.server_pid()
        server = _process_cpu_seconds(pid)
        usage, result = measured(self.argv(*args), cwd=self.workspace)
        server = _process_cpu_seconds(pid) - server
        return Usage(usage.wall, usage.own_cpu + server, usage.machine_cpu), result

    def server_pid(self) -> int:
        if self._pid is None:
            out = run(self.argv("info", "server_pid"), cwd=self.workspace).stdout
            self._pid = int(out.decode().strip())
        return self._pid

    def together(self, other: Bazel, mine: Sequence[str], theirs: Sequence[str]) -> None:
        """Run one command on this server and one on `other` at the same time (untimed)."""
        processes = [
            (
                argv,
                subprocess.Popen(
                    argv, cwd=bazel.workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE
                ),
            )
            for bazel, argv in ((self, self.argv(*mine)), (other, other.argv(*theirs)))
        ]
        failures = []
        for argv, process in processes:
            _, err = process.communicate()
            if process.returncode != 0:
                tail = err.decode(errors="replace")[-3000:]
                failures.append(f"{shlex.join(argv)} exited {process.returncode}:\n{tail}")
        if failures:
            raise BenchError("\n".join(failures))

    def shutdown(self) -> None:
        run(self.argv("shutdown"), cwd=self.workspace, check=False)


def consumer_workspace(directory: Path, name: str, lane: Lane = BAZEL_4) -> None:
    """WORKSPACE (or, on Bazel 7, MODULE.bazel) and .bazelrc of a consumer of agent_gate,
    as docs/rules.md and the README tell users."""
    directory.mkdir(parents=True, exist_ok=True)
    if lane.bzlmod:
        (directory / "MODULE.bazel").write_text(
            f'module(name = "{name}")\n\n'
            'bazel_dep(name = "agent_gate", version = "0.1.0")\n'
            f'local_path_override(\n    module_name = "agent_gate",\n    path = "{ROOT}",\n)\n\n'
            'bazel_dep(name = "rules_python", version = "0.31.0")\n'
            'bazel_dep(name = "rules_shell", version = "0.2.0")\n'
        )
        (directory / "WORKSPACE.bzlmod").write_text("")
    (directory / "WORKSPACE").write_text(
        f'workspace(name = "{name}")\n\n'
        f'local_repository(\n    name = "agent_gate",\n    path = "{ROOT}",\n)\n\n'
        'load("@agent_gate//rules:repositories.bzl", "agent_gate_dependencies")\n\n'
        "agent_gate_dependencies()\n"
    )
    (directory / ".bazelrc").write_text(
        "build --nosandbox_debug\nbuild --incompatible_strict_action_env\n"
    )
    (directory / "ledger.txtpb").write_text("# No freezes: every matched property votes.\n")


_GATED_BUILD = """load("@agent_gate//rules:defs.bzl", "agent_gate", "strong_property")
{load_test}

COUNT = {count}

[{test_rule}(
    name = "t%d" % i,
    size = "small",
    srcs = ["{src}"],{main}
) for i in range(COUNT)]

[strong_property(
    name = "p%d" % i,
    locality = ["p%d" % i],
    test = ":t%d" % i,
) for i in range(COUNT)]

agent_gate(
    name = "agent_gate",
    ledger = "ledger.txtpb",
    properties = [":p%d" % i for i in range(COUNT)],
)
"""


def gated_build(count: int, test_rule: str, src: str, main: str = "") -> str:
    """A BUILD file of `count` tests `t<i>`, each wrapped as strong property `p<i>`
    with locality `p<i>`, and one agent_gate over them all."""
    load_test = {
        "sh_test": 'load("@rules_shell//shell:sh_test.bzl", "sh_test")',
        "py_test": 'load("@rules_python//python:defs.bzl", "py_test")',
    }[test_rule]
    extra = f'\n    main = "{main}",' if main else ""
    return _GATED_BUILD.format(
        load_test=load_test, count=count, test_rule=test_rule, src=src, main=extra
    )


@dataclass(frozen=True)
class Profile:
    """What one `bazel --profile` trace says: phase times and action durations."""

    analysis_seconds: float  # "Load and analyze dependencies" to "Prepare for build"
    execution_seconds: float  # "Build artifacts" to "Complete build"
    actions: dict[str, list[float]]  # action description -> durations (seconds)

    def durations(self, startswith: str) -> list[float]:
        return [
            seconds
            for name, values in self.actions.items()
            if name.startswith(startswith)
            for seconds in values
        ]


def read_profile(path: Path) -> Profile:
    """Parse the JSON trace `bazel --profile=FILE` writes (Bazel 4.2.3 and 7 formats).

    Bazel 7 marks one phase "Load, analyze dependencies and build artifacts": its
    analysis time alone is then NaN.
    """
    data = json.loads(path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    markers: dict[str, float] = {}
    actions: dict[str, list[float]] = {}
    for event in events:
        category = event.get("cat")
        if category == "build phase marker":
            markers[event["name"]] = event["ts"] / 1e6
        elif category == "action processing" and event.get("ph") == "X":
            actions.setdefault(event["name"], []).append(event.get("dur", 0) / 1e6)

    def span(start: str, end: str) -> float:
        if start in markers and end in markers:
            return markers[end] - markers[start]
        return float("nan")

    return Profile(
        analysis_seconds=span("Load and analyze dependencies", "Prepare for build"),
        execution_seconds=span("Build artifacts", "Complete build"),
        actions=actions,
    )


def machine_facts() -> list[tuple[str, str]]:
    """What the numbers were measured on."""
    facts: list[tuple[str, str]] = []
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        model = platform.processor()
    cores = len(os.sched_getaffinity(0))
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    sha_ni = "yes" if " sha_ni" in flags else "no"
    facts.append(("CPU", f"{model}, {cores} usable cores, SHA extensions: {sha_ni}"))
    try:
        meminfo = Path("/proc/meminfo").read_text().splitlines()
        total_kib = int(next(line for line in meminfo if line.startswith("MemTotal")).split()[1])
        facts.append(("Memory", f"{total_kib / (1 << 20):.1f} GiB"))
    except (OSError, StopIteration, ValueError):
        pass
    facts.append(("Kernel", f"{platform.system()} {platform.release()}"))
    facts.append(("Python", sys.version.split()[0]))
    facts.append(("Bazel", _bazel_version()))
    facts.append(("Bazel, 7.7.1 lane", _lane_version()))
    for name, argv in (
        ("OpenSSL", ["openssl", "version"]),
        ("coreutils", ["sha256sum", "--version"]),
    ):
        try:
            out = subprocess.run(argv, capture_output=True, text=True, check=False).stdout
            facts.append((name, out.splitlines()[0].strip() if out else "?"))
        except OSError:
            facts.append((name, "not found"))
    return facts


def _bazel_version() -> str:
    """Debian's bazel-bootstrap reports `bazel no_version`: ask the package manager too."""
    try:
        shown = subprocess.run(
            [BAZEL, "--version"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        return "not found"
    try:
        package = subprocess.run(
            ["dpkg-query", "-W", "-f", "${Package} ${Version}", "bazel-bootstrap"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        package = ""
    return f"{shown} (Debian {package})" if package else shown


def _lane_version() -> str:
    """`tools/bazel7 --version`: Debian sid's bazel-bootstrap in the lane's sid root."""
    try:
        done = subprocess.run(
            [BAZEL7, "--version"], capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"not available ({error})"
    shown = done.stdout.strip() or done.stderr.strip()[-200:]
    return f"{shown} (tools/bazel7: Debian sid bazel-bootstrap, in tools/bootstrap_bazel7's root)"


def load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "?"
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"

"""1. Seal throughput: `agent_gate.formats.seal` vs the coreutils pipeline it must equal.

Two generated trees, page cache warm (each command runs once untimed first):
a large one (2 GiB in 4,000 files of mixed sizes, by default) and one of 200,000
tiny files. Both sides run as processes from the directory holding the tree,
exactly as a user would audit a seal; every run's output line is compared byte
for byte with the pipeline's. The hashing limit is `openssl speed -evp sha256`
on 16 KiB blocks: one core times the usable cores, and `-multi <cores>` measured.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from harness import (
    MIB,
    PYTHON,
    TOOLS,
    BenchError,
    Check,
    Context,
    Section,
    Series,
    Table,
    measured,
    ratio,
    ratio_spread,
    run,
)

PIPELINE = (
    "find {tree} -type f ! -name '*.seal' -print0 | LC_ALL=C sort -z "
    "| xargs -0 sha256sum | sha256sum"
)
_OPENSSL_LINE = re.compile(r"^sha256\s+([0-9.]+)k\s*$", re.MULTILINE)
_MB = 1e6  # openssl reports 1000s of bytes per second; MB/s here are 10^6 bytes/s too
_BLOCK = 4 * MIB


def _pattern(seed: int) -> bytes:
    return random.Random(seed).randbytes(_BLOCK)


def _write_file(path: Path, index: int, size: int, pattern: bytes) -> None:
    """`size` bytes: a header unique to the file, then a slice of the random pattern."""
    header = f"file {index}\n".encode()[:size]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, header)
        left = size - len(header)
        offset = (index * 4099) % _BLOCK
        view = memoryview(pattern)
        while left > 0:
            chunk = view[offset : offset + left]
            written = os.write(fd, chunk)
            left -= written
            offset = (offset + written) % _BLOCK
    finally:
        os.close(fd)


def large_sizes(total: int, count: int, seed: int = 1) -> list[int]:
    """`count` sizes summing to `total`: log-uniform over a 4096x range, a few empty."""
    rng = random.Random(seed)
    weights = [4096 ** rng.random() for _ in range(count)]
    empty = min(4, count // 4)
    for i in range(empty):
        weights[i] = 0.0
    scale = total / sum(weights)
    sizes = [int(weight * scale) for weight in weights]
    sizes[-1] += total - sum(sizes)
    return sizes


def make_large_tree(tree: Path, total: int, count: int) -> int:
    """The large tree; returns its byte count. A seal file inside checks the exclusion."""
    pattern = _pattern(7)
    written = 0
    for index, size in enumerate(large_sizes(total, count)):
        directory = tree / f"d{index % 16:02d}" / f"e{(index // 16) % 16:02d}"
        directory.mkdir(parents=True, exist_ok=True)
        _write_file(directory / f"f{index:06d}.bin", index, size, pattern)
        written += size
    (tree / "tree.seal").write_text("0" * 64 + "  -\n")
    return written


def make_tiny_tree(tree: Path, count: int) -> int:
    """`count` files of 0-1,024 bytes in 100-file directories two levels deep."""
    rng = random.Random(3)
    pattern = _pattern(11)
    written = 0
    for index in range(count):
        directory = tree / f"a{index // 10_000:02d}" / f"b{(index // 100) % 100:02d}"
        if index % 100 == 0:
            directory.mkdir(parents=True, exist_ok=True)
        size = rng.randrange(0, 1025)
        _write_file(directory / f"f{index % 100:02d}.txt", index, size, pattern)
        written += size
    (tree / "tiny.seal").write_text("0" * 64 + "  -\n")
    return written


def openssl_limit(seconds: int, cores: int) -> tuple[float, float]:
    """(one core, `-multi cores`) SHA-256 bytes/s on 16 KiB blocks."""
    figures: list[float] = []
    for extra in ([], ["-multi", str(cores)]):
        argv = ["openssl", "speed", *extra, "-evp", "sha256", "-bytes", "16384"]
        out = run([*argv, "-seconds", str(seconds)]).stdout.decode()
        found = _OPENSSL_LINE.findall(out)
        if not found:
            raise BenchError(f"cannot read the sha256 figure from `{' '.join(argv)}`:\n{out}")
        figures.append(float(found[-1]) * 1000)
    return figures[0], figures[1]


@dataclass
class TreeRuns:
    """Interleaved timed runs of the three commands on one tree."""

    wall: dict[str, list[float]]
    cpu: dict[str, list[float]]
    others: list[float]  # cores other processes kept busy, per timed run
    digest: str

    def series(self, name: str) -> Series:
        return Series(tuple(self.wall[name]))

    def cpu_median(self, name: str) -> float:
        return statistics.median(self.cpu[name])


def _measure_tree(ctx: Context, root: Path, tree: str, reps: int) -> TreeRuns:
    """Pipeline, ours, ours in one process (no workers): `reps` interleaved rounds, warmed up."""
    pipeline = ["bash", "-o", "pipefail", "-c", PIPELINE.format(tree=tree)]
    env = {**os.environ, "PYTHONPATH": str(TOOLS)}
    ours = [PYTHON, "-m", "agent_gate.formats.seal", tree, "--repo-root", root]
    commands = {"pipeline": pipeline, "ours": ours, "ours, one process": [*ours, "--workers", "1"]}
    expected = run(pipeline, cwd=root).stdout  # also warms the page cache
    runs = TreeRuns({name: [] for name in commands}, {name: [] for name in commands}, [], "")
    for rep in range(reps + 1):  # round 0 is the untimed warm-up of every command
        order = list(commands) if rep % 2 == 0 else list(reversed(commands))
        for name in order:
            usage, result = measured(commands[name], cwd=root, env=env)
            if result.stdout != expected:
                raise BenchError(
                    f"{name} sealed {tree} as {result.stdout!r}, the pipeline as {expected!r}"
                )
            if rep > 0:
                runs.wall[name].append(usage.wall)
                runs.cpu[name].append(usage.own_cpu)
                runs.others.append(usage.others_cores)
        ctx.log(f"  {tree}: round {rep}/{reps} done")
    runs.digest = expected.decode().strip()
    return runs


def _sync() -> float:
    """Flush the written trees, so no writeback competes with the timed runs."""
    started = time.perf_counter()
    os.sync()
    return time.perf_counter() - started


def bench(ctx: Context) -> Section:
    plan = ctx.plan
    cores = len(os.sched_getaffinity(0))
    section = Section(key="seal", title="1. Seal throughput")
    root = ctx.scratch("seal")
    need = plan.seal_large_bytes + plan.seal_tiny_files * 8192 + 256 * MIB
    free = shutil.disk_usage(root).free
    if free < need:
        raise BenchError(
            f"{root}: {free / MIB:.0f} MiB free, the seal trees need {need / MIB:.0f} MiB; "
            "pass --workdir on a bigger filesystem or a smaller --scale"
        )

    ctx.log(f"seal: openssl speed ({plan.openssl_seconds} s, then -multi {cores})")
    one_core, multi = openssl_limit(plan.openssl_seconds, cores)
    limit = one_core * cores

    ctx.log(f"seal: writing {plan.seal_large_bytes / MIB:.0f} MiB in {plan.seal_large_files} files")
    large_bytes = make_large_tree(root / "large", plan.seal_large_bytes, plan.seal_large_files)
    ctx.log(f"seal: writing {plan.seal_tiny_files} tiny files")
    tiny_bytes = make_tiny_tree(root / "tiny", plan.seal_tiny_files)
    sync_seconds = _sync()

    table = Table(
        [
            "tree",
            "files",
            "bytes",
            "pipeline",
            "agent_gate.formats.seal",
            "ratio (range)",
            "ours MB/s",
            "pipeline MB/s",
            "ours, one process",
            "ours / 2-core limit",
        ]
    )
    cases = (
        ("large", plan.seal_large_files, large_bytes),
        ("tiny", plan.seal_tiny_files, tiny_bytes),
    )
    digests: list[str] = []
    cpu_table = Table(
        [
            "tree",
            "pipeline CPU",
            "ours CPU",
            "ours, one process CPU",
            "ours MB per CPU-second",
            "other processes meanwhile",
        ]
    )
    for name, files, size in cases:
        ctx.log(f"seal: timing {name} ({plan.seal_reps} rounds)")
        runs = _measure_tree(ctx, root, name, plan.seal_reps)
        pipeline, ours, ours_one = (
            runs.series("pipeline"),
            runs.series("ours"),
            runs.series("ours, one process"),
        )
        digests.append(f"{name}: `{runs.digest}`")
        ours_rate = size / ours.median / _MB
        table.rows.append(
            [
                name,
                f"{files:,}",
                f"{size / MIB:,.1f} MiB",
                pipeline.show(),
                ours.show(),
                ratio_spread(ours, pipeline),
                f"{ours_rate:,.0f}",
                f"{size / pipeline.median / _MB:,.0f}",
                ours_one.show(),
                f"{ours_rate * _MB / limit:.0%}",
            ]
        )
        cpu_table.rows.append(
            [
                name,
                f"{runs.cpu_median('pipeline'):.2f} s",
                f"{runs.cpu_median('ours'):.2f} s",
                f"{runs.cpu_median('ours, one process'):.2f} s",
                f"{size / runs.cpu_median('ours') / _MB:,.0f} (one core: {one_core / _MB:,.0f})",
                f"{statistics.median(runs.others):.2f} cores busy (median)",
            ]
        )
        if name == "large":
            section.checks.append(
                Check("seal, large files: ours / pipeline", ratio(ours, pipeline), 0.2)
            )
            section.checks.append(
                Check(
                    f"seal, large files: share of the {cores}-core SHA-256 limit",
                    ours_rate * _MB / limit,
                    0.80,
                    higher_is_better=True,
                )
            )
        else:
            section.checks.append(
                Check("seal, tiny files: ours / pipeline", ratio(ours, pipeline), 0.5)
            )
    ctx.discard(root)

    section.method = [
        f"Trees generated under `{root}` (deleted afterwards), then `sync` ({sync_seconds:.1f} s) "
        "so no writeback competes with the timed runs.",
        f"large: {plan.seal_large_files:,} files, sizes log-uniform over a 4096x range "
        f"(a few empty), {large_bytes / MIB:,.0f} MiB in 256 directories, plus a `.seal` file "
        "that both sides must skip.",
        f"tiny: {plan.seal_tiny_files:,} files of 0-1,024 bytes in directories of 100, "
        "two levels deep.",
        "Page cache warm: every command runs once untimed, then "
        f"{plan.seal_reps} interleaved repetitions (order alternates); median and min-max.",
        "Every run's output line equals the pipeline's, byte for byte (checked, else the "
        "benchmark fails). Digests: " + "; ".join(digests) + ".",
        "MB = 10^6 bytes, as `openssl speed` counts.",
    ]
    section.commands = [
        PIPELINE.format(tree="TREE") + "    # run from the tree's parent",
        f"PYTHONPATH={TOOLS} {PYTHON} -m agent_gate.formats.seal TREE --repo-root . "
        "[--workers 1]    # agent_gate.formats.seal.seal_tree",
        "openssl speed -evp sha256 -bytes 16384 -seconds "
        f"{plan.openssl_seconds}    # and with -multi {cores}",
    ]
    section.tables.append(("Seal time, median (min-max)", table))
    section.tables.append(
        (
            "CPU time (user + sys, median; the pipeline's counts every process in it), and "
            "what the rest of this shared machine used during the timed runs",
            cpu_table,
        )
    )
    limits = Table(["hashing limit", "MB/s"])
    limits.rows.append(["openssl, one core", f"{one_core / _MB:,.0f}"])
    limits.rows.append(
        [f"openssl, one core x {cores} cores (the goal's limit)", f"{limit / _MB:,.0f}"]
    )
    limits.rows.append([f"openssl, `-multi {cores}`", f"{multi / _MB:,.0f}"])
    section.tables.append(("SHA-256 limit of this machine", limits))
    return section

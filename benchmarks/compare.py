"""Cold `kernel-ports check` of two checkouts, alternating, in pairs: their medians and the median pair difference.

On a machine whose speed drifts between minutes, two benchmark runs minutes apart can differ more than the
change being measured. This runs one cold check of each checkout in turn (the order flips every pair, so a
drift does not favour one side), each in a fresh process with an empty cache directory, from a neutral folder
(so ``PYTHONPATH`` decides the code under test), and reports the median wall and CPU time of each side and the
median of each pair's difference (after - before).

    python benchmarks/compare.py --before CHECKOUT --after CHECKOUT [--pairs 10] [--registry R]

Without ``--registry`` the generated tree of ``run.py`` (40 launchers) is used.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generate import generate  # noqa: E402
from run import _timed  # noqa: E402


def cold_run(checkout: Path, registry: Path, jobs: int, cache: Path) -> tuple[float, float]:
    """(wall s, CPU s of the process tree) of one cold check of ``checkout``'s code (run.py's timing)."""
    shutil.rmtree(cache, ignore_errors=True)
    env = dict(os.environ, KERNEL_PORTS_CACHE_DIR=str(cache), PYTHONPATH=str(checkout))
    cmd = [sys.executable, "-m", "kernel_ports", "check", "--registry", str(registry), "--format", "json",
           "--jobs", str(jobs)]
    wall, cpu, _, _, _ = _timed(cmd, env)
    return wall, cpu


def compare(before: Path, after: Path, registry: Path, pairs: int, jobs: int, work: Path) -> dict:
    runs = {"before": [], "after": []}
    sides = {"before": before, "after": after}
    for i in range(pairs):
        for side in ("before", "after") if i % 2 == 0 else ("after", "before"):
            runs[side].append(cold_run(sides[side], registry, jobs, work / "cache"))
    return runs


def report(runs: dict) -> None:
    med = statistics.median
    for side, rs in runs.items():
        print(f"{side:>6}: median {med(w for w, _ in rs):.2f} s, CPU {med(c for _, c in rs):.1f} s "
              f"(runs: {' '.join(f'{w:.2f}' for w, _ in rs)})")
    diffs = [a[0] - b[0] for a, b in zip(runs["after"], runs["before"])]
    print(f"median pair difference (after - before): {med(diffs):+.2f} s over {len(diffs)} pairs")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout whose code runs first in pair 1")
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--registry", type=Path, default=None, help="an existing tree's registry (default: generated)")
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    for checkout in (args.before, args.after):
        if not (checkout / "kernel_ports" / "__init__.py").is_file():
            parser.error(f"{checkout} is not a kernel-ports checkout")
    if args.pairs < 1:
        parser.error("--pairs must be at least 1")
    work = Path(tempfile.mkdtemp(prefix="kp-compare-"))
    try:
        registry = args.registry.resolve() if args.registry else generate(work / "tree", 40, 600, 300_000, 170_000)
        print(f"tree: {registry}; {os.cpu_count()} cores; {time.strftime('%H:%M:%S')}")
        report(compare(args.before.resolve(), args.after.resolve(), registry, args.pairs, args.jobs, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

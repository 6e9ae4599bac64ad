"""`kernel-ports check` of two checkouts, cold or with one file changed, alternating in pairs: their medians and the
median pair difference.

On a machine whose speed drifts between minutes, two benchmark runs minutes apart can differ more than the
change being measured. This runs one cold check of each checkout in turn (the order flips every pair, so a
drift does not favour one side), each in a fresh process with an empty cache directory, from a neutral folder
(so ``PYTHONPATH`` decides the code under test), and reports the median wall and CPU time of each side and the
median of each pair's difference (after - before).

    python benchmarks/compare.py --before CHECKOUT --after CHECKOUT [--pairs 10] [--registry R]
    python benchmarks/compare.py ... --scenario one-file [--touch PATH]

Each side runs a byte-compiled copy of its checkout's package, as ``run.py`` times one (``--source``: the
checkouts as they are). Without ``--registry`` the generated tree of ``run.py`` (40 launchers) is used. ``--scenario one-file``: each
checkout keeps a cache directory of its own, filled by two checks first; each run appends a comment (``--edit code``:
a new inline function) to one file (``--touch``, relative to the tree's root; by default the generated tree's
``*_g0.cpp``), as ``run.py`` does, and the file is restored at the end.
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
from run import EDIT_KINDS, _edited, _timed, check_command, default_touch, installed_copy, registry_root  # noqa: E402


def _check(checkout: Path, registry: Path, jobs: int, cache: Path) -> tuple[list, dict]:
    """The command line of one check of ``checkout``'s code, and its environment (``cache`` its cache folder)."""
    env = dict(os.environ, KERNEL_PORTS_CACHE_DIR=str(cache), PYTHONPATH=str(checkout))
    return check_command(registry, jobs), env


def cold_run(checkout: Path, registry: Path, jobs: int, cache: Path) -> tuple[float, float]:
    """(wall s, CPU s of the process tree) of one cold check of ``checkout``'s code (run.py's timing)."""
    shutil.rmtree(cache, ignore_errors=True)
    wall, cpu, _, _, _ = _timed(*_check(checkout, registry, jobs, cache))
    return wall, cpu


def one_file_run(checkout: Path, registry: Path, jobs: int, cache: Path, touch: Path, n: int,
                 kind: str = "comment") -> tuple[float, float]:
    """(wall s, CPU s) of one check of ``checkout``'s code after edit ``n`` of ``kind`` was appended to ``touch``
    (``run.py``'s edits: a comment, or a new inline function)."""
    cmd, env = _check(checkout, registry, jobs, cache)
    if not cache.is_dir():
        for _ in range(2):
            _timed(cmd, env)
    original = touch.read_bytes()
    try:
        _edited(touch, n, kind)
        wall, cpu, _, _, _ = _timed(cmd, env)
    finally:
        touch.write_bytes(original)
    return wall, cpu


def compare(before: Path, after: Path, registry: Path, pairs: int, jobs: int, work: Path, touch: Path | None = None,
            edit: str = "comment") -> dict:
    runs = {"before": [], "after": []}
    sides = {"before": before, "after": after}
    for i in range(pairs):
        for side in ("before", "after") if i % 2 == 0 else ("after", "before"):
            if touch is None:
                runs[side].append(cold_run(sides[side], registry, jobs, work / "cache"))
            else:
                runs[side].append(one_file_run(sides[side], registry, jobs, work / f"cache-{side}", touch,
                                               2 * i + (side == "after"), edit))
    return runs


def report(runs: dict) -> None:
    med = statistics.median
    for side, rs in runs.items():
        print(f"{side:>6}: median {med(w for w, _ in rs):.3f} s, CPU {med(c for _, c in rs):.2f} s "
              f"(runs: {' '.join(f'{w:.3f}' for w, _ in rs)})")
    diffs = [a[0] - b[0] for a, b in zip(runs["after"], runs["before"])]
    print(f"median pair difference (after - before): {med(diffs):+.3f} s over {len(diffs)} pairs")


def _touched(registry: Path, touch) -> Path | None:
    """The file the one-file scenario edits: ``touch`` under the registry's root, or a generated ``*_g0.cpp``."""
    root = registry_root(registry)
    if touch:
        path = (root / touch).resolve()
        return path if path.is_file() and path.is_relative_to(root) else None
    return default_touch(root)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout whose code runs first in pair 1")
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--registry", type=Path, default=None, help="an existing tree's registry (default: generated)")
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--scenario", choices=("cold", "one-file"), default="cold")
    parser.add_argument("--touch", default=None, help="one-file: the file (relative to the root) each run edits")
    parser.add_argument("--edit", choices=EDIT_KINDS, default="comment",
                        help="one-file: what each edit appends (run.py --edit: a comment, or code: a new inline function)")
    parser.add_argument("--source", action="store_true", help="run the checkouts as they are, not compiled copies")
    args = parser.parse_args(argv)
    for checkout in (args.before, args.after):
        if not (checkout / "kernel_ports" / "__init__.py").is_file():
            parser.error(f"{checkout} is not a kernel-ports checkout")
    if args.pairs < 1:
        parser.error("--pairs must be at least 1")
    work = Path(tempfile.mkdtemp(prefix="kp-compare-"))
    try:
        registry = args.registry.resolve() if args.registry else generate(work / "tree", 40, 600, 300_000, 170_000)
        touch = None
        if args.scenario == "one-file":
            touch = _touched(registry, args.touch)
            if touch is None:
                parser.error("--scenario one-file: pass --touch PATH (a file under the tree's root)")
        print(f"tree: {registry}; {args.scenario}{f' ({touch})' if touch else ''}; {os.cpu_count()} cores; "
              f"{time.strftime('%H:%M:%S')}")
        before, after = args.before.resolve(), args.after.resolve()
        if not args.source:
            before = installed_copy(before / "kernel_ports", work / "before")
            after = installed_copy(after / "kernel_ports", work / "after")
        report(compare(before, after, registry, args.pairs, args.jobs, work, touch, args.edit))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

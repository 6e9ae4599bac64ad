"""Time `kernel-ports check` on a generated tree: cold, warm, one file changed.

Each scenario runs the real command line in a fresh process, REPEAT times,
and the median wall time is reported with the machine's description, beside
the median CPU time (user + system, the parser workers included), which a busy
shared machine disturbs less than the wall time.

    python benchmarks/run.py [--launchers 40] [--lines 600] [--repeat 5] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate  # noqa: E402


def _cpu() -> float:
    """CPU seconds (user + system) of the finished child processes and theirs (the parser workers)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _check(registry: Path, cache: Path, jobs: int, extra=()) -> tuple[float, dict, float]:
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    cmd = [sys.executable, "-m", "kernel_ports", "check", "--registry", str(registry), "--format", "json", "--jobs", str(jobs), *extra]
    cpu0 = _cpu()
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    cpu = _cpu() - cpu0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"check failed ({proc.returncode}): {proc.stderr.strip()}")
    return elapsed, json.loads(proc.stdout), cpu


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launchers", type=int, default=40)
    parser.add_argument("--lines", type=int, default=600)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--headers", choices=("auto", "stubs"), default="auto",
                        help="compile.mlx_headers/cxx_headers of the generated registry: the installed real headers "
                             "(auto) or the bundled stubs, to compare with runs made before real headers existed")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="kp-bench-"))
    try:
        registry = generate(work / "tree", args.launchers, args.lines)
        if args.headers != "auto":
            text = registry.read_text(encoding="utf-8")
            registry.write_text(text.replace("compile:\n", f"compile:\n  mlx_headers: {args.headers}\n"
                                             f"  cxx_headers: {args.headers}\n", 1), encoding="utf-8")
        changed = next((work / "tree" / "engine").rglob("*_g0.cpp"))
        cold, warm, one = [], [], []
        cpu = {"cold": [], "warm": [], "one file changed": []}
        doc = {}
        for r in range(args.repeat):
            cache = work / f"cache{r}"
            t, doc, c = _check(registry, cache, args.jobs)
            cold.append(t)
            cpu["cold"].append(c)
            t, _, c = _check(registry, cache, args.jobs)
            warm.append(t)
            cpu["warm"].append(c)
            text = changed.read_text()
            changed.write_text(text + f"\n// edit {r}\n")
            t, _, c = _check(registry, cache, args.jobs)
            one.append(t)
            cpu["one file changed"].append(c)
            shutil.rmtree(cache)
        summary = doc.get("summary", {})
        print(f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}")
        print(f"tree: {args.launchers} launcher files x ~{args.lines} lines; checked: {summary.get('checked')}")
        print(f"headers: {summary.get('headers', {}).get('description', 'stubs (before header resolution)')}")
        print(f"findings on the generated tree: {len(doc.get('findings', []))}")
        try:
            load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        except OSError:
            load = "unknown"
        print(f"load average at the end: {load}")
        for name, times in (("cold", cold), ("warm", warm), ("one file changed", one)):
            print(f"{name:>17}: median {statistics.median(times):.2f} s  (runs: {', '.join(f'{t:.2f}' for t in times)})"
                  f"  cpu median {statistics.median(cpu[name]):.2f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

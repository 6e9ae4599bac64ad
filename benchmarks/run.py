"""Time `kernel-ports check`: cold, warm and after an edit, against the regex gates and the compiler, in one run.

Each scenario runs the real command line in a fresh process, REPEAT times. A
repeat is: cold (an empty cache directory), warm (nothing changed) with the
regex gates (benchmarks/regex_baseline.py over the same root, or the tree's own
gate scripts: ``--gate``) run right before and after it (with ``--server S``,
each check and each run of the gates follows S seconds of waiting), then each edit (a new
inline function appended to one launcher, to a header every launcher includes,
to the bridge unit, or with ``--edit comment`` a comment; taken back after its
run), then with ``--floor`` `g++
-fsyntax-only` over the units the check parsed (compiler_floor.py), ``--jobs``
at a time. Reported: median wall times, median CPU times (user + system of the
check and its parser workers), each scenario's ratio to the gates (warm also per
repeat, so a load change between repeats cancels), cold's to the compiler, peak
memory (the largest resident set of the check's process tree, sampled every 10
ms in one more cold run and one more run of each edit, which are not timed: the
sampler shares the cores with the check; and the largest single process from
``ru_maxrss``), and the load average before and after.

    python benchmarks/run.py [--repeat 5] [--jobs 2] [--floor]          # the generated tree (generate.py)
    python benchmarks/run.py --registry R --touch PATH [--header PATH] [--bridge PATH] [--gate SCRIPT]...

The code timed is a byte-compiled copy of the ``kernel_ports`` package Python finds (PYTHONPATH, else the
installed one), as ``pip install`` leaves a package: on a machine that sets ``PYTHONDONTWRITEBYTECODE`` an
editable checkout is otherwise compiled again by every run (~0.07 s of a cold one's imports). ``--source``
times the package where it is, uncompiled.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generate import generate  # noqa: E402


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def _tree_rss(pid: int) -> int:
    """Resident bytes of a process and its descendants now (Linux /proc; 0 elsewhere)."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
            for task in Path(f"/proc/{p}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total


def _timed(cmd: list, env: dict, sample: bool = False) -> tuple[float, float, int, str, int]:
    """(wall s, cpu s, peak tree RSS bytes, stdout, exit code) of one command. The memory sampler reads /proc every
    10 ms on the same two cores as the check, so it runs only when asked (``sample``: peak memory runs, untimed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # from a neutral folder: `python -m` puts the current folder first on the path, so a run started inside a
    # checkout would time that checkout's code whatever PYTHONPATH names
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=tempfile.gettempdir())
    peak = [0]

    def sampling():
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sampling, daemon=True) if sample else None
    if sampler is not None:
        sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    if sampler is not None:
        sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {err.strip()[-500:]}")
    return wall, cpu, peak[0], out, proc.returncode


def package_dir(env: dict | None = None) -> Path:
    """The ``kernel_ports`` package a check run with ``env`` imports (from a neutral folder, as it is timed)."""
    probe = "import importlib.util, os; print(os.path.dirname(importlib.util.find_spec('kernel_ports').origin))"
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True,
                         cwd=tempfile.gettempdir())
    return Path(out.stdout.strip())


def installed_copy(package: Path, into: Path) -> Path:
    """A byte-compiled copy of ``package`` under ``into`` (the folder to put on PYTHONPATH), as an installed
    package is: its modules are not compiled again by each timed run."""
    into.mkdir(parents=True, exist_ok=True)
    dest = into / "kernel_ports"
    shutil.copytree(package, dest, ignore=shutil.ignore_patterns("__pycache__"))
    if not compileall.compile_dir(str(dest), quiet=1, workers=1):
        raise SystemExit(f"could not byte-compile {dest}")
    return into


def check_command(registry: Path, jobs: int) -> list:
    """The timed command: a check of ``registry``'s tree with a JSON report (its summary is read back)."""
    return [sys.executable, "-m", "kernel_ports", "check", "--registry", str(registry), "--format", "json",
            "--jobs", str(jobs)]


def _median(xs):
    return statistics.median(xs) if xs else float("nan")


EDITS = ("one launcher edited", "header edited", "bridge edited")
FLOOR = "g++ -fsyntax-only"


EDIT_KINDS = ("code", "comment")


def _edited(path: Path, n: int, kind: str) -> None:
    """Edit ``path`` as a developer would, changing no fact: ``code`` appends a new inline function (what the file
    declares changes, so every stage that reads declarations redoes its part), ``comment`` a comment (only the
    bytes change). The caller puts the original back."""
    if kind == "code":
        addition = f"\ninline int kernel_ports_benchmark_edit_{n}() {{ return {n}; }}\n"
    else:
        addition = f"\n// kernel-ports benchmark edit {n}\n"
    path.write_bytes(path.read_bytes() + addition.encode())


def _gates(gates: list, env: dict) -> tuple[float, float]:
    """(wall s, CPU s) of the regex gates, one process after another, as a CI job runs them."""
    walls, cpus = zip(*(_timed(cmd, env)[:2] for cmd in gates))
    return sum(walls), sum(cpus)


def floor_commands(registry: Path, root: Path, env: dict, work: Path) -> list:
    """The `g++ -fsyntax-only` command lines of the units a check parses (compiler_floor.py, from its facts)."""
    cmd = [sys.executable, "-m", "kernel_ports", "facts", "--registry", str(registry), "--root", str(root),
           "--format", "json"]
    facts = work / "facts.json"
    facts.write_text(_timed(cmd, env)[3], encoding="utf-8")
    out = subprocess.run([sys.executable, str(HERE / "compiler_floor.py"), str(registry), str(facts), "--root",
                          str(root)], env=env, capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    return json.loads(out.stdout)


def _floor(commands: list, jobs: int) -> tuple[float, float, int]:
    """(wall s, CPU s, units g++ rejected) of the compiler's pass over ``commands``, ``jobs`` at a time."""
    from concurrent.futures import ThreadPoolExecutor

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with ThreadPoolExecutor(jobs) as pool:
        codes = list(pool.map(lambda c: subprocess.run(c, capture_output=True).returncode, commands))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), sum(c != 0 for c in codes)


def _start_server(env: dict) -> subprocess.Popen:
    """``kernel-ports serve`` of the timed code, listening before this returns."""
    log = Path(env["XDG_RUNTIME_DIR"]) / "serve.log"
    proc = subprocess.Popen([sys.executable, "-m", "kernel_ports", "serve", "--idle-minutes", "30"], env=env,
                            cwd=tempfile.gettempdir(), stderr=log.open("w"))
    deadline = time.monotonic() + 60
    while "listening" not in log.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"kernel-ports serve did not start: {log.read_text()[-500:]}")
        time.sleep(0.05)
    return proc


def _rss(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/status").read_text().split("VmRSS:")[1].split()[0]) * 1024
    except (OSError, IndexError, ValueError):
        return 0


def run(registry: Path, root: Path, edits: dict, gates: list, repeat: int, jobs: int, work: Path,
        code: Path | None, floor: bool = False, edit_kind: str = "code", server: float | None = None) -> dict:
    """Each scenario ``repeat`` times; ``edits``: {scenario: the file it edits}; ``gates``: the regex gates'
    command lines; ``code``: the folder put first on PYTHONPATH for the checks (None: as is); ``server``: the
    checks are served by a ``kernel-ports serve`` of the same code, given this many seconds before each check
    and each run of the gates (a developer's edit takes longer; the server decodes meanwhile)."""
    base = dict(os.environ, PYTHONPATH=str(code)) if code is not None else dict(os.environ)
    base.pop("KERNEL_PORTS_NO_SERVER", None)
    served = None
    if server is not None:
        (work / "run").mkdir(mode=0o700)
        base["XDG_RUNTIME_DIR"] = str(work / "run")
        served = _start_server(base)
    else:
        base["KERNEL_PORTS_NO_SERVER"] = "1"
    pause = (lambda: time.sleep(server)) if server is not None else (lambda: None)
    check = check_command(registry, jobs) + ["--root", str(root)]
    times = {k: [] for k in ("cold", "warm", "regex", *edits, *((FLOOR,) if floor else ()))}
    cpu = {k: [] for k in times}
    ratios, cold_ratios, rss_tree, doc, floor_cmds, rejected = [], [], 0, {}, None, 0
    originals = {name: path.read_bytes() for name, path in edits.items()}
    loads = [_load()]
    try:
        for r in range(repeat):
            env = dict(base, KERNEL_PORTS_CACHE_DIR=str(work / f"cache{r}"))
            t, c, _, out, _ = _timed(check, env)
            times["cold"].append(t), cpu["cold"].append(c)
            doc = json.loads(out)
            pair = []
            for scenario in ("regex", "warm", "regex", "warm"):
                # served, the gates wait as long as a check does: on a machine whose cores idle between commands,
                # a process started after a pause starts slower (benchmarks/RESULTS.md), and a developer runs
                # either after an edit; in its own process no command waits
                pause()
                t, c = _gates(gates, env) if scenario == "regex" else _timed(check, env)[:2]
                times[scenario].append(t), cpu[scenario].append(c)
                pair.append(t)
            ratios.append((pair[1] + pair[3]) / (pair[0] + pair[2]))
            for name, path in edits.items():
                _edited(path, r, edit_kind)
                pause()
                t, c, _, _, _ = _timed(check, env)
                times[name].append(t), cpu[name].append(c)
                path.write_bytes(originals[name])
            if floor:
                floor_cmds = floor_cmds or floor_commands(registry, root, env, work)
                t, c, rejected = _floor(floor_cmds, jobs)
                times[FLOOR].append(t), cpu[FLOOR].append(c)
                cold_ratios.append(times["cold"][-1] / t)
            shutil.rmtree(work / f"cache{r}", ignore_errors=True)
        # peak memory: a cold run and each edit of their own, sampled (their times are not reported)
        env = dict(base, KERNEL_PORTS_CACHE_DIR=str(work / "cache-memory"))
        rss_tree = _timed(check, env, sample=True)[2]
        for name, path in edits.items():
            _edited(path, repeat, edit_kind)
            rss_tree = max(rss_tree, _timed(check, env, sample=True)[2])
            path.write_bytes(originals[name])
        server_rss = _rss(served.pid) if served is not None else 0
    finally:
        for name, path in edits.items():
            path.write_bytes(originals[name])
        if served is not None:
            served.terminate()
            served.wait(timeout=30)
    loads.append(_load())
    return {"times": times, "cpu": cpu, "ratios": ratios, "cold_ratios": cold_ratios, "rss_tree": rss_tree,
            "doc": doc, "loads": loads, "rss_max": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
            "code": code, "edits": {n: str(p.relative_to(root)) for n, p in edits.items()}, "edit_kind": edit_kind,
            "floor_units": len(floor_cmds or ()), "floor_rejected": rejected, "server": server,
            "server_rss": server_rss}


def report(res: dict, label: str, gates_label: str = "regex_baseline.py") -> None:
    summary = res["doc"].get("summary", {})
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}")
    print("code: " + ("a byte-compiled copy of the package (as installed)" if res["code"] is not None
                      else "the package where it is, as the environment compiles it (--source)"))
    print(f"tree: {label}; checked: {summary.get('checked')}; findings: {len(res['doc'].get('findings', []))}")
    headers = summary.get("headers", {})
    print(f"headers: {headers.get('description', 'stubs (before header resolution)')}; {headers.get('libclang', '')}")
    print(f"regex gates: {gates_label}; edits ({res['edit_kind']}): "
          + ", ".join(f"{n}: {p}" for n, p in res["edits"].items()))
    print(f"load average: before {res['loads'][0]}, after {res['loads'][1]}")
    med = {name: _median(ts) for name, ts in res["times"].items()}
    for name, ts in res["times"].items():
        print(f"{name:>19}: median {med[name]:.3f} s  (runs: {', '.join(f'{t:.3f}' for t in ts)})"
              f"  cpu median {_median(res['cpu'][name]):.3f} s")
    print(f"warm / regex: {med['warm'] / med['regex']:.2f} (medians); per-repeat ratios "
          f"{', '.join(f'{x:.2f}' for x in res['ratios'])}, median {_median(res['ratios']):.2f}")
    for name in res["edits"]:
        print(f"{name} / regex: {med[name] / med['regex']:.2f} (medians)")
    if FLOOR in med:
        print(f"cold / {FLOOR} ({res['floor_units']} units, 2 jobs here: --jobs; {res['floor_rejected']} rejected "
              f"by g++): {med['cold'] / med[FLOOR]:.2f} (medians); per-repeat median {_median(res['cold_ratios']):.2f}")
    print(f"peak memory: process tree {res['rss_tree'] / 2**20:.0f} MiB (sampled), "
          f"largest single process {res['rss_max'] / 2**20:.0f} MiB (ru_maxrss)")
    if res["server"] is not None:
        print(f"served by kernel-ports serve ({res['server']:.1f} s before each check and each run of the gates): "
              f"the server's own resident "
              f"set at the end {res['server_rss'] / 2**20:.0f} MiB; a served check's own processes are the "
              f"server's, so the process tree above is the command's alone")


def registry_root(registry: Path) -> Path:
    """The source root a registry file names (its ``root``, relative to the file)."""
    import yaml

    return (registry.parent / yaml.safe_load(registry.read_text(encoding="utf-8"))["root"]).resolve()


def default_touch(root: Path) -> Path | None:
    """The file the one-file scenario edits in a generated tree: its first launcher copy."""
    return next(iter(sorted(root.rglob("*_g0.cpp"))), None)


GENERATED_HEADER = "src/lib/mlx-cpp/turbo/kernel_port.h"  # every generated launcher includes it
GENERATED_BRIDGE = "src/lib/mlx-cpp/bridge/generated_bridge.cpp"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launchers", type=int, default=40)
    parser.add_argument("--lines", type=int, default=600)
    parser.add_argument("--bridge-chars", type=int, default=300_000)
    parser.add_argument("--kernels-chars", type=int, default=170_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--registry", type=Path, default=None, help="an existing tree's registry instead of a generated one")
    parser.add_argument("--root", type=Path, default=None, help="its source root (default: the registry's)")
    parser.add_argument("--touch", default=None, help="the launcher (relative to the root) the one-launcher scenario edits")
    parser.add_argument("--header", default=None, help="a header every launcher includes, for the header scenario "
                        f"(generated tree: {GENERATED_HEADER})")
    parser.add_argument("--bridge", default=None, help=f"the largest unit, for the bridge scenario (generated tree: "
                        f"{GENERATED_BRIDGE})")
    parser.add_argument("--gate", action="append", default=[],
                        help="a regex gate script of the tree (relative to the root, repeatable), timed one after "
                             "another instead of benchmarks/regex_baseline.py")
    parser.add_argument("--edit", choices=EDIT_KINDS, default="code",
                        help="what each edit appends: a new inline function (code: what the file declares changes) "
                             "or a comment (only its bytes change)")
    parser.add_argument("--server", type=float, default=None, metavar="SECONDS",
                        help="time the checks as served by `kernel-ports serve`, this many seconds after each edit "
                        "(and the gates after as long a wait; default: every check in its own process, no waits)")
    parser.add_argument("--floor", action="store_true",
                        help="time `g++ -fsyntax-only` over the units the check parses (--jobs at a time) each repeat")
    parser.add_argument("--headers", choices=("auto", "stubs"), default="auto",
                        help="compile.mlx_headers/cxx_headers of the generated registry: the installed real headers "
                             "(auto) or the bundled stubs, to compare with runs made before real headers existed")
    parser.add_argument("--source", action="store_true",
                        help="time the package where it is instead of a byte-compiled copy (see the module's doc)")
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="kp-bench-"))
    try:
        if args.registry is None:
            registry = generate(work / "tree", args.launchers, args.lines, args.bridge_chars, args.kernels_chars)
            if args.headers != "auto":
                text = registry.read_text(encoding="utf-8")
                registry.write_text(text.replace("compile:\n", f"compile:\n  mlx_headers: {args.headers}\n"
                                                 f"  cxx_headers: {args.headers}\n", 1), encoding="utf-8")
            root = work / "tree" / "engine"
            touch = default_touch(root)
            header, bridge = args.header or GENERATED_HEADER, args.bridge or GENERATED_BRIDGE
            label = (f"generated, {args.launchers} launchers x ~{args.lines} lines, bridge unit ~{args.bridge_chars} "
                     f"chars, kernels header ~{args.kernels_chars} chars")
        else:
            registry = args.registry.resolve()
            root = args.root.resolve() if args.root else registry_root(registry)
            if not args.touch:
                raise SystemExit("--touch PATH is required with --registry")
            touch, header, bridge = root / args.touch, args.header, args.bridge
            label = str(root)
        edits = {name: root / rel if isinstance(rel, str) else rel
                 for name, rel in zip(EDITS, (touch, header, bridge)) if rel is not None}
        for name, path in edits.items():
            if not path.is_file():
                raise SystemExit(f"{name}: {path} is not a file")
        gates = [[sys.executable, str(root / g)] for g in args.gate] or \
            [[sys.executable, str(HERE / "regex_baseline.py"), str(root)]]
        code = None if args.source else installed_copy(package_dir(), work / "code")
        res = run(registry, root, edits, gates, args.repeat, args.jobs, work, code, args.floor, args.edit,
                  args.server)
        report(res, label, " + ".join(args.gate) or "benchmarks/regex_baseline.py over the root")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

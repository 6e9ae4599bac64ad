"""The project index: every fact of the tree, the include graph and the call graph.

``build_index(registry, files)`` runs the front ends and joins their results:

1. the witness (tree-sitter) reads every C-family file, Rust files go to the
   Rust front end;
2. the files Clang must parse are chosen from the witness's candidates and its
   include graph (a header with candidates brings in the translation units
   that include it; a header nobody includes is parsed on its own), once per
   build configuration whose defines the file or a project header it includes
   mentions (the default configuration always);
3. the parses run in a worker pool, each with a timeout, so a crash or a hang
   is a KP901 record (``unanalyzable``) rather than the end of the run; the
   walk leaves unread the bodies of free functions that nothing the checker
   follows can reach or be reached from by name (:mod:`.frontend.focus`);
4. the per-translation-unit results are merged: a fact seen in several
   translation units or configurations is kept once with the union of its
   configurations; the joins (slot -> accessor -> holder -> helpers -> factory
   calls with constant propagation; invocation -> selector call -> tables;
   predicate -> tables) and the graphs are rebuilt on every run;
5. witness candidates Clang did not confirm become ``Unconfirmed`` records
   (KP902).

Per-file results are cached (see :class:`_Cache`); the joins never are.

How rules consume it: iterate the fact lists (``index.port_tables``,
``index.invocations`` ...); use ``index.includers_of(path)`` for the
translation units that see a header and ``index.call_graph`` (networkx
DiGraph keyed by Clang USR, nodes carrying ``name``/``kind``) for reachability;
``index.compiled_bodies[str(factory_call.loc)]`` says what a factory call
compiles (source and header bodies, the project files they ``#include``, and
what could not be read).
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import multiprocessing
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path, PurePosixPath
from typing import Optional

import networkx as nx

from kernel_ports import __version__, cachefmt, limits
from kernel_ports.facts import (
    Accessor,
    ChainStep,
    CompiledBodies,
    Holder,
    HolderAccess,
    Invocation,
    Location,
    ParseQuality,
    PortTable,
    Predicate,
    SelectorCall,
    Slot,
    Unconfirmed,
    sort_key,
    to_jsonable,
)
from kernel_ports import parse_summary
from kernel_ports.frontend import clang, headers, focus, hip, rust, witness as wit

def _code_digest() -> str:
    """The front ends' own source, so a changed extractor never reads stale cache entries."""
    h = hashlib.sha256(__version__.encode())
    here = Path(__file__).resolve().parent
    for rel in ("facts.py", "index.py", *sorted(f"frontend/clang/{p.name}" for p in (here / "frontend" / "clang").glob("*.py")), "frontend/witness.py", "frontend/hip.py", "frontend/rust.py",
                "frontend/focus.py", "frontend/headers.py", "frontend/isolation.py"):
        try:
            h.update((here / rel).read_bytes())
        except OSError:
            pass
    return h.hexdigest()[:16]


FRONTEND_VERSION = f"{__version__}+{_code_digest()}"
DEFAULT_TIMEOUT = 120.0
UNKNOWN = ("unknown",)
CONFIRMABLE = ("factory_call", "selector_call", "has_port_call", "invocation", "port_table")


@dataclass
class ProjectIndex:
    port_tables: list = field(default_factory=list)
    selector_calls: list = field(default_factory=list)
    invocations: list = field(default_factory=list)
    factory_calls: list = field(default_factory=list)
    predicates: list = field(default_factory=list)
    backend_tests: list = field(default_factory=list)
    holder_accesses: list = field(default_factory=list)
    accessors: list = field(default_factory=list)
    holders: list = field(default_factory=list)
    refusals: list = field(default_factory=list)
    hip_sources: list = field(default_factory=list)
    compiled_bodies: dict = field(default_factory=dict)  # str(factory call loc) -> CompiledBodies
    rust_gates: list = field(default_factory=list)
    seam_calls: list = field(default_factory=list)
    parse_quality: list = field(default_factory=list)
    unanalyzable: list = field(default_factory=list)  # (path, reason) -> KP901
    unconfirmed: list = field(default_factory=list)  # Unconfirmed -> KP902
    include_graph: nx.DiGraph = field(default_factory=nx.DiGraph)  # includer -> included (project paths)
    # caller usr -> callee usr; a function whose body the walk left unread (FunctionInfo.body_walked False, see
    # frontend/focus.py) is a node without out-edges, and is reached from no function whose body was read
    call_graph: nx.DiGraph = field(default_factory=nx.DiGraph)
    files_scanned: list = field(default_factory=list)  # every C-family/Rust path read
    clang_files: list = field(default_factory=list)  # (path, configuration) parsed by Clang
    functions: dict = field(default_factory=dict)  # usr -> clang.FunctionInfo (merged)
    timings: dict = field(default_factory=dict)
    headers: dict = field(default_factory=dict)  # the header set that judged the tree (frontend/headers.py)

    # ---------------------------------------------------------------- queries
    def includers_of(self, path: str) -> set:
        """Every project file that includes ``path`` directly or transitively."""
        if path not in self.include_graph:
            return set()
        return set(nx.ancestors(self.include_graph, path))

    def translation_units_of(self, path: str) -> set:
        """The parsed translation units that see ``path`` (itself if it is one)."""
        tus = {p for p, _ in self.clang_files}
        out = {t for t in self.includers_of(path) if t in tus}
        if path in tus:
            out.add(path)
        return out

    def table(self, name: str) -> Optional[PortTable]:
        short = name.split("::")[-1]
        return next((t for t in self.port_tables if t.name == short or t.qualified_name == name), None)

    def selector(self, sid: str) -> Optional[SelectorCall]:
        return next((s for s in self.selector_calls if str(s.loc) == sid), None)

    def hip_source(self, name: str):
        return [h for h in self.hip_sources if h.name == name]

    def to_json(self) -> dict:
        def lst(items):
            return [to_jsonable(x) for x in sorted(items, key=sort_key)]

        return {
            "version": 1,
            "port_tables": lst(self.port_tables),
            "selector_calls": lst(self.selector_calls),
            "invocations": lst(self.invocations),
            "factory_calls": lst(self.factory_calls),
            "predicates": lst(self.predicates),
            "backend_tests": lst(self.backend_tests),
            "holder_accesses": lst(self.holder_accesses),
            "accessors": lst(self.accessors),
            "holders": lst(self.holders),
            "refusals": lst(self.refusals),
            "hip_sources": lst(self.hip_sources),
            "compiled_bodies": {
                k: {"bodies": [f"{h.loc.path}:{h.name}" for h in v.bodies], "unresolved": list(v.unresolved)}
                for k, v in sorted(self.compiled_bodies.items())
            },
            "rust_gates": lst(self.rust_gates),
            "seam_calls": lst(self.seam_calls),
            "files": [to_jsonable(q) for q in sorted(self.parse_quality, key=lambda q: (q.path, q.configuration))],
            "unanalyzable": [{"path": p, "reason": r} for p, r in sorted(self.unanalyzable)],
            "unconfirmed": lst(self.unconfirmed),
            "include_graph": sorted([a, b] for a, b in self.include_graph.edges),
            "headers": self.headers,
        }


# --------------------------------------------------------------------------
# Cache
# --------------------------------------------------------------------------




def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Cache:
    """Per-file results under ``<cache>/data-v2``, as data (:mod:`kernel_ports.cachefmt`): nothing read can run.

    A Clang result's key is the file's path and content hash, the tool
    version, the registry's compile section and conventions, the stub set and
    the configuration; the entry also records the hashes of the project
    headers the translation unit included, and is valid only while they match.
    An entry that cannot be read, is of another format or key, or was damaged
    is a miss.
    """

    def __init__(self, root: Optional[Path]):
        self.root = root / cachefmt.CACHE_SUBDIR if root is not None else None

    def _path(self, key: str) -> Optional[Path]:
        return None if self.root is None else self.root / key[:2] / f"{key}.json"

    def get(self, key: str):
        p = self._path(key)
        return None if p is None else cachefmt.read_entry(p, key)

    def put(self, key: str, value) -> None:
        p = self._path(key)
        if p is not None:
            cachefmt.write_entry(p, key, value)


# --------------------------------------------------------------------------
# Worker pool with per-job timeouts
# --------------------------------------------------------------------------


def _worker_main(conn, memory_mib=0, log_path=None):
    gc.enable()  # the parent pauses it while it builds the index; a worker parses unit after unit and must collect
    log = limits.StderrLog(log_path) if log_path else None
    if log is not None:
        log.attach()
    limits.apply_memory_limit(memory_mib)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        kind, payload = job
        try:
            if kind == "parse":
                out = clang.parse_translation_unit(payload)
            else:
                args, cache_dir, with_stubs = payload
                out = clang.build_prelude(list(args), Path(cache_dir), with_stubs)
            reply = ("ok", out)
        except BaseException as exc:  # report, keep serving
            reply = ("error", f"{type(exc).__name__}: {exc}")
        conn.send(limits.judge_reply(reply, log.since_last() if log is not None else "", memory_mib))


class _Pool:
    def __init__(self, n: int, memory_mib: int = 0):
        # fork: no re-import of the caller's __main__, and workers start in
        # milliseconds; the parent never touches libclang, so nothing unsafe is
        # inherited.  Elsewhere spawn.
        method = "fork" if sys.platform.startswith("linux") else "spawn"
        self.ctx = multiprocessing.get_context(method)
        self.n = max(1, n)
        self.memory_mib = memory_mib
        self.workers: list = []

    def _spawn(self):
        parent, child = self.ctx.Pipe()
        log = limits.StderrLog.create()
        p = self.ctx.Process(target=_worker_main, args=(child, self.memory_mib, log.path), daemon=True)
        p.start()
        child.close()
        return [p, parent, None, None, log]  # process, conn, job key, started, its standard error

    def run(self, jobs: list, timeout: float) -> dict:
        """jobs: [(key, (kind, payload))] -> {key: ("ok", result) | ("error"|"crash"|"timeout", msg)}"""
        results: dict = {}
        pending = list(jobs)
        while len(self.workers) < min(self.n, len(pending)):
            self.workers.append(self._spawn())
        while pending or any(w[2] is not None for w in self.workers):
            for w in self.workers:
                if w[2] is None and pending:
                    key, job = pending.pop(0)
                    try:
                        w[1].send(job)
                    except (OSError, BrokenPipeError):
                        results[key] = ("crash", "the parser process could not be started")
                        continue
                    w[2], w[3] = key, time.monotonic()
            busy = [w for w in self.workers if w[2] is not None]
            if not busy:
                continue
            now = time.monotonic()
            wait_for = max(0.01, min(w[3] + timeout - now for w in busy))
            ready = wait([w[1] for w in busy] + [w[0].sentinel for w in busy], timeout=wait_for)
            for i, w in enumerate(self.workers):
                if w[2] is None:
                    continue
                key = w[2]
                if w[1] in ready:
                    try:
                        results[key] = w[1].recv()
                        w[2] = None
                        if results[key][0] in limits.REPLACE_AFTER:  # its heap is not to be trusted any more
                            self._replace(i, kill=True)
                        continue
                    except (EOFError, OSError):
                        pass
                if w[0].sentinel in ready or not w[0].is_alive():
                    w[0].join(timeout=5)
                    results[key] = limits.judge_death(w[0].exitcode, w[4].since_last(), self.memory_mib)
                    self._replace(i)
                elif time.monotonic() - w[3] > timeout:
                    results[key] = ("timeout", limits.timeout_detail(timeout))
                    self._replace(i, kill=True)
        return results

    def _replace(self, i, kill=False):
        w = self.workers[i]
        if kill and w[0].is_alive():
            w[0].kill()
        w[0].join(timeout=5)
        w[4].remove()
        self.workers[i] = self._spawn()

    def close(self):
        for w in self.workers:
            try:
                w[1].send(None)
            except (OSError, BrokenPipeError):
                pass
        for w in self.workers:
            w[0].join(timeout=2)
            if w[0].is_alive():
                w[0].kill()
                w[0].join(timeout=2)
            w[4].remove()
        self.workers = []


# --------------------------------------------------------------------------
# build_index
# --------------------------------------------------------------------------


def _default_configuration(registry):
    confs = registry.compile.configurations
    return next((c for c in confs if c.name == "default"), confs[0])


def _define_name(d: str) -> str:
    return d.split("=", 1)[0].strip()


def _load_compile_commands(path: Optional[Path], root: Path) -> dict:
    """relative path -> extra flags (-I/-D/-U/-include/-std/-isystem only) from compile_commands.json."""
    if path is None:
        return {}
    from kernel_ports.compile_db import load_entries

    out = {}
    for directory, f, argv in load_entries(path):  # bounded and type-checked: the file is the pull request's
        directory = Path(directory)
        f = Path(f)
        f = (directory / f).resolve() if not f.is_absolute() else f.resolve()
        try:
            rel = f.relative_to(root).as_posix()
        except ValueError:
            continue
        flags, i = [], 0
        while i < len(argv):
            a = argv[i]
            if a in ("-I", "-D", "-U", "-isystem", "-include", "-iquote") and i + 1 < len(argv):
                val = argv[i + 1]
                if a in ("-I", "-isystem", "-iquote", "-include") and not os.path.isabs(val):
                    val = str((directory / val).resolve())
                flags += [a, val]
                i += 2
                continue
            if a.startswith(("-I", "-isystem", "-iquote")) and len(a) > 2:
                for pre in ("-isystem", "-iquote", "-I"):
                    if a.startswith(pre):
                        val = a[len(pre):]
                        if not os.path.isabs(val):
                            val = str((directory / val).resolve())
                        flags.append(pre + val)
                        break
            elif a.startswith(("-D", "-U", "-std=")):
                flags.append(a)
            i += 1
        out[rel] = flags
    return out


def _resolve_include(spelled: str, is_system: bool, includer: str, known: set, search: list) -> Optional[str]:
    cands = []
    if not is_system:
        cands.append(PurePosixPath(includer).parent / spelled)
    for d in search:
        cands.append(PurePosixPath(d) / spelled if d else PurePosixPath(spelled))
    for c in cands:
        parts = []
        for seg in c.parts:
            if seg == "..":
                if parts:
                    parts.pop()
            elif seg != ".":
                parts.append(seg)
        p = "/".join(parts)
        if p in known:
            return p
    return None


def build_index(registry, files, *, jobs: int = 2, use_cache: bool = True, cache_dir=None, compile_commands=None,
                timeout: Optional[float] = None, withheld=()) -> ProjectIndex:
    # Loading cached results and joining them allocates a few hundred thousand objects and frees almost none, so
    # the cyclic collector would run over and over for nothing (a sixth of a warm check); it is paused meanwhile.
    # The parser workers, forked from here, turn it back on.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _build_index(registry, files, jobs=jobs, use_cache=use_cache, cache_dir=cache_dir,
                            compile_commands=compile_commands, timeout=timeout, withheld=tuple(sorted(withheld)))
    finally:
        if collecting:
            gc.enable()


def _build_index(registry, files, *, jobs, use_cache, cache_dir, compile_commands, timeout, withheld) -> ProjectIndex:
    t_start = time.perf_counter()
    bounds = limits.Limits.of(registry)
    timeout = timeout or bounds.parse_timeout_s
    root = Path(registry.root).resolve()
    index = ProjectIndex()
    cache = _Cache(Path(cache_dir) if cache_dir is not None else cachefmt.default_cache_dir()) if use_cache else _Cache(None)
    names = wit.WitnessNames.from_registry(registry)
    conv = clang.Conventions.from_registry(registry)
    files = sorted(files, key=lambda f: f.path)
    by_path = {f.path: f for f in files}
    hashes = {f.path: _sha(f.data) for f in files}
    cpp_files = [f for f in files if wit.is_cpp_file(f.path)]
    rust_files = [f for f in files if f.path.endswith(".rs")]
    index.files_scanned = [f.path for f in cpp_files + rust_files]
    names_key = _sha(names.stable_repr().encode())[:16]
    seams = [s.name for s in registry.conventions.test_seams]

    early = _start_early_prelude(registry, root, cache, cpp_files, compile_commands or registry.compile.compile_commands) \
        if use_cache else None

    # ---- 1. witness + Rust (cached by content)
    witnessed: dict = {}
    parser = None
    definitions: dict = {}  # path -> the witness's definitions, when read afresh (cached apart: only the focus needs them)
    for f in cpp_files:
        key = _sha(f"w|{FRONTEND_VERSION}|{names_key}|{f.path}|{hashes[f.path]}".encode())
        res = cache.get(key)
        if res is None:
            parser = parser or wit.cpp_parser()
            got = limits.guarded(index.unanalyzable, f.path, "the syntactic pass (tree-sitter)", _witness_file,
                                 f, names, parser)
            if got is None:
                parser.reset()  # a parse that gave up would otherwise be resumed by the next file's
                continue
            w, hips = got
            definitions[f.path] = w.definitions
            cache.put(_definitions_key(key), w.definitions)
            res = (dataclasses.replace(w, definitions=[]), hips)
            cache.put(key, res)
        witnessed[f.path] = res[0]
        index.hip_sources.extend(res[1])
    for f in rust_files:
        key = _sha(f"r|{FRONTEND_VERSION}|{_sha(repr(seams).encode())}|{f.path}|{hashes[f.path]}".encode())
        res = cache.get(key)
        if res is None:
            res = limits.guarded(index.unanalyzable, f.path, "the Rust front end", rust.analyze, f.path, f.data, seams)
            if res is None:
                continue
            cache.put(key, res)
        index.rust_gates.extend(res[0])
        index.seam_calls.extend(res[1])
    cpp_files = [f for f in cpp_files if f.path in witnessed]  # a file the witness could not read is KP901 already
    index.timings["witness"] = time.perf_counter() - t_start

    # ---- 2. which files, which configurations
    known = set(by_path)
    search = [""] + [_relative_dir(d, root) for d in registry.compile.include_dirs]
    search = [s for s in search if s is not None]
    wgraph = nx.DiGraph()
    for p, w in witnessed.items():
        wgraph.add_node(p)
        for spelled, is_sys in w.includes:
            tgt = _resolve_include(spelled, is_sys, p, known, search)
            if tgt is not None:
                wgraph.add_edge(p, tgt)
    default_conf = _default_configuration(registry)
    tus: set = set()
    for p, w in witnessed.items():
        if not w.has_candidates:
            continue
        if wit.is_header(p):
            includers = [a for a in nx.ancestors(wgraph, p) if not wit.is_header(a)]
            if includers:
                tus.update(includers)
            else:
                tus.add(p)
        else:
            tus.add(p)
    cc_path = compile_commands or registry.compile.compile_commands
    cc = _load_compile_commands(Path(cc_path) if cc_path else None, root)
    index.headers = dict(headers.resolve_for(registry).as_dict(), **({"compile_commands": len(cc)} if cc else {}))
    if tus:
        clang.builtin_include_dir()
        clang.system_cxx_headers()
    unread = {}
    if tus and FOCUS:
        # a function of every C-family file and the registry's names: computed once per state of the tree
        fkey = _sha(f"f|{FRONTEND_VERSION}|{names_key}|{_focus_inputs(registry)}|{sorted((f.path, hashes[f.path]) for f in cpp_files)}".encode())
        unread = cache.get(fkey)
        if unread is None:
            full = {}
            for f in cpp_files:
                defs = definitions.get(f.path)
                if defs is None:
                    wkey = _sha(f"w|{FRONTEND_VERSION}|{names_key}|{f.path}|{hashes[f.path]}".encode())
                    defs = cache.get(_definitions_key(wkey))
                if defs is None:  # not cached (no cache directory, or lost): read again
                    defs = wit.witness(f.path, f.data, names, parser := parser or wit.cpp_parser()).definitions
                full[f.path] = dataclasses.replace(witnessed[f.path], definitions=defs)
            unread = _unread_bodies(registry, full)
            cache.put(fkey, unread)
    tu_unread: dict = {}  # tu -> frozenset((path, line, column)) of bodies its walk may leave unread
    tu_sees: dict = {}  # tu -> digest of the project files its includes resolve to (a file added or gone re-parses)
    jobs_wanted = []  # (relpath, configuration)
    for tu in sorted(tus):
        seen_files = {tu} | set(nx.descendants(wgraph, tu))
        tu_sees[tu] = _sha(repr(sorted(seen_files)).encode())[:16]
        mentioned = set()
        for s in seen_files:
            mentioned |= witnessed[s].conditional_macros if s in witnessed else set()
        tu_unread[tu] = frozenset((s, line, col) for s in seen_files for line, col in unread.get(s, ()))
        for conf in registry.compile.configurations:
            if conf.name == default_conf.name or any(_define_name(d) in mentioned for d in conf.defines):
                jobs_wanted.append((tu, conf))

    # ---- 3. Clang parses (cache, prelude, pool)
    # include dirs inside the root are keyed relative to it, so a copy of the tree elsewhere reuses the parses of
    # its unchanged files (their content hashes and those of the project headers they read still decide)
    comp_key = _sha(repr((registry.compile.std, registry.compile.defines, tuple(_dir_key(d, root) for d in registry.compile.include_dirs),
                          conv, headers.resolve_for(registry).digest, FRONTEND_VERSION, sorted(cc.items()), withheld)).encode())[:24]
    fault_map = _faults()
    results: list = []
    to_parse = []
    for rel, conf in jobs_wanted:
        key = _sha(f"c|{comp_key}|{conf.name}|{conf.defines}|{rel}|{hashes[rel]}|{_sha(repr(sorted(tu_unread[rel])).encode())}"
                   f"|{tu_sees[rel]}".encode())
        entry = cache.get(key) if rel not in fault_map else None
        if entry is not None and not all(hashes.get(d) == h for d, h in entry[0].items()):
            # an unchanged file includes the same headers: look for the entry
            # parsed with the headers' current contents
            entry = cache.get(_deps_key(key, {d: hashes.get(d) for d in entry[0]}))
        if entry is not None:
            deps, tu_res = entry
            if all(hashes.get(d) == h for d, h in deps.items()):
                tu_res.cached = True
                results.append(tu_res)
                continue
        to_parse.append((rel, conf, key))
    index.timings["cache_lookup"] = time.perf_counter() - t_start
    if to_parse:
        pool = _Pool(min(jobs, len(to_parse)) if jobs else 1, bounds.parser_memory_mib)
        tmpdir = None
        try:
            pch_dir = (cache.root / "pch") if cache.root is not None else Path(tmpdir := tempfile.mkdtemp(prefix="kp-pch-"))
            # a prelude per distinct prelude argument set with enough files to pay for it
            plan_of: dict = {}  # unit argument set -> (prelude arguments, with stubs)
            counts: dict = {}
            for rel, conf, key in to_parse:
                if rel in cc:
                    continue
                a = tuple(clang.build_args(registry, conf, rel))
                if a not in plan_of:
                    plan_of[a] = _prelude_plan(registry, a, root)
                counts[plan_of[a]] = counts.get(plan_of[a], 0) + 1
            t0 = time.perf_counter()
            if early is not None:
                _join_early(early, timeout)
            pchs: dict = {}
            pre_jobs = []
            for plan, n in counts.items():
                pre_args, with_stubs = plan
                built = clang.prelude_path(pre_args, pch_dir, with_stubs=with_stubs)
                if built.is_file():
                    pchs[plan] = str(built)  # built by an earlier run: worth it for a single file too
                elif n >= _prelude_min_files(registry, cache):
                    pre_jobs.append((plan, ("prelude", (pre_args, str(pch_dir), with_stubs))))
            if pre_jobs:
                for a, (status, out) in pool.run(pre_jobs, timeout).items():
                    if status == "ok" and out:
                        pchs[a] = out
            index.timings["prelude"] = time.perf_counter() - t0
            parse_jobs = []
            for rel, conf, key in to_parse:
                base = tuple(clang.build_args(registry, conf, rel, compile_commands=cc))
                pch = pchs.get(plan_of.get(tuple(clang.build_args(registry, conf, rel)))) if rel not in cc else None
                args = base + (("-include-pch", pch) if pch else ())
                job = clang.ParseJob(
                    abspath=str(by_path[rel].abspath), relpath=rel, configuration=conf.name, args=args,
                    root=str(root), project_files=frozenset(known), conventions=conv,
                    fault=fault_map.get(rel), unread_bodies=tu_unread[rel],
                    withheld=tuple(str(root / p) for p in withheld))
                parse_jobs.append(((rel, conf.name, key), ("parse", job)))
            t0 = time.perf_counter()
            out = pool.run(parse_jobs, timeout)
            index.timings["parse"] = time.perf_counter() - t0
        finally:
            pool.close()
            if tmpdir:
                import shutil

                shutil.rmtree(tmpdir, ignore_errors=True)
        for (rel, cname, key), (status, res) in sorted(out.items()):
            if status != "ok":
                index.unanalyzable.append((rel, limits.pool_reason(status, res, cname)))
                index.parse_quality.append(ParseQuality(path=rel, configuration=cname, parsed=False, diagnostics=0,
                                                        errors=0, seconds=0.0))
                continue
            if not res.ok:
                index.unanalyzable.append((rel, limits.parse_reason(res.error, cname)))
            results.append(res)
            if res.ok:
                # every project file the unit included, not only those with declarations: a header that is all
                # junk has none, and its fixed version must not be answered with the broken parse
                read = set(res.files_walked) | {p for edge in res.includes for p in edge}
                deps = {d: hashes[d] for d in read if d in hashes}
                deps[rel] = hashes[rel]
                cache.put(key, (deps, res))
                cache.put(_deps_key(key, deps), (deps, res))
    if early is not None and early.is_alive():
        _join_early(early, 0)  # nothing was parsed after all (every unit came from the cache)
    index.clang_files = sorted((r.path, r.configuration) for r in results if r.ok)

    # ---- 4. merge and join
    t0 = time.perf_counter()
    _merge(index, registry, results, witnessed, conv)
    _compiled_bodies(index, by_path, known, search, cache)
    index.timings["join"] = time.perf_counter() - t0
    index.timings["total"] = time.perf_counter() - t_start
    return index


# Leave unread the bodies no fact can arise in or be reached through (frontend/focus.py); tests turn it off to
# compare with a full walk.
FOCUS = True


def _witness_file(f, names, parser) -> tuple:
    w = wit.witness(f.path, f.data, names, parser)
    return w, wit.hip_sources(w)


def _definitions_key(witness_key: str) -> str:
    return _sha(f"d|{witness_key}".encode())


def _focus_inputs(registry) -> tuple:
    # a define whose value holds no name (`MLXCEL_API=`, `X`, `N=4`) expands to nothing that can call or name
    # anything, so mentioning it does not make a declaration interesting (an engine marks every exported
    # function with such an attribute macro)
    every = list(registry.compile.defines) + [d for c in registry.compile.configurations for d in c.defines]
    defines = {_define_name(d) for d in every if re.search(r"[A-Za-z_]", d.partition("=")[2])}
    return tuple(sorted(focus.seeds(registry))), tuple(sorted(focus.backend_queries(registry))), tuple(sorted(defines))


def _unread_bodies(registry, witnessed: dict) -> dict:
    seeds, queries, defines = _focus_inputs(registry)
    return focus.unread_bodies(witnessed, frozenset(seeds), frozenset(queries), frozenset(defines))


def _dir_key(d, root: Path) -> str:
    """A directory for cache keys: relative to the root when inside it."""
    try:
        return "<root>/" + Path(d).resolve().relative_to(root).as_posix()
    except ValueError:
        return str(d)


def _prelude_args(args: tuple, root: Path, drop_defines=frozenset()) -> tuple:
    """The prelude (standard headers only) does not read the project: its -I dirs under the root are dropped, so
    its key, and the precompiled file, are shared by copies of the tree; so are the ``drop_defines``."""
    out = []
    for a in args:
        if a.startswith("-I") and len(a) > 2 and _dir_key(a[2:], root).startswith("<root>/"):
            continue
        if a.startswith("-D") and _define_name(a[2:]) in drop_defines:
            continue
        out.append(a)
    return tuple(out)


def _shared_prelude_defines(registry) -> frozenset:
    """Defines a build configuration adds to the default one that cannot change the prelude's headers (not a
    reserved name, not NDEBUG): that configuration's units load the default configuration's prelude, Clang
    accepting a command line that defines more than the precompiled header was built with."""
    default = _default_configuration(registry)
    base = set(default.defines)
    out = set()
    for conf in registry.compile.configurations:
        if conf.name == default.name or not base <= set(conf.defines):
            continue
        for d in set(conf.defines) - base:
            name = _define_name(d)
            if name and not name.startswith("_") and name != "NDEBUG" and all(_define_name(b) != name for b in base):
                out.add(name)
    return frozenset(out)


def _prelude_plan(registry, args: tuple, root: Path) -> tuple:
    """(prelude arguments, with the stubs) for a unit's argument set."""
    # the stubs are precompiled too when they are what the units would include (~20 ms a parse)
    return _prelude_args(args, root, _shared_prelude_defines(registry)), not clang.stubs_shadowed(args)


def _prelude_min_files(registry, cache: "_Cache") -> int:
    """Units an argument set needs for a prelude to pay for itself in this run: real MLX headers cost a second or
    more a parse without one (and a kept prelude serves later runs), the stubs a tenth of that."""
    if not headers.resolve_for(registry).mlx.real:
        return 3
    return 1 if cache.root is not None else 2


def _start_early_prelude(registry, root: Path, cache: "_Cache", cpp_files: list, compile_commands):
    """Build the default configuration's prelude in the background while the witness reads the tree, when it is
    not built yet and the tree has enough source files to need it. Returns the process, or None."""
    if cache.root is None or compile_commands:
        return None
    sources = [f for f in cpp_files if not wit.is_header(f.path) and not f.path.lower().endswith(clang.GPU_SUFFIXES)]
    if len(sources) < 3:
        return None
    try:
        args = tuple(clang.build_args(registry, _default_configuration(registry), sources[0].path))
        pre_args, with_stubs = _prelude_plan(registry, args, root)
        if clang.prelude_path(pre_args, cache.root / "pch", with_stubs=with_stubs).is_file():
            return None
        method = "fork" if sys.platform.startswith("linux") else "spawn"
        proc = multiprocessing.get_context(method).Process(
            target=_early_prelude_main, daemon=True,
            args=(pre_args, str(cache.root / "pch"), with_stubs, limits.Limits.of(registry).parser_memory_mib))
        proc.start()
        return proc
    except (clang.FrontEndError, OSError):
        return None


def _early_prelude_main(pre_args, pch_dir, with_stubs, memory_mib=0):
    gc.enable()
    limits.apply_memory_limit(memory_mib)
    clang.build_prelude(list(pre_args), Path(pch_dir), with_stubs)


def _join_early(proc, timeout: float) -> None:
    proc.join(timeout)
    if proc.is_alive():
        proc.kill()
        proc.join(5)


def _deps_key(key: str, deps: dict) -> str:
    """The cache key of a parse made with these contents of the files it read."""
    return _sha(f"{key}|{sorted(deps.items())}".encode())


def _relative_dir(d, root: Path) -> Optional[str]:
    try:
        return Path(d).resolve().relative_to(root).as_posix().rstrip("/").replace(".", "") if Path(d).resolve() == root \
            else Path(d).resolve().relative_to(root).as_posix()
    except ValueError:
        return None


def _faults() -> dict:
    """Test hook: KERNEL_PORTS_FE_FAULT="path=crash;other=hang" makes a parse fail on purpose."""
    spec = os.environ.get("KERNEL_PORTS_FE_FAULT", "")
    out = {}
    for part in spec.split(";"):
        if "=" in part:
            p, k = part.split("=", 1)
            out[p.strip()] = k.strip()
    return out


# --------------------------------------------------------------------------
# Merging and joins
# --------------------------------------------------------------------------


def _merge_configs(facts: list) -> list:
    """One fact per distinct content, its configurations the union."""
    out: dict = {}
    for f in facts:
        k = dataclasses.replace(f, configurations=frozenset())
        try:
            hash(k)  # frozen facts compare by value; a few hold unhashable parts
        except TypeError:
            k = (type(f).__name__, repr(to_jsonable(k)))
        if k in out:
            out[k] = dataclasses.replace(out[k], configurations=out[k].configurations | f.configurations)
        else:
            out[k] = f
    return sorted(out.values(), key=sort_key)


class _Joiner:
    def __init__(self, index: ProjectIndex, registry, results: list, conv):
        self.index = index
        self.registry = registry
        self.conv = conv
        self.functions: dict = {}
        self.fn_configs: dict = {}
        for r in results:
            for info in r.functions:
                cur = self.functions.get(info.usr)
                if cur is None:
                    self.functions[info.usr] = info
                else:
                    self._merge_fn(cur, info)
                self.fn_configs.setdefault(info.usr, set()).add(r.configuration)
        # callers: callee usr -> [(caller usr, edge)]
        self.callers: dict = {}
        for usr, info in self.functions.items():
            for e in info.calls:
                self.callers.setdefault(e.callee_usr, []).append((usr, e))
        self._reach_cache: dict = {}

    @staticmethod
    def _merge_fn(cur, other):
        have = {(e.callee_usr, e.loc) for e in cur.calls}
        cur.calls.extend(e for e in other.calls if (e.callee_usr, e.loc) not in have)
        have_f = {fc.loc: i for i, (fc, _) in enumerate(cur.factory_calls)}
        for fc, g in other.factory_calls:
            if fc.loc in have_f:
                i = have_f[fc.loc]
                old, og = cur.factory_calls[i]
                cur.factory_calls[i] = (dataclasses.replace(old, configurations=old.configurations | fc.configurations), og)
            else:
                cur.factory_calls.append((fc, g))
        cur.returned = cur.returned | other.returned
        cur.body_walked = cur.body_walked or other.body_walked
        cur.invokes = cur.invokes or other.invokes
        cur.selects = cur.selects or other.selects
        cur.backend_queries = tuple(sorted(set(cur.backend_queries) | set(other.backend_queries)))
        cur.has_port_args = cur.has_port_args + tuple(a for a in other.has_port_args if a not in cur.has_port_args)
        if not cur.returned_statics:
            cur.returned_statics = other.returned_statics

    # ------------------------------------------------------------ reachability
    @staticmethod
    def _guards_ok(guards, env) -> bool:
        for g in guards:
            if g.param in env:
                if (env[g.param] in g.values) == g.negated:
                    return False
        return True

    def _bind(self, edge, callee, env, owner=None) -> dict:
        new = {}

        def val(ref):
            if ref is None:
                return None
            if ref[0] == "const":
                return ref[1]
            if ref[0] in ("param", "tparam") and isinstance(ref[1], str):
                return env.get(ref[1])
            return None

        for i, t in enumerate(edge.targs):
            if i < len(callee.template_params):
                v = val(t)
                if v is not None:
                    new[callee.template_params[i]] = v
        for i, refs in enumerate(edge.args):
            if i >= len(callee.params):
                break
            vals = set()
            for r in refs:
                if r[0] == "param" and isinstance(r[1], int):
                    caller_param = owner.params[r[1]] if owner is not None and 0 <= r[1] < len(owner.params) else None
                    vals.add(env.get(caller_param) if caller_param else None)
                else:
                    vals.add(val(r))
            if len(vals) == 1 and None not in vals:
                new[callee.params[i]] = vals.pop()
        return new

    def reach(self, start_edges: list, env: dict, start_usr: str) -> tuple:
        """(factory calls, chain steps) reachable from a getter's edges under env."""
        found: dict = {}
        steps: dict = {}
        visited = set()

        def visit(usr, env, depth, via_kind):
            key = (usr, tuple(sorted(env.items())))
            if key in visited or depth > 12:
                return
            visited.add(key)
            info = self.functions.get(usr)
            if info is None:
                return
            for fc, guards in info.factory_calls:
                if self._guards_ok(guards, env):
                    found.setdefault(fc.loc, fc)
                    steps.setdefault(("factory", str(fc.loc)), ChainStep(kind="factory", name=fc.factory, loc=fc.loc))
            for e in info.calls:
                follow(e, env, depth, info)

        def follow(e, env, depth, owner):
            if not self._guards_ok(e.guards, env):
                return
            callee = self.functions.get(e.callee_usr)
            if callee is None:
                return
            new_env = self._bind(e, callee, env, owner)
            kind = self._step_kind(e, callee, depth)
            steps.setdefault((e.callee_usr, tuple(sorted(new_env.items()))), ChainStep(
                kind=kind, name=e.spelling if kind == "accessor" else callee.qualified_name, usr=e.callee_usr,
                loc=callee.loc, bindings=tuple(sorted(new_env.items()))))
            visit(e.callee_usr, new_env, depth + 1, kind)

        for e in start_edges:
            follow(e, env, 0, None)
        return list(found.values()), list(steps.values())

    def _step_kind(self, edge, callee, depth):
        if depth == 0 and edge.returns_ref and not edge.is_method:
            return "accessor"
        if callee.is_method_of or callee.usr.endswith("#init"):
            return "holder"
        return "helper"

    def reach_from(self, usr: str, env: dict) -> tuple:
        key = (usr, tuple(sorted(env.items())))
        if key not in self._reach_cache:
            info = self.functions.get(usr)
            if info is None:
                self._reach_cache[key] = ([], [])
            else:
                pseudo = clang.CallEdge(usr, info.qualified_name, info.name, info.loc, (), ())
                self._reach_cache[key] = self.reach([pseudo], dict(env), usr)
        return self._reach_cache[key]

    # --------------------------------------------------------- value refs
    def resolve(self, refs, owner_usr: str, depth=0, want=("selector", "table")) -> tuple:
        """Resolve value refs (clang.values.sources) to selector ids / table names."""
        out = set()
        unknown = False
        accessors = set()
        for r in refs:
            k = r[0]
            if k == "selector" and "selector" in want:
                out.add(("selector", r[1]))
            elif k == "table" and "table" in want:
                out.add(("table", r[1]))
            elif k == "accessor":
                accessors.add(r[2])
            elif k == "call" and depth < 6:
                info = self.functions.get(r[1])
                if info is None or not info.returned:
                    unknown = True
                    continue
                sub, u, acc = self.resolve(info.returned, r[1], depth + 1, want)
                out |= sub
                accessors |= acc
                unknown = unknown or u
            elif k == "param" and isinstance(r[1], int) and r[1] >= 0 and depth < 6:
                callers = self.callers.get(owner_usr, [])
                if not callers:
                    unknown = True
                for caller_usr, e in callers:
                    if r[1] < len(e.args):
                        sub, u, acc = self.resolve(e.args[r[1]], caller_usr, depth + 1, want)
                        out |= sub
                        accessors |= acc
                        unknown = unknown or u
                    else:
                        unknown = True
            else:
                unknown = True
        return out, unknown, accessors


def _forwarded(info) -> Optional[str]:
    """The function a wrapper forwards to: every return returns that one call's result and it calls nothing else."""
    if info is None or not info.returned:
        return None
    refs = set(info.returned)
    if len(refs) != 1:
        return None
    (ref,) = refs
    if ref[0] != "call":
        return None
    if {e.callee_usr for e in info.calls} != {ref[1]} or info.backend_queries or info.has_port_args:
        return None
    return ref[2]


def _merge(index: ProjectIndex, registry, results: list, witnessed: dict, conv) -> None:
    j = _Joiner(index, registry, results, conv)
    index.functions = j.functions

    # include graph (Clang's, plus the witness's for files Clang did not read)
    for r in results:
        for a, b in r.includes:
            index.include_graph.add_edge(a, b)
    for p, w in witnessed.items():
        index.include_graph.add_node(p)

    # call graph
    for usr, info in j.functions.items():
        index.call_graph.add_node(usr, name=info.qualified_name, kind="function", path=info.loc.path)
        for e in info.calls:
            index.call_graph.add_edge(usr, e.callee_usr, loc=str(e.loc))

    # plain facts
    index.factory_calls = _merge_configs([f for r in results for f in r.factory_calls])
    index.backend_tests = _merge_configs([f for r in results for f in r.backend_tests])
    index.refusals = _merge_configs([f for r in results for f in r.refusals])
    cpp_seams = _merge_configs([f for r in results for f in r.seam_calls])
    index.seam_calls = sorted(index.seam_calls + cpp_seams, key=sort_key)

    # selector calls
    sels = []
    for r in results:
        for rs in r.selectors:
            found, unknown, _ = j.resolve(rs.table_refs, rs.fact.enclosing_usr, want=("table",))
            tables = tuple(sorted(n for k, n in found if k == "table"))
            if unknown or not tables:
                tables = tables + UNKNOWN if unknown or not tables else tables
            sels.append(dataclasses.replace(rs.fact, tables=tables))
    index.selector_calls = _merge_configs(sels)
    sel_tables: dict = {}
    for s in index.selector_calls:
        sel_tables.setdefault(str(s.loc), set()).update(s.tables)

    # invocations
    invs = []
    for r in results:
        for ri in r.invocations:
            found, unknown, accessors = j.resolve(ri.kernel_refs, ri.enclosing_usr, want=("selector",))
            selectors = tuple(sorted(n for k, n in found if k == "selector"))
            tables = set()
            for sid in selectors:
                tables |= sel_tables.get(sid, set(UNKNOWN))
            if not selectors and not accessors:
                tables |= set(UNKNOWN)
            from_param = any(x[0] == "param" for x in ri.kernel_refs)
            invs.append(Invocation(
                loc=ri.loc, configurations=frozenset({r.configuration}), callee_text=ri.callee_text,
                selector_calls=selectors, tables=tuple(sorted(tables)), accessors=tuple(sorted(accessors)),
                template_args_text=ri.template_args_text, template_args=ri.template_args,
                template_args_resolved=ri.template_args_resolved, inputs_text=ri.inputs_text, inputs=ri.inputs,
                enclosing_function=ri.enclosing_function, enclosing_usr=ri.enclosing_usr, in_macro=ri.in_macro,
                kernel_from_parameter=from_param, dtype_checks=ri.dtype_checks, unresolved=ri.unresolved))
    index.invocations = _merge_configs(invs)

    # predicates
    preds = []
    for r in results:
        for rp in r.predicates:
            tables, unknown = set(), False
            for refs in rp.table_refs:
                found, u, _ = j.resolve(refs, rp.fact_args["usr"], want=("table",))
                tables |= {n for k, n in found if k == "table"}
                unknown = unknown or u
            preds.append(Predicate(tables=tuple(sorted(tables)), unresolved_tables=unknown,
                                   forwards_to=_forwarded(j.functions.get(rp.fact_args["usr"])), **rp.fact_args))
    index.predicates = _merge_configs(preds)

    # port tables and their slots
    tables: dict = {}
    for r in results:
        for rt in r.tables:
            t = tables.setdefault((rt.usr, rt.loc), {"raw": rt, "configs": set(), "slots": {}, "any_wave": False})
            t["configs"].add(r.configuration)
            t["any_wave"] = t["any_wave"] or rt.rocm_any_wave_size
            for b, rs in rt.slots.items():
                if rs is None:
                    t["slots"].setdefault(b, {})
                    continue
                t["slots"].setdefault(b, {}).setdefault(rs.accessor, (rs, set()))[1].add(r.configuration)
    accessor_uses: dict = {}  # spelling -> (usr, targs, holder_type, loc)
    out_tables = []
    for (usr, loc), t in sorted(tables.items(), key=lambda kv: (str(kv[0][1]), kv[0][0])):
        raw = t["raw"]
        slots = {}
        for b in conv.backends:
            variants = t["slots"].get(b) or {}
            if not variants:
                slots[b] = None
                continue
            # one slot per backend; if configurations disagree on the accessor, the default's wins
            acc, (rs, cfgs) = sorted(variants.items(), key=lambda kv: ("default" not in kv[1][1], str(kv[0])))[0]
            all_cfgs = set().union(*(c for _, c in variants.values()))
            env = {}
            fcs, steps = j.reach(rs.edges, env, rs.slot_id)
            fcs = sorted({fc.loc: fc for fc in list(fcs) + list(rs.factory_calls)}.values(), key=sort_key)
            hip = tuple(dict.fromkeys(c for fc in fcs for c in fc.source_constants + fc.header_constants))
            chain = (ChainStep(kind="getter", name=f"{raw.qualified_name}.{b}", loc=rs.loc),) + tuple(steps)
            slots[b] = Slot(backend=b, accessor=rs.accessor, accessor_function=rs.accessor_function,
                            accessor_usr=rs.accessor_usr, holder_type=rs.holder_type, chain=chain,
                            factory_calls=tuple(fcs), hip_sources=hip, loc=rs.loc, configurations=frozenset(all_cfgs),
                            resolved=bool(fcs), text=rs.text)
            if rs.accessor and rs.accessor_usr:
                accessor_uses.setdefault(rs.accessor, (rs.accessor_usr, rs.accessor_targs, rs.holder_type))
        out_tables.append(PortTable(loc=raw.loc, configurations=frozenset(t["configs"]), name=raw.name,
                                    qualified_name=raw.qualified_name, usr=raw.usr, file=raw.loc.path, slots=slots,
                                    rocm_any_wave_size=t["any_wave"], variable=raw.variable))
    index.port_tables = out_tables

    # holder accesses (only accessors that reach a factory), accessors, holders
    raw_acc = [(r.configuration, a) for r in results for a in r.holder_accesses]
    accessor_usrs: dict = {}
    for _, a in raw_acc:
        if a.accessor_usr not in accessor_usrs:
            fcs, _ = j.reach_from(a.accessor_usr, {})
            accessor_usrs[a.accessor_usr] = bool(fcs)
    is_accessor = {u for u, ok in accessor_usrs.items() if ok}
    # a holder of its own type may build the kernel in the method called on it
    # (`get_top_k_kernel().get()` where TopKKernel::get calls the factory)
    method_builds: dict = {}

    def _method_factories(accessor_usr, method) -> list:
        """Factory calls reached by `method` of the holder type the accessor returns."""
        key = (accessor_usr, method)
        if key not in method_builds:
            info = j.functions.get(accessor_usr)
            found = []
            if info is not None and method and info.returns_ref:
                cls = re.sub(r"<.*", "", info.returns_ref).split("::")[-1]
                for usr, f in j.functions.items():
                    if f.name == method and f.is_method_of and re.sub(r"<.*", "", f.is_method_of).split("::")[-1] == cls:
                        found += j.reach_from(usr, {})[0]
            method_builds[key] = found
        return method_builds[key]

    def _method_builds(accessor_usr, method):
        return bool(_method_factories(accessor_usr, method))

    methods_used: dict = {}  # accessor usr -> methods called on its holder outside slots
    for _, a in raw_acc:
        if a.method:
            methods_used.setdefault(a.accessor_usr, set()).add(a.method)

    has = []
    for cfg, a in raw_acc:
        if a.accessor_usr not in is_accessor and not _method_builds(a.accessor_usr, a.method):
            continue
        accessor_uses.setdefault(a.accessor, (a.accessor_usr, (), None))
        has.append(HolderAccess(loc=a.loc, configurations=frozenset({cfg}), kind=a.kind, accessor=a.accessor,
                                accessor_usr=a.accessor_usr, method=a.method, in_table_slot=a.in_table_slot,
                                enclosing_function=a.enclosing_function, enclosing_usr=a.enclosing_usr,
                                enclosing_is_accessor=a.enclosing_usr in is_accessor, in_macro=a.in_macro))
    for fc in index.factory_calls:
        info = j.functions.get(fc.enclosing_usr)
        if info is not None and (info.invokes or info.selects) and not fc.in_table_slot:
            has.append(HolderAccess(loc=fc.loc, configurations=fc.configurations, kind="factory_call",
                                    accessor=fc.factory, accessor_usr="", method=None, in_table_slot=False,
                                    enclosing_function=fc.enclosing_function, enclosing_usr=fc.enclosing_usr,
                                    in_macro=fc.in_macro))
    index.holder_accesses = _merge_configs(has)
    accs, holders = [], []
    for spelling, (usr, targs, htype) in sorted(accessor_uses.items()):
        info = j.functions.get(usr)
        if info is None:
            continue
        env = {}
        for i, t in enumerate(targs):
            if t and t[0] == "const" and i < len(info.template_params):
                env[info.template_params[i]] = t[1]
        fcs, _ = j.reach_from(usr, env)
        # a holder of its own type builds the kernel in the method called on it
        # (`get_x_kernel().get()`): what that method reaches is the accessor's too
        extra = [fc for m in sorted(methods_used.get(usr, ())) for fc in _method_factories(usr, m)]
        fcs = list({fc.loc: fc for fc in list(fcs) + extra}.values())
        accs.append(Accessor(loc=info.loc, configurations=frozenset(j.fn_configs.get(usr, ())), name=spelling,
                             function=info.qualified_name, usr=usr, holder_type=htype or info.returns_ref,
                             factory_calls=tuple(sorted(fcs, key=sort_key))))
        for name, ty, hloc in info.returned_statics:
            holders.append(Holder(loc=hloc, configurations=frozenset(j.fn_configs.get(usr, ())), name=name, type=ty,
                                  accessor_usr=usr, accessor=info.qualified_name,
                                  factory_calls=tuple(sorted(fcs, key=sort_key))))
    index.accessors = accs
    index.holders = _merge_configs(holders)

    # parse quality
    for r in results:
        index.parse_quality.append(ParseQuality(path=r.path, configuration=r.configuration, parsed=r.ok,
                                                diagnostics=r.diagnostics, errors=r.errors, seconds=round(r.seconds, 4),
                                                cached=getattr(r, "cached", False),
                                                first_errors=tuple(getattr(r, "first_errors", ()))))

    # unconfirmed candidates (KP902)
    seen = set()
    skipped: dict = {}
    walked_in: dict = {}
    for r in results:
        if not r.ok:
            continue
        seen |= r.seen
        for f in r.files_walked:
            walked_in.setdefault(f, set()).add(r.configuration)
        for p, rngs in r.skipped.items():
            skipped.setdefault((p, r.configuration), []).extend(rngs)
    unconf = []
    unanalyzable = {p for p, _ in index.unanalyzable}
    for p, w in witnessed.items():
        if p not in walked_in or p in unanalyzable:
            continue
        for c in w.candidates:
            if c.kind not in CONFIRMABLE:
                continue
            if (p, c.line, c.kind) in seen or (c.kind == "invocation" and (p, c.line, "call9") in seen):
                continue
            configs = walked_in[p]
            if all(any(a <= c.line <= b for a, b in skipped.get((p, cfg), ())) for cfg in configs):
                continue  # excluded by the preprocessor in every configuration parsed
            unconf.append(Unconfirmed(loc=Location(p, c.line, c.column), configurations=frozenset(configs),
                                      kind=c.kind, name=c.name,
                                      reason="the syntactic pass found it but the Clang AST has no typed construct there",
                                      text=c.text))
    for r in results:
        for (p, line, col, kind, name, reason) in r.untyped:
            unconf.append(Unconfirmed(loc=Location(p, line, col), configurations=frozenset({r.configuration}),
                                      kind=kind, name=name, reason=reason))
    # an untyped record and a missing one at the same place are one finding
    by_place: dict = {}
    for u in parse_summary.with_nearest_errors(_merge_configs(unconf), results):
        by_place.setdefault((u.loc.path, u.loc.line, u.kind), u)
    index.unconfirmed = sorted(by_place.values(), key=sort_key)
    index.hip_sources = sorted(index.hip_sources, key=sort_key)
    index.rust_gates = sorted(index.rust_gates, key=sort_key)
    index.unanalyzable = sorted(set(index.unanalyzable))


# --------------------------------------------------------------------------
# What each factory call compiles
# --------------------------------------------------------------------------


def _line_of_offset(starts: list, off: int) -> int:
    import bisect

    return bisect.bisect_right(starts, off)


def _header_file_source(rel: str, f, cache: _Cache):
    """A project file pulled into a kernel body by ``#include``, read as code."""
    from kernel_ports.facts import HipSource

    key = _sha(f"hf|{FRONTEND_VERSION}|{rel}|{_sha(f.data)}".encode())
    got = cache.get(key)
    if got is not None:
        return got
    scan = hip.scan_header_file(f.abspath)
    starts = hip.line_starts(f.data)
    got = HipSource(loc=Location(rel, 1, 1), name=rel, text=f.data.decode("utf-8", "replace"),
                    identifiers=scan.identifiers, tokens=scan.tokens, is_raw=False,
                    token_lines=tuple(_line_of_offset(starts, o) for o in scan.token_offsets),
                    includes=scan.includes)
    cache.put(key, got)
    return got


def _literal_source(fc, which: str, text: str, by_path: dict):
    """A body written as a literal at the factory call, located in its file."""
    f = by_path.get(fc.loc.path)
    first_line = fc.loc.line
    if f is not None and text:
        starts = hip.line_starts(f.data)
        begin = starts[fc.loc.line - 1] if fc.loc.line - 1 < len(starts) else 0
        at = f.data.find(text.encode("utf-8"), begin)
        if at >= 0:
            first_line = _line_of_offset(starts, at)
    got = wit.literal_pieces(text, first_line)
    if got is None:
        return None
    joined, pieces = got
    return wit.hip_source(fc.loc.path, f"{fc.loc}#{which}", first_line, fc.loc.column, joined, pieces,
                          is_raw=any(raw for _, raw, _ in pieces))


def _compiled_bodies(index: ProjectIndex, by_path: dict, known: set, search: list, cache: _Cache) -> None:
    """For every factory call: the bodies it compiles (source, header, included files)."""
    by_name: dict = {}
    for h in index.hip_sources:
        by_name.setdefault(h.name, []).append(h)
    visible_cache: dict = {}

    def visible(path):
        if path not in visible_cache:
            seen = set()
            for tu in index.translation_units_of(path) or {path}:
                seen.add(tu)
                if tu in index.include_graph:
                    seen |= nx.descendants(index.include_graph, tu)
            visible_cache[path] = seen
        return visible_cache[path]

    extra: dict = {}
    for fc in index.factory_calls:
        bodies, unresolved = [], []
        for which, literal, constants, text in (
            ("source", fc.source_literal, fc.source_constants, fc.source_text),
            ("header", fc.header_literal, fc.header_constants, fc.header_text),
        ):
            if literal is not None:
                body = _literal_source(fc, which, text, by_path)
                if body is None:
                    unresolved.append(f"the {which} literal `{text[:60]}` could not be read")
                else:
                    extra.setdefault((body.loc.path, body.name), body)
                    bodies.append(body)
                continue
            if not constants:
                if which == "source" or text.strip():
                    unresolved.append(f"the {which} argument `{text[:60]}` is neither a literal nor a named constant")
                continue
            for name in constants:
                cands = by_name.get(name, [])
                seen_from = visible(fc.loc.path)
                near = [h for h in cands if h.loc.path in seen_from] or cands
                if not near:
                    unresolved.append(f"`{name}` ({which} argument) is not a string constant the front end could read")
                bodies.extend(near)
        # project files the bodies include, transitively
        queue = list(bodies)
        done = {(h.loc.path, h.name) for h in bodies}
        while queue:
            h = queue.pop(0)
            for spelled in h.includes:
                rel = _resolve_include(spelled, False, h.loc.path, known, search)
                if rel is None:
                    unresolved.append(f"`#include \"{spelled}\"` in {h.name} names no file in the project")
                    continue
                if (rel, rel) in done:
                    continue
                done.add((rel, rel))
                body = limits.guarded(index.unanalyzable, rel, "the kernel-body scan", _header_file_source, rel,
                                      by_path[rel], cache)
                if body is None:
                    unresolved.append(f"`#include \"{spelled}\"` in {h.name} could not be scanned")
                    continue
                extra.setdefault((rel, rel), body)
                bodies.append(body)
                queue.append(body)
        index.compiled_bodies[str(fc.loc)] = CompiledBodies(
            loc=fc.loc, configurations=fc.configurations, bodies=tuple(bodies), unresolved=tuple(unresolved))
    have = {(h.loc.path, h.name) for h in index.hip_sources}
    index.hip_sources = sorted(index.hip_sources + [b for k, b in extra.items() if k not in have], key=sort_key)

"""``build_index(registry, files)``: the stages of the index in order, each in its own module.

1. the syntactic pass (:mod:`.scan`) over every file;
2. the plan (:mod:`.plan`): which units Clang parses, in which configurations, what each walk may leave unread;
3. the Clang parses: cached results first (:mod:`kernel_ports.cache.units`), the preludes (:mod:`.prelude`), then the rest in the
   worker pool (:mod:`.pool`), each result kept in the cache;
4. the merge and joins (:mod:`.merge`, :mod:`.join`) and what each factory call compiles (:mod:`.compiled`).

Per-file results are cached; the joins never are.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from kernel_ports import scope
from kernel_ports.scope import limits
from kernel_ports.cache import format as cachefmt
from kernel_ports.facts import ParseQuality
from kernel_ports.frontend import clang, headers, witness as wit
from kernel_ports.index import plan, prelude, scan
from kernel_ports.cache.units import FRONTEND_VERSION, FileCache, cached_parse, dir_key, has_current_parse, sha
from kernel_ports.index.compiled import compiled_bodies
from kernel_ports.index.join import FunctionTable
from kernel_ports.index.merge import merge_results
from kernel_ports.index.parsing import Parsing, UnitJobs
from kernel_ports.index.project_index import ProjectIndex


def build_index(registry, files, *, jobs: int = 2, use_cache: bool = True, cache_dir=None, compile_commands=None,
                timeout: Optional[float] = None, withheld=(), early_prelude=None) -> ProjectIndex:
    """The index of ``files``. ``early_prelude``: the prelude build the caller started with
    :func:`.prelude.start_for_build` and the same arguments (None: it is started here)."""
    # Loading cached results and joining them allocates a few hundred thousand objects and frees almost none, so
    # the cyclic collector would run over and over for nothing (a sixth of a warm check); it is paused meanwhile.
    # The parser workers, forked from here, turn it back on.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _build_index(registry, files, jobs=jobs, use_cache=use_cache, cache_dir=cache_dir,
                            compile_commands=compile_commands, timeout=timeout, withheld=tuple(sorted(withheld)),
                            early_prelude=early_prelude)
    finally:
        if collecting:
            gc.enable()


def _build_index(registry, files, *, jobs, use_cache, cache_dir, compile_commands, timeout, withheld,
                 early_prelude) -> ProjectIndex:
    t_start = time.perf_counter()
    bounds = limits.Limits.of(registry)
    timeout = timeout or bounds.parse_timeout_s
    root = Path(registry.root).resolve()
    index = ProjectIndex()
    cache = FileCache(Path(cache_dir) if cache_dir is not None else cachefmt.default_cache_dir()) if use_cache else FileCache(None)
    files = sorted(files, key=lambda f: f.path)
    hashes = {f.path: sha(f.data) for f in files}
    cpp_files = [f for f in files if scope.is_cpp_file(f.path)]
    compile_commands = compile_commands or registry.compile.compile_commands
    if early_prelude is None:
        early_prelude = prelude.start_for_build(registry, files, use_cache=use_cache, cache_dir=cache_dir,
                                                compile_commands=compile_commands)
    early = early_prelude.process
    parsing = Parsing(index, cache, hashes, jobs, bounds, timeout)
    try:
        if cpp_files:
            parsing.spawn_workers()
        parsing.early = early
        run = _Run(registry=registry, root=root, index=index, cache=cache, files=files, by_path={f.path: f for f in files},
                   hashes=hashes, compile_commands=compile_commands, withheld=withheld, t_start=t_start)
        _index(run, parsing, cpp_files)
    finally:
        parsing.close()  # after the joins: a worker may still be writing its last entry meanwhile
    index.timings["total"] = time.perf_counter() - t_start
    return index


@dataclass
class _Run:
    """The inputs every stage of one build reads."""

    registry: object
    root: Path
    index: ProjectIndex
    cache: FileCache
    files: list
    by_path: dict
    hashes: dict
    compile_commands: object
    withheld: tuple
    t_start: float


def _index(run: _Run, parsing: Parsing, cpp_files: list) -> None:
    registry, root, index, cache, hashes, by_path = run.registry, run.root, run.index, run.cache, run.hashes, run.by_path
    names = wit.WitnessNames.from_registry(registry)
    conv = clang.Conventions.from_registry(registry)
    rust_files = [f for f in run.files if f.path.lower().endswith(".rs")]
    index.files_scanned = [f.path for f in cpp_files + rust_files]
    names_key = sha(names.stable_repr().encode())[:16]
    seams = [s.name for s in registry.conventions.test_seams]

    # ---- 1. witness + Rust (cached by content)
    witnessed, definitions, parser = scan.read_cpp_files(index, cache, cpp_files, hashes, names, names_key)
    scan.read_rust_files(index, cache, rust_files, hashes, seams)
    cpp_files = [f for f in cpp_files if f.path in witnessed]  # a file the witness could not read is KP901 already
    index.timings["witness"] = time.perf_counter() - run.t_start

    # ---- 2. which files, which configurations
    known = set(by_path)
    search = plan.include_search(registry, root)
    wgraph = plan.witness_include_graph(witnessed, known, search)
    tus = plan.translation_units(witnessed, wgraph)
    cc = plan.load_compile_commands(Path(run.compile_commands) if run.compile_commands else None, root)
    index.headers = dict(headers.resolve_for(registry).as_dict(), **({"compile_commands": len(cc)} if cc else {}))
    if tus:
        clang.builtin_include_dir()
        clang.system_cxx_headers()
        index.headers["libclang"] = clang.libclang().label  # which libclang judged the tree (cache keys hold it)
    # ---- 3. Clang parses (cache, prelude, pool)
    comp_key = _compile_key(registry, conv, root, cc, run.withheld)
    weights = _weights(registry, tus, wgraph, by_path, witnessed)
    seen = plan.files_seen(tus, wgraph)

    def jobs_of(unread: dict, hidden: dict) -> tuple:
        """(what the parse jobs share, [(unit, configuration, cache key)]) when the walks may leave ``unread``."""
        tu_unread, tu_sees, jobs_wanted = plan.parse_jobs_wanted(registry, seen, witnessed, unread)
        units = UnitJobs(registry=registry, root=root, conv=conv, by_path=by_path, known=known, cc=cc,
                         fault_map=plan.faults(), tu_unread=tu_unread, withheld=run.withheld, tu_weight=weights,
                         hidden=hidden)
        return units, [(rel, conf, sha(f"c|{comp_key}|{conf.name}|{conf.defines}|{rel}|{hashes[rel]}|"
                                       f"{sha(repr(sorted(tu_unread[rel])).encode())}|{tu_sees[rel]}".encode()))
                       for rel, conf in jobs_wanted]

    unread, hidden, ahead = {}, {}, set()
    if tus and plan.FOCUS:
        tree_focus = plan.TreeFocus(registry, cache, cpp_files, hashes, names, names_key, witnessed, definitions,
                                    parser)
        guess = tree_focus.guess()
        if guess is not None:  # an edit: its units start parsing while the focus is decided again
            edited = plan.units_seeing(seen, set(tree_focus.changed))
            ahead = _start_ahead(parsing, cache, hashes, edited, *jobs_of(*guess))
        unread, hidden = tree_focus.result()
    parsing.units, wanted = jobs_of(unread, hidden)
    if ahead:
        parsing.withdraw(ahead - {(rel, conf.name, key) for rel, conf, key in wanted})
    results = _cached_or_started(index, parsing, cache, wanted, hashes, run.t_start, ahead)
    table = FunctionTable()
    table.add(results)  # while the changed units parse
    _record_parses(index, cache, parsing.finish(), results)
    if parsing.early is not None and parsing.early.is_alive():
        prelude.join_early(parsing.early, 0)  # nothing was parsed after all (every unit came from the cache)
    index.clang_files = sorted((r.path, r.configuration) for r in results if r.ok)

    # ---- 4. merge and join
    t0 = time.perf_counter()
    merge_results(index, registry, results, witnessed, conv, table)
    compiled_bodies(index, by_path, known, search, cache)
    index.timings["join"] = time.perf_counter() - t0


def _weights(registry, tus: set, wgraph, by_path: dict, witnessed: dict) -> dict:
    """Each unit's rough parse cost (the order its parse starts in): only worth the MLX headers' sizes when
    something is to be parsed with the real ones."""
    mlx = headers.resolve_for(registry).mlx
    outside = plan.outside_prelude_bytes(mlx.directory if mlx.real else None) if tus else None
    return plan.unit_weights(tus, wgraph, by_path, witnessed, outside)


def _compile_key(registry, conv, root: Path, cc: dict, withheld: tuple) -> str:
    """What every Clang parse of this run depends on besides its own unit and configuration."""
    # include dirs inside the root are keyed relative to it, so a copy of the tree elsewhere reuses the parses of
    # its unchanged files (their content hashes and those of the project headers they read still decide)
    return sha(repr((registry.compile.std, registry.compile.defines, tuple(dir_key(d, root) for d in registry.compile.include_dirs),
                     conv, headers.resolve_for(registry).digest, FRONTEND_VERSION, sorted(cc.items()), withheld,
                     clang.libclang().key)).encode())[:24]


def _start_ahead(parsing: Parsing, cache: FileCache, hashes: dict, edited: set, units: UnitJobs, guessed: list) -> set:
    """Start the parses the focus's guess wants of the units that see an ``edited`` file and have no entry made
    with the current contents of the files they read; their pool keys. Each counts only if the focus then wants
    the same job (the same key: the same unit, configuration, contents and unread bodies)."""
    parsing.units = units
    sure = [(rel, conf, key) for rel, conf, key in guessed if rel in edited
            and (rel in units.fault_map or not has_current_parse(cache, key, hashes))]
    if sure:
        parsing.start(sure)
    return {(rel, conf.name, key) for rel, conf, key in sure}


def _cached_or_started(index, parsing: Parsing, cache: FileCache, wanted: list, hashes: dict, t_start: float,
                       ahead: set = frozenset()) -> list:
    """The cached results of ``wanted``, in order; the parses of the rest started in ``parsing`` (``ahead``: those
    started already, as pool keys). A unit without an entry starts parsing before any entry is decoded; one whose
    entry turns out stale or damaged, after."""
    fault_map = parsing.units.fault_map
    started = {key for rel, conf, key in wanted if (rel, conf.name, key) in ahead}
    sure = [(rel, conf, key) for rel, conf, key in wanted
            if key not in started and (rel in fault_map or not cache.has(key))]
    if sure:
        parsing.start(sure)
    started |= {key for _, _, key in sure}
    results: list = []
    late = []
    shared: dict = {}  # the header function groups decoded so far (cache.store_parse)
    for rel, conf, key in wanted:
        if key in started:
            continue
        tu_res = cached_parse(cache, key, hashes, shared)
        if tu_res is not None:
            results.append(tu_res)
            continue
        late.append((rel, conf, key))
    index.timings["cache_lookup"] = time.perf_counter() - t_start
    if late:
        parsing.start(late)
    return results


def _record_parses(index, cache: FileCache, out: dict, results: list) -> None:
    """Each pool reply: a result (the worker kept it in the cache when the parse succeeded) or a KP901 record."""
    for (rel, cname, key), (status, res) in sorted(out.items()):
        if status != "ok":
            index.unanalyzable.append((rel, limits.pool_reason(status, res, cname)))
            index.parse_quality.append(ParseQuality(path=rel, configuration=cname, parsed=False, diagnostics=0,
                                                    errors=0, seconds=0.0))
            continue
        if not res.ok:
            index.unanalyzable.append((rel, limits.parse_reason(res.error, cname)))
        else:
            cache.note_stored(key)  # the worker kept it there
        results.append(res)

"""The precompiled prelude: the standard and MLX headers every unit reads, built once per header set and argument
set and loaded by each parse with ``-include-pch``.

This module owns which prelude a unit's arguments map to (project include folders and defines that cannot change
the standard headers are dropped, so copies of the tree and configurations share one), when a prelude pays for
itself, the build of the default configuration's prelude in the background while the witness reads the tree,
and the prelude builds of a run (in the parse pool, :mod:`kernel_ports.index.pool`).
"""

from __future__ import annotations

import gc
import multiprocessing
import sys
import time
from pathlib import Path

from kernel_ports import scope
from kernel_ports.scope import limits
from kernel_ports.cache import format as cachefmt
from kernel_ports.frontend import clang, headers
from kernel_ports.cache.units import FileCache, dir_key
from kernel_ports.registry.model import define_name


def prelude_args(args: tuple, root: Path, drop_defines=frozenset()) -> tuple:
    """The prelude (standard headers only) does not read the project: its -I dirs under the root are dropped, so
    its key, and the precompiled file, are shared by copies of the tree; so are the ``drop_defines``."""
    out = []
    for a in args:
        if a.startswith("-I") and len(a) > 2 and dir_key(a[2:], root).startswith("<root>/"):
            continue
        if a.startswith("-D") and define_name(a[2:]) in drop_defines:
            continue
        out.append(a)
    return tuple(out)


def shared_prelude_defines(registry) -> frozenset:
    """Defines a build configuration adds to the default one that cannot change the prelude's headers (not a
    reserved name, not NDEBUG): that configuration's units load the default configuration's prelude, Clang
    accepting a command line that defines more than the precompiled header was built with."""
    default = registry.compile.default_configuration
    base = set(default.defines)
    out = set()
    for conf in registry.compile.configurations:
        if conf.name == default.name or not base <= set(conf.defines):
            continue
        for d in set(conf.defines) - base:
            name = define_name(d)
            if name and not name.startswith("_") and name != "NDEBUG" and all(define_name(b) != name for b in base):
                out.add(name)
    return frozenset(out)


def _prelude_plan(registry, args: tuple, root: Path) -> tuple:
    """(prelude arguments, with the stubs) for a unit's argument set."""
    # the stubs are precompiled too when they are what the units would include (~20 ms a parse)
    return prelude_args(args, root, shared_prelude_defines(registry)), not clang.stubs_shadowed(args)


def _prelude_min_files(registry, cache) -> int:
    """Units an argument set needs for a prelude to pay for itself in this run: real MLX headers cost a second or
    more a parse without one (and a kept prelude serves later runs), the stubs a tenth of that."""
    if not headers.resolve_for(registry).mlx.real:
        return 3
    return 1 if cache.root is not None else 2


class EarlyPrelude:
    """A default-configuration prelude build a caller started before calling build_index (``process`` is None when
    none was needed: no cache, a compile database, too few sources, or a prelude kept from an earlier run)."""

    def __init__(self, process):
        self.process = process


def start_for_build(registry, files, *, use_cache: bool = True, cache_dir=None, compile_commands=None) -> EarlyPrelude:
    """The prelude build of a coming ``build_index`` with the same arguments, started now: the CLI calls it
    before the rest of the index (networkx among it) is imported, so that a cold run, which waits for this build
    before any parse, waits ~0.2 s less."""
    if not use_cache:
        return EarlyPrelude(None)
    cache = FileCache(Path(cache_dir) if cache_dir is not None else cachefmt.default_cache_dir())
    cpp_files = sorted((f for f in files if scope.is_cpp_file(f.path)), key=lambda f: f.path)
    return EarlyPrelude(start_early_prelude(registry, Path(registry.root).resolve(), cache, cpp_files,
                                            compile_commands or registry.compile.compile_commands))


def start_early_prelude(registry, root: Path, cache, cpp_files: list, compile_commands):
    """Build the default configuration's prelude in the background while the witness reads the tree, when it is
    not built yet and the tree has enough source files to need it. Returns the process, or None."""
    if cache.root is None or compile_commands:
        return None
    sources = [f for f in cpp_files if not scope.is_header(f.path) and not f.path.lower().endswith(clang.GPU_SUFFIXES)]
    if len(sources) < 3:
        return None
    try:
        args = tuple(clang.build_args(registry, registry.compile.default_configuration, sources[0].path))
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


def join_early(proc, timeout: float) -> None:
    proc.join(timeout)
    if proc.is_alive():
        proc.kill()
        proc.join(5)


def plan_preludes(registry, to_parse: list, cc: dict, root: Path) -> tuple:
    """(unit argument set -> (prelude arguments, with stubs), that plan -> how many units of this run use it)."""
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
    return plan_of, counts


def build_preludes(index, pool, registry, cache, counts: dict, pch_dir: Path, early, timeout: float) -> dict:
    """plan -> the precompiled prelude's path, for each plan kept from an earlier run or worth building now."""
    t0 = time.perf_counter()
    if early is not None:
        join_early(early, timeout)
    pchs: dict = {}
    pre_jobs = []
    for plan, n in counts.items():
        pre_args, with_stubs = plan
        built = clang.prelude_path(pre_args, pch_dir, with_stubs=with_stubs)
        if built.is_file():
            pchs[plan] = str(built)  # built by an earlier run: worth it for a single file too
        elif n >= _prelude_min_files(registry, cache):
            pre_jobs.append((plan, ("prelude", (pre_args, str(pch_dir), with_stubs), None)))
    if pre_jobs:
        for a, (status, out) in pool.run(pre_jobs, timeout).items():
            if status == "ok" and out:
                pchs[a] = out
    index.timings["prelude"] = time.perf_counter() - t0
    return pchs

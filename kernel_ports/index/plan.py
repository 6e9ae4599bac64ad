"""Planning the Clang parses: which translation units, under which build configurations, with which
``compile_commands.json`` flags, and which function bodies each walk may leave unread.

A file with witness candidates is parsed; a header with candidates brings in the translation units that include
it (a header nobody includes is parsed on its own). Each unit is parsed once per build configuration whose defines
the unit or a project header it includes mentions (the default configuration always). Includes are resolved here,
against the project's files, the includer's folder and the registry's include directories.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Optional

from kernel_ports import scope
from kernel_ports.frontend import focus, witness as wit
from kernel_ports.cache.units import FRONTEND_VERSION, definitions_key, sha
from kernel_ports.index.scan import witness_key
from kernel_ports.registry.model import define_name

if TYPE_CHECKING:
    import networkx as nx

# Leave unread the bodies no fact can arise in or be reached through (frontend/focus.py); tests turn it off to
# compare with a full walk.
FOCUS = True


def load_compile_commands(path: Optional[Path], root: Path) -> dict:
    """relative path -> extra flags (-I/-D/-U/-include/-std/-isystem only) from compile_commands.json."""
    if path is None:
        return {}
    from kernel_ports.scope.compile_db import load_entries

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


def resolve_include(spelled: str, is_system: bool, includer: str, known: set, search: list) -> Optional[str]:
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



def relative_dir(d, root: Path) -> Optional[str]:
    try:
        return Path(d).resolve().relative_to(root).as_posix().rstrip("/").replace(".", "") if Path(d).resolve() == root \
            else Path(d).resolve().relative_to(root).as_posix()
    except ValueError:
        return None


def include_search(registry, root: Path) -> list:
    """The folders (relative to the root, "" the root itself) a project include is looked up in."""
    search = [""] + [relative_dir(d, root) for d in registry.compile.include_dirs]
    return [s for s in search if s is not None]


def witness_include_graph(witnessed: dict, known: set, search: list) -> nx.DiGraph:
    """includer -> included project file, as the witness read the ``#include`` lines."""
    import networkx as nx  # (here, not at the top: see kernel_ports/index/__init__.py)

    wgraph = nx.DiGraph()
    for p, w in witnessed.items():
        wgraph.add_node(p)
        for spelled, is_sys in w.includes:
            tgt = resolve_include(spelled, is_sys, p, known, search)
            if tgt is not None:
                wgraph.add_edge(p, tgt)
    return wgraph


def translation_units(witnessed: dict, wgraph: nx.DiGraph) -> set:
    """The files Clang parses: those with candidates, a header's through its includers."""
    import networkx as nx

    tus: set = set()
    for p, w in witnessed.items():
        if not w.has_candidates:
            continue
        if scope.is_header(p):
            includers = [a for a in nx.ancestors(wgraph, p) if not scope.is_header(a)]
            if includers:
                tus.update(includers)
            else:
                tus.add(p)
        else:
            tus.add(p)
    return tus


def _focus_inputs(registry) -> tuple:
    # a define whose value holds no name (`MLXCEL_API=`, `X`, `N=4`) expands to nothing that can call or name
    # anything, so mentioning it does not make a declaration interesting (an engine marks every exported
    # function with such an attribute macro)
    every = list(registry.compile.defines) + [d for c in registry.compile.configurations for d in c.defines]
    defines = {define_name(d) for d in every if re.search(r"[A-Za-z_]", d.partition("=")[2])}
    return tuple(sorted(focus.seeds(registry))), tuple(sorted(focus.backend_queries(registry))), tuple(sorted(defines))


def _focus_sets(registry) -> tuple:
    """The registry's names :func:`focus.unread_bodies` takes after the files: seeds, backend queries, defines."""
    return tuple(frozenset(names) for names in _focus_inputs(registry))


def _unread_bodies(registry, witnessed: dict) -> dict:
    return focus.unread_bodies(witnessed, *_focus_sets(registry))


class TreeFocus:
    """The bodies each walk may leave unread (frontend/focus.py) for this run's tree: ``result()`` is (path ->
    (line, column) of the bodies the walks may leave unread, path -> (start, end) of those Clang may be given
    blank). It is kept while every file's witness result is what it was (:mod:`.focus_entry`); after an edit that
    changes one, ``guess()`` says what the last focus decided, carried over to the edited files where the same
    bodies stand at the same places, before the focus is decided again: parses may start from it, and count only
    if the focus then decides the same for them (a parse job is a function of its unit's unread bodies)."""

    def __init__(self, registry, cache, cpp_files: list, hashes: dict, names, names_key: str, witnessed: dict,
                 definitions: dict, parser):
        from kernel_ports.index import focus_entry

        self.registry, self.cache, self.cpp_files, self.hashes = registry, cache, cpp_files, hashes
        self.names, self.names_key, self.witnessed, self.definitions = names, names_key, witnessed, definitions
        self._parser = parser
        self.tree_hashes = {f.path: hashes[f.path] for f in cpp_files}
        self.fkey = focus_entry.key(FRONTEND_VERSION, names_key, _focus_inputs(registry), list(self.tree_hashes))
        self.kept = cache.get(self.fkey)
        self.recorded = focus_entry.files_of(self.kept, list(self.tree_hashes))
        self.changed = {f.path: self._full(f) for f in cpp_files
                        if self.recorded.get(f.path, (None,))[0] != hashes[f.path]}
        if self.recorded and self._bodies_differ():
            # a body appeared, went or moved: the witness results differ from those the entry digested, so the
            # focus is decided again; their digests, for the next entry, are taken beside the parses (result())
            self.fresh, self.settled = {}, False
        else:
            self.fresh = focus_entry.digests(self.changed) if self.recorded else {}
            self.settled = focus_entry.reusable(self.recorded, self.tree_hashes, self.fresh)

    def _bodies_differ(self) -> bool:
        """Whether an edited file's function bodies stand elsewhere than those the entry recorded for it."""
        before = self.kept.get("bodies") if type(self.kept) is dict else None
        if type(before) is not dict:
            return False
        return any(_body_places(w) != _recorded_places(before, path) for path, w in self.changed.items())

    def _full(self, f):
        """``f``'s witness result with its definitions (decoded from the cache, or read again)."""
        defs = self.definitions.get(f.path)
        if defs is None:
            defs = self.cache.get(definitions_key(witness_key(self.names_key, f.path, self.hashes[f.path])))
        if defs is None:  # not cached (no cache directory, or lost): read again
            self._parser = self._parser or wit.cpp_parser()
            defs = wit.witness(f.path, f.data, self.names, self._parser).definitions
        return dataclasses.replace(self.witnessed[f.path], definitions=defs)

    def guess(self) -> Optional[tuple]:
        """What the last focus of this tree decided, carried over to the tree as it is now; None when nothing was
        decided or it still holds (``settled``: ``result()`` is that decision). A guess: it only decides which
        parses start early."""
        if self.settled or not self.recorded:
            return None
        unread, hidden = self.kept["result"]
        before = self.kept.get("bodies")
        if type(before) is not dict:
            return None
        edited: dict = {}  # edited path -> the bodies guessed unread
        for path, w in self.changed.items():
            here = set(_body_places(w))
            was = set(_recorded_places(before, path))
            # a body where one was keeps what the focus said of it; of one where none was (a new helper, or one
            # moved by lines added above it), what the focus of this file alone says
            bodies = {tuple(b) for b in unread.get(path, ())} & here
            if here - was:
                alone = focus.unread_bodies({path: w}, *_focus_sets(self.registry))
                bodies |= (here - was) & set(alone.get(path, ()))
            if bodies:
                edited[path] = frozenset(bodies)
        now_unread = {**{p: b for p, b in unread.items() if p not in self.changed}, **edited}
        now_hidden = {**{p: h for p, h in hidden.items() if p not in self.changed},
                      **focus.hidden_spans({p: self.changed[p] for p in edited}, edited)}
        return now_unread, now_hidden

    def result(self) -> tuple:
        from kernel_ports.index import focus_entry

        if self.settled:
            return self.kept["result"]
        every = {f.path: self.changed[f.path] if f.path in self.changed else self._full(f) for f in self.cpp_files}
        unread = _unread_bodies(self.registry, every)
        got = unread, focus.hidden_spans(every, unread)
        fresh = {**focus_entry.digests({p: w for p, w in self.changed.items() if p not in self.fresh}), **self.fresh}
        bodies = {p: _body_places(w) for p, w in every.items()}
        self.cache.put(self.fkey, focus_entry.entry(self.recorded, self.tree_hashes, fresh, got, bodies))
        return got


def _body_places(w) -> list:
    """The sorted (line, column) of the function bodies in a witness result with its definitions, as the focus's
    entry records them."""
    return sorted(d.body for d in w.definitions if d.body is not None)


def _recorded_places(bodies: dict, path: str) -> list:
    """The body places the focus's entry recorded for ``path`` (read as data: anything else is left out)."""
    return [tuple(b) for b in bodies.get(path, ()) if type(b) in (list, tuple)]


def files_seen(tus: set, wgraph: nx.DiGraph) -> dict:
    """tu -> the project files it reads: itself and what it includes, directly or not."""
    import networkx as nx

    return {tu: {tu} | set(nx.descendants(wgraph, tu)) for tu in tus}


def parse_jobs_wanted(registry, seen: dict, witnessed: dict, unread: dict) -> tuple:
    """(tu -> bodies its walk may leave unread, tu -> digest of the project files it sees, [(tu, configuration)]);
    ``seen``: :func:`files_seen`."""
    default_conf = registry.compile.default_configuration
    tu_unread: dict = {}  # tu -> frozenset((path, line, column)) of bodies its walk may leave unread
    tu_sees: dict = {}  # tu -> digest of the project files its includes resolve to (a file added or gone re-parses)
    jobs_wanted = []  # (relpath, configuration)
    for tu in sorted(seen):
        seen_files = seen[tu]
        tu_sees[tu] = sha(repr(sorted(seen_files)).encode())[:16]
        mentioned = set()
        for s in seen_files:
            mentioned |= witnessed[s].conditional_macros if s in witnessed else set()
        tu_unread[tu] = frozenset((s, line, col) for s in seen_files for line, col in unread.get(s, ()))
        for conf in registry.compile.configurations:
            if conf.name == default_conf.name or any(define_name(d) in mentioned for d in conf.defines):
                jobs_wanted.append((tu, conf))
    return tu_unread, tu_sees, jobs_wanted


def units_seeing(seen: dict, paths: set) -> set:
    """The units that read one of ``paths`` (``seen``: :func:`files_seen`)."""
    return {tu for tu, files in seen.items() if not paths.isdisjoint(files)}


def unit_weights(tus: set, wgraph: nx.DiGraph, by_path: dict, witnessed: Optional[dict] = None,
                 outside=None) -> dict:
    """tu -> bytes of it and the project files it includes, and of the headers outside the prelude they include
    (``outside``: spelling -> bytes, :func:`outside_prelude_bytes`): what its parse roughly costs, to start the
    dear first."""
    import networkx as nx

    out = {}
    for tu in tus:
        seen = {tu} | set(nx.descendants(wgraph, tu))
        weight = sum(len(by_path[s].data) for s in seen if s in by_path)
        if outside is not None and witnessed:
            spelled = {sp for s in seen if s in witnessed for sp, _ in witnessed[s].includes}
            weight += sum(outside(sp) for sp in spelled)
        out[tu] = weight
    return out


def outside_prelude_bytes(mlx_dir: Optional[str]):
    """spelling -> bytes of the MLX header it names when the prelude (``mlx/mlx.h``) does not include it, else 0.

    A unit's own bytes misjudge a small launcher that includes MLX headers the prelude lacks (``primitives.h``,
    the backends' internals): the real engine's was parsed last, ~1.3 s alone at the end of a cold run while the
    other worker had nothing left. Only the headers ``mlx/mlx.h`` names itself count as in the prelude (what they
    include is in it too, but reading them all would cost every run more than a rough weight is worth)."""
    if not mlx_dir:
        return None
    base = Path(mlx_dir)
    try:
        umbrella = (base / "mlx" / "mlx.h").read_text(errors="replace")
    except OSError:
        return None
    covered = {"mlx/mlx.h"} | set(re.findall(r'#\s*include\s*[<"](mlx/[^>"]+)[>"]', umbrella))
    sizes: dict = {}

    def size(spelled: str) -> int:
        if spelled in covered or not spelled.startswith("mlx/"):
            return 0
        if spelled not in sizes:
            try:
                sizes[spelled] = (base / spelled).stat().st_size
            except OSError:
                sizes[spelled] = 0
        return sizes[spelled]

    return size


def faults() -> dict:
    """Test hook: KERNEL_PORTS_FE_FAULT="path=crash;other=hang" makes a parse fail on purpose."""
    spec = os.environ.get("KERNEL_PORTS_FE_FAULT", "")
    out = {}
    for part in spec.split(";"):
        if "=" in part:
            p, k = part.split("=", 1)
            out[p.strip()] = k.strip()
    return out

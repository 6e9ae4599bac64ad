"""What each factory call compiles: the HIP/Metal/CUDA bodies its source and header arguments name (literals at
the call, string constants visible from its file), and the project files those bodies ``#include``, transitively,
scanned as code (cached by content). What cannot be read is recorded with the call (``unresolved``)."""

from __future__ import annotations

import networkx as nx

from kernel_ports.scope import limits
from kernel_ports.facts import CompiledBodies, Location, sort_key
from kernel_ports.frontend import hip, witness as wit
from kernel_ports.cache.units import FRONTEND_VERSION, FileCache, sha
from kernel_ports.index.plan import resolve_include


def _line_of_offset(starts: list, off: int) -> int:
    import bisect

    return bisect.bisect_right(starts, off)


def _header_file_source(rel: str, f, cache: FileCache):
    """A project file pulled into a kernel body by ``#include``, read as code."""
    from kernel_ports.facts import HipSource

    key = sha(f"hf|{FRONTEND_VERSION}|{rel}|{sha(f.data)}".encode())
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


def compiled_bodies(index, by_path: dict, known: set, search: list, cache: FileCache) -> None:
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
                rel = resolve_include(spelled, False, h.loc.path, known, search)
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

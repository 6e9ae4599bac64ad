"""The port surface as the code states it, and how it lines up with the registry.

One module answers "what would the registry say if it followed the code?" for
the drift rules (KP301–KP306), `kernel-ports init` and `kernel-ports sync`, so
that what `init` writes and `sync` refreshes is exactly what the rules accept.
It reads facts from the project index only; it never parses.

Values that mirror code:

* a kernel per port table (merged over its definitions and configurations: a
  slot present in any configuration is present, SPEC §5);
* each slot's *label*: the accessor as written (template arguments included),
  or, for a slot that calls no accessor, its initializer with whitespace
  collapsed;
* dispatch sites: one per `select_kernel_port` call reading the table, with its
  entry point and fallback (string literals; an argument that is not a literal
  is recorded as written);
* the any-wave mark and, when marked, the pinned HIP source: the source
  constant(s) the `.rocm` slot's ROCm factory calls compile (header arguments
  excluded), joined with ", " when there are several;
* predicates: functions returning bool that call `has_kernel_port` on the
  table;
* launcher files: files holding a factory call or a kernel invocation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from kernel_ports.facts import Location
from kernel_ports.registry.model import BACKENDS

UNKNOWN_TABLE = "unknown"
_NAME_OK = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class Site:
    """A selector call as the registry records it."""

    entry_point: str
    fallback: str
    loc: Location
    literal: bool = True  # both arguments are string literals

    @property
    def pair(self) -> tuple:
        return (self.entry_point, self.fallback)


@dataclass
class CodeKernel:
    """One port table of the code, in registry terms."""

    name: str  # the kernel name init/sync would give it
    table: str  # as the registry writes it (unqualified unless ambiguous)
    short: str  # unqualified function name
    qualified_name: str
    file: str
    loc: Location
    slots: dict  # backend -> facts.Slot | None
    any_wave: bool
    dispatch: tuple  # Site, in code order
    predicates: tuple  # predicate function names, in code order
    configurations: frozenset = frozenset()
    hip_sources: tuple = ()  # source constants the .rocm slot's ROCm factory calls compile
    hip_source_texts: tuple = ()  # the source arguments as written, for messages

    def port(self, backend: str):
        slot = self.slots.get(backend)
        return None if slot is None else slot_label(slot)

    @property
    def ports(self) -> dict:
        return {b: self.port(b) for b in BACKENDS}

    @property
    def pinned(self):
        """The registry's `hip_source` for this table: None unless marked."""
        if not self.any_wave or not self.hip_sources:
            return None
        return ", ".join(self.hip_sources)

    @property
    def pin_resolved(self) -> bool:
        return not self.any_wave or self.slots.get("rocm") is None or bool(self.hip_sources)


@dataclass
class Surface:
    kernels: list = field(default_factory=list)  # CodeKernel, in code order
    launchers: dict = field(default_factory=dict)  # path -> Location of its first launch
    launch_kinds: dict = field(default_factory=dict)  # path -> set of "factory call" / "kernel invocation"
    unresolved_selectors: list = field(default_factory=list)  # Site of calls whose table is unknown
    unanalyzable: frozenset = frozenset()  # paths that could not be parsed (KP901)
    in_scope: frozenset = frozenset()  # every path the check read


# --------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------


def normalize_accessor(text) -> str | None:
    """An accessor spelling with insignificant whitespace removed."""
    if text is None:
        return None
    s = re.sub(r"\s+", " ", str(text).strip())
    return re.sub(r"\s*([<>,:()&*\[\]{}.+\-])\s*", r"\1", s)


def slot_label(slot) -> str:
    """How the registry names a non-null slot: its accessor as written."""
    if slot.accessor:
        return normalize_accessor(slot.accessor)
    return normalize_accessor(slot.text) or "<unresolved slot>"


def same_port(registry_value, code_value) -> bool:
    return normalize_accessor(registry_value) == normalize_accessor(code_value)


def kernel_name_for(table_short: str) -> str:
    name = table_short[: -len("_ports")] if table_short.endswith("_ports") and len(table_short) > len("_ports") else table_short
    return _NAME_OK.sub("_", name) or "kernel"


# --------------------------------------------------------------------------
# Building the surface from the index
# --------------------------------------------------------------------------


def _site(s) -> Site:
    entry = s.entry_point if s.entry_point is not None else s.entry_point_text
    fallback = s.fallback if s.fallback is not None else s.fallback_text
    return Site(entry, fallback, s.loc, literal=s.entry_point is not None and s.fallback is not None)


def _merge_slot(a, b):
    """Two definitions of one table: a slot present in either is present."""
    if a is None:
        return b
    return a


def code_surface(index, scope=None) -> Surface:
    surface = Surface()
    surface.unanalyzable = frozenset(p for p, _ in index.unanalyzable)
    if scope is not None:  # a file the scope refused (size, encoding ...) is as unknown as one that failed to parse
        surface.unanalyzable |= frozenset(getattr(scope, "refused", ()))
        surface.in_scope = frozenset(f.path for f in scope.files)
    else:
        surface.in_scope = frozenset(index.files_scanned)

    # tables, merged by qualified name (a table defined twice under #if is one kernel)
    grouped: dict = {}
    for t in sorted(index.port_tables, key=lambda t: (t.loc.path, t.loc.line, t.loc.column)):
        grouped.setdefault(t.qualified_name or t.name, []).append(t)
    shorts: dict = {}
    for defs in grouped.values():
        shorts.setdefault(defs[0].name, 0)
        shorts[defs[0].name] += 1

    sites_by_table: dict = {}
    for s in sorted(index.selector_calls, key=lambda s: (s.loc.path, s.loc.line, s.loc.column)):
        site = _site(s)
        known = [t for t in s.tables if t != UNKNOWN_TABLE]
        if not known:  # a call resolved to some tables is judged under them
            if site not in surface.unresolved_selectors:
                surface.unresolved_selectors.append(site)
        for t in known:
            bucket = sites_by_table.setdefault(t.split("::")[-1], [])
            if site not in bucket:
                bucket.append(site)

    preds_by_table: dict = {}
    for p in sorted(index.predicates, key=lambda p: (p.loc.path, p.loc.line, p.loc.column)):
        if not getattr(p, "returns_bool", True):
            continue  # consults has_kernel_port (a launcher branching on it) but is no support predicate
        for t in p.tables:
            bucket = preds_by_table.setdefault(t.split("::")[-1], [])
            if p.name not in bucket:
                bucket.append(p.name)

    for qualified, defs in grouped.items():
        first = defs[0]
        slots = {b: None for b in BACKENDS}
        for t in defs:
            for b in BACKENDS:
                slots[b] = _merge_slot(slots[b], t.slots.get(b))
        ambiguous = shorts[first.name] > 1
        table = qualified if ambiguous else first.name
        name = kernel_name_for(first.name)
        if ambiguous:
            name = _NAME_OK.sub("_", qualified.replace("::", ".")).strip("._") or name
        rocm = slots.get("rocm")
        hip, texts = [], []
        if rocm is not None:
            calls = [fc for fc in rocm.factory_calls if fc.backend == "rocm"] or list(rocm.factory_calls)
            for fc in calls:
                for c in fc.source_constants:
                    if c not in hip:
                        hip.append(c)
                if fc.source_text and fc.source_text not in texts:
                    texts.append(fc.source_text)
        configurations = frozenset().union(*(t.configurations for t in defs))
        surface.kernels.append(CodeKernel(
            name=name, table=table, short=first.name, qualified_name=qualified, file=first.file or first.loc.path,
            loc=first.loc, slots=slots, any_wave=any(t.rocm_any_wave_size for t in defs),
            dispatch=tuple(sites_by_table.get(first.name, ())), predicates=tuple(preds_by_table.get(first.name, ())),
            configurations=configurations, hip_sources=tuple(hip), hip_source_texts=tuple(texts)))

    # launcher files: a factory call or a kernel invocation
    for kind, facts in (("factory call", index.factory_calls), ("kernel invocation", index.invocations)):
        for f in facts:
            path = f.loc.path
            cur = surface.launchers.get(path)
            if cur is None or (f.loc.line, f.loc.column) < (cur.line, cur.column):
                surface.launchers[path] = f.loc
            surface.launch_kinds.setdefault(path, set()).add(kind)
    return surface


# --------------------------------------------------------------------------
# Registry <-> code
# --------------------------------------------------------------------------


def _table_matches(registry_table: str, ck: CodeKernel) -> bool:
    if "::" in registry_table:
        wanted = registry_table[2:] if registry_table.startswith("::") else registry_table
        return ck.qualified_name == wanted or ck.qualified_name.endswith("::" + wanted)
    return ck.short == registry_table


def match_kernels(registry, surface: Surface):
    """({registry kernel index: CodeKernel}, [CodeKernel no registry kernel declares])."""
    matched: dict = {}
    taken: set = set()
    for i, kernel in enumerate(registry.kernels):
        candidates = [ck for ck in surface.kernels if id(ck) not in taken and _table_matches(kernel.table, ck)]
        if not candidates:
            continue
        best = next((ck for ck in candidates if ck.file == kernel.file), candidates[0])
        matched[i] = best
        taken.add(id(best))
    unmatched = [ck for ck in surface.kernels if id(ck) not in taken]
    return matched, unmatched


@dataclass
class DispatchDiff:
    """How a kernel's registry dispatch entries line up with the code's call sites.

    Entries are registry `DispatchSite`s (or any object with entry_point,
    fallback) paired with code `Site`s.
    """

    same: list = field(default_factory=list)  # (registry entry, Site)
    covered: list = field(default_factory=list)  # registry entries matched by a call whose table is unknown
    changed: list = field(default_factory=list)  # (registry entry, Site, what differs)
    extra: list = field(default_factory=list)  # Site with no registry entry
    missing: list = field(default_factory=list)  # registry entries with no call site

    @property
    def clean(self) -> bool:
        return not (self.changed or self.extra or self.missing)


def diff_dispatch(entries, sites, unresolved=()) -> DispatchDiff:
    """Pair registry entries with code sites: equal strings first, then one string equal, then in order."""
    out = DispatchDiff()
    left = list(entries)
    code = list(sites)
    for e in list(left):
        hit = next((s for s in code if (e.entry_point, e.fallback) == s.pair), None)
        if hit is not None:
            out.same.append((e, hit))
            left.remove(e)
            code.remove(hit)
    for key, what in ((lambda x: x[0], "fallback"), (lambda x: x[1], "entry point")):
        for e in list(left):
            hit = next((s for s in code if key((e.entry_point, e.fallback)) == key(s.pair)), None)
            if hit is not None:
                out.changed.append((e, hit, what))
                left.remove(e)
                code.remove(hit)
    # a registry entry that a call of unknown table could be is not claimed missing
    unresolved_pairs = [u.pair for u in unresolved]
    for e in list(left):
        if (e.entry_point, e.fallback) in unresolved_pairs:
            out.covered.append(e)
            left.remove(e)
    # what is left pairs up in order only when exactly one of each remains
    if len(left) == 1 and len(code) == 1:
        out.changed.append((left[0], code[0], "entry point and fallback"))
        left, code = [], []
    out.extra = code
    out.missing = left
    return out


def launcher_drift(registry, surface: Surface):
    """(files launching but not listed: [(path, Location)], listed but not launching: [(i, path)])."""
    listed = list(registry.launchers)
    new = [(p, loc) for p, loc in sorted(surface.launchers.items()) if p not in listed]
    gone = [(i, p) for i, p in enumerate(listed) if p not in surface.launchers and p not in surface.unanalyzable]
    return new, gone


# --------------------------------------------------------------------------
# Registry entries (plain data) for init and sync
# --------------------------------------------------------------------------


def kernel_entry(ck: CodeKernel) -> dict:
    """A registry kernel entry for a code kernel, keys in the canonical order."""
    return {
        "name": ck.name,
        "table": ck.table,
        "file": ck.file,
        "dispatch": [{"entry_point": s.entry_point, "fallback": s.fallback} for s in ck.dispatch],
        "ports": ck.ports,
        "rocm_any_wave_size": ck.any_wave,
        "hip_source": ck.pinned,
        "predicates": list(ck.predicates),
    }


def unique_names(kernels) -> None:
    """Make proposed kernel names unique in place (a name used twice gets its file stem)."""
    seen: dict = {}
    for ck in kernels:
        seen.setdefault(ck.name, []).append(ck)
    for name, group in seen.items():
        if len(group) < 2:
            continue
        for ck in group:
            ck.name = _NAME_OK.sub("_", f"{name}.{PurePosixPath(ck.file).stem}")
    used: set = set()
    for ck in kernels:
        take_free_name(ck, used)


def take_free_name(ck, taken: set) -> None:
    """Give ``ck`` its name, or the first ``<name>_<n>`` (n = 2, 3, ...) not in ``taken``; add it there."""
    base, n = ck.name, 2
    while ck.name in taken:
        ck.name = f"{base}_{n}"
        n += 1
    taken.add(ck.name)

"""Merging the per-translation-unit results into the :class:`ProjectIndex`.

A fact seen in several translation units or configurations is kept once with the union of its configurations.
This module owns the order of the merge: the include and call graphs, the plain facts, the facts that need the
joins (:mod:`kernel_ports.index.join`: selector calls to tables, invocations to selector calls and tables,
predicates to tables, slots to the factory calls they reach, holders and accessors), each unit's parse quality,
and the witness candidates Clang did not confirm (``Unconfirmed``, KP902).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Optional

from kernel_ports import parse_summary
from kernel_ports.facts import (
    Accessor,
    ChainStep,
    Holder,
    HolderAccess,
    Invocation,
    Location,
    ParseQuality,
    PortTable,
    Predicate,
    Slot,
    Unconfirmed,
    sort_key,
    to_jsonable,
)
from kernel_ports.index.join import Joiner

UNKNOWN = ("unknown",)
CONFIRMABLE = ("factory_call", "selector_call", "has_port_call", "invocation", "port_table")


def merge_configs(facts: list) -> list:
    """One fact per distinct content, its configurations the union."""
    out: dict = {}
    for f in facts:
        # the fact's class and its fields but the configurations: what the fact with no configurations compares
        # and hashes by (none of the facts merged here leaves a field out of its hash), without making that fact
        k = (type(f), *map(f.__getattribute__, _content_fields(type(f))))
        try:
            hash(k)  # frozen facts compare by value; a few hold unhashable parts
        except TypeError:
            k = (type(f).__name__, repr(to_jsonable(dataclasses.replace(f, configurations=frozenset()))))
        if k in out:
            out[k] = dataclasses.replace(out[k], configurations=out[k].configurations | f.configurations)
        else:
            out[k] = f
    return sorted(out.values(), key=sort_key)


@functools.lru_cache(maxsize=None)
def _content_fields(cls) -> tuple:
    return tuple(f.name for f in dataclasses.fields(cls) if f.compare and f.name != "configurations")


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


def merge_results(index, registry, results: list, witnessed: dict, conv, table=None) -> None:
    """Every fact of ``results`` (one per unit and configuration), merged and joined, into ``index``; ``table``
    (:class:`~.join.FunctionTable`) may hold the function records of the first of them already."""
    j = Joiner(index, registry, results, conv, table)
    index.functions = j.functions
    _graphs(index, results, witnessed, j)
    _plain_facts(index, results)
    sel_tables = _selector_calls(index, results, j)
    _invocations(index, results, j, sel_tables)
    _predicates(index, results, j)
    accessor_uses = _port_tables(index, results, j, conv)
    methods_used, methods = _holder_accesses(index, results, j, accessor_uses)
    _accessors_and_holders(index, j, accessor_uses, methods_used, methods)
    _parse_quality(index, results)
    _unconfirmed(index, results, witnessed)
    index.hip_sources = sorted(index.hip_sources, key=sort_key)
    index.rust_gates = sorted(index.rust_gates, key=sort_key)
    index.unanalyzable = sorted(set(index.unanalyzable))


def _graphs(index, results: list, witnessed: dict, j) -> None:
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


def _plain_facts(index, results: list) -> None:
    # plain facts
    index.factory_calls = merge_configs([f for r in results for f in r.factory_calls])
    index.backend_tests = merge_configs([f for r in results for f in r.backend_tests])
    index.refusals = merge_configs([f for r in results for f in r.refusals])
    cpp_seams = merge_configs([f for r in results for f in r.seam_calls])
    index.seam_calls = sorted(index.seam_calls + cpp_seams, key=sort_key)


def _selector_calls(index, results: list, j) -> dict:
    """The selector calls with the tables they choose from; returns selector id -> those tables."""
    # selector calls
    sels = []
    for r in results:
        for rs in r.selectors:
            found, unknown, _ = j.resolve(rs.table_refs, rs.fact.enclosing_usr, want=("table",))
            tables = tuple(sorted(n for k, n in found if k == "table"))
            if unknown or not tables:
                tables = tables + UNKNOWN if unknown or not tables else tables
            sels.append(dataclasses.replace(rs.fact, tables=tables))
    index.selector_calls = merge_configs(sels)
    sel_tables: dict = {}
    for s in index.selector_calls:
        sel_tables.setdefault(str(s.loc), set()).update(s.tables)
    return sel_tables


def _invocations(index, results: list, j, sel_tables: dict) -> None:
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
                template_args_resolved=ri.template_args_resolved, inputs_text=ri.inputs_text, inputs=ri.inputs, output_dtypes_text=ri.output_dtypes_text,
                enclosing_function=ri.enclosing_function, enclosing_usr=ri.enclosing_usr, in_macro=ri.in_macro,
                kernel_from_parameter=from_param, dtype_checks=ri.dtype_checks, unresolved=ri.unresolved))
    index.invocations = merge_configs(invs)


def _predicates(index, results: list, j) -> None:
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
    index.predicates = merge_configs(preds)


def _port_tables(index, results: list, j, conv) -> dict:
    """The port tables, each slot joined to the factory calls it reaches; returns the accessors the slots use
    (spelling -> (usr, template args, holder type))."""
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
            fcs, steps = j.reach(rs.edges, env)
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
    return accessor_uses


class _HolderMethods:
    """A holder of its own type may build the kernel in the method called on it (`get_top_k_kernel().get()` where
    TopKKernel::get calls the factory): the factory calls such a method reaches, per accessor and method."""

    def __init__(self, j):
        self.j = j
        self.method_builds: dict = {}
        self._methods_named: Optional[dict] = None  # method name -> [(usr, info)] of the methods, in function order

    def _named(self, method: str) -> list:
        if self._methods_named is None:
            self._methods_named = {}
            for usr, f in self.j.functions.items():
                if f.is_method_of:
                    self._methods_named.setdefault(f.name, []).append((usr, f))
        return self._methods_named.get(method, [])

    def factories(self, accessor_usr, method) -> list:
        """Factory calls reached by `method` of the holder type the accessor returns."""
        j, method_builds = self.j, self.method_builds
        key = (accessor_usr, method)
        if key not in method_builds:
            info = j.functions.get(accessor_usr)
            found = []
            if info is not None and method and info.returns_ref:
                cls = re.sub(r"<.*", "", info.returns_ref).split("::")[-1]
                for usr, f in self._named(method):
                    if re.sub(r"<.*", "", f.is_method_of).split("::")[-1] == cls:
                        found += j.reach_from(usr, {})[0]
            method_builds[key] = found
        return method_builds[key]

    def builds(self, accessor_usr, method):
        return bool(self.factories(accessor_usr, method))


def _holder_accesses(index, results: list, j, accessor_uses: dict) -> tuple:
    """The holder accesses of accessors that reach a factory, and factory calls made directly from launchers;
    returns (accessor usr -> methods called on its holder outside slots, the holder methods' factory calls)."""
    # only accessors that reach a factory
    raw_acc = [(r.configuration, a) for r in results for a in r.holder_accesses]
    accessor_usrs: dict = {}
    for _, a in raw_acc:
        if a.accessor_usr not in accessor_usrs:
            fcs, _ = j.reach_from(a.accessor_usr, {})
            accessor_usrs[a.accessor_usr] = bool(fcs)
    is_accessor = {u for u, ok in accessor_usrs.items() if ok}
    methods = _HolderMethods(j)

    methods_used: dict = {}  # accessor usr -> methods called on its holder outside slots
    for _, a in raw_acc:
        if a.method:
            methods_used.setdefault(a.accessor_usr, set()).add(a.method)

    has = []
    for cfg, a in raw_acc:
        if a.accessor_usr not in is_accessor and not methods.builds(a.accessor_usr, a.method):
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
    index.holder_accesses = merge_configs(has)
    return methods_used, methods


def _accessors_and_holders(index, j, accessor_uses: dict, methods_used: dict, methods) -> None:
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
        extra = [fc for m in sorted(methods_used.get(usr, ())) for fc in methods.factories(usr, m)]
        fcs = list({fc.loc: fc for fc in list(fcs) + extra}.values())
        accs.append(Accessor(loc=info.loc, configurations=frozenset(j.fn_configs.get(usr, ())), name=spelling,
                             function=info.qualified_name, usr=usr, holder_type=htype or info.returns_ref,
                             factory_calls=tuple(sorted(fcs, key=sort_key))))
        for name, ty, hloc in info.returned_statics:
            holders.append(Holder(loc=hloc, configurations=frozenset(j.fn_configs.get(usr, ())), name=name, type=ty,
                                  accessor_usr=usr, accessor=info.qualified_name,
                                  factory_calls=tuple(sorted(fcs, key=sort_key))))
    index.accessors = accs
    index.holders = merge_configs(holders)


def _parse_quality(index, results: list) -> None:
    # parse quality
    for r in results:
        index.parse_quality.append(ParseQuality(path=r.path, configuration=r.configuration, parsed=r.ok,
                                                diagnostics=r.diagnostics, errors=r.errors, seconds=round(r.seconds, 4),
                                                cached=getattr(r, "cached", False),
                                                first_errors=tuple(getattr(r, "first_errors", ()))))


def _unconfirmed(index, results: list, witnessed: dict) -> None:
    """Witness candidates Clang did not confirm, and constructs Clang saw but could not type (KP902)."""
    # unconfirmed candidates (KP902)
    seen = set()
    skipped: dict = {}
    walked_in: dict = {}
    shim_missing = set()
    for r in results:
        if not r.ok:
            continue
        seen |= r.seen
        shim_missing.update(r.shim_missing)
        for f in r.files_walked:
            walked_in.setdefault(f, set()).add(r.configuration)
        for p, rngs in r.skipped.items():
            skipped.setdefault((p, r.configuration), []).extend(rngs)
    unconf = []
    unanalyzable = {p for p, _ in index.unanalyzable}
    shim_missing_at = {(p, line, name.rsplit("::", 1)[-1]) for p, line, name in shim_missing}
    for p, w in witnessed.items():
        if p not in walked_in or p in unanalyzable:
            continue
        for c in w.candidates:
            if c.kind not in CONFIRMABLE:
                continue
            if (p, c.line, c.kind) in seen or (c.kind == "invocation" and (p, c.line, "call9") in seen):
                continue
            if c.kind == "invocation" and (p, c.line, c.name.rsplit("::", 1)[-1].strip()) in shim_missing_at:
                continue  # a call of a ROCm-fork function the shim does not declare (listed in the parse notes)
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
    for u in parse_summary.with_nearest_errors(merge_configs(unconf), results):
        by_place.setdefault((u.loc.path, u.loc.line, u.kind), u)
    index.unconfirmed = sorted(by_place.values(), key=sort_key)
    index.missing_from_shim = tuple(sorted({name for _, _, name in shim_missing}))


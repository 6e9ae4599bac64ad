"""Dispatch rules KP101–KP107: backends are chosen only by port tables.

Every rule reads facts from the project index; none parses. The C++ rules
KP101–KP103 judge the files in scope (``cpp_rule_files``): every translation
unit that launches a custom kernel or defines a port table, holder or
predicate, the project headers it includes, and the registry's launchers;
``conventions.rule_scope: everywhere`` widens that to every file. The
registry's helper files are exempt from KP101 and KP102.
"""

from __future__ import annotations

import dataclasses

import networkx as nx

from kernel_ports.checkers.base import Context, Rule
from kernel_ports.checkers.decides import what_it_decides
from kernel_ports.checkers.lane_ops import find_lane_ops, lane_op_patterns
from kernel_ports.findings import Finding
from kernel_ports.scope import matches

# --------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------


def _short(name: str) -> str:
    return (name or "").split("::")[-1]


def _norm(name: str) -> str:
    return name[2:] if name.startswith("::") else name


def _configuration(ctx: Context, fact, path: str | None = None) -> str | None:
    """The configurations a fact is limited to, when its file was parsed in more of them."""
    have = set(getattr(fact, "configurations", ()) or ())
    if not have:
        return None
    path = path or fact.loc.path
    units = ctx.index.translation_units_of(path) | {path}
    parsed = {c for p, c in ctx.index.clang_files if p in units}
    if have >= parsed:
        return None
    return ",".join(sorted(have))


def by_place(facts) -> list:
    """One fact per source place: variants that differ between configurations
    (a switch with a case under #ifdef) are one finding, their configurations merged."""
    out: dict = {}
    for f in facts:
        key = (type(f).__name__, f.loc)
        if key in out:
            have = out[key]
            out[key] = dataclasses.replace(have, configurations=have.configurations | f.configurations)
        else:
            out[key] = f
    return list(out.values())


def is_helper_file(ctx: Context, path: str) -> bool:
    return matches(path, ctx.registry.conventions.helper_files)


def cpp_rule_files(ctx: Context) -> set | None:
    """The C++ files the dispatch rules judge; None when the registry says everywhere."""
    return ctx.derived("cpp_rule_files", lambda: _cpp_rule_files(ctx))


def _cpp_rule_files(ctx: Context) -> set | None:
    if ctx.registry.conventions.rule_scope == "everywhere":
        return None
    idx = ctx.index
    anchors = set(ctx.registry.launchers)
    for facts in (idx.invocations, idx.factory_calls, idx.port_tables, idx.holders, idx.predicates):
        anchors.update(f.loc.path for f in facts)
    units = set()
    for path in anchors:
        units |= idx.translation_units_of(path) or {path}
    out = set(anchors) | units
    for unit in units:
        if unit in idx.include_graph:
            out |= nx.descendants(idx.include_graph, unit)
    return out


def in_cpp_scope(ctx: Context, path: str) -> bool:
    files = cpp_rule_files(ctx)
    return files is None or path in files


def _tables_selected_in(ctx: Context, enclosing_usr: str) -> list:
    names = []
    for s in ctx.index.selector_calls:
        if s.enclosing_usr == enclosing_usr:
            names.extend(t for t in s.tables if t != "unknown")
    return sorted(set(names))


def _table_hint(ctx: Context, enclosing_usr: str) -> str:
    tables = _tables_selected_in(ctx, enclosing_usr)
    return f"{tables[0]}()" if len(tables) == 1 else "<the kernel's port table>()"


def _selector_name(ctx: Context) -> str:
    return _short(ctx.registry.conventions.selector)


def _has_port_name(ctx: Context) -> str:
    return _short(ctx.registry.conventions.has_port)


def _kernel_of_table(ctx: Context, table: str):
    return ctx.registry.kernel_for_table(table)


# --------------------------------------------------------------------------
# KP101 backend-comparison
# --------------------------------------------------------------------------

_VIA = {
    "direct": "",
    "local": " through a local that holds it",
    "member": " through a member that holds it",
    "parameter": " through a parameter that holds it",
    "function": " through a function that returns it",
    "template_parameter": " through a template parameter",
}

_OPERATOR = {
    "==": "compares",
    "!=": "compares",
    "switch": "switches on",
    "ternary": "picks a ternary arm by",
    "!": "negates",
    "&&": "combines",
    "||": "combines",
    "condition": "branches on",
    "bool-local": "stores in a bool",
    "return": "returns",
    "argument": "passes on",
}


class BackendComparison(Rule):
    codes = ("KP101",)

    def check(self, ctx: Context):
        selector = _selector_name(ctx)
        at_place: dict = {}
        for bt in ctx.index.backend_tests:
            at_place.setdefault(bt.loc, []).append(bt)
        for bt in by_place(ctx.index.backend_tests):
            path = bt.loc.path
            if is_helper_file(ctx, path) or not in_cpp_scope(ctx, path):
                continue
            if bt.origin == "compile_time":
                continue  # a backend fixed by a table slot (holder templated on it, factory given a constant)
            decided = what_it_decides(ctx, at_place[bt.loc]) if bt.origin == "runtime" else None
            if bt.origin == "runtime" and decided is None:
                continue  # its outcome decides no port, holder, factory or launch (numerics, library operations)
            verb = _OPERATOR.get(bt.operator, "tests")
            macro = f" (inside macro {bt.macro})" if bt.in_macro and bt.macro else (" (inside a macro expansion)" if bt.in_macro else "")
            fn = bt.enclosing_function or "namespace scope"
            fix = (f"dispatch through {selector}(entry_point, fallback, {_table_hint(ctx, bt.enclosing_usr)}) and let the "
                   "table's null slots say which backends have a port; a yes/no question goes to the kernel's own predicate")
            if bt.origin == "runtime":
                what = "the runtime backend kind" if bt.operator in ("==", "!=", "switch") else "backend availability"
                query = f"{bt.query}()" if bt.query else "a backend query"
                message = (f"`{_one_line(bt.text)}` {verb} {what} ({query}{_VIA.get(bt.via, '')}) in {fn}{macro} to choose code "
                           f"outside the helper files (its outcome decides {decided}); {fix}")
            else:
                message = (f"`{_one_line(bt.text)}` {verb} a backend value in {fn}{macro} whose origin could not be followed "
                           f"(a {bt.via.replace('_', ' ')} with no caller seen in this translation unit); if it is the runtime "
                           f"backend, {fix}; a compile-time choice belongs in a holder templated on the backend")
            yield Finding("KP101", path, bt.loc.line, bt.loc.column, message, configuration=_configuration(ctx, bt))


def _one_line(text: str, limit: int = 80) -> str:
    one = " ".join((text or "").split())
    return one if len(one) <= limit else one[: limit - 3] + "..."


# --------------------------------------------------------------------------
# KP102 hand-rolled-refusal
# --------------------------------------------------------------------------


class HandRolledRefusal(Rule):
    codes = ("KP102",)

    def check(self, ctx: Context):
        selector = _norm(ctx.registry.conventions.selector)
        name = _selector_name(ctx)
        for r in by_place(ctx.index.refusals):
            path = r.loc.path
            if is_helper_file(ctx, path) or not in_cpp_scope(ctx, path):
                continue
            if _norm(r.enclosing_function) == selector:
                continue
            tested = ", ".join(f"{t}()" for t in r.tested)
            message = (f"`if ({_one_line(r.test_text)}) throw` in {r.enclosing_function or 'namespace scope'} refuses by hand "
                       f"after testing {tested}; hand-written refusals drift from the tables (they named predicates that did "
                       f"not exist and entry points wrong for one caller): call {name}(\"<entry point>\", \"<fallback>\", "
                       f"{_table_hint(ctx, r.enclosing_usr)}), which throws naming both, and let callers ask the kernel's "
                       "own predicate first")
            yield Finding("KP102", path, r.loc.line, r.loc.column, message, configuration=_configuration(ctx, r))


# --------------------------------------------------------------------------
# KP103 direct-holder-access
# --------------------------------------------------------------------------


class DirectHolderAccess(Rule):
    codes = ("KP103",)

    def check(self, ctx: Context):
        idx = ctx.index
        selector = _selector_name(ctx)
        in_chain = set()  # functions that are part of some table slot's own resolution
        by_accessor: dict = {}
        for t in idx.port_tables:
            for slot in t.slots.values():
                if slot is None:
                    continue
                in_chain.update(step.usr for step in slot.chain if step.usr)
                for key in (slot.accessor, slot.accessor_usr):
                    if key:
                        by_accessor.setdefault(key, set()).add(t.name)
        for a in by_place(idx.holder_accesses):
            path = a.loc.path
            if a.in_table_slot or a.enclosing_is_accessor or a.enclosing_usr in in_chain:
                continue
            if not in_cpp_scope(ctx, path):
                continue
            fn = a.enclosing_function or "namespace scope"
            if a.kind == "factory_call":
                message = (f"{a.accessor}() is called directly in {fn}, which launches kernels: a kernel built there has one "
                           f"backend fixed by hand; build it in a holder behind a port-table slot and launch through "
                           f"{selector}(\"<entry point>\", \"<fallback>\", {_table_hint(ctx, a.enclosing_usr)})")
            else:
                tables = sorted(by_accessor.get(a.accessor, set()) | by_accessor.get(a.accessor_usr, set()))
                table = f"{tables[0]}()" if len(tables) == 1 else "<its port table>()"
                if a.kind == "accessor_get":
                    how = f"`{a.accessor}().{a.method or 'get'}()`"
                elif a.kind == "bound_ref_get" and a.method:
                    how = f"a reference or pointer bound to `{a.accessor}()` then `.{a.method}()`"
                else:
                    how = f"`{a.accessor}()`, which returns the kernel itself,"
                message = (f"{how} in {fn} reaches the kernel holder without its port table, so the backend is whatever "
                           f"the holder was written for; dispatch through {selector}(\"<entry point>\", \"<fallback>\", {table})")
            yield Finding("KP103", path, a.loc.line, a.loc.column, message, configuration=_configuration(ctx, a))


# --------------------------------------------------------------------------
# KP104 backend-enumerating-gate (Rust)
# --------------------------------------------------------------------------


class BackendEnumeratingGate(Rule):
    codes = ("KP104",)

    def check(self, ctx: Context):
        gates = {_short(g) for g in ctx.registry.conventions.rust_backend_gates}
        flagged = []
        for g in ctx.index.rust_gates:
            if is_helper_file(ctx, g.loc.path):
                continue
            asked = [p for p, n in zip(g.calls, g.call_names) if n in gates]
            if not asked:
                continue
            if g.kind == "fn_body" and g.function in gates:
                continue  # the gate's own definition (a wrapper over the FFI)
            flagged.append((g, asked))
        inner = {(g.loc.path, g.function) for g, _ in flagged if g.kind != "fn_body"}
        for g, asked in flagged:
            if g.kind == "fn_body" and (g.loc.path, g.function) in inner:
                continue  # reported at the condition inside the function
            shape = {"if": "an if/else-if chain" if g.expr.op == "if" else "an if condition", "match": "match arms",
                     "while": "a while condition", "let": "a boolean let", "fn_body": f"the body of bool fn {g.function}",
                     "expr": "a boolean expression"}.get(g.kind, "a gate")
            names = ", ".join(f"{p}()" for p in dict.fromkeys(asked))
            message = (f"{shape} enumerates backends ({names}) instead of asking the kernel's own predicate: on a backend "
                       "with no port for the kernel (ROCm, when such gates were written) it still says yes; ask that "
                       "kernel's predicate through the FFI (e.g. `ffi::rope_available()`), or `gpu_backend_available()` "
                       "when the question is whether any GPU backend runs custom kernels")
            yield Finding("KP104", g.loc.path, g.loc.line, g.loc.column, message)


# --------------------------------------------------------------------------
# KP105 any-wave-lane-op
# --------------------------------------------------------------------------


class AnyWaveLaneOp(Rule):
    codes = ("KP105",)

    def check(self, ctx: Context):
        patterns = lane_op_patterns(ctx.registry)
        idx = ctx.index
        for t in idx.port_tables:
            if not t.rocm_any_wave_size:
                continue
            slot = t.slots.get("rocm")
            if slot is None:
                continue
            kernel = _kernel_of_table(ctx, t.name)
            kname = kernel.name if kernel else None
            config = _configuration(ctx, slot, (slot.loc or t.loc).path)
            mark = f"{t.name}() marks its ROCm port rocm_any_wave_size"
            fix = ("drop the mark (the selector then refuses the port on devices whose width it was not validated at) "
                   "or rewrite the body without lane-level operations")
            where = slot.loc or t.loc
            hip_calls = [fc for fc in slot.factory_calls if fc.backend == "rocm"]
            if not hip_calls:
                yield Finding("KP105", where.path, where.line, where.column,
                              f"{mark}, but its .rocm slot could not be followed to a hip_kernel call "
                              f"(accessor {slot.accessor or '?'}); the body cannot be checked for lane-level operations, so "
                              f"the check fails closed: {fix}, or make the slot's chain visible to the analyzer",
                              kernel=kname, configuration=config)
                continue
            seen = set()
            for fc in hip_calls:
                compiled = idx.compiled_bodies.get(str(fc.loc))
                if compiled is None:
                    yield Finding("KP105", fc.loc.path, fc.loc.line, fc.loc.column,
                                  f"{mark}, but what this hip_kernel call compiles is unknown; the check fails closed: {fix}",
                                  kernel=kname, configuration=config)
                    continue
                for problem in compiled.unresolved:
                    yield Finding("KP105", fc.loc.path, fc.loc.line, fc.loc.column,
                                  f"{mark}, but {problem}, so its lane-level operations cannot be checked and the check "
                                  "fails closed: pass the body as a named string constant or a literal (and include only "
                                  f"project files), or drop the mark", kernel=kname, configuration=config)
                for body in compiled.bodies:
                    for use in find_lane_ops(body.tokens, body.token_lines, patterns):
                        line = use.line or body.loc.line
                        key = (body.loc.path, line, use.text)
                        if key in seen:
                            continue
                        seen.add(key)
                        if body.name == body.loc.path:
                            named = f"header file {body.name}"
                        elif body.name.startswith(f"{fc.loc}#"):
                            named = f"the {body.name.rsplit('#', 1)[1]} literal written at the call"
                        else:
                            named = body.name
                        yield Finding("KP105", body.loc.path, line, 1,
                                      f"lane-level operation `{use.text}` (pattern `{use.pattern}`) in {named}, which "
                                      f"{t.name}().rocm compiles through {slot.accessor or 'its accessor'} -> hip_kernel at "
                                      f"{fc.loc.path}:{fc.loc.line}; {mark}, and lane operations assume a wavefront width: "
                                      f"{fix}", kernel=kname, configuration=config)


# --------------------------------------------------------------------------
# KP106 test-seam-outside-tests
# --------------------------------------------------------------------------


class TestSeamOutsideTests(Rule):
    __test__ = False  # a rule, not a pytest class
    codes = ("KP106",)

    def check(self, ctx: Context):
        seams = {_short(s.name): s for s in ctx.registry.conventions.test_seams}
        for call in by_place(ctx.index.seam_calls):
            seam = seams.get(_short(call.name))
            if seam is None:
                continue
            if call.is_declaration or call.is_definition or call.is_forwarding or call.in_test:
                continue
            path = call.loc.path
            if matches(path, seam.allowed) or matches(path, seam.tests):
                continue
            where = f"fn {call.enclosing_function}" if call.language == "rust" and call.enclosing_function else (
                call.enclosing_function or "namespace scope")
            tests = ", ".join(seam.tests) or "(none)"
            message = (f"production call of test seam {call.name}() in {where}: the seam replaces what the port tables are "
                       f"checked against, so a production caller changes which ports run; call it only from tests (files "
                       f"matching {tests}, #[cfg(test)] modules, #[test] fns), or list a file that must forward it under "
                       f"the seam's `allowed`")
            yield Finding("KP106", path, call.loc.line, call.loc.column, message, configuration=_configuration(ctx, call))


# --------------------------------------------------------------------------
# KP107 predicate-not-from-table
# --------------------------------------------------------------------------


class PredicateNotFromTable(Rule):
    codes = ("KP107",)

    def check(self, ctx: Context):
        reg = ctx.registry
        idx = ctx.index
        has_port = _has_port_name(ctx)
        owners: dict = {}  # predicate name -> [kernel]
        for k in reg.kernels:
            for p in k.predicates:
                owners.setdefault(p, []).append(k)
        for pname, kernels in owners.items():
            facts = [p for p in idx.predicates if p.name == _short(pname) and (
                "::" not in pname or _norm(p.qualified_name) == _norm(pname))]
            wanted = sorted({_short(k.table) for k in kernels})
            wanted_text = " and ".join(f"{has_port}({t}())" for t in wanted)
            wanted_code = " && ".join(f"{has_port}({t}())" for t in wanted)
            if not facts:
                for k in kernels:
                    where = k.where
                    yield Finding("KP107", where.path, where.line, where.column,
                                  f"registry kernel {k.name} names support predicate {pname}, but no such function is "
                                  f"defined in the code; define `bool {_short(pname)}()` answering {wanted_text} (after a "
                                  f"default-device check if it needs one), or fix the registry's predicates",
                                  kernel=k.name)
                continue
            kernel = kernels[0].name if len(kernels) == 1 else None
            # a wrapper may forward to a registry predicate of the same kernel (a bridge function of the
            # same name in another namespace): that predicate answers from the table and is judged itself
            same_kernel = {_short(q) for k in kernels for q in k.predicates}
            for p in facts:
                problems = []
                if p.has_port_calls == 0 and p.forwards_to:
                    targets = [t for t in idx.predicates if _norm(t.qualified_name) == _norm(p.forwards_to) and t.usr != p.usr]
                    if not targets:
                        problems.append(f"it only forwards to {p.forwards_to}(), which is not defined in the code, so "
                                        f"whether that answers from {has_port} cannot be checked")
                    elif not any(t.name in same_kernel for t in targets):
                        problems.append(f"it only forwards to {p.forwards_to}(), which is not a registry predicate of "
                                        f"{' or '.join(sorted(k.name for k in kernels))}")
                elif p.has_port_calls == 0:
                    problems.append(f"it never calls {has_port}")
                else:
                    read = {_short(t) for t in p.tables}
                    not_tables = sorted(t for t in read if idx.table(t) is None)
                    read -= set(not_tables)
                    missing = [t for t in wanted if t not in read]
                    extra = sorted(read - set(wanted))
                    if missing:
                        problems.append(f"it does not read {', '.join(t + '()' for t in missing)}")
                    if extra:
                        problems.append(f"it also reads {', '.join(t + '()' for t in extra)}, a table of another kernel")
                    if p.unresolved_tables or not_tables:
                        what = f" ({', '.join(t + '()' for t in not_tables)})" if not_tables else ""
                        problems.append(f"a {has_port} argument{what} could not be followed to a port table, so the "
                                        "check fails closed")
                queries = sorted(set(p.backend_queries) | _queries_reached(ctx, p.usr))
                if queries:
                    problems.append("it also consults " + ", ".join(f"{q}()" for q in queries)
                                    + " (only the default-device pre-check may sit beside the table)")
                if not problems:
                    continue
                message = (f"support predicate {p.name} must answer only from {wanted_text}, but "
                           + "; ".join(problems)
                           + f": two predicates for one question were the root of several defects; write it as "
                           f"`return {wanted_code};` after a default-device check if it needs one")
                yield Finding("KP107", p.loc.path, p.loc.line, p.loc.column, message, kernel=kernel,
                              configuration=_configuration(ctx, p))


def _queries_reached(ctx: Context, usr: str, limit: int = 8) -> set:
    """Backend queries a function reaches through the functions it calls (not through helper files)."""
    idx = ctx.index
    graph = idx.call_graph
    if usr not in graph:
        return set()
    stop = {_norm(ctx.registry.conventions.has_port), _norm(ctx.registry.conventions.selector)}
    queries = set(_norm(q) for q in ctx.registry.conventions.backend_queries)
    found = set()
    seen = {usr}
    frontier = [usr]
    for _ in range(limit):
        nxt = []
        for u in frontier:
            for v in graph.successors(u):
                if v in seen:
                    continue
                seen.add(v)
                data = graph.nodes[v]
                name = _norm(data.get("name", ""))
                if name in queries:
                    found.add(name)
                    continue
                if name in stop or is_helper_file(ctx, data.get("path", "")):
                    continue
                info = idx.functions.get(v)
                if info is not None:
                    found.update(_norm(q) for q in info.backend_queries)
                nxt.append(v)
        frontier = nxt
    return found

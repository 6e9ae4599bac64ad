"""Backend tests (KP101): which values derive from a backend query, and where such a value is tested.

Events: ``visit_value_use`` and ``visit_call`` (the data-flow sites: each use
of a variable, parameter or member, each call), ``visit_backend_query_call``
(a call of a registry backend query: the sources), ``visit_kernel_launch``,
``visit_factory_call`` and ``visit_selector_call`` (the kernel constructs a
test's outcome may decide, :mod:`.decisions`). ``finish`` follows query
results into locals, members, parameters and out of functions (query wrappers)
to a fixpoint over the unit, records every test of such a value (runtime) with
what its outcome decides (:class:`.decisions.Decisions`), and
every test of a backend-enum parameter or template parameter that no query
reaches (compile-time when every caller in the unit passes a constant). It
leaves what it found in the context for the phases after it: ``tainted``,
``tainted_fns``, and the queries each function reaches through wrappers
(``FunctionInfo.backend_queries``, then ``query_wrappers_known``).
"""

from __future__ import annotations

from kernel_ports.facts import BackendTest
from kernel_ports.frontend.clang.context import Extractor, strip_kinds
from kernel_ports.frontend.clang.decisions import Decisions
from kernel_ports.frontend.clang.toolchain import BINOPS, UNOPS
from kernel_ports.frontend.clang.values import sources


class BackendTests(Extractor):
    """Values derived from a backend query, and the tests of backend values."""

    phase = "taint and tests"

    def __init__(self, walk):
        super().__init__(walk)
        self.sites: list = []  # ("call", callee usr | "use", decl usr, cursor, parents, ctx): data-flow sites
        self.enum_uses: list = []  # (cursor, parents, ctx) decl refs of backend-enum-typed params
        self.query_decl_usrs: dict = {}  # usr of a backend-query declaration -> its qualified name
        self.kernel_events: list = []  # (cursor, effect, frame): the launches, factory and selector calls
        self.callee_names: dict = {}  # callee usr -> qualified name

    def visit_value_use(self, c, r, rk, ctx, parents):
        w = self.walk
        K = w.K
        if rk == K.TEMPLATE_NON_TYPE_PARAMETER:
            if w.backend_enum and w.canonical(r.type) == w.backend_enum:
                self.enum_uses.append((c, parents, ctx))
            return
        self.sites.append(("use", r.get_usr(), c, parents, ctx))
        if w.backend_enum and rk == K.PARM_DECL and w.canonical(c.type) == w.backend_enum:
            self.enum_uses.append((c, parents, ctx))

    def visit_call(self, c, ref, decl, edge, ctx, parents):
        self.sites.append(("call", edge.callee_usr, c, parents, ctx))
        self.callee_names[edge.callee_usr] = edge.callee

    def visit_kernel_launch(self, c, obj, args, ctx, parents):
        self.kernel_events.append((c, ("kernel", "launch", str(self.walk.loc(c))), ctx))

    def visit_factory_call(self, c, ref, backend, q, args, ctx, parents):
        self.kernel_events.append((c, ("kernel", f"{backend} factory call", str(self.walk.loc(c))), ctx))

    def visit_selector_call(self, c, args, ctx, parents):
        self.kernel_events.append((c, ("kernel", "selector call", str(self.walk.loc(c))), ctx))

    def visit_backend_query_call(self, c, q, usr, ctx, loc):
        self.walk.res.seen.add((loc.path, loc.line, "backend_query"))
        self.query_decl_usrs[usr] = q
        ctx.info.backend_queries = tuple(sorted(set(ctx.info.backend_queries) | {q}))

    def finish(self):
        """Which values derive from a backend query, and where such values are tested."""
        w = self.walk
        tainted, tainted_fns, origin = self._query_flow()
        w.tainted = tainted
        w.tainted_fns = tainted_fns
        self._runtime_tests(origin)
        self._compile_time_tests(tainted)
        # predicates know the backend queries they reach through wrappers too
        for info in w.functions.values():
            extra = {tainted_fns[e.callee_usr] for e in info.calls if e.callee_usr in tainted_fns}
            if extra:
                info.backend_queries = tuple(sorted(set(info.backend_queries) | extra))
        w.query_wrappers_known = True

    def _query_flow(self):
        """(tainted, tainted_fns, origin of a site).

        Sources are calls of a registry backend query.  A value flows into a
        local, a member, a parameter (of a function called with it) or out of
        a function through ``return`` (which makes that function a query
        wrapper); iterate to a fixpoint over this translation unit.
        """
        tainted: dict = {}  # decl usr -> (query, via)
        tainted_fns: dict = {}  # function usr -> query (returns a query-derived value)
        for q_usr, q in self.query_decl_usrs.items():
            tainted_fns[q_usr] = q
        sink_cache: dict = {}

        def origin(site):
            kind, key = site[0], site[1]
            if kind == "call":
                q = tainted_fns.get(key)
                if q is None:
                    return None
                return (q, "direct") if key in self.query_decl_usrs else (q, "function")
            return tainted.get(key)

        changed, rounds = True, 0
        while changed and rounds < 8:
            changed, rounds = False, rounds + 1
            for site in self.sites:
                org = origin(site)
                if org is None:
                    continue
                _, _, c, parents, ctx = site
                sk = sink_cache.get(id(site))
                if sk is None:
                    sk = self._sink(c, parents, ctx) or ("none", None)
                    sink_cache[id(site)] = sk
                kind, target = sk
                if kind in ("var", "field", "param"):
                    for t in target if isinstance(target, tuple) else (target,):
                        if t and t not in tainted:
                            tainted[t] = (org[0], {"var": "local", "field": "member", "param": "parameter"}[kind])
                            changed = True
                elif kind == "return" and ctx.slot is None and ctx.info.usr not in tainted_fns:
                    tainted_fns[ctx.info.usr] = org[0]
                    changed = True
        return tainted, tainted_fns, origin

    def _runtime_tests(self, origin):
        w = self.walk
        decisions = None
        for site in self.sites:
            org = origin(site)
            if org is None:
                continue
            _, _, c, parents, ctx = site
            test = self._test_context(c, parents)
            if test is None:
                continue
            op, compared, node = test
            macro = w.in_macro(node)
            decisions = decisions or Decisions(w, self.sites, self.kernel_events, self.callee_names)
            w.res.backend_tests.append(BackendTest(
                loc=w.loc(node), configurations=frozenset({w.job.configuration}), query=org[0], operator=op,
                origin="runtime", via=org[1], compared_to=compared, text=w.text(node)[:200],
                in_macro=macro is not None, macro=macro, enclosing_function=ctx.info.qualified_name,
                enclosing_usr=ctx.info.usr, decides=decisions.of_test(c, parents, ctx)))

    def _compile_time_tests(self, tainted):
        """Backend values that are not runtime tests: template parameters, and
        parameters that every caller in this TU gives a constant."""
        w = self.walk
        K = w.K
        for (c, parents, ctx) in self.enum_uses:
            r = c.referenced
            if r.get_usr() in tainted:
                continue
            test = self._test_context(c, parents)
            if test is None:
                continue
            op, compared, node = test
            if r.kind == K.TEMPLATE_NON_TYPE_PARAMETER:
                org, via = "compile_time", "template_parameter"
            else:
                org, via = self._param_origin(ctx, r), "parameter"
            macro = w.in_macro(node)
            w.res.backend_tests.append(BackendTest(
                loc=w.loc(node), configurations=frozenset({w.job.configuration}), query=None, operator=op,
                origin=org, via=via, compared_to=compared, text=w.text(node)[:200],
                in_macro=macro is not None, macro=macro, enclosing_function=ctx.info.qualified_name,
                enclosing_usr=ctx.info.usr))

    def _sink(self, c, parents, ctx):
        """Where a value flows: ('var'|'field'|'param', usr) or ('return', None)."""
        w = self.walk
        K = w.K
        par = list(parents)
        node = c
        while par and (par[-1].kind in strip_kinds() or par[-1].kind == K.CONDITIONAL_OPERATOR and list(par[-1].get_children())[0] != node):
            node = par.pop()
        if not par:
            return None
        p = par[-1]
        if p.kind == K.VAR_DECL:
            return "var", p.get_usr()
        if p.kind == K.UNEXPOSED_DECL:
            found = w.decomposition(p)
            if found is not None and found[1] == node:  # `auto [kind, n] = ...`: every name holds a part of it
                return "var", tuple(b.get_usr() for b in found[0])
            return None
        if p.kind == K.RETURN_STMT:
            return "return", None
        if p.kind == K.BINARY_OPERATOR:
            op = BINOPS.get(w.ci.conf.lib.clang_getCursorBinaryOperatorKind(p))
            ch = list(p.get_children())
            if op == "=" and len(ch) == 2 and ch[1] == node:
                lhs = w.strip(ch[0])
                if lhs.referenced is not None:
                    kind = "field" if lhs.referenced.kind == K.FIELD_DECL else "var"
                    return kind, lhs.referenced.get_usr()
        if p.kind == K.CALL_EXPR:
            ref = p.referenced
            ch = list(p.get_children())
            if ref is not None and ref.kind in (K.FUNCTION_DECL, K.CXX_METHOD, K.CONSTRUCTOR):
                args = ch[1:] if ref.kind != K.CONSTRUCTOR else ch
                for i, a in enumerate(args):
                    if a == node:
                        d = ref.get_definition() or ref
                        ps = [x for x in d.get_children() if x.kind == K.PARM_DECL]
                        if i < len(ps):
                            return "param", ps[i].get_usr()
        if p.kind == K.MEMBER_REF and len(par) >= 1:
            return "field", p.referenced.get_usr() if p.referenced is not None else None
        # a default member initialiser: `GpuKernelBackend kind = gpu_kernel_backend();`
        if p.kind == K.FIELD_DECL:
            return "field", p.get_usr()
        # a constructor member initialiser `: kind(gpu_kernel_backend())`: the
        # MEMBER_REF naming the member precedes the value among the constructor's children
        if p.kind == K.CONSTRUCTOR:
            prev = None
            for ch in p.get_children():
                if ch == node:
                    if prev is not None and prev.kind == K.MEMBER_REF and prev.referenced is not None:
                        return "field", prev.referenced.get_usr()
                    return None
                prev = ch
        return None

    def _test_context(self, c, parents):
        """(operator, compared enumerators, node) when a value is tested."""
        w = self.walk
        K = w.K
        lib = w.ci.conf.lib
        par = list(parents)
        node = c
        while par and par[-1].kind in strip_kinds():
            node = par.pop()
        if not par:
            return None
        p = par[-1]
        if p.kind == K.BINARY_OPERATOR:
            op = BINOPS.get(lib.clang_getCursorBinaryOperatorKind(p))
            if op in ("==", "!="):
                other = [x for x in p.get_children() if x != node]
                comp = tuple(v for v in (w.enum_const(o) for o in other) if v)
                if not comp:
                    comp = tuple(w.text(o).strip() for o in other)
                return op, comp, p
            if op in ("&&", "||"):
                return op, (), p
            return None
        if p.kind == K.CALL_EXPR and p.spelling in ("operator==", "operator!="):
            other = [x for x in p.get_children() if x != node and x.spelling not in ("operator==", "operator!=")]
            return p.spelling[8:], tuple(w.text(o) for o in other), p
        if p.kind == K.UNARY_OPERATOR:
            if UNOPS.get(lib.clang_getCursorUnaryOperatorKind(p)) == "!":
                return "!", (), p
            return None
        if p.kind == K.SWITCH_STMT:
            ch = list(p.get_children())
            if ch and ch[0] == node:
                labels = []
                for x in p.walk_preorder():
                    if x.kind == K.CASE_STMT:
                        v = w.enum_const(next(iter(x.get_children())))
                        if v:
                            labels.append(v)
                return "switch", tuple(labels), p
            return None
        if p.kind == K.CONDITIONAL_OPERATOR:
            ch = list(p.get_children())
            if ch and ch[0] == node:
                return "ternary", (), p
            return None
        if p.kind in (K.IF_STMT, K.WHILE_STMT, K.DO_STMT, K.FOR_STMT):
            ch = list(p.get_children())
            if ch and ch[0] == node:
                return "condition", (), p
            return None
        if p.kind == K.VAR_DECL:
            if w.canonical(p.type) in ("bool", "const bool"):
                return "bool-local", (), p
            return None
        return None

    def _param_origin(self, ctx, parm) -> str:
        """compile_time when every call in this TU passes a constant (or a template parameter).

        An argument that is a member (a holder's ``backend`` field read inside
        its ``get()``) is followed to every value this TU writes into the
        member (constructor initialisers, default initialisers, assignments),
        and a parameter of the caller to that caller's own callers, so a holder
        constructed with the accessor's template parameter is compile-time.
        """
        kinds = self._param_value_kinds(ctx, ctx.params.get(parm.get_usr()), set())
        if "query" in kinds:
            return "runtime"
        if kinds and kinds <= {"const", "tparam"}:
            return "compile_time"
        return "unknown"

    def _param_value_kinds(self, ctx, idx, seen) -> set:
        """Kinds of value (const, tparam, query, unknown ...) every caller in this TU passes as parameter idx."""
        w = self.walk
        key = (ctx.info.usr, idx)
        if key in seen:
            return set()  # a cycle adds nothing new
        seen.add(key)
        callers = w.callers.get(ctx.info.usr, [])
        if idx is None or not callers or len(seen) > 12:
            return {"unknown"}
        kinds = set()
        for cctx, call in callers:
            args = w.call_args(call)
            if idx >= len(args):
                kinds.add("unknown")
                continue
            kinds |= self._value_kinds(args[idx], cctx, seen)
        return kinds

    def _value_kinds(self, e, ctx, seen) -> set:
        w = self.walk
        K = w.K
        s = w.strip(e)
        if s.kind == K.MEMBER_REF_EXPR and s.referenced is not None and s.referenced.kind == K.FIELD_DECL:
            fkey = ("field", s.referenced.get_usr())
            if fkey in seen:
                return set()
            seen.add(fkey)
            writes = w.field_writes.get(s.referenced.get_usr())
            if not writes:
                return {"unknown"}
            kinds = set()
            for value, wctx in writes:
                kinds |= self._value_kinds(value, wctx, seen)
            return kinds
        kinds = set()
        for ref in sources(w, e, ctx, shallow=True):
            if ref[0] == "param" and isinstance(ref[1], int) and ref[1] >= 0:
                kinds |= self._param_value_kinds(ctx, ref[1], seen)
            else:
                kinds.add(ref[0])
        return kinds

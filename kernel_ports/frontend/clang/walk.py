"""The single walk of one translation unit, and the events it gives the fact families (libclang 18.1.1).

:class:`Walk` reads the unit once: the top-level declarations in project
files (the filter is applied at the top level and to namespace members, never
below a declaration, because implicit nodes such as the lambda under ``+[]``
have no file at all), each function definition (its parameters, locals and
their initialisers, member calls and assignments: :meth:`Walk.prescan`), its
statements with the ``switch``/``if`` guards on parameters they sit under, and
its expressions. What it records itself is each function's summary
(:class:`.model.FunctionInfo`: call edges with their argument value refs and
guards, what it returns), callers, writes to data members, and calls Clang
could not resolve or type. Each declaration is walked isolated: an exception
while walking one is a KP902 at it, and the rest of the file is judged
(:mod:`kernel_ports.frontend.isolation`).

Everything else is an extractor's (:class:`.context.Extractor`), one module per
fact family, listed in :data:`EXTRACTORS`. The walk collects their
``visit_<event>``/``leave_<event>`` methods once per unit into a table, and
calls them where the event happens:

========================== ============================================ ==========================================
event                      when                                         arguments
========================== ============================================ ==========================================
visit_function_decl        any function declaration, before its body    c
visit_function             a function definition, locals read,          c, frame, body
                           before its body is walked
leave_if_stmt              after an ``if`` and its branches             c, frame, condition, then-branch
visit_value_use            a use of a variable, parameter, member or    c, referenced decl, its kind,
                           non-type template parameter                  frame, parents
visit_kernel_launch        ``operator()`` on a kernel-type object       c, kernel object, args, frame, parents
                           (or a call of one in a template pattern)
visit_factory_call         a call of a registry factory                 c, referenced decl, backend, qname, args,
                                                                        frame, parents
visit_selector_call        a call of the registry selector              c, args, frame, parents
visit_has_port_call        a call of ``has_kernel_port``                c, args, frame, location
visit_backend_query_call   a call of a registry backend query           c, qname, usr, frame, location
visit_seam_call            a call of a registry test seam               c, decl, frame, parents
visit_call                 every resolved call that is not a launch or  c, referenced decl, its template (or it),
                           a factory call, after its call edge          the CallEdge, frame, parents
========================== ============================================ ==========================================

After the traversal each extractor's ``finish()`` runs, in the order of
:data:`EXTRACTORS`, isolated under its ``phase`` name. Extractors share state
only through the context (the walk itself, a :class:`.context.UnitContext`);
value-flow queries several of them need are modules of functions over it
(:mod:`.values`, :mod:`.dtype_flow`, :mod:`.template_args`); the guards a statement sits under
are asked of :mod:`.guards`.

Names come from the registry (factories, selector, ``has_kernel_port``, the
table type, backend queries, seams, predicates).  The only MLX names known
here are those of MLX's own API (``Dtype``, ``array``), which the SPEC fixes.
"""

from __future__ import annotations

import os
import re
from typing import Optional

from kernel_ports.frontend.clang.backend_tests import BackendTests
from kernel_ports.frontend.clang.context import Extractor, Frame, UnitContext, same_cursor
from kernel_ports.frontend.clang.factories import FactoryCalls
from kernel_ports.frontend.clang.guards import case_labels, guard_subject, if_guards
from kernel_ports.frontend.clang.launches import Launches
from kernel_ports.frontend.clang.model import CallEdge, FunctionInfo, Guard, ParseJob, TUResult
from kernel_ports.frontend.clang.patterns import (dependent_call, generic_kernel_object, is_kernel_variable,
                                                  resolved_at_instantiation)
from kernel_ports.frontend.clang.predicates import Predicates
from kernel_ports.frontend.clang.refusals import Refusals
from kernel_ports.frontend.clang.seams import SeamCalls
from kernel_ports.frontend.clang.selectors import SelectorCalls
from kernel_ports.frontend.clang.tables import PortTables
from kernel_ports.frontend.clang.toolchain import BINOPS, remember_children, skipped_ranges
from kernel_ports.frontend.clang.values import returned, sources
from kernel_ports.frontend.isolation import finish_isolated, walk_isolated

# the fact families; their finish() runs in this order (refusals read the query flow backend tests leave behind,
# predicates the queries reached through wrappers)
EXTRACTORS = (Launches, BackendTests, Predicates, Refusals, PortTables, FactoryCalls, SelectorCalls, SeamCalls)
# what the walk calls extractors with (see the table above)
EVENTS = ("visit_function_decl", "visit_function", "leave_if_stmt", "visit_value_use", "visit_kernel_launch",
          "visit_factory_call", "visit_selector_call", "visit_has_port_call", "visit_backend_query_call",
          "visit_seam_call", "visit_call")


class Walk(UnitContext):
    """The single traversal of one unit (see the module docstring)."""

    def __init__(self, tu, job: ParseJob, res: TUResult):
        super().__init__(tu, job, res)
        self.extractors = tuple(cls(self) for cls in EXTRACTORS)
        handlers: dict = {}
        for ext in self.extractors:
            for name in dir(type(ext)):
                if name.startswith(("visit_", "leave_")):
                    handlers.setdefault(name, []).append(getattr(ext, name))
        unknown = sorted(set(handlers) - set(EVENTS))
        if unknown:
            raise TypeError(f"extractor methods for events the walk does not have: {unknown}")
        self.on = {event: tuple(handlers.get(event, ())) for event in EVENTS}
        self.unread_seen: set = set()  # (relpath, start, end offsets) of each body left unread
        self.naming_kinds = frozenset({self.K.TYPE_REF, self.K.NAMESPACE_REF, self.K.TEMPLATE_REF})

    def close(self) -> None:
        """Drop the extractors and their handlers: each holds the walk, and a walk kept alive by that cycle would
        keep the unit's translation unit (libclang's memory, freed when its last cursor goes) until a full
        collection, so a worker's memory would grow parse after parse."""
        self.extractors = ()
        self.on = {}

    def run(self):
        """Walk the unit once, then let it go (:meth:`close`), however the walk ends."""
        remember_children(self.tu, True)
        try:
            self._walk_unit()
        finally:
            remember_children(self.tu, False)
            self.close()

    def _walk_unit(self):
        K = self.K
        res = self.res
        self.read_diagnostics()
        top_children = list(self.tu.cursor.get_children())  # one pass over the (large) TU level
        self.find_api_types(top_children)
        tops = []
        walked = set()
        for c in top_children:
            f = c.location.file
            if f is None:
                continue
            rel = self.rel(f)
            if rel is None:
                continue
            walked.add(rel)
            if c.kind == K.MACRO_INSTANTIATION:
                ext = c.extent
                self.macro_ranges.setdefault(rel, []).append((ext.start.offset, ext.end.offset, c.spelling))
                continue
            if c.kind in (K.MACRO_DEFINITION, K.INCLUSION_DIRECTIVE):
                continue
            if self._instantiation(c):
                continue
            tops.append(c)
        res.files_walked = sorted(walked | {self.job.relpath})
        for rel in res.files_walked:
            f = self.tu.get_file(os.path.join(self.job.root, rel))
            if f is not None:
                rngs = skipped_ranges(self.tu, f)
                if rngs:
                    res.skipped[rel] = rngs
        for c in tops:
            self.decl(c)
        for ext in self.extractors:
            if type(ext).finish is not Extractor.finish:
                finish_isolated(self, ext.phase, ext.finish)
        res.functions = list(self.functions.values())

    def _instantiation(self, c) -> bool:
        """A template instantiation Clang listed at the top level (it does so when the prelude's declarations are
        excluded); it is not a declaration written there, and its template is walked where it is written."""
        K = self.K
        if c.kind not in (K.FUNCTION_DECL, K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR, K.CONVERSION_FUNCTION,
                          K.STRUCT_DECL, K.CLASS_DECL, K.VAR_DECL):
            return False
        lp = c.lexical_parent
        if lp is not None and lp.kind != K.TRANSLATION_UNIT:
            return True
        tmpl = self.ci.conf.lib.clang_getSpecializedCursorTemplate(c)
        if tmpl is None or tmpl.kind.is_invalid():
            return False
        a, b = c.location, tmpl.location
        fa, fb = a.file, b.file
        return a.offset == b.offset and fa is not None and fb is not None and self.file_name(fa) == self.file_name(fb)

    def decl(self, c, record: Optional[str] = None):
        K = self.K
        k = c.kind
        if k == K.UNEXPOSED_DECL and self.decomposition(c) is not None:
            walk_isolated(self, c, self._var_decl, c)  # a structured binding at namespace scope
            return
        if k in (K.NAMESPACE, K.LINKAGE_SPEC, K.UNEXPOSED_DECL):
            for ch in c.get_children():
                if ch.location.file is not None and self.rel(ch.location.file) is None:
                    continue
                self.decl(ch)
            return
        if k in (K.STRUCT_DECL, K.CLASS_DECL, K.CLASS_TEMPLATE, K.UNION_DECL, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION):
            for ch in c.get_children():
                if ch.kind == K.FIELD_DECL:
                    walk_isolated(self, ch, self._field_init, c, ch)
                else:
                    self.decl(ch, record=c)
            return
        if k in (K.FUNCTION_DECL, K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR, K.FUNCTION_TEMPLATE, K.CONVERSION_FUNCTION):
            for visit in self.on["visit_function_decl"]:
                visit(c)
            if c.is_definition():
                walk_isolated(self, c, self.function, c)
            return
        if k == K.VAR_DECL:
            walk_isolated(self, c, self._var_decl, c)
            return

    def _var_decl(self, c):
        init = self.var_init(c)
        if init is not None:
            ctx = self._pseudo_ctx(c, "var")
            self.expr(init, ctx, [c])

    def _field_init(self, record, field_cursor):
        init = self.var_init(field_cursor)
        if init is None:
            return
        ctx = self._pseudo_ctx(record, "init")
        self.field_writes.setdefault(field_cursor.get_usr(), []).append((init, ctx))
        self.expr(init, ctx, [field_cursor])

    def _pseudo_ctx(self, c, suffix):
        usr = f"{c.get_usr()}#{suffix}"
        info = self.functions.get(usr)
        if info is None:
            info = FunctionInfo(usr=usr, name=c.spelling, qualified_name=self.qname(c), loc=self.loc(c))
            self.functions[usr] = info
        ctx = Frame(info, c)
        return ctx

    def function(self, c):
        K = self.K
        usr = c.get_usr()
        params, tparams = [], []
        body = None
        for ch in c.get_children():
            if ch.kind == K.PARM_DECL:
                params.append(ch)
            elif ch.kind in (K.TEMPLATE_NON_TYPE_PARAMETER, K.TEMPLATE_TYPE_PARAMETER, K.TEMPLATE_TEMPLATE_PARAMETER):
                tparams.append(ch.spelling)
            elif ch.kind == K.COMPOUND_STMT:
                body = ch
        if body is None:
            return
        rt = c.result_type
        ref = self.ref_target(rt)
        parent = c.semantic_parent
        info = FunctionInfo(
            usr=usr,
            name=c.spelling,
            qualified_name=self.qname(c),
            loc=self.loc(c),
            params=tuple(p.spelling for p in params),
            template_params=tuple(tparams),
            returns_ref=ref,
            returns_kernel_ref=bool(ref and self.kernel_type and ref == self.kernel_type),
            returns_bool=rt.get_canonical().kind == self.ci.TypeKind.BOOL,
            is_method_of=self.qname(parent) if parent is not None and parent.kind in (K.STRUCT_DECL, K.CLASS_DECL, K.CLASS_TEMPLATE) else None,
        )
        self.functions[usr] = info
        self.fn_cursors[usr] = c
        if self.job.unread_bodies and c.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE) and self._unread(body):
            info.body_walked = False
            return
        ctx = Frame(info, c)
        for i, p in enumerate(params):
            ctx.params[p.get_usr()] = i
        if c.kind == K.CONSTRUCTOR:
            # members initialised in the class body run with every constructor
            if parent is not None:
                info.calls.append(CallEdge(f"{parent.get_usr()}#init", self.qname(parent), self.qname(parent), info.loc, (), ()))
            member = None
            for ch in c.get_children():
                if ch.kind == K.MEMBER_REF:
                    member = ch.referenced
                elif ch.kind.is_expression():
                    if member is not None and member.kind == K.FIELD_DECL:
                        self.field_writes.setdefault(member.get_usr(), []).append((ch, ctx))
                    member = None
                    self.expr(ch, ctx, [c])
        returns: list = []
        self.prescan(body, ctx, returns)
        for visit in self.on["visit_function"]:
            visit(c, ctx, body)
        self.stmt(body, ctx, [c])
        ctx.info.returned, ctx.info.returned_statics = returned(self, returns, ctx)

    def _unread(self, body) -> bool:
        """A body the focus says no fact can arise in or be reached through (frontend/focus.py); its place is kept
        (``unread_seen``: the session checks each body it blanked against them)."""
        ext = body.extent
        start = ext.start
        rel = self.rel(start.file) if start.file is not None else None
        if rel is None or (rel, start.line, start.column) not in self.job.unread_bodies:
            return False
        self.unread_seen.add((rel, start.offset, ext.end.offset))
        return True

    def prescan(self, body, ctx, returns: Optional[list] = None):
        """Locals, their initialisers, member calls on them and assignments (for data flow); and, given
        ``returns``, the body's own ``return`` statements in the order met (not those of a lambda in it, nor one
        inside another's value), so what the function returns (:func:`.values.returned`) is read without another
        pass over its body."""
        K = self.K
        stack = [body]
        collect = returns is not None
        # while set, the nodes met lie under the lambda or return statement met when ``stack`` was this long (they
        # are popped before it is shorter again): their returns are not the function's. The order returns are met
        # in is a walk's that leaves those subtrees out (leaving subtrees out keeps a stack's pre-order).
        barrier = None
        while stack:
            c = stack.pop()
            if barrier is not None and len(stack) < barrier:
                barrier = None
            k = c.kind
            if collect and barrier is None and (k == K.RETURN_STMT or k == K.LAMBDA_EXPR):
                if k == K.RETURN_STMT:
                    returns.append(c)
                barrier = len(stack)
            if k == K.VAR_DECL:
                u = c.get_usr()
                ctx.local_cursors[u] = c
                init = self.var_init(c)
                if init is not None:
                    ctx.locals[u] = init
            elif k == K.UNEXPOSED_DECL:
                self._bindings(c, ctx)
            elif k == K.CALL_EXPR:
                ch = list(c.get_children())
                if ch and ch[0].kind == K.MEMBER_REF_EXPR:
                    obj = [x for x in ch[0].get_children()]
                    if obj:
                        o = self.strip(obj[0])
                        if o.kind == K.DECL_REF_EXPR and o.referenced is not None:
                            ctx.member_calls.setdefault(o.referenced.get_usr(), []).append((c.spelling, c))
            elif k == K.BINARY_OPERATOR or k == K.CALL_EXPR and c.spelling == "operator=":
                ch = list(c.get_children())
                op = BINOPS.get(self.ci.conf.lib.clang_getCursorBinaryOperatorKind(c)) if k == K.BINARY_OPERATOR else "="
                if op == "=" and len(ch) >= 2:
                    lhs = self.strip(ch[0])
                    if lhs.kind in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR) and lhs.referenced is not None:
                        ctx.assigns.setdefault(lhs.referenced.get_usr(), []).append(ch[-1])
                        if lhs.referenced.kind == K.FIELD_DECL:
                            self.field_writes.setdefault(lhs.referenced.get_usr(), []).append((ch[-1], ctx))
            stack.extend(c.get_children())

    def _bindings(self, c, ctx):
        """A structured binding's names are locals whose value comes from its initialiser (each name is one part of
        it; where a value comes from is followed to the whole initialiser)."""
        found = self.decomposition(c)
        if found is None:
            return
        names, init = found
        for b in names:
            u = b.get_usr()
            self.bindings.add(u)
            ctx.local_cursors[u] = b
            ctx.locals[u] = init

    def stmt(self, c, ctx, parents):
        K = self.K
        k = c.kind
        if k == K.SWITCH_STMT:
            ch = list(c.get_children())
            cond, body = ch[0], ch[-1]
            self.expr(cond, ctx, parents + [c])
            subject = guard_subject(self, cond)
            if subject is None or body.kind != K.COMPOUND_STMT:
                self.stmt(body, ctx, parents + [c])
                return
            all_values = []
            groups = []  # (values, is_default, [stmts])
            for s in body.get_children():
                labels, is_default, inner = case_labels(self, s)
                if labels is None:
                    if groups:
                        groups[-1][2].append(s)
                    continue
                all_values.extend(labels)
                groups.append([labels, is_default, [inner] if inner is not None else []])
            for labels, is_default, stmts in groups:
                g = Guard(subject, tuple(all_values), True) if is_default else Guard(subject, tuple(labels))
                ctx.guards.append(g)
                for s in stmts:
                    self.stmt(s, ctx, parents + [c, body])
                ctx.guards.pop()
            return
        if k == K.IF_STMT:
            ch = list(c.get_children())
            if len(ch) in (2, 3):
                cond = ch[0]
                self.expr(cond, ctx, parents + [c])
                gthen, gelse = if_guards(self, cond)
                for i, s in enumerate(ch[1:]):
                    g = gthen if i == 0 else gelse
                    if g is not None:
                        ctx.guards.append(g)
                    self.stmt(s, ctx, parents + [c])
                    if g is not None:
                        ctx.guards.pop()
                for leave in self.on["leave_if_stmt"]:
                    leave(c, ctx, cond, ch[1])
                return
        if k.is_expression():
            self.expr(c, ctx, parents)
            return
        if k == K.VAR_DECL:
            init = self.var_init(c)
            if init is not None:
                self.expr(init, ctx, parents + [c])
            return
        for ch in c.get_children():
            self.stmt(ch, ctx, parents + [c])

    def expr(self, c, ctx, parents):
        """Walk an expression tree, recording calls and uses."""
        K = self.K
        stack = [(c, parents)]
        while stack:
            cur, par = stack.pop()
            k = cur.kind
            if k == K.CALL_EXPR:
                self.call(cur, ctx, par)
            elif k == K.DECL_REF_EXPR or k == K.MEMBER_REF_EXPR:
                self._use(cur, ctx, par)
            elif k == K.LAMBDA_EXPR:
                # lambdas belong to the enclosing function (call_once bodies, holder
                # factories) -- except port-table slots, walked as their own getters
                if cur.hash in self.slot_lambdas:
                    continue
                for ch in cur.get_children():
                    if ch.kind == K.COMPOUND_STMT:
                        self.prescan(ch, ctx)
                        self.stmt(ch, ctx, par + [cur])
                continue
            elif k in (K.COMPOUND_STMT, K.IF_STMT, K.SWITCH_STMT):  # statement expressions
                self.stmt(cur, ctx, par)
                continue
            np = par + [cur]
            for ch in reversed(list(cur.get_children())):
                stack.append((ch, np))

    def _use(self, c, ctx, parents):
        r = c.referenced
        if r is None:
            return
        K = self.K
        rk = r.kind
        if rk in (K.VAR_DECL, K.PARM_DECL, K.FIELD_DECL, K.TEMPLATE_NON_TYPE_PARAMETER) or self.is_binding(r):
            for visit in self.on["visit_value_use"]:
                visit(c, r, rk, ctx, parents)
        elif rk in (K.FUNCTION_DECL, K.CXX_METHOD, K.FUNCTION_TEMPLATE):
            # a function used as a value (function pointer, std::function target)
            if parents and parents[-1].kind == K.CALL_EXPR and parents[-1].referenced is not None and parents[-1].referenced == r:
                return
            # (a call Clang could not resolve references nothing: a Cursor compared with None raises)
            if any(p.kind == K.CALL_EXPR and same_cursor(p.referenced, r) for p in parents[-3:]):
                return
            tmpl = self.ci.conf.lib.clang_getSpecializedCursorTemplate(r)
            target = tmpl if tmpl is not None and not tmpl.kind.is_invalid() else r
            ctx.info.calls.append(CallEdge(target.get_usr(), self.qname(target), c.spelling, self.loc(c), (), (),
                                           tuple(ctx.guards), in_slot=ctx.slot))

    def call(self, c, ctx, parents):
        K = self.K
        ref, targs = self.callee(c)
        ch = list(c.get_children())
        loc = self.loc(c)
        if self._launch_or_unresolved(c, ref, ch, ctx, parents, loc):
            return
        tmpl = self.ci.conf.lib.clang_getSpecializedCursorTemplate(ref)
        decl = tmpl if tmpl is not None and not tmpl.kind.is_invalid() and tmpl.kind in (K.FUNCTION_TEMPLATE,) else ref
        q = self.qname(decl)
        usr = decl.get_usr()
        args = ch[1:] if ref.kind != K.CONSTRUCTOR else ch
        # ---- the registry's special functions
        backend = next((b for f, b in self.conv.factories if f == q), None)
        if backend is not None:
            for visit in self.on["visit_factory_call"]:
                visit(c, ref, backend, q, args, ctx, parents)
            return
        if q == self.conv.selector:
            for visit in self.on["visit_selector_call"]:
                visit(c, args, ctx, parents)
        elif q == self.conv.has_port:
            for visit in self.on["visit_has_port_call"]:
                visit(c, args, ctx, loc)
        elif q in self.conv.backend_queries:
            for visit in self.on["visit_backend_query_call"]:
                visit(c, q, usr, ctx, loc)
        if decl.spelling in self.seam_set:
            for visit in self.on["visit_seam_call"]:
                visit(c, decl, ctx, parents)
        self._call_edge(c, ref, decl, q, usr, targs, args, ctx, parents, loc)

    def _launch_or_unresolved(self, c, ref, ch, ctx, parents, loc) -> bool:
        """A kernel launch, or a call Clang could not resolve or type (recorded when it is one of ours): no call edge."""
        K = self.K
        # ---- invocation: operator() on a CustomKernelFunction object
        if c.spelling == "operator()" and ch:
            obj = ch[0]
            if self.kernel_type and re.sub(r"^const ", "", self.canonical(obj.type)) == self.kernel_type:
                args = [x for x in ch[1:] if not (x.kind in (K.DECL_REF_EXPR, K.UNEXPOSED_EXPR) and x.spelling == "operator()")]
                for visit in self.on["visit_kernel_launch"]:
                    visit(c, obj, args, ctx, parents)
                return True
        if ref is not None and (is_kernel_variable(self, ref, ctx) or generic_kernel_object(self, ref, len(ch) - 1)):
            if resolved_at_instantiation(self, c, ctx, parents):
                return self._dependent_launch(c, ch, ctx, parents)
            # a kernel object called without a typed operator(): Clang could not
            # type the launch's arguments (a missing declaration), so the call is
            # a recovery expression that names the kernel variable
            self.res.untyped.append((loc.path, loc.line, loc.column, "invocation", ref.spelling,
                                     "Clang could not type this kernel launch (an argument did not compile), so its "
                                     "template args and inputs cannot be judged"))
            return True
        if ref is None:
            # an untyped (recovery) call: name it if it is one of ours
            name = c.spelling or (self.text(ch[0]).split("(")[0].split("::")[-1].strip() if ch else "")
            kind = self.conv.target_kind_by_name(name)
            later = dependent_call(self, c, ch, ctx, parents) if kind is None else None
            if later == "launch":
                return self._dependent_launch(c, ch, ctx, parents)
            if later == "call":
                self.res.seen.add((loc.path, loc.line, "call9"))  # resolved at instantiation, not a lost launch
                return True
            if kind is None and len(ch) == 10 and ch and self.kernel_type:
                kind = "invocation"
            if kind is not None:
                self.res.untyped.append((loc.path, loc.line, loc.column, kind, name, "Clang could not resolve or type this call"))
            return True
        return False

    def _dependent_launch(self, c, ch, ctx, parents) -> bool:
        """A launch in a template pattern, typed at instantiation: its callee and arguments as written."""
        for visit in self.on["visit_kernel_launch"]:
            visit(c, ch[0], ch[1:], ctx, parents)
        return True

    def _call_edge(self, c, ref, decl, q, usr, targs, args, ctx, parents, loc):
        """The call edge of a resolved call, its callers entry, and the visit_call event."""
        K = self.K
        if q.startswith("std::"):
            # a standard-library call's edge is not recorded, and what the visitors read of it is its callee:
            # where its arguments come from and how its result is used are not worked out (a fifth of a large
            # unit's walk)
            edge = CallEdge(usr, q, c.spelling, loc, targs, (), tuple(ctx.guards))
            return self._after_edge(c, ref, decl, edge, args, ctx, parents, loc)
        # ---- a call edge
        member_call, bound_to, bound_then = None, None, ()
        rr = self.ref_target(ref.result_type) if ref.kind != K.CONSTRUCTOR else None
        if rr:
            member_call, bound_to, bound_then = self.result_use(c, parents, ctx)
        argrefs = tuple(sources(self, a, ctx, shallow=True) for a in args) if ref.kind != K.CONSTRUCTOR else ()
        if ref.kind == K.CONSTRUCTOR:
            parent = ref.semantic_parent
            if parent is not None and not self.qname(parent).startswith(("std::", "__gnu_cxx::")):
                ctx.info.calls.append(CallEdge(f"{parent.get_usr()}#init", self.qname(parent), parent.spelling, loc, (), (),
                                               tuple(ctx.guards), in_slot=ctx.slot))
        spelling = self.callee_spelling(c)
        edge = CallEdge(usr, q, spelling, loc, targs, argrefs, tuple(ctx.guards),
                        returns_ref=rr, returns_kernel_ref=bool(rr and rr == self.kernel_type),
                        is_method=ref.kind in (K.CXX_METHOD, K.CONVERSION_FUNCTION), in_slot=ctx.slot,
                        member_call=member_call, bound_to=bound_to, bound_then=bound_then)
        if not q.startswith("__gnu_cxx::") and ref.kind != K.CONVERSION_FUNCTION:  # (std:: calls left above)
            ctx.info.calls.append(edge)
        self._after_edge(c, ref, decl, edge, args, ctx, parents, loc)

    def _after_edge(self, c, ref, decl, edge, args, ctx, parents, loc):
        if len(args) >= 9 and sum(1 for a in args if a.location.line != 0 and a.kind not in self.naming_kinds) == 9:
            # a typed call with nine written arguments that is not a launch, as the witness counts them: a defaulted
            # argument has no place, and a constructor call's type name (`SomeRoPE(...)`) is no argument
            self.res.seen.add((loc.path, loc.line, "call9"))
        self.callers.setdefault(edge.callee_usr, []).append((ctx, c))
        for visit in self.on["visit_call"]:
            visit(c, ref, decl, edge, ctx, parents)

    def frame_for(self, d):
        """A data-flow context for another function's definition (helpers)."""
        K = self.K
        body = next((ch for ch in d.get_children() if ch.kind == K.COMPOUND_STMT), None)
        if body is None:
            return None
        info = self.functions.get(d.get_usr()) or FunctionInfo(
            usr=d.get_usr(), name=d.spelling, qualified_name=self.qname(d), loc=self.loc(d),
            params=tuple(p.spelling for p in d.get_children() if p.kind == K.PARM_DECL))
        ctx = Frame(info, d)
        for i, p in enumerate([p for p in d.get_children() if p.kind == K.PARM_DECL]):
            ctx.params[p.get_usr()] = i
        self.prescan(body, ctx)
        return ctx

"""The walk of one translation unit: the facts the Clang AST gives (libclang 18.1.1, ``clang.cindex``).

Only declarations whose location is in a project file are walked: the filter
is applied at the top level (and to namespace members), never below a
declaration, because implicit nodes such as the lambda under ``+[]`` have no
file at all.

Names come from the registry (factories, selector, ``has_kernel_port``, the
table type, backend queries, seams, predicates).  The only MLX names known
here are those of MLX's own API (``Dtype``, ``array``), which the SPEC fixes.
"""

from __future__ import annotations

import os
import re
from typing import Optional

from kernel_ports.facts import (
    InputArray,
    TemplateArgEntry,
)
from kernel_ports.frontend.clang.model import (
    CallEdge,
    FunctionInfo,
    Guard,
    ParseJob,
    RawInvocation,
    TUResult,
)
from kernel_ports.frontend.clang.backend_tests import BackendTests
from kernel_ports.frontend.clang.context import Extractor, Frame, UnitContext, c_string_value, same_cursor, strip_kinds
from kernel_ports.frontend.clang.factories import FactoryCalls
from kernel_ports.frontend.clang.predicates import Predicates
from kernel_ports.frontend.clang.selectors import SelectorCalls
from kernel_ports.frontend.clang.refusals import Refusals
from kernel_ports.frontend.clang.seams import SeamCalls
from kernel_ports.frontend.clang.tables import PortTables
from kernel_ports.frontend.clang.values import sources
from kernel_ports.frontend.clang.toolchain import ADDRESS_OF, BINOPS, skipped_ranges
from kernel_ports.frontend.isolation import finish_isolated, walk_isolated


_ARITHMETIC = {"BOOL", "CHAR_U", "UCHAR", "USHORT", "UINT", "ULONG", "ULONGLONG", "CHAR_S", "SCHAR", "SHORT", "INT",
               "LONG", "LONGLONG", "FLOAT", "DOUBLE", "LONGDOUBLE", "HALF", "FLOAT16"}


FIRST_ERRORS = 5  # Clang errors a result lists (facts: files[].first_errors)
ERROR_LINES_KEPT = 200  # per file, for the summary's causes and the nearest error a KP902 names

# MLX ops whose result dtype does not depend on their inputs
_FIXED_RESULT_OPS = {
    "mlx::core::argmax": "uint32",
    "mlx::core::argmin": "uint32",
    "mlx::core::argsort": "uint32",
    "mlx::core::argpartition": "uint32",
}
# MLX ops whose result has the dtype of their first argument (they move or copy elements)
_SAME_DTYPE_OPS = frozenset(f"mlx::core::{op}" for op in (
    "reshape", "flatten", "unflatten", "transpose", "swapaxes", "moveaxis", "squeeze", "expand_dims", "slice",
    "slice_update", "contiguous", "broadcast_to", "as_strided", "copy", "stop_gradient", "pad", "repeat", "tile",
    "take", "take_along_axis"))
_RANDOM_BITS = "mlx::core::random::bits"  # uint8/16/32 by its constant `width` argument (default 4)


# the fact families, in the order their finish() runs
EXTRACTORS = (BackendTests, Predicates, Refusals, PortTables, FactoryCalls, SelectorCalls, SeamCalls)
# what the walk calls extractors with (the module docstring says when and with what)
EVENTS = ("visit_function_decl", "visit_seam_call", "leave_if_stmt", "visit_has_port_call", "visit_call", "visit_value_use",
          "visit_backend_query_call", "visit_function",
          "visit_factory_call", "visit_selector_call")


class Walk(UnitContext):
    """The single traversal of one unit (see the module docstring)."""

    def __init__(self, tu, job: ParseJob, res: TUResult):
        super().__init__(tu, job, res)
        self._pending_invocations: list = []  # (call, kernel object, args, ctx, loc, kernel refs)
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

    def run(self):
        K = self.K
        res = self.res
        # diagnostics (the prelude's __va_list_tag pair is not the file's)
        for d in self.tu.diagnostics:
            if "__va_list_tag" in d.spelling:
                continue
            if d.severity < 2:
                continue
            rel = self.rel(d.location.file) if d.location.file else None
            res.diagnostics += 1
            if d.severity >= 3:
                res.errors += 1
                if len(res.first_errors) < FIRST_ERRORS:
                    where = rel or (d.location.file.name if d.location.file else "")
                    res.first_errors.append(f"{where}:{d.location.line}: {d.spelling}")
                if rel:
                    self.error_lines.setdefault(rel, []).append((d.location.line, d.spelling))
            if rel:
                n, e = res.diag_by_file.get(rel, (0, 0))
                res.diag_by_file[rel] = (n + 1, e + (1 if d.severity >= 3 else 0))
        # include graph (project files only; the PCH hides std/stub includes)
        for inc in self.tu.get_includes():
            src = self.rel(inc.source) if inc.source else None
            dst = self.rel(inc.include) if inc.include else None
            if src and dst:
                res.includes.append((src, dst))
        res.error_lines = {rel: lines[:ERROR_LINES_KEPT] for rel, lines in self.error_lines.items()}
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
        walk_isolated(self, None, self._finish_invocations)
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
        return a.offset == b.offset and a.file is not None and b.file is not None and a.file.name == b.file.name

    def decl(self, c, record: Optional[str] = None):
        K = self.K
        k = c.kind
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
        self.prescan(body, ctx)
        for visit in self.on["visit_function"]:
            visit(c, ctx, body)
        self.stmt(body, ctx, [c])
        self._returns(body, ctx)

    def _unread(self, body) -> bool:
        """A body the focus says no fact can arise in or be reached through (frontend/focus.py)."""
        start = body.extent.start
        rel = self.rel(start.file) if start.file is not None else None
        return rel is not None and (rel, start.line, start.column) in self.job.unread_bodies

    def _returns(self, body, ctx):
        """What the function returns: value refs (wrappers) and static holder variables."""
        K = self.K
        refs = set()
        statics = []
        stack = [body]
        while stack:
            x = stack.pop()
            if x.kind == K.LAMBDA_EXPR:
                continue
            if x.kind == K.RETURN_STMT:
                ch = list(x.get_children())
                if ch:
                    refs |= sources(self, ch[0], ctx)
                    v = self.strip(ch[0])
                    if v.kind == K.DECL_REF_EXPR and v.referenced is not None and v.referenced.kind == K.VAR_DECL:
                        r = v.referenced
                        sp = r.semantic_parent
                        if r.storage_class == self.ci.StorageClass.STATIC or (sp is not None and sp.kind == K.NAMESPACE):
                            statics.append((r.spelling, r.type.spelling, self.loc(r)))
                continue
            stack.extend(x.get_children())
        ctx.info.returned = frozenset(refs)
        ctx.info.returned_statics = tuple(statics)

    def prescan(self, body, ctx):
        """Locals, their initialisers, member calls on them and assignments (for data flow)."""
        K = self.K
        stack = [body]
        while stack:
            c = stack.pop()
            k = c.kind
            if k == K.VAR_DECL:
                u = c.get_usr()
                ctx.local_cursors[u] = c
                init = self.var_init(c)
                if init is not None:
                    ctx.locals[u] = init
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

    def stmt(self, c, ctx, parents):
        K = self.K
        k = c.kind
        if k == K.SWITCH_STMT:
            ch = list(c.get_children())
            cond, body = ch[0], ch[-1]
            self.expr(cond, ctx, parents + [c])
            subject = self._guard_subject(cond)
            if subject is None or body.kind != K.COMPOUND_STMT:
                self.stmt(body, ctx, parents + [c])
                return
            all_values = []
            groups = []  # (values, is_default, [stmts])
            for s in body.get_children():
                labels, is_default, inner = self._case_labels(s)
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
                gthen, gelse = self._if_guards(cond)
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

    def _case_labels(self, s):
        K = self.K
        labels, is_default = [], False
        inner = s
        if s.kind not in (K.CASE_STMT, K.DEFAULT_STMT):
            return None, False, None
        while inner is not None and inner.kind in (K.CASE_STMT, K.DEFAULT_STMT):
            ch = list(inner.get_children())
            if inner.kind == K.DEFAULT_STMT:
                is_default = True
                inner = ch[-1] if ch else None
            else:
                v = self.enum_const(ch[0]) if ch else None
                labels.append(v or (self.text(ch[0]) if ch else "?"))
                inner = ch[-1] if len(ch) > 1 else None
        return labels, is_default, inner

    def _guard_subject(self, cond) -> Optional[str]:
        c = self.strip(cond)
        if c.kind == self.K.DECL_REF_EXPR:
            r = c.referenced
            if r is not None and r.kind in (self.K.PARM_DECL, self.K.TEMPLATE_NON_TYPE_PARAMETER):
                return r.spelling
        return None

    def _if_guards(self, cond):
        c = self.strip(cond)
        if c.kind != self.K.BINARY_OPERATOR:
            return None, None
        op = BINOPS.get(self.ci.conf.lib.clang_getCursorBinaryOperatorKind(c))
        if op not in ("==", "!="):
            return None, None
        a, b = list(c.get_children())[:2]
        subj, val = self._guard_subject(a), self.enum_const(b)
        if subj is None:
            subj, val = self._guard_subject(b), self.enum_const(a)
        if subj is None or val is None:
            return None, None
        eq = Guard(subj, (val,), False)
        ne = Guard(subj, (val,), True)
        return (eq, ne) if op == "==" else (ne, eq)

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
        if rk in (K.VAR_DECL, K.PARM_DECL, K.FIELD_DECL, K.TEMPLATE_NON_TYPE_PARAMETER):
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
        args = ch[1:] if ref.kind not in (K.CONSTRUCTOR,) else ch
        if ref.kind == K.CONSTRUCTOR:
            args = ch
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
                self.invocation(c, obj, args, ctx, parents)
                return True
        if ref is not None and ref.kind in (K.VAR_DECL, K.PARM_DECL, K.FIELD_DECL) and self.kernel_type and \
                re.sub(r"^const ", "", self.ref_target(ref.type) or self.canonical(ref.type)) == self.kernel_type:
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
            kind = self._target_kind_by_name(name)
            if kind is None and len(ch) == 10 and ch and self.kernel_type:
                kind = "invocation"
            if kind is not None:
                self.res.untyped.append((loc.path, loc.line, loc.column, kind, name, "Clang could not resolve or type this call"))
            return True
        return False

    def _call_edge(self, c, ref, decl, q, usr, targs, args, ctx, parents, loc):
        """The call edge of a resolved call, its callers entry, and the visit_call event."""
        K = self.K
        # ---- a call edge
        member_call, bound_to, bound_then = None, None, ()
        rr = self.ref_target(ref.result_type) if ref.kind != K.CONSTRUCTOR else None
        if rr:
            member_call, bound_to, bound_then = self._result_use(c, parents, ctx)
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
        if not q.startswith(("std::", "__gnu_cxx::")) and ref.kind != K.CONVERSION_FUNCTION:
            ctx.info.calls.append(edge)
        if len(args) == 9:
            self.res.seen.add((loc.path, loc.line, "call9"))  # a typed nine-argument call that is not a launch
        self.callers.setdefault(usr, []).append((ctx, c))
        for visit in self.on["visit_call"]:
            visit(c, ref, decl, edge, ctx, parents)

    def _result_use(self, c, parents, ctx):
        """What happens to a call's reference result: `.m()` on it, or bound to a local."""
        K = self.K
        par = list(parents)
        while par and par[-1].kind in strip_kinds():
            par.pop()
        if par and par[-1].kind == K.UNARY_OPERATOR and \
                self.ci.conf.lib.clang_getCursorUnaryOperatorKind(par[-1]) == ADDRESS_OF:
            # `holder = &get_x_kernel();` or `auto* holder = &get_x_kernel();`: a pointer bound to the holder
            p = par[-2] if len(par) >= 2 else None
            target = None
            if p is not None and p.kind == K.VAR_DECL:
                target = p
            elif p is not None and p.kind == K.BINARY_OPERATOR:
                ch = list(p.get_children())
                lhs = self.strip(ch[0]) if len(ch) == 2 and ch[1] == par[-1] else None
                if lhs is not None and lhs.kind == K.DECL_REF_EXPR and lhs.referenced is not None and lhs.referenced.kind == K.VAR_DECL:
                    target = lhs.referenced
            if target is not None:
                methods = tuple(m for m, _ in ctx.member_calls.get(target.get_usr(), ()))
                return None, target.spelling, methods
            return None, None, ()
        if par:
            p = par[-1]
            if p.kind == K.MEMBER_REF_EXPR and len(par) >= 2 and par[-2].kind == K.CALL_EXPR:
                return par[-2].spelling, None, ()
            if p.kind == K.VAR_DECL:
                u = p.get_usr()
                methods = tuple(m for m, _ in ctx.member_calls.get(u, ()))
                if self.ref_target(p.type) is not None or True:
                    return None, p.spelling, methods
        return None, None, ()

    def _target_kind_by_name(self, name: str) -> Optional[str]:
        if not name:
            return None
        if any(f.split("::")[-1] == name for f, _ in self.conv.factories):
            return "factory_call"
        if self.conv.selector.split("::")[-1] == name:
            return "selector_call"
        if self.conv.has_port.split("::")[-1] == name:
            return "has_port_call"
        return None

    def invocation(self, c, obj, args, ctx, parents):
        loc = self.loc(c)
        self.res.seen.add((loc.path, loc.line, "invocation"))
        ctx.info.invokes = True
        kernel_refs = sources(self, obj, ctx)
        # template args and inputs are resolved once the whole unit is walked
        # (_finish_invocations): a launch in a header is usually defined before
        # the callers that pass its parameters
        self._pending_invocations.append((c, obj, args, ctx, loc, kernel_refs))

    def _finish_invocations(self):
        for c, obj, args, ctx, loc, kernel_refs in self._pending_invocations:
            targ_expr = args[5] if len(args) > 5 else None
            entries, resolved = (self._template_args(targ_expr, ctx, 0) if targ_expr is not None else ((), False))
            entries = [self._through_callers(e, ctx) for e in entries]
            entries = sorted(entries, key=lambda e: (e.loc.path, e.loc.line, e.loc.column) if e.loc is not None else ("", 0, 0))
            inputs = self._inputs(args[0], ctx) if args else ()
            why = self._incomplete(entries, ctx)
            resolved = resolved and not why
            self.res.invocations.append(RawInvocation(
                loc=loc,
                callee_text=self.text(obj),
                kernel_refs=kernel_refs,
                template_args_text=self.text(targ_expr) if targ_expr is not None else "",
                template_args=tuple(entries),
                template_args_resolved=resolved,
                inputs_text=self.text(args[0]) if args else "",
                inputs=tuple(inputs),
                enclosing_function=ctx.info.qualified_name,
                enclosing_usr=ctx.info.usr,
                in_macro=self.in_macro(c) is not None,
                dtype_checks=self._dtype_checks(ctx),
                unresolved=why,
            ))
        self._pending_invocations = []

    def _incomplete(self, entries, ctx) -> tuple:
        """Why a launch's template args may be incomplete: entries Clang could not type, and Clang
        errors inside the launching function (a statement that did not compile is missing from the AST)."""
        why = []
        untyped = [e.value_text for e in entries if e.untyped]
        if untyped:
            why.append("Clang could not type " + ", ".join(f"`{t}`" for t in untyped)
                       + " (a declaration it depends on did not compile), so whether it is a dtype is unknown")
        ext = ctx.cursor.extent
        rel = self.rel(ext.start.file) if ext.start.file is not None else None
        errors = [(line, msg) for line, msg in self.error_lines.get(rel, ()) if ext.start.line <= line <= ext.end.line]
        if errors and ctx.cursor.kind != self.K.TRANSLATION_UNIT:
            line, msg = errors[0]
            why.append(f"Clang reported {len(errors)} error{'s' if len(errors) > 1 else ''} inside {ctx.info.qualified_name} "
                       f"(first at line {line}: {msg}), and a statement that does not compile is missing from what was read")
        return tuple(why)

    def _untyped(self, v) -> bool:
        TK = self.ci.TypeKind
        t = v.type
        if t.kind in (TK.INVALID, TK.DEPENDENT):
            return True
        return self.canonical(t) in ("", "<dependent type>")

    def _entry(self, e, how, ctx, name_cursor=None, value_cursor=None) -> Optional[TemplateArgEntry]:
        K = self.K
        if name_cursor is None:
            s = self.strip(e)
            parts = None
            if s.kind == K.INIT_LIST_EXPR:
                parts = list(s.get_children())
            elif s.kind == K.CALL_EXPR:
                ch = list(s.get_children())
                if s.spelling in ("make_pair", "pair") or (s.referenced is not None and s.referenced.kind == K.CONSTRUCTOR):
                    parts = [x for x in ch if x.kind not in (K.TYPE_REF, K.NAMESPACE_REF, K.TEMPLATE_REF)]
                    if s.spelling == "make_pair" and parts:
                        parts = parts[1:] if self.strip(parts[0]).kind in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF) and self.strip(parts[0]).spelling == "make_pair" else parts
            elif s.kind == K.DECL_REF_EXPR and s.referenced is not None and s.referenced.kind == K.VAR_DECL:
                # a pair built in a local first: `std::pair<...> p{"T", x.dtype()}; args.push_back(p);`
                init = ctx.locals.get(s.referenced.get_usr())
                if init is not None and self.strip(init).hash != s.hash:
                    return self._entry(init, how, ctx)
            if not parts or len(parts) != 2:
                return TemplateArgEntry(name=None, value_text=self.text(e), is_dtype=False, source_input=None,
                                        from_parameter=False, loc=self.loc(e), how=how)
            name_cursor, value_cursor = parts
        ns = self.strip(name_cursor)
        name = c_string_value(self.text(ns)) if ns.kind == K.STRING_LITERAL else None
        v = self.strip(value_cursor)
        is_dtype, src, from_param, const, param = self._dtype_origin(v, ctx, 0)
        return TemplateArgEntry(name=name, value_text=self.text(value_cursor), is_dtype=is_dtype, source_input=src,
                                from_parameter=from_param, constant=const, loc=self.loc(e if e is not None else value_cursor), how=how,
                                parameter=param, untyped=not is_dtype and self._untyped(v))

    def _is_dtype_type(self, t) -> bool:
        s = self.canonical(t)
        s = re.sub(r"^const ", "", s)
        return s == self.dtype_type or s.endswith("::Dtype") and s.replace("struct ", "") == self.dtype_type

    def _dtype_origin(self, v, ctx, depth):
        """(is_dtype, source input, from parameter, constant, parameter name) of a template-arg value."""
        K = self.K
        is_dtype = self._is_dtype_type(v.type)
        if depth > 5:
            return is_dtype, None, False, False, None
        k = v.kind
        if k in (K.INTEGER_LITERAL, K.CXX_BOOL_LITERAL_EXPR, K.FLOATING_LITERAL):
            return is_dtype, None, False, True, None
        if k == K.CALL_EXPR:
            ch = list(v.get_children())
            if ch and self.strip(ch[0]).kind == K.MEMBER_REF_EXPR and v.spelling == "dtype":
                obj = list(self.strip(ch[0]).get_children())
                if obj:
                    o = self.strip(obj[0])
                    return is_dtype, self.root_name(o) or self.text(o), False, False, None
            ref = v.referenced
            if ref is not None and ref.kind == K.FUNCTION_DECL and v.spelling == "dtype" and len(ch) > 1:
                o = self.strip(ch[1])
                return is_dtype, self.root_name(o) or self.text(o), False, False, None
            return is_dtype, None, False, False, None
        if k == K.DECL_REF_EXPR:
            r = v.referenced
            if r is None:
                return is_dtype, None, False, False, None
            if r.kind == K.PARM_DECL:
                return is_dtype, None, True, False, r.spelling
            if r.kind == K.ENUM_CONSTANT_DECL:
                return is_dtype, None, False, True, None
            if r.kind == K.VAR_DECL:
                init = ctx.locals.get(r.get_usr())
                if init is not None:
                    d, src, fp, const, param = self._dtype_origin(self.strip(init), ctx, depth + 1)
                    return is_dtype or d, src, fp, const, param
                # a namespace-scope constant such as mlx::core::float32
                sp = r.semantic_parent
                if sp is not None and sp.kind in (K.NAMESPACE, K.TRANSLATION_UNIT, K.STRUCT_DECL, K.CLASS_DECL):
                    return is_dtype, None, False, True, None
        if k == K.CONDITIONAL_OPERATOR:
            ch = list(v.get_children())
            a = self._dtype_origin(self.strip(ch[1]), ctx, depth + 1)
            b = self._dtype_origin(self.strip(ch[2]), ctx, depth + 1)
            return is_dtype or a[0] or b[0], a[1] or b[1], a[2] or b[2], a[3] and b[3], a[4] or b[4]
        return is_dtype, None, False, False, None

    def _template_args(self, e, ctx, depth):
        """(entries, resolved) for a template-args expression, in the frame of ``ctx``."""
        K = self.K
        if depth > 4:
            return (), False
        s = self.strip(e)
        elems = self.list_elements(s)
        if elems is not None:
            return tuple(self._entry(x, "inline" if depth == 0 else "helper", ctx) for x in elems), True
        if s.kind == K.DECL_REF_EXPR and s.referenced is not None:
            r = s.referenced
            if r.kind == K.VAR_DECL:
                return self._template_args_var(r.get_usr(), ctx, depth, local=True)
            if r.kind == K.PARM_DECL:
                return self._template_args_param(r, ctx, depth)
        if s.kind == K.MEMBER_REF_EXPR and s.referenced is not None and s.referenced.kind == K.FIELD_DECL:
            return self._template_args_member(s.referenced, ctx, depth)
        if s.kind == K.CALL_EXPR and s.spelling in ("move", "forward") and self.qname(s.referenced or s).startswith("std::"):
            args = [x for x in list(s.get_children())[1:] if x.location.line != 0]
            if len(args) == 1:
                return self._template_args(args[0], ctx, depth)
        if s.kind == K.CALL_EXPR and s.referenced is not None:
            return self._template_args_helper(s, ctx, depth)
        return (), False

    def _template_args_var(self, u, ctx, depth, local):
        """Entries gathered on a vector variable (a local, or a helper's reference parameter)."""
        entries, ok = [], True
        init = ctx.locals.get(u)
        if init is not None:
            sub, sok = self._template_args_init(init, ctx, depth)
            entries += sub
            ok = ok and sok
        for rhs in ctx.assigns.get(u, ()):
            sub, sok = self._template_args(rhs, ctx, depth + 1)
            entries += list(sub)
            ok = ok and sok
        for method, mc in ctx.member_calls.get(u, ()):
            margs = [x for x in list(mc.get_children())[1:]]
            if method == "push_back" and margs:
                entries.append(self._entry(margs[0], "push_back", ctx))
            elif method == "emplace_back":
                if len(margs) == 2:
                    entries.append(self._entry(mc, "emplace_back", ctx, margs[0], margs[1]))
                elif margs:
                    entries.append(self._entry(margs[0], "emplace_back", ctx))
            elif method in ("insert",) and margs:
                sub = self.list_elements(margs[-1])
                if sub is not None:
                    entries += [self._entry(x, "insert", ctx) for x in sub]
                else:
                    entries.append(self._entry(margs[-1], "insert", ctx))
        passed = self._passes(ctx).get(u, ())
        for call, idx in passed:
            sub, sok = self._template_args_out(call, idx, ctx, depth)
            entries += list(sub)
            ok = ok and sok
        if local and init is None and not ctx.member_calls.get(u) and not ctx.assigns.get(u) and not passed:
            # not a local of this function (a global or a member): not followed
            ok = False
        return tuple(entries), ok

    def _template_args_member(self, field, ctx, depth):
        """A template-args data member: its in-class initialiser, constructor initialisers, and what the methods of
        its class defined in this unit assign or add to it. Values named in another method's frame (its parameters
        and locals) are kept as Dtype values of unknown origin."""
        K = self.K
        cls = field.semantic_parent
        if cls is None or depth > 3:
            return (), False
        fu, cu = field.get_usr(), cls.get_usr()

        def is_field(x):
            x = self.strip(x)
            return x.kind == K.MEMBER_REF_EXPR and x.referenced is not None and x.referenced.get_usr() == fu

        def reframe(e, mctx):
            if mctx.info.usr == ctx.info.usr:
                return e
            own = set(mctx.info.params) | {c.spelling for c in mctx.local_cursors.values()}
            if e.source_input in own or e.parameter is not None:
                return _replace(e, source_input=None, parameter=None, from_parameter=e.from_parameter or e.source_input in mctx.info.params)
            return e

        entries, ok = [], True
        init = self.var_init(field)
        if init is not None:
            fctx = Frame(FunctionInfo(usr=f"{cu}#init", name=cls.spelling, qualified_name=self.qname(cls), loc=self.loc(cls)), cls)
            sub, sok = self._template_args_init(init, fctx, depth + 1)
            entries += sub
            ok = ok and sok
        declared = {m.get_usr() for m in cls.get_children() if m.kind in (K.CXX_METHOD, K.CONSTRUCTOR, K.FUNCTION_TEMPLATE)}
        defined = set()
        for usr, m in list(self.fn_cursors.items()):
            sp = m.semantic_parent
            if sp is None or sp.get_usr() != cu:
                continue
            defined.add(usr)
            mctx = self.frame_for(m)
            if mctx is None:
                continue
            found = []
            children = list(m.get_children())
            if m.kind == K.CONSTRUCTOR:
                for i, ch in enumerate(children[:-1]):
                    if ch.kind == K.MEMBER_REF and ch.referenced is not None and ch.referenced.get_usr() == fu:
                        sub, sok = self._template_args_init(children[i + 1], mctx, depth + 1)
                        found += sub
                        ok = ok and sok
            stack = [c for c in children if c.kind == K.COMPOUND_STMT]
            while stack:
                c = stack.pop()
                stack.extend(c.get_children())
                if c.kind == K.CALL_EXPR:
                    ch = list(c.get_children())
                    head = self.strip(ch[0]) if ch else None
                    if c.spelling == "operator=" and len(ch) >= 2 and is_field(ch[0]):
                        sub, sok = self._template_args(ch[-1], mctx, depth + 1)
                        found += sub
                        ok = ok and sok
                    elif head is not None and head.kind == K.MEMBER_REF_EXPR and any(is_field(o) for o in head.get_children()):
                        margs = ch[1:]
                        if c.spelling == "push_back" and margs:
                            found.append(self._entry(margs[0], "push_back", mctx))
                        elif c.spelling == "emplace_back" and len(margs) == 2:
                            found.append(self._entry(c, "emplace_back", mctx, margs[0], margs[1]))
                        elif c.spelling == "emplace_back" and margs:
                            found.append(self._entry(margs[0], "emplace_back", mctx))
                        elif c.spelling == "insert" and margs:
                            sub = self.list_elements(margs[-1])
                            found += [self._entry(x, "insert", mctx) for x in sub] if sub is not None else [self._entry(margs[-1], "insert", mctx)]
                elif c.kind == K.BINARY_OPERATOR and len(list(c.get_children())) == 2:
                    lhs, rhs = list(c.get_children())
                    if is_field(lhs) and BINOPS.get(self.ci.conf.lib.clang_getCursorBinaryOperatorKind(c)) == "=":
                        sub, sok = self._template_args(rhs, mctx, depth + 1)
                        found += sub
                        ok = ok and sok
            entries += [_replace(reframe(e, mctx), how="member" if e.how in ("inline", "initializer", "helper") else e.how) for e in found]
        if declared - defined:
            ok = False  # a method whose body this unit cannot see may change it
        if init is None and not entries:
            ok = False
        return tuple(entries), ok

    def _passes(self, ctx) -> dict:
        """var usr -> [(call, argument index)]: variables passed to functions (read once per function, on demand)."""
        if ctx.passed is not None:
            return ctx.passed
        K = self.K
        ctx.passed = {}
        stack = [ctx.cursor]
        while stack:
            c = stack.pop()
            stack.extend(c.get_children())
            if c.kind != K.CALL_EXPR or c.referenced is None or c.referenced.kind == K.CONSTRUCTOR or c.spelling == "operator()":
                continue
            for i, a in enumerate(list(c.get_children())[1:]):
                a = self.strip(a)
                if a.kind == K.UNARY_OPERATOR and self.text(a).lstrip().startswith("&"):
                    inner = list(a.get_children())
                    a = self.strip(inner[0]) if inner else a
                if a.kind == K.DECL_REF_EXPR and a.referenced is not None and a.referenced.kind in (K.VAR_DECL, K.PARM_DECL):
                    ctx.passed.setdefault(a.referenced.get_usr(), []).append((c, i))
        return ctx.passed

    def _template_args_init(self, init, ctx, depth):
        s = self.strip(init)
        elems = self.list_elements(s)
        if elems is not None:
            return [self._entry(x, "initializer", ctx) for x in elems], True
        sub, ok = self._template_args(init, ctx, depth + 1)
        return list(sub), ok

    def _template_args_param(self, parm, ctx, depth):
        """A template-args parameter: resolve through the callers in this unit, renamed into this frame."""
        idx = ctx.params.get(parm.get_usr())
        usr = ctx.info.usr
        callers = self.callers.get(usr, [])
        if idx is None or not callers:
            return (), False
        entries, ok = [], True
        for cctx, call in callers:
            args = self.call_args(call)
            if idx < len(args):
                sub, sok = self._template_args(args[idx], cctx, depth + 1)
                entries += [_replace(self._to_callee(e, ctx, args), how=e.how or "parameter") for e in sub]
                ok = ok and sok
            else:
                ok = False
        return tuple(entries), ok

    def _to_callee(self, e, callee_ctx, call_args):
        """An entry resolved in a caller's frame, seen from the callee (names are the callee's parameters)."""
        if e.source_input is None and e.parameter is None:
            return e
        name = None
        if e.source_input is not None:
            for j, a in enumerate(call_args):
                if self.root_name(a) == e.source_input and j < len(callee_ctx.info.params):
                    name = callee_ctx.info.params[j]
                    break
        # a dtype of an array the callee does not receive arrives, for the callee, as a parameter value
        return _replace(e, source_input=name, from_parameter=True, parameter=None)

    def _to_caller(self, e, hctx, call_args, cctx):
        """An entry resolved in a helper's frame, seen from the caller that passed ``call_args``."""
        params = hctx.info.params
        if e.source_input is not None and e.source_input in params:
            # an input named by the helper's parameter is the caller's argument
            i = params.index(e.source_input)
            if i < len(call_args):
                a = self.strip(call_args[i])
                e = _replace(e, source_input=self.root_name(a) or self.text(a))
        elif e.parameter is not None and e.parameter in params:
            # a Dtype the helper receives: what the caller passes
            i = params.index(e.parameter)
            if i < len(call_args):
                d, src, fp, const, param = self._dtype_origin(self.strip(call_args[i]), cctx, 0)
                e = _replace(e, is_dtype=e.is_dtype or d, source_input=src, from_parameter=fp, constant=const, parameter=param,
                             untyped=e.untyped and not (e.is_dtype or d))
        return e

    def _through_callers(self, e, ctx):
        """A Dtype parameter of the launching function: the input whose dtype every caller in this unit passes."""
        if e.parameter is None or e.source_input is not None:
            return e
        idx = ctx.info.params.index(e.parameter) if e.parameter in ctx.info.params else None
        callers = self.callers.get(ctx.info.usr, [])
        if idx is None or not callers:
            return e
        names = set()
        for cctx, call in callers:
            args = self.call_args(call)
            if idx >= len(args):
                return e
            d, src, fp, const, param = self._dtype_origin(self.strip(args[idx]), cctx, 0)
            if src is None:
                return e
            mapped = self._to_callee(_replace(e, source_input=src), ctx, args).source_input
            if mapped is None:
                return e
            names.add(mapped)
        return _replace(e, source_input=names.pop()) if len(names) == 1 else e

    def _template_args_helper(self, call, ctx, depth):
        """A helper function that builds and returns the template args."""
        K = self.K
        ref = call.referenced
        d = ref.get_definition() if ref is not None else None
        if d is None:
            return (), False
        hctx = self.frame_for(d)
        if hctx is None:
            return (), False
        entries, ok, found = [], True, False
        call_args = self.call_args(call)
        stack = [d]
        while stack:
            x = stack.pop()
            if x.kind == K.RETURN_STMT:
                ch = list(x.get_children())
                if ch:
                    found = True
                    sub, sok = self._template_args(ch[0], hctx, depth + 1)
                    ok = ok and sok
                    for e in sub:
                        e = self._to_caller(e, hctx, call_args, ctx)
                        entries.append(_replace(e, how="helper" if e.how in ("inline", "initializer") else e.how))
                continue
            if x.kind == K.LAMBDA_EXPR:
                continue
            stack.extend(x.get_children())
        return tuple(entries), ok and found

    def _template_args_out(self, call, idx, ctx, depth):
        """A vector passed to a function that fills it (a non-const reference or pointer parameter)."""
        K = self.K
        TK = self.ci.TypeKind
        ref = call.referenced
        if ref is None:
            return (), False
        if ref.kind not in (K.FUNCTION_DECL, K.CXX_METHOD, K.FUNCTION_TEMPLATE):
            return (), True  # constructors and operators copy or read it
        parms = [p for p in ref.get_children() if p.kind == K.PARM_DECL]
        if idx >= len(parms):
            return (), True  # a variadic tail: read, not filled
        t = parms[idx].type
        if t.kind in (TK.LVALUEREFERENCE, TK.RVALUEREFERENCE, TK.POINTER):
            mutable = not t.get_pointee().is_const_qualified()
        else:
            mutable = False
        if not mutable:
            return (), True  # by value or const reference: the call cannot add entries
        if self.qname(ref).startswith("std::"):
            return (), True  # std::swap and friends are not helpers; swapping is not followed
        d = ref.get_definition()
        if d is None or depth > 3:
            return (), False  # filled by a function whose body this unit cannot see
        hctx = self.frame_for(d)
        if hctx is None:
            return (), False
        dparms = [p for p in d.get_children() if p.kind == K.PARM_DECL]
        if idx >= len(dparms):
            return (), False
        sub, ok = self._template_args_var(dparms[idx].get_usr(), hctx, depth + 1, local=False)
        call_args = self.call_args(call)
        out = []
        for e in sub:
            e = self._to_caller(e, hctx, call_args, ctx)
            out.append(_replace(e, how="helper" if e.how in ("inline", "initializer") else e.how))
        return tuple(out), ok

    def _dtype_checks(self, ctx) -> tuple:
        """Pairs of arrays whose dtypes the function compares (``a.dtype() != x.dtype()``)."""
        K = self.K
        out = set()
        stack = [ctx.cursor]
        while stack:
            c = stack.pop()
            stack.extend(c.get_children())
            ops = None
            if c.kind == K.CALL_EXPR and c.spelling in ("operator==", "operator!="):
                ops = [x for x in c.get_children() if not (self.strip(x).kind == K.DECL_REF_EXPR and self.strip(x).spelling.startswith("operator"))]
            elif c.kind == K.BINARY_OPERATOR and BINOPS.get(self.ci.conf.lib.clang_getCursorBinaryOperatorKind(c)) in ("==", "!="):
                ops = list(c.get_children())
            if not ops or len(ops) != 2:
                continue
            a, b = (self.strip(x) for x in ops)
            if not (self._is_dtype_type(a.type) and self._is_dtype_type(b.type)):
                continue
            sa = self._dtype_origin(a, ctx, 0)[1]
            sb = self._dtype_origin(b, ctx, 0)[1]
            if sa and sb and sa != sb:
                out.add(tuple(sorted((sa, sb))))
        return tuple(sorted(out))

    def _param_follows(self, parm, ctx, depth) -> tuple:
        """An array parameter whose every caller in this unit passes an array following another parameter's."""
        idx = ctx.params.get(parm.get_usr())
        callers = self.callers.get(ctx.info.usr, [])
        if idx is None or not callers or depth > 3:
            return ()
        common = None
        for cctx, call in callers:
            args = self.call_args(call)
            if idx >= len(args):
                return ()
            names = set(self._dtype_follows(args[idx], cctx, depth + 2))
            mapped = set()
            for j, a in enumerate(args):
                if j != idx and self.root_name(a) in names and j < len(ctx.info.params):
                    mapped.add(ctx.info.params[j])
            common = mapped if common is None else common & mapped
            if not common:
                return ()
        return tuple(sorted(common or ()))

    def _dtype_follows(self, s, ctx, depth=0) -> tuple:
        """Arrays whose dtype an input's equals: the variables it is copied from, the array it is cast to the dtype of."""
        K = self.K
        s = self.strip(s)
        if depth > 5:
            return ()
        if s.kind == K.DECL_REF_EXPR and s.referenced is not None:
            r = s.referenced
            out = (r.spelling,)
            if r.kind == K.VAR_DECL:
                init = ctx.locals.get(r.get_usr())
                if init is not None:
                    out += self._dtype_follows(init, ctx, depth + 1)
            elif r.kind == K.PARM_DECL:
                out += self._param_follows(r, ctx, depth)
            return out
        if s.kind == K.CALL_EXPR:
            args = [a for a in self.call_args(s) if a.location.line != 0]
            if s.spelling == "astype":
                if len(args) >= 2:
                    # the array whose dtype it is cast to, or the Dtype parameter it is cast to
                    _, src, _, const, param = self._dtype_origin(self.strip(args[1]), ctx, 0)
                    return tuple(n for n in (src, param) if n and not const)
                return ()
            if s.referenced is not None and s.referenced.kind == K.CONSTRUCTOR and len(args) == 1:
                return self._dtype_follows(args[0], ctx, depth + 1)  # a copy
            if args and s.referenced is not None and self.qname(s.referenced) in _SAME_DTYPE_OPS:
                return self._dtype_follows(args[0], ctx, depth + 1)  # reshape(a, ...) has a's dtype
            # an array made at a given dtype (zeros(shape, dt), full(shape, v, dt), array(v, dt))
            dts = [self.strip(a) for a in args if self._is_dtype_type(self.strip(a).type)]
            if len(dts) == 1:
                _, src, _, const, param = self._dtype_origin(dts[0], ctx, 0)
                return tuple(n for n in (src, param) if n and not const)
            return ()
        if s.kind == K.CONDITIONAL_OPERATOR:
            ch = list(s.get_children())
            if len(ch) == 3:  # `c ? astype(b, T) : zeros({1}, T)`: what both branches follow
                a, b = self._dtype_follows(ch[1], ctx, depth + 1), self._dtype_follows(ch[2], ctx, depth + 1)
                return tuple(n for n in a if n in b)
            return ()
        if s.kind == K.MEMBER_REF_EXPR and s.referenced is not None and s.referenced.kind == K.FIELD_DECL:
            return (self.text(s),)  # a wrapper's array member (`w.inner`), named as `w.inner.dtype()` names it
        return ()

    def _launch_output_dtype(self, s, ctx) -> Optional[str]:
        """`out[i]` where `out` is a local holding a kernel launch's results whose output dtypes are constants."""
        K = self.K
        ch = [self.strip(x) for x in s.get_children()]
        obj = next((x for x in ch if x.kind == K.DECL_REF_EXPR and x.referenced is not None
                    and x.referenced.kind == K.VAR_DECL), None)
        init = ctx.locals.get(obj.referenced.get_usr()) if obj is not None else None
        if init is None or ctx.assigns.get(obj.referenced.get_usr()):
            return None
        call = self.strip(init)
        cch = list(call.get_children())
        if call.kind != K.CALL_EXPR or call.spelling != "operator()" or not cch or not self.kernel_type or \
                re.sub(r"^const ", "", self.canonical(cch[0].type)) != self.kernel_type:
            return None
        args = [x for x in cch[1:] if not (x.kind in (K.DECL_REF_EXPR, K.UNEXPOSED_EXPR) and x.spelling == "operator()")]
        elems = self.list_elements(args[2]) if len(args) > 2 else None
        consts = [self._dtype_const(x) for x in elems or ()]
        if not consts or None in consts:
            return None
        index = next((x for x in ch[1:] if x.kind == K.INTEGER_LITERAL), None)
        if index is not None:
            i = "".join(t.spelling for t in index.get_tokens()).rstrip("uUlL")
            if i.isdigit() and int(i) < len(consts):
                return consts[int(i)]
        return consts[0] if len(set(consts)) == 1 else None

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

    def _inputs(self, e, ctx):
        K = self.K
        s = self.strip(e)
        elems = self.list_elements(s)
        if elems is None and s.kind == K.DECL_REF_EXPR and s.referenced is not None:
            u = s.referenced.get_usr()
            init = ctx.locals.get(u)
            elems = self.list_elements(init) if init is not None else None
            elems = list(elems or [])
            for method, mc in ctx.member_calls.get(u, ()):
                if method in ("push_back", "emplace_back"):
                    elems += list(mc.get_children())[1:2]
            if not elems:
                return (InputArray(text=self.text(e), name=None, dtype_fixed=None, how="unresolved"),)
        if elems is None:
            return (InputArray(text=self.text(e), name=None, dtype_fixed=None, how="unresolved"),)
        inputs = [self._input(x, ctx) for x in elems]
        checked = self._dtype_const_checks(ctx) if any(i.dtype_fixed is not True for i in inputs) else {}
        for n, i in enumerate(inputs):
            # the input itself, or an array whose dtype it has (a copy of the checked one)
            const = next((checked[n] for n in (i.name or i.text,) + tuple(i.dtype_follows) if n in checked), None)
            if i.dtype_fixed is not True and const:
                inputs[n] = InputArray(text=i.text, name=i.name, dtype_fixed=True, fixed_dtype=const, how="checked",
                                       dtype_follows=i.dtype_follows)
        return tuple(inputs)

    def _dtype_const_checks(self, ctx) -> dict:
        """Arrays the function refuses unless they have one constant dtype:
        ``if (a.dtype() != mlx::core::int32) throw ...;`` (alone or among ``||``-joined tests)."""
        K = self.K
        lib = self.ci.conf.lib
        out = {}
        stack = [ctx.cursor]
        while stack:
            c = stack.pop()
            stack.extend(c.get_children())
            if c.kind != K.IF_STMT:
                continue
            ch = list(c.get_children())
            if len(ch) < 2 or not self.has_throw(ch[1]):
                continue
            leaves, todo = [], [ch[0]]
            while todo:
                x = self.strip(todo.pop())
                if x.kind == K.BINARY_OPERATOR and BINOPS.get(lib.clang_getCursorBinaryOperatorKind(x)) == "||":
                    todo.extend(x.get_children())
                else:
                    leaves.append(x)
            for x in leaves:
                if x.kind == K.CALL_EXPR and x.spelling == "operator!=":
                    ops = [o for o in x.get_children() if not (self.strip(o).kind == K.DECL_REF_EXPR and self.strip(o).spelling.startswith("operator"))]
                elif x.kind == K.BINARY_OPERATOR and BINOPS.get(lib.clang_getCursorBinaryOperatorKind(x)) == "!=":
                    ops = list(x.get_children())
                else:
                    continue
                if len(ops) != 2:
                    continue
                for a, b in ((ops[0], ops[1]), (ops[1], ops[0])):
                    const = self._dtype_const(b)
                    a = self.strip(a)
                    if const and self._is_dtype_type(a.type):
                        src = self._dtype_origin(a, ctx, 0)[1]
                        if src:
                            out.setdefault(src, const)
        return out

    def _input(self, x, ctx) -> InputArray:
        s = self.strip(x)
        name = self.root_name(s)
        fixed, dt, how = self._fixed_dtype(s, ctx, 0)
        follows = tuple(n for n in dict.fromkeys(self._dtype_follows(s, ctx)) if n not in (name, self.text(x), self.text(s)))
        return InputArray(text=self.text(x), name=name, dtype_fixed=fixed, fixed_dtype=dt, how=how, dtype_follows=follows)

    def _dtype_const(self, a) -> Optional[str]:
        a = self.strip(a)
        K = self.K
        if a.kind == K.DECL_REF_EXPR and a.referenced is not None and a.referenced.kind == K.VAR_DECL and self._is_dtype_type(a.type):
            sp = a.referenced.semantic_parent
            if sp is not None and sp.kind in (K.NAMESPACE, K.TRANSLATION_UNIT, K.STRUCT_DECL, K.CLASS_DECL):
                return a.referenced.spelling
        return None

    def _fixed_dtype(self, s, ctx, depth):
        K = self.K
        if depth > 5:
            return None, None, ""
        if s.kind == K.CONDITIONAL_OPERATOR:
            ch = list(s.get_children())
            if len(ch) == 3:
                a = self._fixed_dtype(self.strip(ch[1]), ctx, depth + 1)
                b = self._fixed_dtype(self.strip(ch[2]), ctx, depth + 1)
                if a[0] is True and b[0] is True and a[1] == b[1]:
                    return True, a[1], a[2]
                return (False if False in (a[0], b[0]) else None), None, "conditional"
        if s.kind == K.CALL_EXPR and s.spelling == "operator[]":
            fixed = self._launch_output_dtype(s, ctx)
            if fixed:
                return True, fixed, "launch output"
        if s.kind == K.DECL_REF_EXPR and s.referenced is not None:
            r = s.referenced
            if r.kind == K.PARM_DECL:
                return False, None, "parameter"
            init = ctx.locals.get(r.get_usr())
            if init is not None:
                return self._fixed_dtype(self.strip(init), ctx, depth + 1)
            return None, None, "unresolved"
        if s.kind == K.CALL_EXPR:
            ch = list(s.get_children())
            args = ch[1:] if s.referenced is not None and s.referenced.kind != K.CONSTRUCTOR else ch
            if s.spelling == "astype":
                for a in args:
                    d = self._dtype_const(a)
                    if d:
                        return True, d, "astype"
                return False, None, "astype"
            consts = [d for d in (self._dtype_const(a) for a in args) if d]
            if consts:
                return True, consts[0], "constructed"
            op = self.qname(s.referenced) if s.referenced is not None and s.referenced.kind == K.FUNCTION_DECL else ""
            if op in _FIXED_RESULT_OPS:
                return True, _FIXED_RESULT_OPS[op], "op"
            if op == _RANDOM_BITS:
                width = self.strip(args[1]) if len(args) > 1 and args[1].location.line != 0 else None
                if width is None:
                    return True, "uint32", "op"
                if width.kind == K.INTEGER_LITERAL:
                    w = "".join(t.spelling for t in width.get_tokens()).rstrip("uUlL")
                    if w in ("1", "2", "4"):
                        return True, f"uint{8 * int(w)}", "op"
            if s.referenced is not None and s.referenced.kind == K.CONSTRUCTOR:
                real = [self.strip(a) for a in args if a.location.line != 0]
                if len(real) == 1 and real[0].kind in (K.INTEGER_LITERAL, K.FLOATING_LITERAL, K.CXX_BOOL_LITERAL_EXPR):
                    return True, None, "scalar"
                # an array built from one C++ scalar has that scalar's fixed dtype
                if len(real) == 1 and real[0].type.get_canonical().kind.name in _ARITHMETIC:
                    return True, None, "scalar"
                # ... and so has one built from a braced list of C++ scalars
                if len(real) == 1 and real[0].kind == K.INIT_LIST_EXPR and all(
                        self.strip(x).type.get_canonical().kind.name in _ARITHMETIC for x in real[0].get_children()):
                    return True, None, "scalar"
                if len(real) == 1:
                    return self._fixed_dtype(real[0], ctx, depth + 1)
            return None, None, "call"
        if s.kind in (K.INTEGER_LITERAL, K.FLOATING_LITERAL):
            return True, None, "scalar"
        return None, None, ""


def _replace(entry, **kw):
    import dataclasses

    return dataclasses.replace(entry, **kw)

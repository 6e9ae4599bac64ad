"""What a backend test's outcome decides: the code that is control or data dependent on it (KP101, SPEC §3).

A query over the shared context (``w``, the walk), asked by the backend-test
extractor for each runtime test once the unit is walked. From the test, the
outcome is followed as a value: through ``!``, ``&&``/``||``, comparisons and
arithmetic, into locals, structured bindings and members (each of their uses
is followed in turn), into the parameters of functions whose body the unit
holds, out of a function through ``return`` to its callers in the unit, and
out of a lambda to the calls of the local it is bound to. Where the value
becomes a condition (``if``, loops, ``switch``, a ternary, the right side of
``&&``/``||``), the statements it governs are the region it decides: the
branches, and when a branch can leave the function (``return``, ``throw``,
``break``, ``continue``, ``goto``) everything after the statement to the end
of the function; values assigned in a region are followed too.

The answer is a tuple of effects, each a tuple of strings:

* ``("kernel", what, place)``: a launch, a selector call or a factory call of
  the unit in a decided region, or the outcome given to the selector or a
  factory as an argument;
* ``("call", usr, name)``: a function called in a decided region (the index
  knows whether it reaches a kernel construct, in any unit);
* ``("arg", usr, name)``: the outcome given to a function whose body this unit
  does not hold;
* ``("returned", usr, name)``: the outcome returned by a function that other
  units may call;
* ``("unknown", why)``: a place the value could not be followed (a lambda
  not bound to a local, the step budget); a rule fails closed on it.

A value given to a function that is not followed (MLX's operations, the
standard library) decides what that function computes, not which kernel runs:
its result is not followed further.
"""

from __future__ import annotations

from kernel_ports.frontend.clang.context import strip_kinds
from kernel_ports.frontend.clang.toolchain import BINOPS

STEPS = 400  # value places followed per test before the answer is "unknown" (fail closed)
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}


class Decisions:
    """The effects of each backend test of one unit (see the module docstring)."""

    def __init__(self, w, sites: list, kernel_events: list, callee_names: dict):
        self.w = w
        self.uses: dict = {}  # decl usr -> [(cursor, parents, frame)]
        self.calls_of: dict = {}  # callee usr -> [(call cursor, parents, frame)]
        calls_in: dict = {}  # frame usr -> [(call cursor, ("call", callee usr, its name))]
        uses, calls_of = self.uses, self.calls_of
        for kind, key, c, parents, ctx in sites:
            if kind == "use":
                uses.setdefault(key, []).append((c, parents, ctx))
                continue
            calls_of.setdefault(key, []).append((c, parents, ctx))
            name = callee_names.get(key, "")
            if name and not name.startswith(("std::", "__gnu_cxx::")):  # the standard library reaches no kernel
                calls_in.setdefault(ctx.info.usr, []).append((c, ("call", key, name)))
        self.events: dict = {}  # frame usr -> [(cursor, effect)]: its kernel events, then the calls it makes
        for c, effect, ctx in kernel_events:
            self.events.setdefault(ctx.info.usr, []).append((c, effect))
        for usr, calls in calls_in.items():
            self.events.setdefault(usr, []).extend(calls)
        self._places: dict = {}  # id of an event cursor -> (file name, offset)

    def of_test(self, c, parents: list, ctx) -> tuple:
        """The effects of the test of the backend value used at ``c`` (with ``parents`` above it), in frame ``ctx``:
        the value is followed from there, through the test, to what the outcome decides."""
        self.effects: dict = {}
        self.seen: set = set()
        self.work = [(c, list(parents), ctx)]
        self.steps = 0
        while self.work and not self._decided():
            if self.steps >= STEPS:
                self.effects[("unknown", "more value places than the analysis follows")] = None
                break
            self.steps += 1
            self._flow(*self.work.pop())
        kernels = tuple(e for e in self.effects if e[0] == "kernel")
        return kernels[:1] or tuple(self.effects)  # one kernel construct decided says it all

    def _decided(self) -> bool:
        return any(e[0] in ("kernel", "unknown") for e in self.effects)

    # ------------------------------------------------------------------ value flow
    def _flow(self, node, parents, ctx):
        """One step up from a place that holds an outcome-derived value."""
        w = self.w
        K = w.K
        key = (node.hash, ctx.info.usr)
        if key in self.seen:
            return
        self.seen.add(key)
        par = list(parents)
        while par and par[-1].kind in strip_kinds():
            node = par.pop()
        if not par:
            return
        p = par[-1]
        up = par[:-1]
        k = p.kind
        if k == K.BINARY_OPERATOR:
            self._binary(p, node, up, ctx)
        elif k == K.UNARY_OPERATOR or k == K.INIT_LIST_EXPR:
            self.work.append((p, up, ctx))
        elif k == K.CONDITIONAL_OPERATOR:
            ch = list(p.get_children())
            if ch and ch[0] == node:
                self._region(ch[1:], p, ctx, continuation=False)
            self.work.append((p, up, ctx))
        elif k in (K.IF_STMT, K.WHILE_STMT, K.DO_STMT, K.FOR_STMT, K.SWITCH_STMT):
            self._control(p, node, ctx)
        elif k == K.VAR_DECL:
            self._follow_decl(p.get_usr())
        elif k == K.UNEXPOSED_DECL:
            for b in (w.decomposition(p) or ((), None))[0]:
                self._follow_decl(b.get_usr())
        elif k == K.RETURN_STMT:
            self._returned(par, ctx)
        elif k == K.CALL_EXPR:
            self._call(p, node, up, ctx)
        elif k == K.MEMBER_REF and p.referenced is not None or k == K.FIELD_DECL:
            self._follow_decl((p.referenced if k == K.MEMBER_REF else p).get_usr())
        elif k == K.CONSTRUCTOR:
            self._member_initialiser(p, node)
        elif k.is_expression():
            self.work.append((p, up, ctx))
        # a statement that drops the value (an expression statement, a declaration list) decides nothing

    def _binary(self, p, node, up, ctx):
        w = self.w
        op = BINOPS.get(w.ci.conf.lib.clang_getCursorBinaryOperatorKind(p))
        ch = list(p.get_children())
        if op in _ASSIGN:
            if len(ch) == 2 and ch[1] == node:
                lhs = w.strip(ch[0])
                if lhs.referenced is not None:
                    self._follow_decl(lhs.referenced.get_usr())
            return
        if op in ("&&", "||") and len(ch) == 2 and ch[0] == node:
            self._region([ch[1]], p, ctx, continuation=False)  # the right side runs or not by the outcome
        self.work.append((p, up, ctx))

    def _call(self, p, node, up, ctx):
        w = self.w
        K = w.K
        ch = list(p.get_children())
        ref = p.referenced
        if ch and ch[0] == node:
            if p.spelling == "operator()":
                self.work.append((p, up, ctx))  # a lambda or functor called: its result
            return
        if ref is None:
            self.effects[("unknown", f"given to a call Clang could not resolve at line {p.location.line}")] = None
            return
        if p.spelling.startswith("operator") and ref.kind in (K.CXX_METHOD, K.FUNCTION_DECL) and p.spelling != "operator()":
            self.work.append((p, up, ctx))  # an overloaded operator (==, !, &&) on the value
            return
        q = w.qname(ref)
        if q == w.conv.selector or any(f == q for f, _ in w.conv.factories):
            self.effects[("kernel", f"argument of {q}", str(w.loc(p)))] = None
            return
        args = w.call_args(p)
        index = next((i for i, a in enumerate(args) if a == node), None)
        d = ref.get_definition()
        params = [x for x in d.get_children() if x.kind == K.PARM_DECL] if d is not None else []
        if index is not None and index < len(params) and d.get_usr() in w.fn_cursors:
            self._follow_decl(params[index].get_usr())
        elif not q.startswith("std::"):
            self.effects[("arg", ref.get_usr(), q)] = None

    def _member_initialiser(self, ctor, node):
        prev = None
        for ch in ctor.get_children():
            if ch == node:
                if prev is not None and prev.kind == self.w.K.MEMBER_REF and prev.referenced is not None:
                    self._follow_decl(prev.referenced.get_usr())
                return
            prev = ch

    def _follow_decl(self, usr: str):
        if ("decl", usr) in self.seen:
            return
        self.seen.add(("decl", usr))
        for c, parents, ctx in self.uses.get(usr, ()):
            self.work.append((c, parents, ctx))

    def _returned(self, par, ctx):
        """The value leaves a lambda (to the calls of the local it is bound to) or the function (to its callers)."""
        w = self.w
        K = w.K
        lam = next((i for i in range(len(par) - 1, -1, -1) if par[i].kind == K.LAMBDA_EXPR), None)
        if lam is not None:
            holder = next((x for x in reversed(par[:lam]) if x.kind not in strip_kinds()), None)
            if holder is not None and holder.kind == K.VAR_DECL:
                self._follow_decl(holder.get_usr())  # its uses as a callee reach _call's operator() case
            else:
                self.effects[("unknown", f"returned from a lambda at line {par[lam].location.line} not bound to a local")] = None
            return
        fn = ctx.cursor
        for call, parents, cctx in self.calls_of.get(fn.get_usr(), ()):
            self.work.append((call, parents, cctx))
        if fn.linkage != w.ci.LinkageKind.INTERNAL:
            self.effects[("returned", ctx.info.usr, ctx.info.qualified_name)] = None

    # ------------------------------------------------------------------ control
    def _control(self, stmt, condition, ctx):
        """The statements a condition governs: every child of the statement but the condition itself."""
        self._region([x for x in stmt.get_children() if condition is None or x != condition], stmt, ctx,
                     continuation=True)

    def _region(self, parts: list, owner, ctx, continuation: bool):
        w = self.w
        if not parts:
            return
        ranges = [_extent(x) for x in parts]
        if continuation and any(_may_leave(w, x) for x in parts):
            end = _extent(ctx.cursor)
            ranges.append((ranges[0][0], _extent(owner)[2], end[2]))  # what follows the statement
        for c, effect in self.events.get(ctx.info.usr, ()):
            place = self._places.get(id(c))
            if place is None:
                start = c.extent.start
                place = self._places[id(c)] = (self.w.file_name(start.file) if start.file else "", start.offset)
            if any(f == place[0] and a <= place[1] < b for f, a, b in ranges):
                self.effects[effect] = None
        for x in parts:
            self._assigned_in(x, ctx)

    def _assigned_in(self, part, ctx):
        """Values written in a decided region depend on the outcome: their variables are followed, and a
        ``return`` there returns a value decided by it."""
        w = self.w
        K = w.K
        stack = [(part, [])]
        while stack:
            x, par = stack.pop()
            if x.kind == K.LAMBDA_EXPR:
                continue
            if x.kind == K.BINARY_OPERATOR and BINOPS.get(w.ci.conf.lib.clang_getCursorBinaryOperatorKind(x)) in _ASSIGN:
                lhs = w.strip(next(iter(x.get_children())))
                if lhs.referenced is not None:
                    self._follow_decl(lhs.referenced.get_usr())
            elif x.kind == K.RETURN_STMT and any(True for _ in x.get_children()):
                self._returned(par + [x], ctx)
            stack.extend((ch, par + [x]) for ch in x.get_children())


def _extent(c) -> tuple:
    ext = c.extent
    start, end = ext.start, ext.end
    return (start.file.name if start.file else "", start.offset, end.offset)


def _may_leave(w, stmt) -> bool:
    """The statement can leave the enclosing block early (so what follows it runs by the outcome)."""
    K = w.K
    leaving = (K.RETURN_STMT, K.CXX_THROW_EXPR, K.BREAK_STMT, K.CONTINUE_STMT, K.GOTO_STMT)
    stack = [stmt]
    while stack:
        x = stack.pop()
        if x.kind in leaving:
            return True
        if x.kind != K.LAMBDA_EXPR:
            stack.extend(x.get_children())
    return False

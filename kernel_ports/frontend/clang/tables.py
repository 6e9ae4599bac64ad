"""Port tables and holders (KP103, KP105, KP301-KP305): each table, its slots, their accessors and holders.

Events: ``visit_function`` (a function returning the registry's table type by
reference and holding a static table built with designated (or positional)
initialisers is a port table; each non-null slot's getter lambda is walked as
a function of its own, so the calls and factory calls in it are the slot's),
``visit_call`` (a holder reached through an accessor outside a slot: the
accessor's reference result with ``.get()`` on it, bound to a local, or the
kernel itself).
"""

from __future__ import annotations

import re
from typing import Optional

from kernel_ports.facts import DAMAGED_TABLE
from kernel_ports.frontend.clang.context import Extractor, Frame
from kernel_ports.frontend.clang.model import CallEdge, FunctionInfo, RawHolderAccess, RawSlot, RawTable


class PortTables(Extractor):
    """Port tables with their slots, and holder accesses."""

    def visit_function(self, c, ctx, body):
        K = self.walk.K
        if c.kind in (K.FUNCTION_DECL, K.CXX_METHOD, K.FUNCTION_TEMPLATE):
            self._table(c, ctx, body)

    def visit_call(self, c, ref, decl, edge, ctx, parents):
        """An accessor's holder reached by a call (in a slot or not: the index tells them apart)."""
        w = self.walk
        K = w.K
        rr, q, member_call, bound_to, bound_then = edge.returns_ref, edge.callee, edge.member_call, edge.bound_to, edge.bound_then
        if rr and not q.startswith("std::") and q != w.conv.selector and ref.kind == K.FUNCTION_DECL \
                and (member_call or bound_to or rr == w.kernel_type):
            w.res.holder_accesses.append(RawHolderAccess(
                kind="accessor_get" if member_call else ("bound_ref_get" if bound_to else "accessor_call"),
                accessor=edge.spelling, accessor_usr=edge.callee_usr, method=member_call or (bound_then[0] if bound_then else None),
                loc=edge.loc, in_table_slot=ctx.slot is not None, enclosing_function=ctx.info.qualified_name,
                enclosing_usr=ctx.info.usr, in_macro=w.in_macro(c) is not None))

    def _table(self, fn, ctx, body):
        """A function returning ``const KernelPorts&`` built from a static table variable."""
        w = self.walk
        K = w.K
        ref = ctx.info.returns_ref
        if not ref or not w.table_type or ref != w.table_type:
            return
        for x in body.walk_preorder():
            if x.kind != K.VAR_DECL:
                continue
            if re.sub(r"^const ", "", w.canonical(x.type)) != w.table_type:
                continue
            init = w.var_init(x)
            if init is None:
                continue
            s = w.strip(init)
            if s.kind != K.INIT_LIST_EXPR:
                continue
            slots = {b: None for b in w.conv.backends}
            any_wave = False
            for pos, item in enumerate(s.get_children()):
                fieldname, value = self._designated(item, pos)
                if fieldname is None:
                    continue
                if fieldname == "rocm_any_wave_size":
                    v = w.strip(value)
                    any_wave = v.kind == K.CXX_BOOL_LITERAL_EXPR and w.text(v).strip() == "true"
                    continue
                if fieldname in slots:
                    slots[fieldname] = self._slot(fieldname, value, ctx)
            loc = w.loc(x)
            w.res.seen.add((loc.path, loc.line, "port_table"))
            w.res.tables.append(RawTable(name=fn.spelling, qualified_name=ctx.info.qualified_name, usr=ctx.info.usr,
                                         loc=w.loc(fn), variable=x.spelling, slots=slots, rocm_any_wave_size=any_wave))
            self._damage(fn, s)

    def _damage(self, fn, init) -> None:
        """A KP902 at the first Clang error inside a table's initialiser: the slots read from it are Clang's
        recovery, not necessarily what the code says."""
        w = self.walk
        start, end = init.extent.start, init.extent.end
        rel = w.rel(start.file) if start.file is not None else None
        inside = sorted(line for line, _ in w.error_lines.get(rel, ()) if start.line <= line <= end.line)
        if not inside:
            return
        line = inside[0]
        item = next((ch for ch in init.get_children() if ch.extent.start.line <= line <= ch.extent.end.line), None)
        column = item.extent.start.column if item is not None and item.extent.start.line == line else 1
        w.res.untyped.append((rel, line, column, DAMAGED_TABLE, fn.spelling,
                              "Clang reported an error inside its initialiser and recovered it by guessing, so which "
                              "slot holds which getter is not known"))

    def _designated(self, item, pos):
        w = self.walk
        K = w.K
        ch = list(item.get_children())
        if item.kind == K.UNEXPOSED_EXPR and len(ch) == 2 and ch[0].kind == K.MEMBER_REF:
            return ch[0].spelling, ch[1]
        # positional initialisation: field order of KernelPorts (metal, cuda, rocm, rocm_any_wave_size)
        order = list(w.conv.backends) + ["rocm_any_wave_size"]
        if pos < len(order):
            return order[pos], item
        return None, None

    def _slot(self, backend, value, tctx) -> Optional[RawSlot]:
        w = self.walk
        K = w.K
        s = w.strip(value)
        if s.kind in (K.CXX_NULL_PTR_LITERAL_EXPR, K.GNU_NULL_EXPR, K.INTEGER_LITERAL):
            return None
        loc = w.loc(value)
        slot_id = f"{loc}#{backend}"
        lam = None
        fn_ref = None
        for x in value.walk_preorder():
            if x.kind == K.LAMBDA_EXPR:
                lam = x
                break
            if x.kind == K.DECL_REF_EXPR and x.referenced is not None and x.referenced.kind == K.FUNCTION_DECL:
                fn_ref = x.referenced
                break
        info = FunctionInfo(usr=slot_id, name=f"{tctx.info.name}.{backend}", qualified_name=f"{tctx.info.qualified_name}.{backend}", loc=loc)
        sctx = Frame(info, lam)
        sctx.slot = slot_id
        sctx.params = {}
        if lam is not None:
            w.slot_lambdas.add(lam.hash)
            body = next((ch for ch in lam.get_children() if ch.kind == K.COMPOUND_STMT), None)
            if body is not None:
                w.prescan(body, sctx)
                w.stmt(body, sctx, [lam])
        elif fn_ref is not None:
            d = fn_ref.get_definition() or fn_ref
            info.calls.append(CallEdge(d.get_usr(), w.qname(d), fn_ref.spelling, loc, (), (), ()))
        # the accessor: the call whose result the getter takes `.get()` of, or a
        # free function returning the kernel itself
        acc = next((e for e in info.calls if e.member_call and e.returns_ref), None)
        if acc is None:
            acc = next((e for e in info.calls if e.returns_ref and not e.is_method), None)
        if acc is None and info.calls:
            acc = next((e for e in info.calls if not e.is_method), info.calls[0])
        return RawSlot(
            backend=backend,
            text=w.text(value),
            loc=loc,
            slot_id=slot_id,
            accessor=acc.spelling if acc else None,
            accessor_usr=acc.callee_usr if acc else None,
            accessor_function=acc.callee if acc else None,
            accessor_targs=acc.targs if acc else (),
            holder_type=acc.returns_ref if acc else None,
            edges=list(info.calls),
            factory_calls=[fc for fc, _ in info.factory_calls],
            getter_function_usr=fn_ref.get_usr() if fn_ref is not None else None,
        )

"""Where a value comes from: the value refs of an expression, which the index resolves across units.

A query over the shared context (``w``, the walk), used by every part that
records where a value comes from: call-edge arguments and returned values (the
walk), the table a selector call is given, the kernel a launch calls, the tables
``has_kernel_port`` is asked about, the values a parameter is given.
"""

from __future__ import annotations

from kernel_ports.frontend.clang.toolchain import ADDRESS_OF


def sources(w, e, ctx, depth=0, shallow=False) -> frozenset:
    """Where a value comes from, as refs the index can resolve across TUs.

    ('selector', loc) a select_kernel_port result; ('table', name, usr) a
    port-table function's result; ('call', usr, qname, spelling) another
    function's result; ('param', index) the enclosing function's parameter;
    ('const', enumerator); ('query', qname); ('accessor', usr, spelling);
    ('unknown', text).
    """
    K = w.K
    if e is None or depth > 6:
        return frozenset({("unknown", "")})
    s = w.strip(e)
    k = s.kind
    if k == K.CONDITIONAL_OPERATOR:
        ch = list(s.get_children())
        return sources(w, ch[1], ctx, depth + 1, shallow) | sources(w, ch[2], ctx, depth + 1, shallow)
    if k == K.CALL_EXPR:
        ref, _ = w.callee(s)
        if ref is None:
            return frozenset({("unknown", w.text(s)[:80])})
        q = w.qname(ref)
        if q == w.conv.selector:
            return frozenset({("selector", str(w.loc(s)))})
        if q in w.conv.backend_queries:
            return frozenset({("query", q)})
        rr = w.ref_target(ref.result_type)
        if rr is not None and w.table_type and rr == w.table_type:
            return frozenset({("table", ref.spelling, ref.get_usr())})
        if ref.kind == K.CXX_METHOD and s.spelling in ("get", "operator*"):
            ch = list(s.get_children())
            inner = list(ch[0].get_children()) if ch and ch[0].kind == K.MEMBER_REF_EXPR else []
            if inner:
                innr = w.strip(inner[0])
                if innr.kind == K.CALL_EXPR and innr.referenced is not None:
                    return frozenset({("accessor", innr.referenced.get_usr(), w.callee_spelling(innr))})
                bound = _bound_accessors(w, innr, ctx)
                if bound:
                    return bound
        tmpl = w.ci.conf.lib.clang_getSpecializedCursorTemplate(ref)
        d = tmpl if tmpl is not None and not tmpl.kind.is_invalid() else ref
        if rr is not None and w.kernel_type and rr == w.kernel_type:
            return frozenset({("call", d.get_usr(), w.qname(d), w.callee_spelling(s))})
        return frozenset({("call", d.get_usr(), w.qname(d), w.callee_spelling(s))})
    if k == K.DECL_REF_EXPR:
        r = s.referenced
        if r is None:
            return frozenset({("unknown", w.text(s))})
        if r.kind == K.ENUM_CONSTANT_DECL:
            return frozenset({("const", r.spelling)})
        if r.kind == K.PARM_DECL:
            idx = ctx.params.get(r.get_usr())
            return frozenset({("param", idx if idx is not None else -1)})
        if r.kind == K.TEMPLATE_NON_TYPE_PARAMETER:
            return frozenset({("tparam", r.spelling)})
        if r.kind == K.VAR_DECL or w.is_binding(r):
            u = r.get_usr()
            init = ctx.locals.get(u)
            if init is None or shallow and depth > 2:
                return frozenset({("unknown", w.text(s))})
            out = sources(w, init, ctx, depth + 1, shallow)
            for rhs in ctx.assigns.get(u, ()):
                out |= sources(w, rhs, ctx, depth + 1, shallow)
            return out
    return frozenset({("unknown", w.text(s)[:80])})


def returned(w, returns: list, ctx) -> tuple:
    """(value refs, static holder variables) a function returns, from its ``return`` statements (``returns``, as
    the walk's first pass over the body met them): a wrapper's refs, and the holders a getter hands out."""
    K = w.K
    refs = set()
    statics = []
    for x in returns:
        ch = list(x.get_children())
        if ch:
            refs |= sources(w, ch[0], ctx)
            v = w.strip(ch[0])
            if v.kind == K.DECL_REF_EXPR and v.referenced is not None and v.referenced.kind == K.VAR_DECL:
                r = v.referenced
                sp = r.semantic_parent
                if r.storage_class == w.ci.StorageClass.STATIC or (sp is not None and sp.kind == K.NAMESPACE):
                    statics.append((r.spelling, r.type.spelling, w.loc(r)))
    return frozenset(refs), tuple(statics)


def _bound_accessors(w, o, ctx) -> frozenset:
    """Accessor refs of a local reference or pointer every value of which is `acc()` or `&acc()` (else empty)."""
    K = w.K
    if o.kind != K.DECL_REF_EXPR or o.referenced is None or o.referenced.kind != K.VAR_DECL:
        return frozenset()
    u = o.referenced.get_usr()
    values = ([ctx.locals[u]] if u in ctx.locals else []) + list(ctx.assigns.get(u, ()))
    out = set()
    for v in values:
        v = w.strip(v)
        if v.kind == K.UNARY_OPERATOR and w.ci.conf.lib.clang_getCursorUnaryOperatorKind(v) == ADDRESS_OF:
            ch = list(v.get_children())
            v = w.strip(ch[0]) if ch else v
        if v.kind != K.CALL_EXPR or v.referenced is None or v.referenced.kind != K.FUNCTION_DECL \
                or w.ref_target(v.referenced.result_type) is None:
            return frozenset()
        out.add(("accessor", v.referenced.get_usr(), w.callee_spelling(v)))
    return frozenset(out)

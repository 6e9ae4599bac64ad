"""A launch's template args (KP201, KP202): the entries its ``template_args`` argument holds, and whether all are known.

Functions of the shared context ``w`` (the walk) and a :class:`.context.Frame`.
:func:`template_args` follows the argument through inline lists, locals and
their ``push_back``/``emplace_back``/``insert`` calls and assignments, vectors
passed to functions that fill them, helpers that return them, parameters
(through the callers in the unit) and data members (their initialisers and
what the class's methods in the unit write), renaming each entry into the
launching frame; ``resolved`` is False when a place it could be changed is
out of sight. :func:`through_callers` names the input whose dtype a ``Dtype``
parameter of the launching function is given by every caller.
"""

from __future__ import annotations

from typing import Optional

from kernel_ports.facts import TemplateArgEntry
from kernel_ports.frontend.clang.context import Frame, c_string_value
from kernel_ports.frontend.clang.dtype_flow import dtype_origin
from kernel_ports.frontend.clang.model import FunctionInfo
from kernel_ports.frontend.clang.patterns import is_dependent_type
from kernel_ports.frontend.clang.toolchain import BINOPS, evaluate_integer



def template_args(w, e, ctx, depth):
    """(entries, resolved) for a template-args expression, in the frame of ``ctx``."""
    K = w.K
    if depth > 4:
        return (), False
    s = w.strip(e)
    elems = w.list_elements(s)
    if elems is not None:
        return tuple(_entry(w, x, "inline" if depth == 0 else "helper", ctx) for x in elems), True
    if s.kind == K.DECL_REF_EXPR and s.referenced is not None:
        r = s.referenced
        if r.kind == K.VAR_DECL:
            return _template_args_var(w, r.get_usr(), ctx, depth, local=True)
        if r.kind == K.PARM_DECL:
            return _template_args_param(w, r, ctx, depth)
    if s.kind == K.MEMBER_REF_EXPR and s.referenced is not None and s.referenced.kind == K.FIELD_DECL:
        return _template_args_member(w, s.referenced, ctx, depth)
    if s.kind == K.CALL_EXPR and s.spelling in ("move", "forward") and w.qname(s.referenced or s).startswith("std::"):
        args = [x for x in list(s.get_children())[1:] if x.location.line != 0]
        if len(args) == 1:
            return template_args(w, args[0], ctx, depth)
    if s.kind == K.CALL_EXPR and s.referenced is not None:
        return _template_args_helper(w, s, ctx, depth)
    return (), False


def _template_args_var(w, u, ctx, depth, local):
    """Entries gathered on a vector variable (a local, or a helper's reference parameter)."""
    entries, ok = [], True
    init = ctx.locals.get(u)
    if init is not None:
        sub, sok = _template_args_init(w, init, ctx, depth)
        entries += sub
        ok = ok and sok
    for rhs in ctx.assigns.get(u, ()):
        sub, sok = template_args(w, rhs, ctx, depth + 1)
        entries += list(sub)
        ok = ok and sok
    for method, mc in ctx.member_calls.get(u, ()):
        margs = [x for x in list(mc.get_children())[1:]]
        if method == "push_back" and margs:
            entries.append(_entry(w, margs[0], "push_back", ctx))
        elif method == "emplace_back":
            if len(margs) == 2:
                entries.append(_entry(w, mc, "emplace_back", ctx, margs[0], margs[1]))
            elif margs:
                entries.append(_entry(w, margs[0], "emplace_back", ctx))
        elif method in ("insert",) and margs:
            sub = w.list_elements(margs[-1])
            if sub is not None:
                entries += [_entry(w, x, "insert", ctx) for x in sub]
            else:
                entries.append(_entry(w, margs[-1], "insert", ctx))
    passed = _passes(w, ctx).get(u, ())
    for call, idx in passed:
        sub, sok = _template_args_out(w, call, idx, ctx, depth)
        entries += list(sub)
        ok = ok and sok
    if local and init is None and not ctx.member_calls.get(u) and not ctx.assigns.get(u) and not passed:
        # not a local of this function (a global or a member): not followed
        ok = False
    return tuple(entries), ok


def _template_args_member(w, field, ctx, depth):
    """A template-args data member: its in-class initialiser, constructor initialisers, and what the methods of
    its class defined in this unit assign or add to it. Values named in another method's frame (its parameters
    and locals) are kept as Dtype values of unknown origin."""
    K = w.K
    cls = field.semantic_parent
    if cls is None or depth > 3:
        return (), False
    fu, cu = field.get_usr(), cls.get_usr()

    def is_field(x):
        x = w.strip(x)
        return x.kind == K.MEMBER_REF_EXPR and x.referenced is not None and x.referenced.get_usr() == fu

    def reframe(e, mctx):
        if mctx.info.usr == ctx.info.usr:
            return e
        own = set(mctx.info.params) | {c.spelling for c in mctx.local_cursors.values()}
        if e.source_input in own or e.parameter is not None:
            return _replace(e, source_input=None, parameter=None, from_parameter=e.from_parameter or e.source_input in mctx.info.params)
        return e

    entries, ok = [], True
    init = w.var_init(field)
    if init is not None:
        fctx = Frame(FunctionInfo(usr=f"{cu}#init", name=cls.spelling, qualified_name=w.qname(cls), loc=w.loc(cls)), cls)
        sub, sok = _template_args_init(w, init, fctx, depth + 1)
        entries += sub
        ok = ok and sok
    declared = {m.get_usr() for m in cls.get_children() if m.kind in (K.CXX_METHOD, K.CONSTRUCTOR, K.FUNCTION_TEMPLATE)}
    defined = set()
    for usr, m in list(w.fn_cursors.items()):
        sp = m.semantic_parent
        if sp is None or sp.get_usr() != cu:
            continue
        defined.add(usr)
        mctx = w.frame_for(m)
        if mctx is None:
            continue
        found = []
        children = list(m.get_children())
        if m.kind == K.CONSTRUCTOR:
            for i, ch in enumerate(children[:-1]):
                if ch.kind == K.MEMBER_REF and ch.referenced is not None and ch.referenced.get_usr() == fu:
                    sub, sok = _template_args_init(w, children[i + 1], mctx, depth + 1)
                    found += sub
                    ok = ok and sok
        sub, sok = _member_writes(w, children, is_field, mctx, depth)
        found += sub
        ok = ok and sok
        entries += [_replace(reframe(e, mctx), how="member" if e.how in ("inline", "initializer", "helper") else e.how) for e in found]
    if declared - defined:
        ok = False  # a method whose body this unit cannot see may change it
    if init is None and not entries:
        ok = False
    return tuple(entries), ok


def _member_writes(w, children, is_field, mctx, depth):
    """(entries, resolved) a method body adds to or assigns to the template-args member (``is_field``)."""
    K = w.K
    found, ok = [], True
    stack = [c for c in children if c.kind == K.COMPOUND_STMT]
    while stack:
        c = stack.pop()
        stack.extend(c.get_children())
        if c.kind == K.CALL_EXPR:
            ch = list(c.get_children())
            head = w.strip(ch[0]) if ch else None
            if c.spelling == "operator=" and len(ch) >= 2 and is_field(ch[0]):
                sub, sok = template_args(w, ch[-1], mctx, depth + 1)
                found += sub
                ok = ok and sok
            elif head is not None and head.kind == K.MEMBER_REF_EXPR and any(is_field(o) for o in head.get_children()):
                margs = ch[1:]
                if c.spelling == "push_back" and margs:
                    found.append(_entry(w, margs[0], "push_back", mctx))
                elif c.spelling == "emplace_back" and len(margs) == 2:
                    found.append(_entry(w, c, "emplace_back", mctx, margs[0], margs[1]))
                elif c.spelling == "emplace_back" and margs:
                    found.append(_entry(w, margs[0], "emplace_back", mctx))
                elif c.spelling == "insert" and margs:
                    sub = w.list_elements(margs[-1])
                    found += [_entry(w, x, "insert", mctx) for x in sub] if sub is not None else [_entry(w, margs[-1], "insert", mctx)]
        elif c.kind == K.BINARY_OPERATOR and len(list(c.get_children())) == 2:
            lhs, rhs = list(c.get_children())
            if is_field(lhs) and BINOPS.get(w.ci.conf.lib.clang_getCursorBinaryOperatorKind(c)) == "=":
                sub, sok = template_args(w, rhs, mctx, depth + 1)
                found += sub
                ok = ok and sok
    return found, ok


def _passes(w, ctx) -> dict:
    """var usr -> [(call, argument index)]: variables passed to functions (read once per function, on demand)."""
    return ctx.scan("passed", lambda: _scan_passes(w, ctx))


def _scan_passes(w, ctx) -> dict:
    K = w.K
    passed: dict = {}
    stack = [ctx.cursor]
    while stack:
        c = stack.pop()
        stack.extend(c.get_children())
        if c.kind != K.CALL_EXPR or c.referenced is None or c.referenced.kind == K.CONSTRUCTOR or c.spelling == "operator()":
            continue
        for i, a in enumerate(list(c.get_children())[1:]):
            a = w.strip(a)
            if a.kind == K.UNARY_OPERATOR and w.text(a).lstrip().startswith("&"):
                inner = list(a.get_children())
                a = w.strip(inner[0]) if inner else a
            if a.kind == K.DECL_REF_EXPR and a.referenced is not None and a.referenced.kind in (K.VAR_DECL, K.PARM_DECL):
                passed.setdefault(a.referenced.get_usr(), []).append((c, i))
    return passed


def _template_args_init(w, init, ctx, depth):
    s = w.strip(init)
    elems = w.list_elements(s)
    if elems is not None:
        return [_entry(w, x, "initializer", ctx) for x in elems], True
    sub, ok = template_args(w, init, ctx, depth + 1)
    return list(sub), ok


def _template_args_param(w, parm, ctx, depth):
    """A template-args parameter: resolve through the callers in this unit, renamed into this frame."""
    idx = ctx.params.get(parm.get_usr())
    usr = ctx.info.usr
    callers = w.callers.get(usr, [])
    if idx is None or not callers:
        return (), False
    entries, ok = [], True
    for cctx, call in callers:
        args = w.call_args(call)
        if idx < len(args):
            sub, sok = template_args(w, args[idx], cctx, depth + 1)
            entries += [_replace(_to_callee(w, e, ctx, args), how=e.how or "parameter") for e in sub]
            ok = ok and sok
        else:
            ok = False
    return tuple(entries), ok


def _to_callee(w, e, callee_ctx, call_args):
    """An entry resolved in a caller's frame, seen from the callee (names are the callee's parameters)."""
    if e.source_input is None and e.parameter is None:
        return e
    name = None
    if e.source_input is not None:
        for j, a in enumerate(call_args):
            if w.root_name(a) == e.source_input and j < len(callee_ctx.info.params):
                name = callee_ctx.info.params[j]
                break
    # a dtype of an array the callee does not receive arrives, for the callee, as a parameter value
    return _replace(e, source_input=name, from_parameter=True, parameter=None)


def _to_caller(w, e, hctx, call_args, cctx):
    """An entry resolved in a helper's frame, seen from the caller that passed ``call_args``."""
    params = hctx.info.params
    if e.source_input is not None and e.source_input in params:
        # an input named by the helper's parameter is the caller's argument
        i = params.index(e.source_input)
        if i < len(call_args):
            a = w.strip(call_args[i])
            e = _replace(e, source_input=w.root_name(a) or w.text(a))
    elif e.parameter is not None and e.parameter in params:
        # a Dtype the helper receives: what the caller passes
        i = params.index(e.parameter)
        if i < len(call_args):
            d, src, fp, const, param = dtype_origin(w, w.strip(call_args[i]), cctx, 0)
            e = _replace(e, is_dtype=e.is_dtype or d, source_input=src, from_parameter=fp, constant=const, parameter=param,
                         untyped=e.untyped and not (e.is_dtype or d))
    return e


def through_callers(w, e, ctx):
    """A Dtype parameter of the launching function: the input whose dtype every caller in this unit passes."""
    if e.parameter is None or e.source_input is not None:
        return e
    idx = ctx.info.params.index(e.parameter) if e.parameter in ctx.info.params else None
    callers = w.callers.get(ctx.info.usr, [])
    if idx is None or not callers:
        return e
    names = set()
    for cctx, call in callers:
        args = w.call_args(call)
        if idx >= len(args):
            return e
        d, src, fp, const, param = dtype_origin(w, w.strip(args[idx]), cctx, 0)
        if src is None:
            return e
        mapped = _to_callee(w, _replace(e, source_input=src), ctx, args).source_input
        if mapped is None:
            return e
        names.add(mapped)
    return _replace(e, source_input=names.pop()) if len(names) == 1 else e


def _template_args_helper(w, call, ctx, depth):
    """A helper function that builds and returns the template args."""
    K = w.K
    ref = call.referenced
    d = ref.get_definition() if ref is not None else None
    if d is None:
        return (), False
    hctx = w.frame_for(d)
    if hctx is None:
        return (), False
    entries, ok, found = [], True, False
    call_args = w.call_args(call)
    stack = [d]
    while stack:
        x = stack.pop()
        if x.kind == K.RETURN_STMT:
            ch = list(x.get_children())
            if ch:
                found = True
                sub, sok = template_args(w, ch[0], hctx, depth + 1)
                ok = ok and sok
                for e in sub:
                    e = _to_caller(w, e, hctx, call_args, ctx)
                    entries.append(_replace(e, how="helper" if e.how in ("inline", "initializer") else e.how))
            continue
        if x.kind == K.LAMBDA_EXPR:
            continue
        stack.extend(x.get_children())
    return tuple(entries), ok and found


def _template_args_out(w, call, idx, ctx, depth):
    """A vector passed to a function that fills it (a non-const reference or pointer parameter)."""
    K = w.K
    TK = w.ci.TypeKind
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
    if w.qname(ref).startswith("std::"):
        return (), True  # std::swap and friends are not helpers; swapping is not followed
    d = ref.get_definition()
    if d is None or depth > 3:
        return (), False  # filled by a function whose body this unit cannot see
    hctx = w.frame_for(d)
    if hctx is None:
        return (), False
    dparms = [p for p in d.get_children() if p.kind == K.PARM_DECL]
    if idx >= len(dparms):
        return (), False
    sub, ok = _template_args_var(w, dparms[idx].get_usr(), hctx, depth + 1, local=False)
    call_args = w.call_args(call)
    out = []
    for e in sub:
        e = _to_caller(w, e, hctx, call_args, ctx)
        out.append(_replace(e, how="helper" if e.how in ("inline", "initializer") else e.how))
    return tuple(out), ok


def _entry(w, e, how, ctx, name_cursor=None, value_cursor=None) -> Optional[TemplateArgEntry]:
    K = w.K
    if name_cursor is None:
        s = w.strip(e)
        parts = None
        if s.kind == K.INIT_LIST_EXPR:
            parts = list(s.get_children())
        elif s.kind == K.CALL_EXPR:
            ch = list(s.get_children())
            if s.spelling in ("make_pair", "pair") or (s.referenced is not None and s.referenced.kind == K.CONSTRUCTOR):
                parts = [x for x in ch if x.kind not in (K.TYPE_REF, K.NAMESPACE_REF, K.TEMPLATE_REF)]
                if s.spelling == "make_pair" and parts:
                    parts = parts[1:] if w.strip(parts[0]).kind in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF) and w.strip(parts[0]).spelling == "make_pair" else parts
        elif s.kind == K.DECL_REF_EXPR and s.referenced is not None and s.referenced.kind == K.VAR_DECL:
            # a pair built in a local first: `std::pair<...> p{"T", x.dtype()}; args.push_back(p);`
            init = ctx.locals.get(s.referenced.get_usr())
            if init is not None and w.strip(init).hash != s.hash:
                return _entry(w, init, how, ctx)
        if not parts or len(parts) != 2:
            return TemplateArgEntry(name=None, value_text=w.text(e), is_dtype=False, source_input=None,
                                    from_parameter=False, loc=w.loc(e), how=how)
        name_cursor, value_cursor = parts
    ns = w.strip(name_cursor)
    name = c_string_value(w.text(ns)) if ns.kind == K.STRING_LITERAL else None
    v = w.strip(value_cursor)
    is_dtype, src, from_param, const, param = dtype_origin(w, v, ctx, 0)
    return TemplateArgEntry(name=name, value_text=w.text(value_cursor), is_dtype=is_dtype, source_input=src,
                            from_parameter=from_param, constant=const, loc=w.loc(e if e is not None else value_cursor), how=how,
                            parameter=param, untyped=not is_dtype and _untyped(w, v), value=_constant_value(w, v, is_dtype))


def _constant_value(w, v, is_dtype: bool):
    """What a device build takes for the value: the integer or bool Clang evaluates, or a constant dtype's name."""

    if is_dtype:
        r = v.referenced if v.kind == w.K.DECL_REF_EXPR else None
        return r.spelling if r is not None and r.kind == w.K.VAR_DECL and r.spelling in DTYPE_NAMES else None
    got = evaluate_integer(w.ci, v)
    if got is None:
        return None
    return ("true" if got else "false") if w.canonical(v.type) == "bool" else str(got)


DTYPE_NAMES = frozenset(("bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float16",
                         "float32", "float64", "bfloat16", "complex64"))


def _untyped(w, v) -> bool:
    TK = w.ci.TypeKind
    t = v.type
    if t.kind in (TK.INVALID, TK.DEPENDENT):
        return True
    return is_dependent_type(w, t)  # (a template parameter's type may be Dtype once instantiated)


def _replace(entry, **kw):
    import dataclasses

    return dataclasses.replace(entry, **kw)

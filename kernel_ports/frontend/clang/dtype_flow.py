"""Where a dtype comes from (KP201, KP202): the queries that judge a launch's template args and inputs.

Functions of the shared context ``w`` (the walk) and a :class:`.context.Frame`:
whether a value is a ``Dtype`` and of which input array it is the dtype
(:func:`dtype_origin`), the arrays an input's dtype follows (copies, casts to
another array's dtype, arrays made at a given dtype, across the callers in the
unit: :func:`dtype_follows`), whether an input's dtype is fixed (a constant
cast, a constant-dtype op, a scalar, a refusal unless it has one dtype, an
output of a launch with constant output dtypes: :func:`inputs`), and the pairs
of arrays whose dtypes a function compares (:func:`dtype_checks`).
"""

from __future__ import annotations

import re
from typing import Optional

from kernel_ports.facts import InputArray
from kernel_ports.frontend.clang.patterns import dependent_member_name, is_dependent
from kernel_ports.frontend.clang.toolchain import BINOPS

_ARITHMETIC = {"BOOL", "CHAR_U", "UCHAR", "USHORT", "UINT", "ULONG", "ULONGLONG", "CHAR_S", "SCHAR", "SHORT", "INT",
               "LONG", "LONGLONG", "FLOAT", "DOUBLE", "LONGDOUBLE", "HALF", "FLOAT16"}


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



def is_dtype_type(w, t) -> bool:
    s = w.canonical(t)
    s = re.sub(r"^const ", "", s)
    return s == w.dtype_type or s.endswith("::Dtype") and s.replace("struct ", "") == w.dtype_type


def dtype_origin(w, v, ctx, depth):
    """(is_dtype, source input, from parameter, constant, parameter name) of a template-arg value."""
    K = w.K
    is_dtype = is_dtype_type(w, v.type)
    if depth > 5:
        return is_dtype, None, False, False, None
    k = v.kind
    if k in (K.INTEGER_LITERAL, K.CXX_BOOL_LITERAL_EXPR, K.FLOATING_LITERAL):
        return is_dtype, None, False, True, None
    if k == K.CALL_EXPR:
        ch = list(v.get_children())
        head = w.strip(ch[0]) if ch else None
        if head is not None and head.kind == K.MEMBER_REF_EXPR and (v.spelling == "dtype" or _dependent_dtype_call(w, v, head, ch)):
            obj = list(head.get_children())
            if obj:
                o = w.strip(obj[0])
                return True if is_dependent(w, v) else is_dtype, w.root_name(o) or w.text(o), False, False, None
        if is_dependent(w, v) and v.referenced is None:
            # `dtype_for<T>()` in a template pattern: a Dtype when every function the name can call returns one
            fn, _ = w.callee(v)
            return is_dtype or (fn is not None and is_dtype_type(w, fn.result_type)), None, False, False, None
        ref = v.referenced
        if ref is not None and ref.kind == K.FUNCTION_DECL and v.spelling == "dtype" and len(ch) > 1:
            o = w.strip(ch[1])
            return is_dtype, w.root_name(o) or w.text(o), False, False, None
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
                d, src, fp, const, param = dtype_origin(w, w.strip(init), ctx, depth + 1)
                return is_dtype or d, src, fp, const, param
            # a namespace-scope constant such as mlx::core::float32
            sp = r.semantic_parent
            if sp is not None and sp.kind in (K.NAMESPACE, K.TRANSLATION_UNIT, K.STRUCT_DECL, K.CLASS_DECL):
                return is_dtype, None, False, True, None
    if k == K.CONDITIONAL_OPERATOR:
        ch = list(v.get_children())
        a = dtype_origin(w, w.strip(ch[1]), ctx, depth + 1)
        b = dtype_origin(w, w.strip(ch[2]), ctx, depth + 1)
        return is_dtype or a[0] or b[0], a[1] or b[1], a[2] or b[2], a[3] and b[3], a[4] or b[4]
    return is_dtype, None, False, False, None


def _dependent_dtype_call(w, v, head, ch) -> bool:
    """`q.dtype()` on a value of a template-dependent type (an MLX array once instantiated): Clang types it only at
    instantiation, so the call and its member have no spelling."""
    return len(ch) == 1 and not v.spelling and is_dependent(w, v) and dependent_member_name(w, head) == "dtype"


def dtype_checks(w, ctx) -> tuple:
    """Pairs of arrays whose dtypes the function compares (``a.dtype() != x.dtype()``)."""
    return ctx.scan("dtype_checks", lambda: _dtype_checks(w, ctx))


def _dtype_checks(w, ctx) -> tuple:
    K = w.K
    out = set()
    stack = [ctx.cursor]
    while stack:
        c = stack.pop()
        stack.extend(c.get_children())
        ops = None
        if c.kind == K.CALL_EXPR and c.spelling in ("operator==", "operator!="):
            ops = [x for x in c.get_children() if not (w.strip(x).kind == K.DECL_REF_EXPR and w.strip(x).spelling.startswith("operator"))]
        elif c.kind == K.BINARY_OPERATOR and BINOPS.get(w.ci.conf.lib.clang_getCursorBinaryOperatorKind(c)) in ("==", "!="):
            ops = list(c.get_children())
        if not ops or len(ops) != 2:
            continue
        a, b = (w.strip(x) for x in ops)
        if not (is_dtype_type(w, a.type) and is_dtype_type(w, b.type)):
            continue
        sa = dtype_origin(w, a, ctx, 0)[1]
        sb = dtype_origin(w, b, ctx, 0)[1]
        if sa and sb and sa != sb:
            out.add(tuple(sorted((sa, sb))))
    return tuple(sorted(out))


def _param_follows(w, parm, ctx, depth) -> tuple:
    """An array parameter whose every caller in this unit passes an array following another parameter's."""
    idx = ctx.params.get(parm.get_usr())
    callers = w.callers.get(ctx.info.usr, [])
    if idx is None or not callers or depth > 3:
        return ()
    common = None
    for cctx, call in callers:
        args = w.call_args(call)
        if idx >= len(args):
            return ()
        names = set(dtype_follows(w, args[idx], cctx, depth + 2))
        mapped = set()
        for j, a in enumerate(args):
            if j != idx and w.root_name(a) in names and j < len(ctx.info.params):
                mapped.add(ctx.info.params[j])
        common = mapped if common is None else common & mapped
        if not common:
            return ()
    return tuple(sorted(common or ()))


def dtype_follows(w, s, ctx, depth=0) -> tuple:
    """Arrays whose dtype an input's equals: the variables it is copied from, the array it is cast to the dtype of."""
    K = w.K
    s = w.strip(s)
    if depth > 5:
        return ()
    if s.kind == K.DECL_REF_EXPR and s.referenced is not None:
        r = s.referenced
        out = (r.spelling,)
        if r.kind == K.VAR_DECL:
            init = ctx.locals.get(r.get_usr())
            if init is not None:
                out += dtype_follows(w, init, ctx, depth + 1)
        elif r.kind == K.PARM_DECL:
            out += _param_follows(w, r, ctx, depth)
        return out
    if s.kind == K.CALL_EXPR:
        args = [a for a in w.call_args(s) if a.location.line != 0]
        if s.spelling == "astype":
            if len(args) >= 2:
                # the array whose dtype it is cast to, or the Dtype parameter it is cast to
                _, src, _, const, param = dtype_origin(w, w.strip(args[1]), ctx, 0)
                return tuple(n for n in (src, param) if n and not const)
            return ()
        if s.referenced is not None and s.referenced.kind == K.CONSTRUCTOR and len(args) == 1:
            return dtype_follows(w, args[0], ctx, depth + 1)  # a copy
        if args and s.referenced is not None and w.qname(s.referenced) in _SAME_DTYPE_OPS:
            return dtype_follows(w, args[0], ctx, depth + 1)  # reshape(a, ...) has a's dtype
        # an array made at a given dtype (zeros(shape, dt), full(shape, v, dt), array(v, dt))
        dts = [w.strip(a) for a in args if is_dtype_type(w, w.strip(a).type)]
        if len(dts) == 1:
            _, src, _, const, param = dtype_origin(w, dts[0], ctx, 0)
            return tuple(n for n in (src, param) if n and not const)
        return ()
    if s.kind == K.CONDITIONAL_OPERATOR:
        ch = list(s.get_children())
        if len(ch) == 3:  # `c ? astype(b, T) : zeros({1}, T)`: what both branches follow
            a, b = dtype_follows(w, ch[1], ctx, depth + 1), dtype_follows(w, ch[2], ctx, depth + 1)
            return tuple(n for n in a if n in b)
        return ()
    if s.kind == K.MEMBER_REF_EXPR and s.referenced is not None and s.referenced.kind == K.FIELD_DECL:
        return (w.text(s),)  # a wrapper's array member (`w.inner`), named as `w.inner.dtype()` names it
    return ()


def _launch_output_dtype(w, s, ctx) -> Optional[str]:
    """`out[i]` where `out` is a local holding a kernel launch's results whose output dtypes are constants."""
    K = w.K
    ch = [w.strip(x) for x in s.get_children()]
    obj = next((x for x in ch if x.kind == K.DECL_REF_EXPR and x.referenced is not None
                and x.referenced.kind == K.VAR_DECL), None)
    init = ctx.locals.get(obj.referenced.get_usr()) if obj is not None else None
    if init is None or ctx.assigns.get(obj.referenced.get_usr()):
        return None
    call = w.strip(init)
    cch = list(call.get_children())
    if call.kind != K.CALL_EXPR or call.spelling != "operator()" or not cch or not w.kernel_type or \
            re.sub(r"^const ", "", w.canonical(cch[0].type)) != w.kernel_type:
        return None
    args = [x for x in cch[1:] if not (x.kind in (K.DECL_REF_EXPR, K.UNEXPOSED_EXPR) and x.spelling == "operator()")]
    elems = w.list_elements(args[2]) if len(args) > 2 else None
    consts = [dtype_const(w, x) for x in elems or ()]
    if not consts or None in consts:
        return None
    index = next((x for x in ch[1:] if x.kind == K.INTEGER_LITERAL), None)
    if index is not None:
        i = "".join(t.spelling for t in index.get_tokens()).rstrip("uUlL")
        if i.isdigit() and int(i) < len(consts):
            return consts[int(i)]
    return consts[0] if len(set(consts)) == 1 else None


def input_arrays(w, e, ctx):
    K = w.K
    s = w.strip(e)
    elems = w.list_elements(s)
    if elems is None and s.kind == K.DECL_REF_EXPR and s.referenced is not None:
        u = s.referenced.get_usr()
        init = ctx.locals.get(u)
        elems = w.list_elements(init) if init is not None else None
        elems = list(elems or [])
        for method, mc in ctx.member_calls.get(u, ()):
            if method in ("push_back", "emplace_back"):
                elems += list(mc.get_children())[1:2]
        if not elems:
            return (InputArray(text=w.text(e), name=None, dtype_fixed=None, how="unresolved"),)
    if elems is None:
        return (InputArray(text=w.text(e), name=None, dtype_fixed=None, how="unresolved"),)
    inputs = [_input(w, x, ctx) for x in elems]
    checked = _dtype_const_checks(w, ctx) if any(i.dtype_fixed is not True for i in inputs) else {}
    for n, i in enumerate(inputs):
        # the input itself, or an array whose dtype it has (a copy of the checked one)
        const = next((checked[n] for n in (i.name or i.text,) + tuple(i.dtype_follows) if n in checked), None)
        if i.dtype_fixed is not True and const:
            inputs[n] = InputArray(text=i.text, name=i.name, dtype_fixed=True, fixed_dtype=const, how="checked",
                                   dtype_follows=i.dtype_follows)
    return tuple(inputs)


def _dtype_const_checks(w, ctx) -> dict:
    """Arrays the function refuses unless they have one constant dtype:
    ``if (a.dtype() != mlx::core::int32) throw ...;`` (alone or among ``||``-joined tests)."""
    return ctx.scan("dtype_const_checks", lambda: _scan_dtype_const_checks(w, ctx))


def _scan_dtype_const_checks(w, ctx) -> dict:
    K = w.K
    lib = w.ci.conf.lib
    out = {}
    stack = [ctx.cursor]
    while stack:
        c = stack.pop()
        stack.extend(c.get_children())
        if c.kind != K.IF_STMT:
            continue
        ch = list(c.get_children())
        if len(ch) < 2 or not w.has_throw(ch[1]):
            continue
        leaves, todo = [], [ch[0]]
        while todo:
            x = w.strip(todo.pop())
            if x.kind == K.BINARY_OPERATOR and BINOPS.get(lib.clang_getCursorBinaryOperatorKind(x)) == "||":
                todo.extend(x.get_children())
            else:
                leaves.append(x)
        for x in leaves:
            if x.kind == K.CALL_EXPR and x.spelling == "operator!=":
                ops = [o for o in x.get_children() if not (w.strip(o).kind == K.DECL_REF_EXPR and w.strip(o).spelling.startswith("operator"))]
            elif x.kind == K.BINARY_OPERATOR and BINOPS.get(lib.clang_getCursorBinaryOperatorKind(x)) == "!=":
                ops = list(x.get_children())
            else:
                continue
            if len(ops) != 2:
                continue
            for a, b in ((ops[0], ops[1]), (ops[1], ops[0])):
                const = dtype_const(w, b)
                a = w.strip(a)
                if const and is_dtype_type(w, a.type):
                    src = dtype_origin(w, a, ctx, 0)[1]
                    if src:
                        out.setdefault(src, const)
    return out


def _input(w, x, ctx) -> InputArray:
    s = w.strip(x)
    name = w.root_name(s)
    fixed, dt, how = _fixed_dtype(w, s, ctx, 0)
    follows = tuple(n for n in dict.fromkeys(dtype_follows(w, s, ctx)) if n not in (name, w.text(x), w.text(s)))
    return InputArray(text=w.text(x), name=name, dtype_fixed=fixed, fixed_dtype=dt, how=how, dtype_follows=follows)


def dtype_const(w, a) -> Optional[str]:
    a = w.strip(a)
    K = w.K
    if a.kind == K.DECL_REF_EXPR and a.referenced is not None and a.referenced.kind == K.VAR_DECL and is_dtype_type(w, a.type):
        sp = a.referenced.semantic_parent
        if sp is not None and sp.kind in (K.NAMESPACE, K.TRANSLATION_UNIT, K.STRUCT_DECL, K.CLASS_DECL):
            return a.referenced.spelling
    return None


def _fixed_dtype(w, s, ctx, depth):
    K = w.K
    if depth > 5:
        return None, None, ""
    if s.kind == K.CONDITIONAL_OPERATOR:
        ch = list(s.get_children())
        if len(ch) == 3:
            a = _fixed_dtype(w, w.strip(ch[1]), ctx, depth + 1)
            b = _fixed_dtype(w, w.strip(ch[2]), ctx, depth + 1)
            if a[0] is True and b[0] is True and a[1] == b[1]:
                return True, a[1], a[2]
            return (False if False in (a[0], b[0]) else None), None, "conditional"
    if s.kind == K.CALL_EXPR and s.spelling == "operator[]":
        fixed = _launch_output_dtype(w, s, ctx)
        if fixed:
            return True, fixed, "launch output"
    if s.kind == K.DECL_REF_EXPR and s.referenced is not None:
        r = s.referenced
        if r.kind == K.PARM_DECL:
            return False, None, "parameter"
        init = ctx.locals.get(r.get_usr())
        if init is not None:
            return _fixed_dtype(w, w.strip(init), ctx, depth + 1)
        return None, None, "unresolved"
    if s.kind == K.CALL_EXPR:
        ch = list(s.get_children())
        args = ch[1:] if s.referenced is not None and s.referenced.kind != K.CONSTRUCTOR else ch
        if s.spelling == "astype":
            for a in args:
                d = dtype_const(w, a)
                if d:
                    return True, d, "astype"
            return False, None, "astype"
        consts = [d for d in (dtype_const(w, a) for a in args) if d]
        if consts:
            return True, consts[0], "constructed"
        op = w.qname(s.referenced) if s.referenced is not None and s.referenced.kind == K.FUNCTION_DECL else ""
        if op in _FIXED_RESULT_OPS:
            return True, _FIXED_RESULT_OPS[op], "op"
        if op == _RANDOM_BITS:
            width = w.strip(args[1]) if len(args) > 1 and args[1].location.line != 0 else None
            if width is None:
                return True, "uint32", "op"
            if width.kind == K.INTEGER_LITERAL:
                w = "".join(t.spelling for t in width.get_tokens()).rstrip("uUlL")
                if w in ("1", "2", "4"):
                    return True, f"uint{8 * int(w)}", "op"
        if s.referenced is not None and s.referenced.kind == K.CONSTRUCTOR:
            real = [w.strip(a) for a in args if a.location.line != 0]
            if len(real) == 1 and real[0].kind in (K.INTEGER_LITERAL, K.FLOATING_LITERAL, K.CXX_BOOL_LITERAL_EXPR):
                return True, None, "scalar"
            # an array built from one C++ scalar has that scalar's fixed dtype
            if len(real) == 1 and real[0].type.get_canonical().kind.name in _ARITHMETIC:
                return True, None, "scalar"
            # ... and so has one built from a braced list of C++ scalars
            if len(real) == 1 and real[0].kind == K.INIT_LIST_EXPR and all(
                    w.strip(x).type.get_canonical().kind.name in _ARITHMETIC for x in real[0].get_children()):
                return True, None, "scalar"
            if len(real) == 1:
                return _fixed_dtype(w, real[0], ctx, depth + 1)
        return None, None, "call"
    if s.kind in (K.INTEGER_LITERAL, K.FLOATING_LITERAL):
        return True, None, "scalar"
    return None, None, ""

"""Template patterns (libclang 18.1.1): what a call Clang left dependent is, where no error explains it.

The walk reads a template as written (the implicit instantiations Clang makes
at a unit's end are dropped, :mod:`.session`), so a kernel launch inside a
function template, a member function of a class template or a generic lambda
is a call Clang types only at instantiation: a ``CallExpr`` of dependent type
whose callee is the kernel variable, with no ``operator()`` resolved. A
recovery expression (an argument that did not compile) looks the same; what
tells them apart is where the call sits (a template pattern) and whether Clang
reported an error inside the function. Queries over the shared context ``w``
(the walk) and a :class:`.context.Frame`, asked by the walk and the launch and
dtype queries.
"""

from __future__ import annotations

import re
from typing import Optional

# a template's parameters as Clang spells them in a canonical type (`auto x` of a generic lambda included)
_TEMPLATE_PARAMETER_TYPE = "type-parameter-"


def is_dependent(w, c) -> bool:
    """Clang left the expression's type to an instantiation (or to a recovery from an error)."""
    return c.type.kind == w.ci.TypeKind.DEPENDENT


def errors_inside(w, cursor) -> list:
    """(line, message) of the Clang errors inside a declaration's extent, in its file."""
    ext = cursor.extent
    rel = w.rel(ext.start.file) if ext.start.file is not None else None
    return [(line, msg) for line, msg in w.error_lines.get(rel, ()) if ext.start.line <= line <= ext.end.line]


def in_template_pattern(w, ctx, parents) -> bool:
    """The code being read is a template as written: a function template, a member of a class template (or of a
    class nested in one), or the body of a generic lambda."""
    K = w.K
    kinds = (K.FUNCTION_TEMPLATE, K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION)
    cur = ctx.cursor
    while cur is not None and cur.kind != K.TRANSLATION_UNIT:
        if cur.kind in kinds:
            return True
        cur = cur.semantic_parent
    return any(p.kind == K.LAMBDA_EXPR and _generic_lambda(w, p) for p in parents)


def _generic_lambda(w, lam) -> bool:
    K = w.K
    for ch in lam.get_children():
        if ch.kind in (K.TEMPLATE_TYPE_PARAMETER, K.TEMPLATE_NON_TYPE_PARAMETER, K.TEMPLATE_TEMPLATE_PARAMETER):
            return True
        if ch.kind == K.PARM_DECL and _TEMPLATE_PARAMETER_TYPE in w.canonical(ch.type):
            return True
    return False


def resolved_at_instantiation(w, c, ctx, parents) -> bool:
    """A call Clang types only at instantiation: dependent, in a template pattern, and no Clang error inside the
    function (an error there may be what made it dependent: a recovery expression)."""
    if not is_dependent(w, c) or not in_template_pattern(w, ctx, parents):
        return False
    return ctx.cursor.kind == w.K.TRANSLATION_UNIT or not errors_inside(w, ctx.cursor)


def dependent_member_name(w, member) -> str:
    """The member a dependent member expression names (`q.dtype` → `dtype`): libclang 18 gives a
    ``CXXDependentScopeMemberExpr`` no spelling, so it is its last token."""
    if member.spelling:
        return member.spelling
    tokens = [t.spelling for t in member.get_tokens()]
    return tokens[-1] if tokens and tokens[-1].isidentifier() else ""


def dependent_call(w, c, ch, ctx, parents) -> Optional[str]:
    """What a call with no callee Clang could name is, when it is resolved at instantiation: "launch" when the
    callee is a dependent member (`this->kernel_` on a dependent base) named as a kernel-typed data member of a
    class in the unit's project files is, or a call returning the kernel type; "call" for a function found by
    argument-dependent lookup or another member of a dependent type; None for any other callee (judged as
    before: a nine-argument one is a lost candidate)."""
    if not ch or not resolved_at_instantiation(w, c, ctx, parents):
        return None
    K = w.K
    head = w.strip(ch[0])
    if head.kind == K.MEMBER_REF_EXPR:
        return "launch" if dependent_member_name(w, head) in _kernel_field_names(w) else "call"
    if head.kind == K.CALL_EXPR:  # `kernel_for<T>()(...)`
        fn, _ = w.callee(head)
        return "launch" if fn is not None and _kernel_typed(w, fn.result_type) else None
    return "call" if head.kind in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF) else None


def _kernel_field_names(w) -> frozenset:
    """Names of the kernel-typed data members declared in the unit's project files (found once per unit)."""
    names = getattr(w, "_kernel_field_names", None)
    if names is None:
        K = w.K
        records = (K.STRUCT_DECL, K.CLASS_DECL, K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION)
        stack = [c for c in w.tu.cursor.get_children() if c.location.file is not None and w.rel(c.location.file)]
        found = set()
        while stack:
            c = stack.pop()
            if c.kind == K.FIELD_DECL and _kernel_typed(w, c.type):
                found.add(c.spelling)
            elif c.kind in records or c.kind == K.NAMESPACE:
                stack.extend(c.get_children())
        names = w._kernel_field_names = frozenset(found)
    return names


def is_kernel_variable(w, ref, ctx) -> bool:
    """A variable, parameter or data member of the kernel type (through a reference, const or not), or a local
    whose type Clang deduces only at instantiation from a call returning it."""
    if ref.kind not in (w.K.VAR_DECL, w.K.PARM_DECL, w.K.FIELD_DECL) or not w.kernel_type:
        return False
    return _kernel_typed(w, ref.type) or kernel_typed_local(w, ref, ctx)


# a kernel's call: inputs, output shapes, output dtypes, grid and threadgroup, then template args, init value,
# verbose and stream, which have defaults
_KERNEL_CALL_ARITY = range(5, 10)


def generic_kernel_object(w, ref, arity: int) -> bool:
    """A variable or parameter whose type is a template parameter (`K& kernel`, `auto& kernel` of a generic lambda)
    called with as many arguments as a kernel takes. Instantiated with the kernel type that is a launch, and only
    the instantiation (which the walk does not read) knows the type: it is judged as a launch, so a helper generic
    over its kernel's type does not take the launches it makes out of the dtype-key rules."""
    if ref.kind not in (w.K.VAR_DECL, w.K.PARM_DECL) or arity not in _KERNEL_CALL_ARITY or not w.kernel_type:
        return False
    return _TEMPLATE_PARAMETER_TYPE in (w.ref_target(ref.type) or w.canonical(ref.type))


def kernel_typed_local(w, ref, ctx) -> bool:
    """A local of a template-dependent type (`auto& kernel = kernel_for<T>();`) initialised by a call whose callee
    (the first of an overload set, as :meth:`.context.UnitContext.callee` takes it) returns the kernel type, by
    reference or by value: Clang types it only at instantiation."""
    if ref.kind != w.K.VAR_DECL or not is_dependent_type(w, ref.type):
        return False
    init = ctx.locals.get(ref.get_usr())
    init = w.strip(init) if init is not None else None
    if init is None or init.kind != w.K.CALL_EXPR:
        return False
    fn, _ = w.callee(init)
    return fn is not None and _kernel_typed(w, fn.result_type)


def _kernel_typed(w, t) -> bool:
    """The kernel type, through a reference, const or not."""
    return re.sub(r"^const ", "", w.ref_target(t) or w.canonical(t)) == w.kernel_type


def is_dependent_type(w, t) -> bool:
    """A type Clang settles only at instantiation: dependent, a template parameter, or `auto` not yet deduced
    (looked through a reference)."""
    spelled = w.ref_target(t) or w.canonical(t)
    return t.kind == w.ci.TypeKind.DEPENDENT or _TEMPLATE_PARAMETER_TYPE in spelled or \
        spelled in ("", "auto", "<dependent type>")

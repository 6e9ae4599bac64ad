"""The guards a statement sits under: the backend a ``switch`` case or an ``if`` on a parameter selects.

Queries over the shared context (``w``, the walk), like :mod:`.values`: the walk
asks them where it enters a ``switch`` or an ``if`` and keeps the
:class:`.model.Guard` on the frame while it walks the branch, so each call edge
records the guards it was made under.
"""

from __future__ import annotations

from typing import Optional

from kernel_ports.frontend.clang.model import Guard
from kernel_ports.frontend.clang.toolchain import BINOPS


def case_labels(w, s):
    """(labels, is the default, the statement the labels lead to) of a ``case``/``default`` statement, or
    (None, False, None) for any other statement."""
    K = w.K
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
            v = w.enum_const(ch[0]) if ch else None
            labels.append(v or (w.text(ch[0]) if ch else "?"))
            inner = ch[-1] if len(ch) > 1 else None
    return labels, is_default, inner


def guard_subject(w, cond) -> Optional[str]:
    """The parameter (or non-type template parameter) a condition or ``switch`` tests, by name."""
    c = w.strip(cond)
    if c.kind == w.K.DECL_REF_EXPR:
        r = c.referenced
        if r is not None and r.kind in (w.K.PARM_DECL, w.K.TEMPLATE_NON_TYPE_PARAMETER):
            return r.spelling
    return None


def if_guards(w, cond):
    """(guard of the then-branch, guard of the else-branch) of ``param == Enum::X`` or ``!=``; (None, None) else."""
    c = w.strip(cond)
    if c.kind != w.K.BINARY_OPERATOR:
        return None, None
    op = BINOPS.get(w.ci.conf.lib.clang_getCursorBinaryOperatorKind(c))
    if op not in ("==", "!="):
        return None, None
    a, b = list(c.get_children())[:2]
    subj, val = guard_subject(w, a), w.enum_const(b)
    if subj is None:
        subj, val = guard_subject(w, b), w.enum_const(a)
    if subj is None or val is None:
        return None, None
    eq = Guard(subj, (val,), False)
    ne = Guard(subj, (val,), True)
    return (eq, ne) if op == "==" else (ne, eq)

"""Hand-rolled refusals (KP102): an ``if`` that throws at its top level and tests availability or ports itself.

Events: ``leave_if_stmt`` (an ``if`` whose then-branch throws is kept); after
the walk, ``finish`` names what each kept condition tests: a backend query,
``has_kernel_port``, a registry predicate, any ``*_available()``, a function or
variable derived from a backend query (``tainted_fns``/``tainted``, which the
backend-test phase before it leaves in the context), following bool locals to
their initialisers.
"""

from __future__ import annotations

from kernel_ports.facts import Refusal
from kernel_ports.frontend.clang.context import Extractor
from kernel_ports.frontend.clang.model import NameSet


class Refusals(Extractor):
    """Throwing ifs whose condition tests a backend, a port or a predicate."""

    phase = "refusals"

    def __init__(self, walk):
        super().__init__(walk)
        self.ifs_with_throw: list = []  # (if cursor, ctx, condition)

    def leave_if_stmt(self, c, ctx, cond, then):
        if self.walk.has_throw(then):
            self.ifs_with_throw.append((c, ctx, cond))

    def finish(self):
        """Each kept throwing if whose condition tests something a refusal may not test itself."""
        w = self.walk
        K = w.K
        tested_names = set(w.conv.backend_queries) | {w.conv.has_port}
        preds = NameSet(w.conv.predicates)
        for ifc, ctx, cond in self.ifs_with_throw:
            tested = set()
            stack = [cond]
            seen_vars = set()
            while stack:
                x = stack.pop()
                if x.kind == K.CALL_EXPR:
                    ref, _ = w.callee(x)
                    if ref is not None:
                        q = w.qname(ref)
                        if q in tested_names or q in preds or ref.spelling.endswith("_available") \
                                or ref.get_usr() in w.tainted_fns:
                            tested.add(q)
                elif x.kind == K.DECL_REF_EXPR and x.referenced is not None:
                    u = x.referenced.get_usr()
                    if u in w.tainted:
                        tested.add(w.tainted[u][0])
                    init = ctx.locals.get(u)
                    if init is not None and u not in seen_vars:
                        seen_vars.add(u)
                        stack.append(init)
                stack.extend(x.get_children())
            if not tested:
                continue
            w.res.refusals.append(Refusal(
                loc=w.loc(ifc), configurations=frozenset({w.job.configuration}), test_text=w.text(cond)[:200],
                tested=tuple(sorted(tested)), enclosing_function=ctx.info.qualified_name, enclosing_usr=ctx.info.usr,
                in_macro=w.in_macro(ifc) is not None))

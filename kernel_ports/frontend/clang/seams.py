"""Test seams (KP106): each declaration and each call of a registry-declared seam, and whether a call forwards.

Events: ``visit_function_decl`` (a seam's declaration or definition),
``visit_seam_call`` (a call of one; forwarding when it is the only statement of
its function and passes that function's own parameters through).
"""

from __future__ import annotations

from kernel_ports.facts import SeamCall
from kernel_ports.frontend.clang.context import Extractor


class SeamCalls(Extractor):
    """Declarations and calls of the registry's test seams."""

    def visit_function_decl(self, c):
        w = self.walk
        if c.spelling not in w.seam_set:
            return
        loc = w.loc(c)
        w.res.seam_calls.append(SeamCall(loc=loc, configurations=frozenset({w.job.configuration}), name=c.spelling,
                                         language="cpp", is_declaration=not c.is_definition(),
                                         is_definition=c.is_definition(), enclosing_function=None))

    def visit_seam_call(self, c, decl, ctx, parents):
        w = self.walk
        K = w.K
        # forwarding: the only statement of the enclosing function's body
        fwd = False
        fn = ctx.cursor
        if fn is not None and ctx.slot is None:
            body = next((ch for ch in fn.get_children() if ch.kind == K.COMPOUND_STMT), None)
            if body is not None:
                stmts = list(body.get_children())
                if len(stmts) == 1:
                    st = stmts[0]
                    top = st if st.kind != K.RETURN_STMT else next(iter(st.get_children()), None)
                    fwd = top is not None and w.strip(top) == c
                    # ... and it passes the wrapper's own parameters through
                    params = {p.get_usr() for p in fn.get_children() if p.kind == K.PARM_DECL}
                    for a in list(c.get_children())[1:]:
                        a = w.strip(a)
                        if not (a.kind == K.DECL_REF_EXPR and a.referenced is not None and a.referenced.get_usr() in params):
                            fwd = False
        loc = w.loc(c)
        w.res.seam_calls.append(SeamCall(loc=loc, configurations=frozenset({w.job.configuration}), name=decl.spelling,
                                         language="cpp", is_forwarding=fwd,
                                         enclosing_function=ctx.info.qualified_name))

"""Selector calls (KP304): each call of the registry selector, with its entry point, fallback and table.

Event: ``visit_selector_call``. The entry point and fallback are kept as
string values when written as literals, and the table argument as value refs
(:func:`.values.sources`), which the index resolves to port tables.
"""

from __future__ import annotations

from kernel_ports.facts import SelectorCall
from kernel_ports.frontend.clang.context import Extractor, c_string_value
from kernel_ports.frontend.clang.model import RawSelector
from kernel_ports.frontend.clang.values import sources


class SelectorCalls(Extractor):
    """Calls of the registry selector."""

    def visit_selector_call(self, c, args, ctx, parents):
        w = self.walk
        loc = w.loc(c)
        K = w.K
        texts = [w.text(a) for a in args]

        def lit(a):
            s = w.strip(a)
            return c_string_value(w.text(s)) if s.kind == K.STRING_LITERAL else None

        table_refs = sources(w, args[2], ctx) if len(args) > 2 else frozenset()
        fact = SelectorCall(
            loc=loc,
            configurations=frozenset({w.job.configuration}),
            entry_point=lit(args[0]) if args else None,
            fallback=lit(args[1]) if len(args) > 1 else None,
            entry_point_text=texts[0] if texts else "",
            fallback_text=texts[1] if len(texts) > 1 else "",
            table_text=texts[2] if len(texts) > 2 else "",
            tables=(),
            enclosing_function=ctx.info.qualified_name,
            enclosing_usr=ctx.info.usr,
            in_macro=w.in_macro(c) is not None,
        )
        w.res.selectors.append(RawSelector(fact, table_refs))
        w.res.seen.add((loc.path, loc.line, "selector_call"))
        ctx.info.selects = True

"""Support predicates (KP107): what each registry-named predicate, or function asking ``has_kernel_port``, answers from.

Events: ``visit_has_port_call`` (the tables a function asks ``has_kernel_port``
about, as value refs), ``visit_call`` (whether it checks the default device);
``finish`` makes one predicate fact per such function, with the backend queries
it reaches directly or through wrappers: those through wrappers are known once
the backend-test phase has run (``query_wrappers_known``), so when that phase
failed (a KP902 says so) no predicate is reported from the unit rather than one
that reads as if it asked no backend.
"""

from __future__ import annotations

from kernel_ports.frontend.clang.context import Extractor
from kernel_ports.frontend.clang.model import NameSet, RawPredicate
from kernel_ports.frontend.clang.values import sources


class Predicates(Extractor):
    """Functions that answer whether a kernel is supported."""

    phase = "predicates"

    def visit_has_port_call(self, c, args, ctx, loc):
        w = self.walk
        w.res.seen.add((loc.path, loc.line, "has_port_call"))
        refs = sources(w, args[0], ctx) if args else frozenset()
        ctx.info.has_port_args = ctx.info.has_port_args + (refs,)

    def visit_call(self, c, ref, decl, edge, ctx, parents):
        if decl.spelling == "default_device":
            ctx.info.calls_default_device = True

    def finish(self):
        w = self.walk
        if not w.query_wrappers_known:
            return
        preds = NameSet(w.conv.predicates)
        for info in w.functions.values():
            named = info.qualified_name in preds
            if not named and not info.has_port_args:
                continue
            if info.usr.endswith(("#init", "#var")):
                continue
            w.res.predicates.append(RawPredicate(
                fact_args=dict(
                    loc=info.loc, configurations=frozenset({w.job.configuration}), name=info.name,
                    qualified_name=info.qualified_name, usr=info.usr,
                    has_port_calls=len(info.has_port_args), backend_queries=tuple(info.backend_queries),
                    returns_bool=info.returns_bool,
                    calls=tuple(sorted({e.callee for e in info.calls})),
                    default_device_check=info.calls_default_device),
                table_refs=tuple(info.has_port_args)))

"""Kernel launches (KP201, KP202, KP306): each call of a ``CustomKernelFunction``, its template args and inputs.

Event: ``visit_kernel_launch`` (``operator()`` on an object of the kernel
type). The template args and inputs are resolved in ``finish``, once the whole
unit is walked: a launch in a header is usually defined before the callers that
pass its parameters. A launch whose template args cannot all be seen says why
(entries Clang could not type, Clang errors inside the launching function).
"""

from __future__ import annotations

from kernel_ports.frontend.clang.context import Extractor
from kernel_ports.frontend.clang.dtype_flow import dtype_checks, input_arrays
from kernel_ports.frontend.clang.model import RawInvocation
from kernel_ports.frontend.clang.patterns import errors_inside, is_dependent
from kernel_ports.frontend.clang.template_args import template_args, through_callers
from kernel_ports.frontend.clang.values import sources


class Launches(Extractor):
    """Invocations of kernel objects."""

    phase = "finish invocations"

    def __init__(self, walk):
        super().__init__(walk)
        self._pending_invocations: list = []  # (call, kernel object, args, ctx, loc, kernel refs)

    def visit_kernel_launch(self, c, obj, args, ctx, parents):
        w = self.walk
        loc = w.loc(c)
        w.res.seen.add((loc.path, loc.line, "invocation"))
        ctx.info.invokes = True
        kernel_refs = sources(w, obj, ctx)
        # template args and inputs are resolved once the whole unit is walked
        # (_finish_invocations): a launch in a header is usually defined before
        # the callers that pass its parameters
        self._pending_invocations.append((c, obj, args, ctx, loc, kernel_refs))

    def finish(self):
        w = self.walk
        for c, obj, args, ctx, loc, kernel_refs in self._pending_invocations:
            targ_expr = args[5] if len(args) > 5 else None
            entries, resolved = (template_args(w, targ_expr, ctx, 0) if targ_expr is not None else ((), False))
            entries = [through_callers(w, e, ctx) for e in entries]
            entries = sorted(entries, key=lambda e: (e.loc.path, e.loc.line, e.loc.column) if e.loc is not None else ("", 0, 0))
            inputs = input_arrays(w, args[0], ctx) if args else ()
            why = self._incomplete(entries, ctx, c)
            resolved = resolved and not why
            w.res.invocations.append(RawInvocation(
                loc=loc,
                callee_text=w.text(obj),
                kernel_refs=kernel_refs,
                template_args_text=w.text(targ_expr) if targ_expr is not None else "",
                template_args=tuple(entries),
                template_args_resolved=resolved,
                inputs_text=w.text(args[0]) if args else "",
                inputs=tuple(inputs),
                enclosing_function=ctx.info.qualified_name,
                enclosing_usr=ctx.info.usr,
                in_macro=w.in_macro(c) is not None,
                dtype_checks=dtype_checks(w, ctx),
                unresolved=why,
                output_dtypes_text=self._as_written(args[2], ctx) if len(args) > 2 else "",
            ))
        self._pending_invocations = []

    def _as_written(self, arg, ctx) -> str:
        """An argument's text, or the initializer's when it names a local (``output_dtypes`` built beforehand)."""
        w = self.walk
        s = w.strip(arg)
        if s.kind == w.K.DECL_REF_EXPR and s.referenced is not None:
            init = ctx.locals.get(s.referenced.get_usr())
            if init is not None:
                return w.text(init)
        return w.text(arg)

    def _incomplete(self, entries, ctx, c) -> tuple:
        """Why a launch's template args may be incomplete: entries Clang could not type (or types only at a
        template's instantiation), and Clang errors inside the launching function (a statement that did not
        compile is missing from the AST)."""
        w = self.walk
        why = []
        errors = errors_inside(w, ctx.cursor) if ctx.cursor.kind != w.K.TRANSLATION_UNIT else []
        untyped = ", ".join(f"`{e.value_text}`" for e in entries if e.untyped)
        if untyped and is_dependent(w, c) and not errors:
            why.append(f"{untyped} depends on a template parameter (Clang types it only where the template is "
                       "instantiated), so whether it is a dtype is unknown")
        elif untyped:
            why.append(f"Clang could not type {untyped} (a declaration it depends on did not compile), so whether it is a "
                       "dtype is unknown")
        if errors:
            line, msg = errors[0]
            why.append(f"Clang reported {len(errors)} error{'s' if len(errors) > 1 else ''} inside {ctx.info.qualified_name} "
                       f"(first at line {line}: {msg}), and a statement that does not compile is missing from what was read")
        return tuple(why)

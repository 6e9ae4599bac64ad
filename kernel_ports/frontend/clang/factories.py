"""Factory calls (KP105, KP303): each call of a registry kernel factory, with its name, source and header arguments.

Event: ``visit_factory_call`` (a call of ``metal_kernel``/``cuda_kernel``/
``hip_kernel`` or whatever the registry names per backend). A string argument
is kept as its literal value when it is one (raw or escaped, concatenated
pieces), and as the constants it names otherwise, so the HIP-body scan can
follow them; the call is also recorded on the function it sits in, with its
guards, for the index's slot-to-factory join.
"""

from __future__ import annotations

from kernel_ports.facts import FactoryCall
from kernel_ports.frontend.clang.context import Extractor, c_string_value


class FactoryCalls(Extractor):
    """Calls of the registry kernel factories."""

    def visit_factory_call(self, c, ref, backend, q, args, ctx, parents):
        w = self.walk
        loc = w.loc(c)
        defaulted = lambda a: a.extent.start.line == 0 or (a.location.line == 0)
        name_lit, _, name_text = self._string_arg(args[0]) if args else (None, (), "")
        src_lit, src_consts, src_text = self._string_arg(args[3]) if len(args) > 3 else (None, (), "")
        if len(args) > 4 and not defaulted(args[4]):
            hdr_lit, hdr_consts, hdr_text = self._string_arg(args[4])
        else:
            hdr_lit, hdr_consts, hdr_text = None, (), ""
        fc = FactoryCall(
            loc=loc,
            configurations=frozenset({w.job.configuration}),
            backend=backend,
            factory=q,
            kernel_name=name_lit,
            name_text=name_text,
            source_constants=src_consts,
            source_literal=src_lit,
            source_text=src_text,
            header_constants=hdr_consts,
            header_literal=hdr_lit,
            header_text=hdr_text,
            enclosing_function=ctx.info.qualified_name,
            enclosing_usr=ctx.info.usr,
            in_table_slot=ctx.slot is not None,
            in_macro=w.in_macro(c) is not None,
            input_names=self._name_list(args[1]) if len(args) > 1 else None,
            output_names=self._name_list(args[2]) if len(args) > 2 else None,
        )
        w.res.factory_calls.append(fc)
        w.res.seen.add((loc.path, loc.line, "factory_call"))
        ctx.info.factory_calls.append((fc, tuple(ctx.guards)))

    def _string_arg(self, a):
        """(literal text or None, constant names, text)."""
        w = self.walk
        K = w.K
        s = w.strip(a)
        text = w.text(a)
        consts = []
        lit = None
        if s.kind == K.STRING_LITERAL:
            lit = c_string_value(w.text(s) or s.spelling)
        stack = [s]
        while stack:
            x = stack.pop()
            if x.kind == K.DECL_REF_EXPR and x.referenced is not None and x.referenced.kind == K.VAR_DECL:
                consts.append(x.referenced.spelling)
            stack.extend(x.get_children())
        return lit, tuple(dict.fromkeys(consts)), text

    def _name_list(self, a):
        """The names a list argument holds: its string literals, or those the helper it calls returns; None
        when some element is not a literal (a variable, a computed name)."""
        w = self.walk
        K = w.K
        s = w.strip(a)
        if s.kind == K.CALL_EXPR and s.referenced is not None and s.referenced.kind == K.FUNCTION_DECL:
            d = s.referenced.get_definition()
            returns = [] if d is None else [x for x in d.walk_preorder() if x.kind == K.RETURN_STMT]
            if len(returns) != 1:
                return None
            s = returns[0]
        names, stack, followed = [], [s], set()
        while stack:
            x = stack.pop()
            if x.kind == K.STRING_LITERAL:
                names.append(c_string_value(w.text(x) or x.spelling))
                continue
            r = x.referenced if x.kind in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR) else None
            if r is not None and r.kind == K.VAR_DECL and r.type.is_const_qualified() and r.hash not in followed:
                followed.add(r.hash)  # a constant list the helper returns: its initializer's names
                stack.extend(reversed(list(r.get_children())))
                continue
            if r is not None and r.kind in (K.VAR_DECL, K.PARM_DECL, K.FIELD_DECL):
                return None
            stack.extend(reversed(list(x.get_children())))
        return tuple(names) if all(n is not None for n in names) else None

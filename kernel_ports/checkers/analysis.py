"""KP901/KP902 from the front ends: files that could not be parsed, and target
constructs the syntactic witness saw that Clang lost or could not type."""

from __future__ import annotations

from kernel_ports.checkers import Context, Rule
from kernel_ports.findings import Finding
from kernel_ports.limits import lost_message


class FrontEndFailures(Rule):
    codes = ("KP901", "KP902")

    def check(self, ctx: Context):
        for path, reason in ctx.index.unanalyzable:
            yield Finding("KP901", path, 1, 1, lost_message(reason))
        for u in ctx.index.unconfirmed:
            configuration = ",".join(sorted(u.configurations)) or None
            yield Finding(
                "KP902",
                u.loc.path,
                u.loc.line,
                u.loc.column,
                f"{u.kind.replace('_', ' ')} `{u.name}` seen by the syntactic pass but not confirmed by Clang: {u.reason}; "
                "check that the MLX stub headers (or compile_commands.json) match the MLX this engine pins",
                configuration=configuration,
            )

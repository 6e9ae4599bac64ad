"""KP901/KP902 from the front ends: files that could not be parsed, and target
constructs the syntactic witness saw that Clang lost or could not type."""

from __future__ import annotations

from kernel_ports.checkers.base import Context, Rule
from kernel_ports.facts import DAMAGED_TABLE
from kernel_ports.findings import Finding
from kernel_ports.frontend.isolation import WALK_FAILURE
from kernel_ports.scope.limits import lost_message


class FrontEndFailures(Rule):
    codes = ("KP901", "KP902")

    def check(self, ctx: Context):
        for path, reason in ctx.index.unanalyzable:
            yield Finding("KP901", path, 1, 1, lost_message(reason))
        for u in ctx.index.unconfirmed:
            configuration = ",".join(sorted(u.configurations)) or None
            if u.kind == WALK_FAILURE:
                message = f"`{u.name}` not judged: {u.reason}; the rest of the file was judged"
            elif u.kind == DAMAGED_TABLE:
                message = f"port table `{u.name}`: {u.reason}; the rules read its slots as Clang recovered them"
            else:
                message = (f"{u.kind.replace('_', ' ')} `{u.name}` seen by the syntactic pass but not confirmed by Clang: "
                           f"{u.reason}; check that the MLX and cxx headers that judged the tree (see the summary) or "
                           "compile_commands.json match what this engine builds with")
            yield Finding("KP902", u.loc.path, u.loc.line, u.loc.column, message, configuration=configuration)

"""`kernel-ports explain [CODE]`: the list of rules, or one rule's rationale and examples
(:mod:`kernel_ports.checkers.explain` reads them)."""

from __future__ import annotations

import sys

from kernel_ports.commands.common import EXIT_CLEAN, UsageError


def cmd_explain(args) -> int:
    from kernel_ports.checkers.explain import explain_text
    from kernel_ports.findings import RULES

    if not args.code:
        for info in RULES.values():
            sys.stdout.write(f"{info.code}  {info.name:<28} {info.summary}\n")
        return EXIT_CLEAN
    code = args.code.upper()
    if code not in RULES:
        raise UsageError(f"kernel-ports: unknown rule code: {args.code} (run `kernel-ports explain` for the list)")
    info = RULES[code]
    body = explain_text(code, missing_ok=True) or f"{info.summary}\n"
    sys.stdout.write(f"{code} {info.name} ({info.severity} by default)\n\n{body}")
    return EXIT_CLEAN

"""`kernel-ports check`: every rule, or the answer of the last check whose inputs are all unchanged; the
report in ``--format`` to ``--output`` and in each ``--also FORMAT=FILE``."""

from __future__ import annotations

import sys

from kernel_ports.commands.common import (EXIT_CLEAN, EXIT_FINDINGS, UsageError, check_run_args, device_compiler_present,
                                          registry_of, run_options, write_output)


def cmd_check(args) -> int:
    from kernel_ports.cache import check_entry as checkcache
    from kernel_ports.findings import Policy, SelectionError, parse_selection

    try:
        select, ignore = parse_selection(args.select), parse_selection(args.ignore)
    except SelectionError as exc:
        raise UsageError(f"kernel-ports: {exc}") from None
    check_run_args(args)
    extra = _also_outputs(args.also, args.output)
    known = checkcache.lookup(args)  # every input unchanged since a check that answered: its answer
    if known is not None:
        findings, summary = known
    else:
        from kernel_ports.project import analyze

        registry = registry_of(args)
        device_compiler_present(args, registry)
        kernel_severity = {k.name: k.severity for k in registry.kernels if k.severity}
        policy = Policy(select=select, ignore=ignore, severity=registry.severity, kernel_severity=kernel_severity)
        result = analyze(registry, run_options(args, policy), scope=checkcache.scope_for(registry))
        if checkcache.store(args, registry, result) is False:
            print(f"note: the cache folder {checkcache.cache_dir_of(args)} cannot be written: this check keeps nothing "
                  "for the next one", file=sys.stderr)
        findings, summary = result.findings, result.summary
    from kernel_ports.reporters import FORMATS

    for fmt, path in extra:
        write_output(FORMATS[fmt](findings, summary), path)
    write_output(FORMATS[args.format](findings, summary), args.output)
    return EXIT_FINDINGS if summary["counts"]["error"] else EXIT_CLEAN


CHECK_FORMATS = ("text", "json", "sarif", "github")


def _also_outputs(items: list, output) -> list:
    """``--also FORMAT=FILE`` values as (format, file), judged before anything runs."""
    out = []
    for item in items:
        fmt, sep, path = item.partition("=")
        if not sep or fmt not in CHECK_FORMATS or not path:
            raise UsageError(f"kernel-ports: --also: expected FORMAT=FILE with FORMAT one of {', '.join(CHECK_FORMATS)}, got {item!r}")
        out.append((fmt, path))
    paths = [p for _, p in out] + ([output] if output else [])
    if len(set(paths)) != len(paths):
        raise UsageError("kernel-ports: --also: each report needs its own file")
    return out

"""Parse quality after `init`: which translation units Clang parsed with errors, and the first cause of each.

A minimal local report: the index records per-file error counts but not
Clang's messages, so the first error of the worst few files is read by
parsing each of them once more, in a child process (a parser crash costs the
line, not the run). It is meant to give way to the check's own parse-quality
summary line when that exists.
"""

from __future__ import annotations

MAX_CAUSES = 3
CAUSE_TIMEOUT = 60.0


def _first_error(abspath: str, args: list) -> str:
    from kernel_ports.frontend.clang import cindex

    ci = cindex()
    index = ci.Index.create()
    tu = index.parse(abspath, args=args, options=0x200)  # CXTranslationUnit_KeepGoing
    for d in tu.diagnostics:
        if d.severity >= 3 and "__va_list_tag" not in d.spelling:
            where = f"{d.location.file.name}:{d.location.line}" if d.location.file else "?"
            return f"{where}: {d.spelling}"
    return ""


def parse_quality_lines(registry, index) -> list:
    """Lines for stderr: the count of units with Clang errors, then the worst with their first error."""
    worst: dict = {}  # path -> (errors, configuration)
    parsed = set()
    for q in index.parse_quality:
        if not q.parsed:
            continue
        parsed.add(q.path)
        if q.errors and q.errors > worst.get(q.path, (0, ""))[0]:
            worst[q.path] = (q.errors, q.configuration)
    if not parsed:
        return ["parse quality: Clang parsed no translation unit"]
    head = f"parse quality: {len(parsed) - len(worst)} of {len(parsed)} translation unit(s) parsed by Clang without errors"
    if not worst:
        return [head]
    lines = [head + f"; {len(worst)} with errors:"]
    ranked = sorted(worst.items(), key=lambda kv: (-kv[1][0], kv[0]))
    causes = _causes(registry, ranked[:MAX_CAUSES])
    for path, (errors, conf) in ranked:
        cause = causes.get(path)
        lines.append(f"  {path}: {errors} error(s) (configuration {conf})" + (f"; first: {cause}" if cause else ""))
    return lines


def _causes(registry, ranked) -> dict:
    from concurrent.futures import ProcessPoolExecutor

    from kernel_ports.frontend.clang import build_args

    confs = {c.name: c for c in registry.compile.configurations}
    cc = {}
    if registry.compile.compile_commands is not None:
        from kernel_ports.index.plan import load_compile_commands

        try:
            cc = load_compile_commands(registry.compile.compile_commands, registry.root)
        except Exception:  # unreadable: the check has said so already
            cc = {}
    out = {}
    try:
        with ProcessPoolExecutor(max_workers=1) as pool:
            futures = {path: pool.submit(_first_error, str(registry.root / path),
                                         build_args(registry, confs[conf], path, compile_commands=cc))
                       for path, (_, conf) in ranked if conf in confs}
            for path, fut in futures.items():
                try:
                    out[path] = fut.result(timeout=CAUSE_TIMEOUT)
                except Exception:  # a crash or a timeout in the child: the count is still reported
                    continue
    except Exception:
        return out
    return out

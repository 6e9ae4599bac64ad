"""Parse quality after `init`: which translation units Clang parsed with errors, and the first error of each.

The first error is the one the check's own parse recorded (``ParseQuality.first_errors``, from the parse with
the prelude); the report parses nothing again.
"""

from __future__ import annotations


def parse_quality_lines(index) -> list:
    """Lines for stderr: the count of units with Clang errors, then each of them with its first error."""
    worst: dict = {}  # path -> (errors, configuration, its first error)
    parsed = set()
    for q in index.parse_quality:
        if not q.parsed:
            continue
        parsed.add(q.path)
        if q.errors and q.errors > worst.get(q.path, (0, "", ""))[0]:
            worst[q.path] = (q.errors, q.configuration, q.first_errors[0] if q.first_errors else "")
    if not parsed:
        return ["parse quality: Clang parsed no translation unit"]
    head = f"parse quality: {len(parsed) - len(worst)} of {len(parsed)} translation unit(s) parsed by Clang without errors"
    if not worst:
        return [head]
    lines = [head + f"; {len(worst)} with errors:"]
    for path, (errors, conf, cause) in sorted(worst.items(), key=lambda kv: (-kv[1][0], kv[0])):
        lines.append(f"  {path}: {errors} error(s) (configuration {conf})" + (f"; first: {cause}" if cause else ""))
    return lines

"""How well Clang read the tree, said where a user sees it.

The summary names the headers that judged the tree (``headers``) and, when
files parsed with Clang errors, how many and their first distinct causes
(``parse_errors``, and one ``notes`` line in the text report); ``facts`` lists
each file's first errors (``files[].first_errors``); a KP902 finding names the
Clang error nearest the construct it lost; after ``init``, each unit parsed
with errors is listed with its first one (``parse_quality_lines``). Every
figure comes from the project index, so what is said is what was parsed.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter

_ERROR = re.compile(r"^(?P<path>.*?):(?P<line>\d+): (?P<message>.*)$")
CAUSES_SHOWN = 3


def parse_errors(index) -> dict:
    """{"files": parses with Clang errors, "errors": their total, "causes": [{"message", "count"}]} where a
    cause's count is the number of parses (file and configuration) whose first errors include it."""
    failed = [q for q in index.parse_quality if q.parsed and q.errors]
    causes: Counter = Counter()
    order: dict = {}
    for q in sorted(failed, key=lambda q: (q.path, q.configuration)):
        seen = set()
        for text in getattr(q, "first_errors", ()):
            m = _ERROR.match(text)
            message = m.group("message") if m else text
            if message in seen:
                continue
            seen.add(message)
            causes[message] += 1
            order.setdefault(message, len(order))
    ranked = sorted(causes, key=lambda m: (-causes[m], order[m]))
    out = {"files": len({q.path for q in failed}), "parses": len(failed), "errors": sum(q.errors for q in failed),
           "causes": [{"message": m, "count": causes[m]} for m in ranked]}
    missing = getattr(index, "missing_from_shim", ())
    if missing:
        out["missing_from_shim"] = list(missing)
    return out


def parse_quality_lines(index) -> list:
    """Lines for `init`'s stderr: the count of units with Clang errors, then each of them with its first error."""
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


def notes(headers: dict, errors: dict) -> list:
    """Lines for the end of the text report."""
    out = []
    if headers:
        line = f"judged with {headers.get('description', '')}"
        if headers.get("libclang"):
            line += f"; parsed by {headers['libclang']}"
        if headers.get("compile_commands"):
            line += f" (compile_commands.json flags for {headers['compile_commands']} file(s))"
        out.append(line)
    if errors.get("files"):
        shown = ", ".join(f"{c['message']} ×{c['count']}" for c in errors["causes"][:CAUSES_SHOWN])
        out.append(f"{errors['files']} file(s) parsed with Clang errors ({errors['errors']} in {errors['parses']} "
                   f"parse(s)); first causes: {shown}; `kernel-ports facts` lists each file's first errors")
    missing = errors.get("missing_from_shim")
    if missing:
        out.append(f"the bundled ROCm shim does not declare {', '.join(missing)} (the ROCm fork's own backend "
                   "functions, not kernel constructs, so not KP902); with the fork's headers (compile.mlx_headers, "
                   "MLX_INCLUDE_DIR or "
                   "compile_commands.json) Clang types those calls too")
    return out


def with_nearest_errors(unconfirmed: list, results: list) -> list:
    """Each KP902 candidate with the Clang error nearest to it in its file (any configuration parsed), if any."""
    by_path: dict = {}
    for r in results:
        for path, lines in (getattr(r, "error_lines", None) or {}).items():
            by_path.setdefault(path, []).extend(lines)
    out = []
    for u in unconfirmed:
        lines = by_path.get(u.loc.path)
        if not lines:
            out.append(u)
            continue
        line, message = min(lines, key=lambda e: (abs(e[0] - u.loc.line), e[0]))
        out.append(dataclasses.replace(u, reason=f"{u.reason} (nearest Clang error: line {line}: {message})"))
    return out

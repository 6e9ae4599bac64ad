"""Adopting the gate on a tree as it is: what holds without the convention, and today's findings as a baseline.

* ``untabled_notes``: the summary lines for launches outside any port table
  and for the lane-level operations of HIP bodies when no table exists to
  mark them, so a tree without the convention still says what was judged.
* ``symbol_of`` / ``annotate_symbols``: the construct a finding sits in (its
  function, or the namespace-level declaration such as a table or a kernel
  body constant), read from the tree-sitter parse tree, so a baseline
  exemption names a construct and not a line that any edit above it moves.
* ``baseline_exemptions`` / ``add_exemptions``: every current finding as a
  registry exemption, added in ruamel.yaml's round-trip mode so the rest of
  the registry keeps its comments and order.
"""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

BASELINE_REASON = "present when the gate was adopted"
# KP401/KP402 are about the registry's own exemptions; KP901/KP902 say a file or construct could not be judged, and an
# exemption for them would let every new violation there pass unseen, so they are fixed (headers, include dirs,
# defines), never recorded
_NOT_BASELINED = ("KP401", "KP402", "KP901", "KP902")


def untabled_notes(index, registry) -> list:
    """Summary notes: launches that reach no port table; lane-level operations when there are no tables."""
    out = []
    outside = [i for i in index.invocations if not [t for t in i.tables if t != "unknown"]]
    if outside:
        first = min(outside, key=lambda i: (i.loc.path, i.loc.line))
        out.append(f"{len(outside)} of {len(index.invocations)} launch(es) reach no port table (first {first.loc}); "
                   "their dtype keys (KP201/KP202) are judged as if they may run on every dtype-blind backend")
    if not index.port_tables:
        from kernel_ports.checkers.lane_ops import find_lane_ops, lane_op_patterns

        hip = {fc_source for fc in index.factory_calls if fc.backend == "rocm" for fc_source in fc.source_constants}
        bodies = [h for h in index.hip_sources if h.name in hip or "HIP" in h.name.upper()]
        using = [(h, uses) for h in bodies if (uses := find_lane_ops(h.tokens, h.token_lines, lane_op_patterns(registry)))]
        if bodies:
            text = f"{len(bodies)} HIP bod(ies) read, {len(using)} with lane-level operations"
            if using:
                h, uses = using[0]
                text += f" (first {h.name} at {h.loc.path}:{uses[0].line or h.loc.line}: `{uses[0].text}`)"
            out.append(text + "; no port table marks a body runnable at any wavefront width, so KP105 judges none")
    return out


# --------------------------------------------------------------------------
# the construct a finding sits in
# --------------------------------------------------------------------------


def _name_of_definition(node) -> str | None:
    from kernel_ports.frontend.witness import _declarator_name, _function_declarator

    if node.type == "function_definition":
        _, inner = _function_declarator(node.child_by_field_name("declarator"))
        if inner is None:
            return None
        return inner.text.decode("utf-8", "replace").split("<")[0].strip()
    if node.type in ("declaration", "field_declaration"):
        names = [_declarator_name(d) for d in node.children_by_field_name("declarator")]
        names = [n for n in names if n]
        return names[0] if names else None
    return None


def symbols_of_lines(data: bytes, lines) -> dict:
    """line -> the innermost function (else the outermost declaration) around it, qualified by its namespaces and
    classes as written around it (a `ns::f` definition keeps its own qualifier)."""
    from kernel_ports.frontend.witness import cpp_parser

    tree = cpp_parser().parse(data)
    out = {}
    for line in set(lines):
        row = line - 1
        node, function, declaration, classes = tree.root_node, None, None, []
        while True:
            inner = next((c for c in node.named_children if c.start_point.row <= row <= c.end_point.row), None)
            if inner is None:
                break
            node = inner
            if node.type == "function_definition":
                function = _name_of_definition(node)
            elif node.type in ("declaration", "field_declaration") and declaration is None and function is None:
                declaration = _name_of_definition(node)
            elif node.type in ("class_specifier", "struct_specifier", "namespace_definition") and function is None:
                n = node.child_by_field_name("name")
                if n is not None:  # an anonymous namespace adds nothing
                    classes.append(n.text.decode("utf-8", "replace"))
        name = function or declaration
        if name and classes and "::" not in name:
            name = "::".join(classes + [name])
        out[line] = name
    return out


def annotate_symbols(findings, registry, only_needed: bool = True) -> list:
    """The findings with ``symbol`` filled (when ``only_needed``: only those an exemption with a symbol could match)."""
    wanted = [e for e in registry.exemptions if e.symbol] if only_needed else None
    if only_needed and not wanted:
        return list(findings)
    from kernel_ports.findings import path_matches

    need: dict = {}
    for f in findings:
        if wanted is None or any(e.rule == f.rule and path_matches(e.path, f.path) for e in wanted):
            need.setdefault(f.path, set()).add(f.line)
    symbols: dict = {}
    from kernel_ports.scope import MAX_FILE_BYTES

    for path, lines in need.items():
        target = Path(registry.root) / path
        try:
            # findings name files in scope, which scope has judged; the size bound keeps any other path harmless
            if not target.is_file() or target.stat().st_size > MAX_FILE_BYTES:
                continue
            data = target.read_bytes()
        except OSError:
            continue
        symbols[path] = symbols_of_lines(data, lines)
    return [replace(f, symbol=symbols.get(f.path, {}).get(f.line)) if f.path in symbols else f for f in findings]


# --------------------------------------------------------------------------
# baseline
# --------------------------------------------------------------------------


def baseline_exemptions(findings, registry, scope_paths: set, tracking: str) -> list:
    """One exemption dict per (rule, path, construct) of the findings that are about code in scope."""
    seen = {}
    for f in annotate_symbols([f for f in findings if f.path in scope_paths and f.rule not in _NOT_BASELINED],
                              registry, only_needed=False):
        key = (f.path, f.rule, f.symbol or "")
        seen.setdefault(key, f)
    out = []
    for (path, rule, symbol), _ in sorted(seen.items()):
        entry = {"rule": rule, "path": path}
        if symbol:
            entry["symbol"] = symbol
        entry["reason"] = BASELINE_REASON
        entry["tracking"] = tracking
        out.append(entry)
    return out


def add_exemptions(text: str, entries: list) -> str:
    """The registry text with the exemptions appended (round trip: comments and order kept)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString as DQ

    from kernel_ports.yaml_roundtrip import as_block_list, round_trip_yaml

    y = round_trip_yaml(text)
    doc = y.load(text)
    seq = doc.get("exemptions")
    if seq is None:
        seq = CommentedSeq()
        doc["exemptions"] = seq
    as_block_list(seq)
    for entry in entries:
        item = CommentedMap()
        for k, v in entry.items():
            item[k] = DQ(v) if k != "rule" else v
        item.fa.set_flow_style()
        seq.append(item)
    out = io.StringIO()
    y.dump(doc, out)
    return out.getvalue()


# --------------------------------------------------------------------------
# the check init runs once on what it wrote
# --------------------------------------------------------------------------


def _load_text(text: str, root):
    import os
    import tempfile

    from kernel_ports.registry.load import load_registry

    fd, tmp = tempfile.mkstemp(prefix="kernel-ports-init-", suffix=".yaml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return load_registry(tmp, str(root))
    finally:
        os.unlink(tmp)


def _verdict(result) -> str:
    counts = result.summary["counts"]
    by_rule: dict = {}
    for f in result.findings:
        by_rule[f.rule] = by_rule.get(f.rule, 0) + 1
    rules = ", ".join(f"{r} x{n}" for r, n in sorted(by_rule.items()))
    return f"{counts['error']} error(s), {counts['warning']} warning(s)" + (f" ({rules})" if rules else "")


def check_written(text: str, root, *, jobs: int, cache_dir=None, baseline: bool = False, tracking: str = "") -> tuple:
    """Run the check once under the registry text: (text, with exemptions added when ``baseline``; stderr lines)."""
    from kernel_ports.findings import Policy
    from kernel_ports.parse_summary import parse_quality_lines
    from kernel_ports.project import Options, analyze

    registry = _load_text(text, root)
    options = Options(policy=Policy(severity=registry.severity), jobs=jobs, cache_dir=cache_dir)
    result = analyze(registry, options)
    lines = [f"check with this registry: {_verdict(result)}"]
    lines += parse_quality_lines(result.index)
    lines += [f"note: {n}" for n in result.summary.get("notes", ())]
    if not baseline:
        return text, lines
    from kernel_ports.scope import resolve_scope

    scope_paths = {f.path for f in resolve_scope(registry).files}
    entries = baseline_exemptions(result.findings, registry, scope_paths, tracking)
    unjudged = [f for f in result.findings if f.rule in ("KP901", "KP902")]
    if unjudged:
        lines.append(f"baseline: {len(unjudged)} KP901/KP902 finding(s) not recorded: a file or construct the check "
                     "cannot judge is fixed (headers, include dirs, defines), not exempted")
    if not entries:
        return text, lines + ["baseline: no finding to record"]
    new = add_exemptions(text, entries)
    after = analyze(_load_text(new, root), options)
    lines.append(f"baseline: {len(entries)} exemption(s) recorded for {len(result.findings)} finding(s) "
                 f"(reason {BASELINE_REASON!r}, tracking {tracking!r}); check with them: {_verdict(after)}")
    return new, lines


def default_tracking() -> str:
    import datetime

    return f"baseline of {datetime.date.today().isoformat()}"


def sync_baseline(registry, options, tracking: str) -> tuple:
    """(old text, new text, exemptions added, KP901/KP902 left unrecorded) for `sync --baseline`: today's
    unexempted findings recorded."""
    from kernel_ports.project import analyze
    from kernel_ports.scope import resolve_scope

    old = Path(registry.path).read_text(encoding="utf-8")
    result = analyze(registry, options)
    scope_paths = {f.path for f in resolve_scope(registry).files}
    entries = baseline_exemptions(result.findings, registry, scope_paths, tracking)
    unjudged = sum(f.rule in ("KP901", "KP902") for f in result.findings)
    return old, (add_exemptions(old, entries) if entries else old), len(entries), unjudged

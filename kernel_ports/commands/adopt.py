"""Adopting the gate on a tree as it is: today's findings as a baseline.

What holds without the convention (``untabled_notes``) and the construct a finding sits in
(``annotate_symbols``) are part of every check, in :mod:`kernel_ports.project`.

* ``baseline_exemptions`` / ``add_exemptions``: every current finding as a
  registry exemption, added in ruamel.yaml's round-trip mode so the rest of
  the registry keeps its comments and order.
"""

from __future__ import annotations

import io
from pathlib import Path

BASELINE_REASON = "present when the gate was adopted"
# KP401/KP402 are about the registry's own exemptions; KP901/KP902 say a file or construct could not be judged, and an
# exemption for them would let every new violation there pass unseen, so they are fixed (headers, include dirs,
# defines), never recorded
_NOT_BASELINED = ("KP401", "KP402", "KP901", "KP902")


# --------------------------------------------------------------------------
# baseline
# --------------------------------------------------------------------------


def baseline_exemptions(findings, registry, scope_paths: set, tracking: str) -> list:
    """One exemption dict per (rule, path, construct) of the findings that are about code in scope."""
    seen = {}
    from kernel_ports.project import annotate_symbols

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

    from kernel_ports.registry.roundtrip import as_block_list, round_trip_yaml

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

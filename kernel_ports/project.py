"""One check from registry to findings: scope → index → rules → policy.

Before the policy, each finding an exemption may name by construct gets its ``symbol``
(``annotate_symbols``, read with :mod:`kernel_ports.frontend.symbols`); the summary says what holds in a
tree without the convention (``untabled_notes``: launches outside any port table, lane-level operations
of HIP bodies when no table marks them).

The CLI and the tests both call `analyze`, so what a test checks is what a
user runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from kernel_ports import parse_summary
from kernel_ports.checkers import CONVENTION_CODES, Context, all_rules, convention_note, convention_waits
from kernel_ports.findings import Finding, Policy, apply_policy
from kernel_ports.scope import resolve_scope


@dataclass
class Options:
    policy: Policy = field(default_factory=Policy)
    jobs: int = 2
    use_cache: bool = True
    cache_dir: str | None = None
    compile_commands: str | None = None
    device_compile: str | None = None  # "rocm": build the HIP bodies (check --device-compile rocm; index/device.py)


@dataclass
class Result:
    findings: list[Finding]
    summary: dict
    index: object = None
    scope: object = None


def build_project_index(registry, scope, options: Options):
    # the prelude build starts before the rest of the index is imported: it is what a cold run waits for first
    from kernel_ports.index import prelude

    where = dict(use_cache=options.use_cache, cache_dir=options.cache_dir, compile_commands=options.compile_commands)
    early = prelude.start_for_build(registry, scope.files, **where)
    from kernel_ports.index import build_index

    return build_index(registry, scope.files, jobs=options.jobs, withheld=tuple(getattr(scope, "refused", ())),
                       early_prelude=early, **where)


def analyze(registry, options: Options | None = None, scope=None) -> Result:
    """``scope``: the registry's scope when the caller has listed it already (``check_entry.scope_for``)."""
    options = options or Options()
    scope = scope if scope is not None else resolve_scope(registry)
    index = build_project_index(registry, scope, options)
    device_notes = device_builds(registry, scope, index, options)
    ctx = Context(registry=registry, index=index, scope=scope)
    raw: list[Finding] = list(scope.findings)
    rules_run = []
    policy = options.policy
    waiting = [c for c in CONVENTION_CODES if policy.selected(c)] if convention_waits(registry, index) else []
    if waiting:  # not run, and their exemptions are not stale
        policy = replace(policy, ignore=tuple(policy.ignore) + tuple(waiting))
    for rule in all_rules():
        wanted = [c for c in rule.codes if policy.selected(c)]
        if not wanted or (getattr(rule, "reads_device_builds", False) and not index.device.get("compiler")):
            continue
        rules_run.extend(wanted)
        raw.extend(f for f in rule.check(ctx) if f.rule in rule.codes)
    # Exemptions are judged with the findings (KP401 stale, KP402 invalid).
    rules_run.extend(c for c in ("KP401", "KP402") if policy.selected(c))
    findings = apply_policy(annotate_symbols(raw, registry), registry, policy)
    summary = make_summary(registry, scope, index, findings, sorted(set(rules_run)))
    if waiting:
        summary["convention_waits"] = waiting
        summary["notes"] = [convention_note(waiting)] + summary.get("notes", [])
    if device_notes:
        summary["notes"] = summary.get("notes", []) + device_notes
    if index.device:
        summary["device"] = index.device
    return Result(findings, summary, index, scope)


def device_builds(registry, scope, index, options) -> list:
    """Device builds when the flag or the registry's compile.device.rocm asks for them: their notes."""
    if options.device_compile is None and registry.compile.device_rocm is None:
        return []
    from kernel_ports.index import device

    return device.run_for_check(registry, scope, index, options)


def make_summary(registry, scope, index, findings, rules_run) -> dict:
    counts = {"error": sum(f.severity == "error" for f in findings), "warning": sum(f.severity == "warning" for f in findings)}
    checked = {"files_scanned": len(scope.files), "files_unanalyzable": sum(f.rule == "KP901" for f in findings)}
    clang_paths = {path for path, _ in index.clang_files}
    checked.update(
        {
            "files_parsed_by_clang": len(clang_paths),
            "rust_files": sum(f.language == "rust" for f in scope.files),
            "tables": len(index.port_tables),
            "launches": len(index.invocations),
            "selector_calls": len(index.selector_calls),
            "predicates": len(index.predicates),
            "rust_gates": len(index.rust_gates),
        }
    )
    headers = getattr(index, "headers", {}) or {}
    errors = parse_summary.parse_errors(index)
    summary = {
        "root": str(registry.root),
        "root_uri": registry.root.resolve().as_uri() + "/",
        "registry": str(registry.path),
        "checked": checked,
        "counts": counts,
        "rules_run": rules_run,
        "headers": headers,
        "parse_errors": errors,
    }
    notes = parse_summary.notes(headers, errors) + untabled_notes(index, registry)
    if notes:
        summary["notes"] = notes
    return summary


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
    from kernel_ports.frontend.symbols import symbols_of_lines
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

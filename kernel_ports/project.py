"""One check from registry to findings: scope → index → rules → policy.

The CLI and the tests both call `analyze`, so what a test checks is what a
user runs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from kernel_ports import parse_summary
from kernel_ports.adopt import annotate_symbols, untabled_notes
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


def analyze(registry, options: Options | None = None) -> Result:
    options = options or Options()
    scope = resolve_scope(registry)
    index = build_project_index(registry, scope, options)
    ctx = Context(registry=registry, index=index, scope=scope)
    raw: list[Finding] = list(scope.findings)
    rules_run = []
    policy = options.policy
    waiting = [c for c in CONVENTION_CODES if policy.selected(c)] if convention_waits(registry, index) else []
    if waiting:  # not run, and their exemptions are not stale
        policy = dataclasses.replace(policy, ignore=tuple(policy.ignore) + tuple(waiting))
    for rule in all_rules():
        wanted = [c for c in rule.codes if policy.selected(c)]
        if not wanted:
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
    return Result(findings, summary, index, scope)


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

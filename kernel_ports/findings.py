"""Findings, the rule catalogue, and the one place that decides what is reported.

`apply_policy` is the only function that knows about `--select/--ignore`,
registry severities and exemptions; rules just yield findings.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str
    summary: str
    severity: str = "error"


RULES: dict[str, RuleInfo] = {
    r.code: r
    for r in (
        RuleInfo("KP101", "backend-comparison", "runtime backend kind or availability tested outside the helper files where it decides a kernel"),
        RuleInfo("KP102", "hand-rolled-refusal", "a launcher tests availability or ports itself and throws"),
        RuleInfo("KP103", "direct-holder-access", "a kernel holder reached without its port table"),
        RuleInfo("KP104", "backend-enumerating-gate", "a Rust gate enumerates backends instead of asking the kernel's predicate"),
        RuleInfo("KP105", "any-wave-lane-op", "a table marked rocm_any_wave_size compiles a HIP body with a lane-level operation"),
        RuleInfo("KP106", "test-seam-outside-tests", "a registry-declared test seam is called from production code"),
        RuleInfo("KP107", "predicate-not-from-table", "a support predicate does not answer from has_kernel_port on its table(s)"),
        RuleInfo("KP201", "dtype-key-missing", "a launch on a dtype-blind JIT cache passes no input dtype in its template args"),
        RuleInfo("KP202", "dtype-key-partial", "an input whose dtype varies independently of every keyed dtype is not keyed", "warning"),
        RuleInfo("KP301", "table-not-in-registry", "a port table in code that no registry kernel declares"),
        RuleInfo("KP302", "kernel-not-in-code", "a registry kernel whose table is gone from the code"),
        RuleInfo("KP303", "slot-mismatch", "a table slot differs between registry and code"),
        RuleInfo("KP304", "dispatch-mismatch", "selector call sites differ from the registry, or a table is dispatched nowhere"),
        RuleInfo("KP305", "wave-pin-mismatch", "rocm_any_wave_size or the pinned HIP source differs between registry and code"),
        RuleInfo("KP306", "launcher-scope-drift", "a file starts or stops launching custom kernels without the registry saying so"),
        RuleInfo("KP501", "body-does-not-compile", "a HIP body does not compile for a target its table may be selected on"),
        RuleInfo("KP502", "any-wave-contradicted", "a body marked rocm_any_wave_size fails or stops at its guard on 64 lanes, or its device IR holds a cross-lane operation"),
        RuleInfo("KP401", "stale-exemption", "a registry exemption that no longer suppresses anything"),
        RuleInfo("KP402", "invalid-exemption", "a registry exemption without a reason or a tracking reference"),
        RuleInfo("KP901", "unanalyzable-file", "an in-scope file that could not be read or parsed"),
        RuleInfo("KP902", "unconfirmed-candidate", "a target construct the syntactic pass saw and the semantic pass lost"),
    )
}


@dataclass(frozen=True)
class Finding:
    rule: str
    path: str  # relative POSIX path under the root, or the registry file's path
    line: int
    column: int
    message: str
    kernel: str | None = None
    configuration: str | None = None
    severity: str = ""  # filled by apply_policy from the catalogue and registry
    symbol: str | None = None  # the construct it sits in (function or declaration), when an exemption asks for it

    @property
    def name(self) -> str:
        return RULES[self.rule].name

    def sort_key(self):
        return (self.path, self.line, self.column, self.rule, self.message)

    def as_dict(self) -> dict:
        out = {
            "rule": self.rule,
            "name": self.name,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "message": self.message,
        }
        if self.kernel is not None:
            out["kernel"] = self.kernel
        if self.configuration is not None:
            out["configuration"] = self.configuration
        return out


class SelectionError(ValueError):
    pass


def parse_selection(text: str | None) -> tuple[str, ...]:
    """`KP1,KP201` -> prefixes; each must match at least one known code."""
    if not text:
        return ()
    items = tuple(part.strip().upper() for part in text.split(",") if part.strip())
    for item in items:
        if not any(code.startswith(item) for code in RULES):
            raise SelectionError(f"unknown rule code or prefix: {item}")
    return items


@dataclass
class Policy:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severity: dict = field(default_factory=dict)  # registry-wide overrides
    kernel_severity: dict = field(default_factory=dict)  # kernel name -> {code: severity}

    def selected(self, code: str) -> bool:
        if self.select and not any(code.startswith(p) for p in self.select):
            return False
        # The longest matching prefix wins, as in flake8: --select KP1 --ignore KP105.
        chosen = max((p for p in self.select if code.startswith(p)), key=len, default="")
        ignored = max((p for p in self.ignore if code.startswith(p)), key=len, default=None)
        return ignored is None or len(ignored) < len(chosen)

    def severity_of(self, finding: Finding) -> str:
        per_kernel = self.kernel_severity.get(finding.kernel or "", {})
        return per_kernel.get(finding.rule) or self.severity.get(finding.rule) or RULES[finding.rule].severity


def _exemption_matches(exemption, finding: Finding) -> bool:
    if exemption.rule != finding.rule:
        return False
    if exemption.kernel is not None and exemption.kernel != finding.kernel:
        return False
    if exemption.symbol is not None and exemption.symbol != finding.symbol:
        return False
    return path_matches(exemption.path, finding.path)


def path_matches(pattern: str, path: str) -> bool:
    return path == pattern or fnmatch.fnmatchcase(path, pattern)


def apply_policy(findings, registry, policy: Policy) -> list[Finding]:
    """Exemptions, then KP401/KP402, then selection and severity; sorted."""
    kept: list[Finding] = []
    used = set()
    for finding in findings:
        hits = [i for i, e in enumerate(registry.exemptions) if _exemption_matches(e, finding)] if registry else []
        if hits:
            used.update(hits)
            continue
        kept.append(finding)
    for i, exemption in enumerate(registry.exemptions if registry else ()):
        where = exemption.where
        if not exemption.reason or not exemption.tracking:
            missing = " and ".join(x for x, v in (("reason", exemption.reason), ("tracking reference", exemption.tracking)) if not v)
            kept.append(Finding("KP402", where.path, where.line, where.column, f"exemption for {exemption.rule} at {exemption.path!r} has no {missing}; add why it is needed and the issue that tracks its removal", kernel=exemption.kernel))
        if i not in used and policy.selected(exemption.rule):
            at = f"{exemption.path!r}" + (f" in {exemption.symbol}" if exemption.symbol else "")
            kept.append(Finding("KP401", where.path, where.line, where.column, f"exemption for {exemption.rule} at {at} suppresses nothing; remove it", kernel=exemption.kernel))
    out = [replace(f, severity=policy.severity_of(f)) for f in kept if policy.selected(f.rule)]
    # One finding per place and message: a header seen by several units is reported once.
    unique = {(f.rule, f.path, f.line, f.column, f.message, f.kernel, f.configuration): f for f in out}
    return sorted(unique.values(), key=Finding.sort_key)

"""SARIF 2.1.0 for GitHub code scanning: rules with help, regions, fingerprints."""

import hashlib
import json

from kernel_ports import __version__
from kernel_ports.findings import RULES

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _rule_descriptor(info, explain_text: str) -> dict:
    return {
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": info.summary},
        "help": {"text": explain_text or info.summary, "markdown": explain_text or info.summary},
        "defaultConfiguration": {"level": "error" if info.severity == "error" else "warning"},
    }


def _fingerprint(f) -> str:
    # Stable across line moves: rule, file, kernel and message, not the line.
    basis = "\0".join((f.rule, f.path, f.kernel or "", f.configuration or "", f.message))
    return hashlib.sha256(basis.encode("utf-8")).hexdigest()[:32]


def render_sarif(findings, summary: dict) -> str:
    from kernel_ports.checkers.explain import explain_text

    codes = sorted(RULES)
    index = {code: i for i, code in enumerate(codes)}
    results = []
    for f in findings:
        result = {
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": "error" if f.severity == "error" else "warning",
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": f.path, **({} if f.path.startswith("/") else {"uriBaseId": "SRCROOT"})},
                        "region": {"startLine": max(f.line, 1), "startColumn": max(f.column, 1)},
                    }
                }
            ],
            "partialFingerprints": {"primaryLocationLineHash": _fingerprint(f)},
        }
        props = {k: v for k, v in (("kernel", f.kernel), ("configuration", f.configuration)) if v}
        if props:
            result["properties"] = props
        results.append(result)
    doc = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "kernel-ports",
                        "version": __version__,
                        "rules": [_rule_descriptor(RULES[c], explain_text(c, missing_ok=True)) for c in codes],
                    }
                },
                "originalUriBaseIds": {"SRCROOT": {"uri": summary.get("root_uri", "file:///")}},
                "results": results,
                # which headers judged the tree, and how well it parsed
                "properties": {k: summary[k] for k in ("headers", "parse_errors") if k in summary},
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"

"""Reporters: text lines, JSON shape, SARIF against the official schema, GitHub."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from kernel_ports.findings import Finding, Policy, apply_policy
from kernel_ports.reporters import FORMATS

SARIF_SCHEMA = Path(__file__).resolve().parents[2] / "shared" / "data" / "sarif-schema-2.1.0.json"

FINDINGS = apply_policy(
    [
        Finding("KP101", "src/a.cpp", 12, 5, "backend compared outside the helpers", kernel="norm"),
        Finding("KP202", "src/b.h", 3, 1, "input 'w' not keyed", configuration="rocm"),
    ],
    None,
    Policy(),
)
SUMMARY = {
    "root": "/r",
    "root_uri": "file:///r/",
    "checked": {"files_scanned": 2, "tables": 1},
    "counts": {"error": 1, "warning": 1},
    "rules_run": ["KP101", "KP202"],
}


def test_text_lines_and_summary():
    out = FORMATS["text"](FINDINGS, SUMMARY).splitlines()
    assert out[0] == "src/a.cpp:12:5: error: backend compared outside the helpers [KP101]"
    assert out[1] == "src/b.h:3:1: warning: input 'w' not keyed (configuration rocm) [KP202]"
    assert out[-1].startswith("checked 2 files scanned, 1 tables; rules run: KP101, KP202: 1 error(s), 1 warning(s)")


def test_json_shape():
    doc = json.loads(FORMATS["json"](FINDINGS, SUMMARY))
    assert doc["version"] == 1 and doc["summary"] == SUMMARY
    first, second = doc["findings"]
    assert first == {
        "rule": "KP101",
        "name": "backend-comparison",
        "severity": "error",
        "path": "src/a.cpp",
        "line": 12,
        "column": 5,
        "message": "backend compared outside the helpers",
        "kernel": "norm",
    }
    assert second["configuration"] == "rocm" and "kernel" not in second


@pytest.mark.skipif(not SARIF_SCHEMA.exists(), reason="the shared SARIF schema is not beside this checkout")
def test_sarif_validates_against_official_schema():
    doc = json.loads(FORMATS["sarif"](FINDINGS, SUMMARY))
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator(schema).validate(doc)
    run = doc["runs"][0]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert "KP101" in ids and ids == sorted(ids)
    result = run["results"][0]
    assert result["ruleId"] == "KP101" and ids[result["ruleIndex"]] == "KP101"
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 12, "startColumn": 5}
    assert result["partialFingerprints"]["primaryLocationLineHash"]
    assert run["results"][1]["level"] == "warning"


def test_sarif_fingerprint_survives_a_line_move():
    moved = [Finding("KP101", "src/a.cpp", 40, 5, "backend compared outside the helpers", kernel="norm", severity="error")]
    a = json.loads(FORMATS["sarif"](FINDINGS[:1], SUMMARY))["runs"][0]["results"][0]
    b = json.loads(FORMATS["sarif"](moved, SUMMARY))["runs"][0]["results"][0]
    assert a["partialFingerprints"] == b["partialFingerprints"]


def test_github_annotations_and_total():
    out = FORMATS["github"](FINDINGS, SUMMARY).splitlines()
    assert out[0] == "::error file=src/a.cpp,line=12,col=5,title=KP101 backend-comparison::backend compared outside the helpers"
    assert out[1].startswith("::warning file=src/b.h,line=3,col=1,")
    assert out[-1].startswith("kernel-ports: 1 error(s), 1 warning(s) in total")

"""`{"version": 1, "findings": [...], "summary": {...}}` with stable key order."""

import json


def render_json(findings, summary: dict) -> str:
    doc = {"version": 1, "findings": [f.as_dict() for f in findings], "summary": summary}
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"

"""`kernel-ports explain KP101`: rationale, a bad example, a good one.

Each rule's text lives in `checkers/docs/KPxxx.md` beside the rules, so the
doc and the rule are reviewed together.
"""

from __future__ import annotations

from pathlib import Path

from kernel_ports.findings import RULES

DOCS = Path(__file__).parent / "docs"


def explain_text(code: str, missing_ok: bool = False) -> str:
    code = code.upper()
    if code not in RULES:
        raise KeyError(code)
    path = DOCS / f"{code}.md"
    if not path.exists():
        if missing_ok:
            return ""
        raise FileNotFoundError(path)
    return path.read_text(encoding="utf-8")

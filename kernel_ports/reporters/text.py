"""`path:line:col: error: message [KP101]`, then what was checked."""


def summary_line(summary: dict) -> str:
    counts = summary["counts"]
    checked = ", ".join(f"{value} {key.replace('_', ' ')}" for key, value in summary["checked"].items())
    verdict = f"{counts['error']} error(s), {counts['warning']} warning(s)"
    rules = summary.get("rules_run")
    ran = f"; rules run: {', '.join(rules)}" if rules else "; no rule ran"
    return f"checked {checked}{ran}: {verdict}"


def render_text(findings, summary: dict) -> str:
    lines = []
    for f in findings:
        where = f"{f.path}:{f.line}:{f.column}"
        extra = f" (configuration {f.configuration})" if f.configuration and f.configuration != "default" else ""
        lines.append(f"{where}: {f.severity}: {f.message}{extra} [{f.rule}]")
    for note in summary.get("notes", ()):
        lines.append(f"note: {note}")
    lines.append(summary_line(summary))
    return "\n".join(lines) + "\n"

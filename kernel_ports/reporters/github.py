"""GitHub workflow commands; a total line last, since GitHub shows only a few."""

from kernel_ports.reporters.text import summary_line


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def render_github(findings, summary: dict) -> str:
    prefix = summary.get("path_prefix", "")
    lines = []
    for f in findings:
        level = "error" if f.severity == "error" else "warning"
        path = f"{prefix}{f.path}" if not f.path.startswith("/") else f.path
        props = f"file={_escape_prop(path)},line={f.line},col={f.column},title={_escape_prop(f.rule + ' ' + f.name)}"
        lines.append(f"::{level} {props}::{_escape(f.message)}")
    counts = summary["counts"]
    lines.append(f"kernel-ports: {counts['error']} error(s), {counts['warning']} warning(s) in total; {summary_line(summary)}")
    return "\n".join(lines) + "\n"

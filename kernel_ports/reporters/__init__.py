"""Formatters: each turns findings and a summary into text; none knows a rule."""

from kernel_ports.reporters.github import render_github
from kernel_ports.reporters.json_report import render_json
from kernel_ports.reporters.sarif import render_sarif
from kernel_ports.reporters.text import render_text

FORMATS = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
    "github": render_github,
}

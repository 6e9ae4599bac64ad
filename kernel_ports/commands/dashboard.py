"""`kernel-ports matrix --format html`: the coverage dashboard, one self-contained page.

The page is built from the same data as the markdown matrix and `status
rocm` (`kernel_ports.commands.coverage`) and the findings of `check` on the same
tree, so it cannot tell a different story. It needs no network and no
script: styles are inline, per-kernel detail is plain sections linked from
the matrix. Everything that comes from the tree or the registry (names,
paths, messages) is HTML-escaped; links to `file:line` are built from
`--link-template` (`{path}` and `{line}` replaced, the path URL-quoted), or
point at the file under the root when no template is given.
"""

from __future__ import annotations

import html
import os
import re
from urllib.parse import quote

from kernel_ports import __version__
from kernel_ports.registry.model import BACKENDS
from kernel_ports.surface import same_port

LABEL = {"metal": "Metal", "cuda": "CUDA", "rocm": "ROCm"}
_WHERE = re.compile(r"^(?P<path>[^\s:]+):(?P<line>\d+)$")

CSS = """
:root { --port: #1a7f37; --port-bg: #dafbe1; --none: #6e7781; --none-bg: #f6f8fa; --differs: #9a6700;
        --differs-bg: #fff1c2; --error: #cf222e; --line: #d0d7de; --ink: #1f2328; }
* { box-sizing: border-box; }
body { font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: var(--ink);
       margin: 0 auto; padding: 24px 32px 48px; max-width: 1200px; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 0 0 6px; }
a { color: #0969da; text-decoration: none; } a:hover { text-decoration: underline; }
code, .mono { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.meta { color: #57606a; margin: 0 0 18px; }
.totals { display: flex; gap: 16px; margin: 0 0 20px; }
.total { flex: 1; border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.total .label { font-size: 18px; font-weight: 600; }
.bar { height: 10px; background: var(--none-bg); border: 1px solid var(--line); border-radius: 5px; margin: 8px 0 6px;
       overflow: hidden; }
.bar span { display: block; height: 100%; background: var(--port); }
.sub { color: #57606a; font-size: 12px; }
table.matrix { border-collapse: collapse; width: 100%; margin: 0 0 12px; }
.matrix th, .matrix td { border: 1px solid var(--line); padding: 6px 8px; text-align: left; vertical-align: top; }
.matrix thead th { background: var(--none-bg); font-weight: 600; }
td.cell { width: 17%; }
.state-port { background: var(--port-bg); color: var(--port); }
.state-none { background: var(--none-bg); color: var(--none); }
.state-differs { background: var(--differs-bg); color: var(--differs); font-weight: 600; }
.cell .acc { color: var(--ink); font-weight: 400; overflow-wrap: anywhere; }
.matrix th .sub a { white-space: nowrap; }
td.yes { color: var(--port); font-weight: 600; }
.count-errors { color: var(--error); font-weight: 600; }
.legend { display: flex; gap: 12px; margin: 0 0 24px; font-size: 12px; }
.legend span { padding: 2px 8px; border-radius: 4px; border: 1px solid var(--line); }
.kernel { border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; margin: 0 0 14px; }
ul.checklist, ul.findings { list-style: none; padding: 0; margin: 6px 0 0; }
ul.checklist li { padding: 2px 0 2px 22px; position: relative; }
ul.checklist li::before { position: absolute; left: 0; font-weight: 700; }
li.done::before { content: "\\2713"; color: var(--port); }
li.todo::before { content: "\\2717"; color: var(--error); }
.next { color: #57606a; font-size: 12px; }
ul.findings li { padding: 2px 0; }
.sev-error { color: var(--error); } .sev-warning { color: var(--differs); }
footer { color: #57606a; font-size: 12px; margin-top: 24px; }
"""


def _e(text) -> str:
    return html.escape(str(text), quote=True)


class Links:
    """`file:line` -> href, through a template with {path} and {line}, or a file URI under the root."""

    def __init__(self, template: str | None, root_uri: str):
        self.template = template
        self.root_uri = root_uri

    def href(self, path: str, line: int | None = None) -> str:
        quoted = quote(path, safe="/")
        if self.template is None:
            return self.root_uri + quoted
        return self.template.replace("{path}", quoted).replace("{line}", str(line or 1))

    def a(self, path: str, line: int | None = None, text: str | None = None) -> str:
        label = text if text is not None else (f"{path}:{line}" if line else path)
        return f'<a class="mono" href="{_e(self.href(path, line))}">{_e(label)}</a>'

    def where(self, text: str) -> str:
        m = _WHERE.match(text or "")
        return self.a(m.group("path"), int(m.group("line"))) if m else _e(text)


def cell_state(row, backend: str) -> str:
    code, reg = row.ports.get(backend), row.registry_ports.get(backend)
    if not row.in_code or not row.in_registry or not same_port(reg, code):
        return "differs"
    return "port" if code else "none"


def _cell(row, backend: str, links: Links) -> str:
    state = cell_state(row, backend)
    code, reg = row.ports.get(backend), row.registry_ports.get(backend)
    if state == "port":
        line = row.slot_lines.get(backend)
        acc = links.a(row.file, line, code) if line else f'<span class="mono">{_e(code)}</span>'
        body = f'port<div class="acc">{acc}</div>'
    elif state == "none":
        body = "no port"
    else:
        body = (f'registry differs<div class="acc">code: <span class="mono">{_e(code or "none")}</span><br>'
                f'registry: <span class="mono">{_e(reg or "none")}</span></div>')
    return f'<td class="cell state-{state}" data-backend="{backend}" data-state="{state}">{body}</td>'


def _totals(rows) -> str:
    out = []
    n = len(rows)
    for b in BACKENDS:
        have = sum(bool(r.ports.get(b)) for r in rows)
        differs = sum(cell_state(r, b) == "differs" for r in rows)
        pct = round(100 * have / n) if n else 0
        extra = f"any-wave: {sum(r.rocm_any_wave_size and bool(r.ports.get('rocm')) for r in rows)} of {have}" \
            if b == "rocm" else ""
        note = ", ".join(x for x in (extra, f"registry differs: {differs}" if differs else "") if x)
        out.append(f'<div class="total" data-backend="{b}"><div class="label">{LABEL[b]} {have} of {n}</div>'
                   f'<div class="bar"><span style="width:{pct}%"></span></div>'
                   f'<div class="sub">{_e(note or "registry agrees")}</div></div>')
    return '<section class="totals">' + "".join(out) + "</section>"


def _own_findings(row, findings) -> list:
    return [f for f in findings if f.kernel == row.kernel or (f.kernel is None and row.in_code and f.path == row.file)]


def _build_cell(items, shown: bool) -> str:
    """The ROCm build column: each target's state from the checklist's device-build item (shown once built)."""
    if not shown:
        return ""
    item = next((i for i in items if i.name == "device build"), None)
    if item is None:
        return '<td data-col="rocm-build" class="cell state-none">not built</td>'
    state = "port" if item.done else ("differs" if "KP50" in item.detail else "none")
    lines = "<br>".join(_e(part) for part in item.detail.split("; "))
    return f'<td data-col="rocm-build" class="cell state-{state}" data-state="{state}"><span class="acc">{lines}</span></td>'


def _matrix(rows, checklist, findings, links) -> str:
    head = "".join(f"<th>{LABEL[b]}</th>" for b in BACKENDS)
    built = any(i.name == "device build" for items in checklist.values() for i in items)
    body = []
    for r in rows:
        items = checklist.get(r.kernel, [])
        done = sum(i.done for i in items)
        own = _own_findings(r, findings)
        errors = sum(f.severity == "error" for f in own)
        where = links.a(r.file, r.line) if r.in_code else '<span class="sub">not in code</span>'
        count = f'<span class="count-errors">{errors} error(s)</span>' if errors else f"{len(own)}"
        body.append(
            f'<tr id="row-{_e(r.kernel)}"><th><a href="#k-{_e(r.kernel)}">{_e(r.kernel)}</a><div class="sub">{where}</div></th>'
            + "".join(_cell(r, b, links) for b in BACKENDS)
            + (f'<td data-col="any-wave" class="{"yes" if r.rocm_any_wave_size else "no"}">'
               f'{"yes" if r.rocm_any_wave_size else "no"}</td>')
            + _build_cell(items, built)
            + f'<td data-col="rocm-checklist">{done}/{len(items)}</td><td data-col="findings">{count}</td></tr>')
    build_head = "<th>ROCm build (per target)</th>" if built else ""
    return (f'<table class="matrix"><thead><tr><th>kernel</th>{head}<th>any-wave</th>{build_head}<th>ROCm checklist</th>'
            f'<th>findings</th></tr></thead><tbody>{"".join(body)}</tbody></table>')


def _kernel_section(row, items, findings, links) -> str:
    parts = [f'<section class="kernel" id="k-{_e(row.kernel)}"><h2>{_e(row.kernel)}</h2>']
    table = links.a(row.file, row.line, f"{row.table} — {row.file}:{row.line}") if row.in_code else _e(row.table)
    parts.append(f'<div class="sub">table {table}; predicates: {_e(", ".join(row.predicates) or "none")}</div>')
    for site in row.dispatch_sites:
        where, _, rest = site.partition(" ")
        parts.append(f'<div class="sub">dispatch {links.where(where)} {_e(rest)}</div>')
    parts.append('<ul class="checklist">')
    for i in items:
        nxt = (f'<div class="next">next: {links.where(i.where)}: {_e(i.next_step)}</div>' if i.next_step else "")
        parts.append(f'<li class="{"done" if i.done else "todo"}">{_e(i.name)}: <span class="sub">{_e(i.detail)}</span>{nxt}</li>')
    parts.append("</ul>")
    if findings:
        parts.append('<ul class="findings">')
        for f in findings:
            parts.append(f'<li class="sev-{_e(f.severity)}">{links.a(f.path, f.line)} {_e(f.severity)}: {_e(f.message)} '
                         f'[{_e(f.rule)}]</li>')
        parts.append("</ul>")
    else:
        parts.append('<div class="sub">no findings</div>')
    return "".join(parts) + "</section>"


def _shown(path: str) -> str:
    """A path relative to the working directory when it is under it (the page names no machine's layout)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def render_dashboard(rows, checklist: dict, findings, summary: dict, link_template: str | None = None) -> str:
    links = Links(link_template, summary.get("root_uri", ""))
    checked = summary.get("checked", {})
    counts = summary.get("counts", {})
    meta = (f'root <span class="mono">{_e(_shown(summary.get("root", "")))}</span> · registry '
            f'<span class="mono">{_e(_shown(summary.get("registry", "")))}</span> · {len(rows)} kernels · '
            f'{checked.get("files_scanned", 0)} files checked · {counts.get("error", 0)} error(s), '
            f'{counts.get("warning", 0)} warning(s)')
    device = summary.get("device") or {}
    if device.get("compiler"):
        meta += (f' · HIP bodies built for {_e(", ".join(device.get("targets", [])))} by '
                 f'<span class="mono">{_e(device.get("version") or device["compiler"])}</span>')
    legend = ('<div class="legend"><span class="state-port">port in code</span><span class="state-none">no port</span>'
              '<span class="state-differs">registry differs</span></div>')
    claimed = {id(f) for r in rows for f in _own_findings(r, findings)}
    others = [f for f in findings if id(f) not in claimed]
    sections = "".join(_kernel_section(r, checklist.get(r.kernel, []), _own_findings(r, findings), links) for r in rows)
    if others:
        meta += f' · <a href="#other-findings">{len(others)} finding(s) outside the kernels\' files</a>'
        sections += ('<section class="kernel" id="other-findings"><h2>Other findings</h2><ul class="findings">'
                     + "".join(f'<li class="sev-{_e(f.severity)}">{links.a(f.path, f.line)} {_e(f.message)} [{_e(f.rule)}]</li>'
                               for f in others) + "</ul></section>")
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>kernel-ports: port coverage</title><style>{CSS}</style></head>\n<body>\n"
            f"<header><h1>Kernel port coverage</h1><p class=\"meta\">{meta}</p></header>\n"
            f"{_totals(rows)}\n{_matrix(rows, checklist, findings, links)}\n{legend}\n{sections}\n"
            f"<footer>kernel-ports {_e(__version__)} · matrix --format html</footer>\n</body></html>\n")

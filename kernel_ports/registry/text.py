"""A registry rendered as YAML text, line by line, for `kernel-ports init`.

`render_registry` writes a complete registry (every section, with the comments
that say what each holds and why an inferred value was chosen);
`render_kernel` writes one `kernels:` entry, which `sync` also parses to add a
kernel new in the code. `yaml_scalar` is the quoting rule both use: plain when
YAML would read the text back unchanged, JSON-style double quotes otherwise.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from kernel_ports.registry.model import BACKENDS


_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_:<>,.*&/ -]*$")
_YAML_WORDS = {"null", "true", "false", "yes", "no", "on", "off", "y", "n", "~"}


def yaml_scalar(value, quote=False) -> str:
    """One YAML scalar: plain when it reads back as the same string (and `quote` is off), else double-quoted."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    text = str(value)
    if not quote and _PLAIN.match(text) and text.lower() not in _YAML_WORDS and ": " not in text and not text.endswith(":") \
            and " #" not in text and text == text.strip():
        return text
    return json.dumps(text, ensure_ascii=False)


def _flow(items, quote=True) -> str:
    return "[" + ", ".join(yaml_scalar(i, quote) for i in items) + "]"


def _block_list(lines, key, items, indent, quote=True):
    pad = " " * indent
    if not items:
        lines.append(f"{pad}{key}: []")
        return
    lines.append(f"{pad}{key}:")
    for item in items:
        lines.append(f"{pad}  - {yaml_scalar(item, quote)}")


def render_kernel(entry: dict, indent: int = 2) -> list:
    """The lines of one `kernels:` item (a `surface.kernel_entry` dict), `indent` spaces before its dash."""
    pad = " " * indent
    lines = [f"{pad}- name: {yaml_scalar(entry['name'])}"]
    inner = pad + "  "
    lines.append(f"{inner}table: {yaml_scalar(entry['table'])}")
    lines.append(f"{inner}file: {yaml_scalar(entry['file'])}")
    if entry["dispatch"]:
        lines.append(f"{inner}dispatch:")
        for d in entry["dispatch"]:
            lines.append(f"{inner}  - {{entry_point: {yaml_scalar(d['entry_point'], True)}, fallback: {yaml_scalar(d['fallback'], True)}}}")
    else:
        lines.append(f"{inner}dispatch: []")
    lines.append(f"{inner}ports:")
    for b in BACKENDS:
        lines.append(f"{inner}  {b}: {yaml_scalar(entry['ports'].get(b))}")
    lines.append(f"{inner}rocm_any_wave_size: {yaml_scalar(entry['rocm_any_wave_size'])}")
    lines.append(f"{inner}hip_source: {yaml_scalar(entry['hip_source'])}")
    lines.append(f"{inner}predicates: {_flow(entry['predicates'])}")
    return lines


def render_registry(registry, root_text: str, kernels: list, launchers, helper_files, seams: dict, notes=(),
                    inferred=None) -> str:
    """The whole registry text `init` writes; `inferred` maps a compile key to {value as rendered: why it was inferred}."""
    comp = registry.compile
    conv = registry.conventions
    out = [
        "# Written by `kernel-ports init` from the code. Values that mirror the code",
        "# (kernels, their slots, dispatch sites, marks, pinned HIP sources, predicates,",
        "# launchers) are refreshed by `kernel-ports sync --write`; comments, exemptions,",
        "# severities and the compile and conventions sections are yours to keep.",
    ]
    out += [f"# NOTE: {n}" for n in notes]
    out += ["version: 1", f"root: {yaml_scalar(root_text, True)}", ""]
    out += ["sources:", f"  include: {_flow(registry.sources.include)}", f"  exclude: {_flow(registry.sources.exclude)}", ""]
    out += ["# How the Clang front end parses without the engine's build; each configuration",
            "# is a set of defines a file is parsed with when it (or a header it includes)",
            "# mentions them.",
            "compile:",
            f"  compile_commands: {yaml_scalar(str(comp.compile_commands) if comp.compile_commands else None, True)}",
            f"  std: {comp.std}"]
    why = inferred or {}
    _commented_list(out, "defines", comp.defines, why.get("defines", {}))
    _commented_list(out, "include_dirs", _include_dir_texts(registry), why.get("include_dirs", {}))
    out.append("  configurations:")
    for c in comp.configurations:
        if c.name in why.get("configurations", {}):
            out.append(f"    # inferred: {why['configurations'][c.name]}")
        out.append(f"    {c.name}: {_flow(c.defines)}")
    _device_section(out, comp.device_rocm, why.get("device_targets", {}))
    out += ["", "# cache_key_has_dtypes: does the backend's JIT cache key include input dtypes?", "backends:"]
    for name, b in registry.backends.items():
        out.append(f"  {name}: {{factory: {yaml_scalar(b.factory, True)}, cache_key_has_dtypes: {yaml_scalar(b.cache_key_has_dtypes)}}}")
    out += ["", "conventions:",
            f"  table_type: {yaml_scalar(conv.table_type, True)}",
            f"  selector: {yaml_scalar(conv.selector, True)}",
            f"  has_port: {yaml_scalar(conv.has_port, True)}"]
    _block_list(out, "backend_queries", conv.backend_queries, 2)
    out.append("  # The only files that may compare backend kinds or ask for availability.")
    _block_list(out, "helper_files", helper_files, 2)
    out += [f"  rust_backend_gates: {_flow(conv.rust_backend_gates)}",
            f"  rule_scope: {conv.rule_scope}",
            "  lane_ops: default"]
    if conv.test_seams:
        out.append("  test_seams:")
        for s in conv.test_seams:
            out.append(f"    - name: {yaml_scalar(s.name)}")
            out.append(f"      tests: {_flow(s.tests)}")
            allowed = seams.get(s.name, ())
            if allowed:
                out.append("      allowed:")
                out += [f"        - {yaml_scalar(a, True)}" for a in allowed]
            else:
                out.append("      allowed: []")
    else:
        out.append("  test_seams: []")
    out += ["", "# Files that launch custom kernels (factory calls or kernel invocations)."]
    _block_list(out, "launchers", launchers, 0)
    out += ["", "severity: {}", ""]
    if kernels:
        out.append("kernels:")
        for i, entry in enumerate(kernels):
            if i:
                out.append("")
            out += render_kernel(entry)
    else:
        out.append("kernels: []")
    out += ["", "exemptions: []", ""]
    return "\n".join(out)


def _commented_list(out: list, key: str, items, reasons: dict) -> None:
    """`key: [...]`, or a block list with the reason each inferred item was chosen above it."""
    if not any(i in reasons for i in items):
        out.append(f"  {key}: {_flow(items)}")
        return
    out.append(f"  {key}:")
    for item in items:
        if item in reasons:
            out.append(f"    # inferred: {reasons[item]}")
        out.append(f"    - {yaml_scalar(item, True)}")


def _include_dir_texts(registry) -> list:
    out = []
    for d in registry.compile.include_dirs:
        try:
            out.append(Path(d).relative_to(registry.root).as_posix())
        except ValueError:
            out.append(str(d))
    return out


def _device_section(out: list, device, reasons: dict) -> None:
    """``compile.device.rocm``: the targets every check builds the HIP bodies for (KP501/KP502)."""
    if device is None:
        return
    out += ["  # Every check builds each HIP body as the ROCm runtime would, for these targets",
            "  # (KP501/KP502): one 32-lane and one 64-lane target judge the wave-size marks.",
            "  device:", "    rocm:"]
    if not any(t in reasons for t in device.targets):
        out.append(f"      targets: {_flow(device.targets, quote=False)}")
    else:
        out.append("      targets:")
        for t in device.targets:
            if t in reasons:
                out.append(f"        # inferred: {reasons[t]}")
            out.append(f"        - {t}")
    out.append(f"      compiler: {yaml_scalar(device.compiler, True)}")

"""`kernel-ports sync`: an existing registry refreshed from the code, comments kept.

`compute_sync` compares the registry with what the code declares
(`kernel_ports.surface`, the module the drift rules KP301–KP306 judge with, so
a registry it writes is one they accept) and rewrites only the values that
mirror code: each matched kernel's file, ports, dispatch sites, wave mark and
pin, predicates; kernels gone from or new in the code; launcher files. The
rewrite is a ruamel.yaml round trip (`kernel_ports.registry.roundtrip`), so
comments, key order, exemptions, severities and the compile/conventions
sections stay as people wrote them. `validate_text` loads the result before
`commands.common.write_atomically` replaces the file, as for `init` and `port`.
"""

from __future__ import annotations

import difflib
import io
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kernel_ports.registry.model import BACKENDS
from kernel_ports.registry.text import render_kernel
from kernel_ports.surface import (
    code_surface,
    diff_dispatch,
    kernel_entry,
    launcher_drift,
    match_kernels,
    same_port,
    take_free_name,
)
from kernel_ports.registry.roundtrip import (
    as_block_list,
    blank_line_before,
    double_quoted,
    round_trip_yaml,
    set_key,
    styled_like,
)


class SyncError(Exception):
    """Bad input to init/sync: one line, exit 2."""


@dataclass
class SyncResult:
    old: str
    new: str
    changes: list = field(default_factory=list)  # one line per change, for the summary
    notes: list = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.old != self.new

    def diff(self, name: str) -> str:
        return "".join(difflib.unified_diff(self.old.splitlines(True), self.new.splitlines(True),
                                            fromfile=f"{name} (registry)", tofile=f"{name} (from the code)"))


_KERNEL_KEYS = ("name", "table", "file", "dispatch", "ports", "rocm_any_wave_size", "hip_source", "predicates", "severity")


def _prev_key(mapping, key):
    """The existing key a missing `key` goes after, in the canonical order."""
    i = _KERNEL_KEYS.index(key)
    for k in reversed(_KERNEL_KEYS[:i]):
        if k in mapping:
            return k
    return None


def compute_sync(registry, index, scope) -> SyncResult:
    """The registry refreshed from the code: each value that mirrors the code, the rest of the text kept."""
    from ruamel.yaml.comments import CommentedSeq

    y, doc, old = _load_round_trip(registry)
    result = SyncResult(old=old, new=old)
    surface = code_surface(index, scope)
    matched, unmatched = match_kernels(registry, surface)
    doc_kernels = doc.get("kernels")
    if doc_kernels is None:
        doc_kernels = CommentedSeq()
        doc["kernels"] = doc_kernels

    for i, kernel in enumerate(registry.kernels):
        ck = matched.get(i)
        entry = doc_kernels[i]
        if ck is None:
            continue
        _refresh_kernel(entry, kernel, ck, surface, result)
    _remove_gone_kernels(registry, matched, surface, doc_kernels, result)
    _add_new_kernels(y, registry, unmatched, doc_kernels, result)
    _refresh_launchers(doc, registry, surface, result)

    if result.changes:
        out = io.StringIO()
        y.dump(doc, out)
        result.new = out.getvalue()
    return result


def _load_round_trip(registry) -> tuple:
    """(ruamel YAML, loaded document, text) of the registry file."""
    from kernel_ports.registry.bounds import check_events, read_bounded
    from kernel_ports.registry.load import RegistryError

    # read again for the round trip: the same bounds as the first load, so a file changed in between cannot
    # make ruamel expand what the loader refused
    old = read_bounded(Path(registry.path), RegistryError).decode("utf-8")
    check_events(old, registry.path, RegistryError)
    y = round_trip_yaml(old)
    doc = y.load(old)
    return y, doc, old


def _refresh_kernel(entry, kernel, ck, surface, result) -> None:
    """One registry kernel's entry made to say what its table in the code (`ck`) says."""
    if ck.file != kernel.file:
        set_key(entry, "file", styled_like(ck.file, [entry.get("file")]), _prev_key(entry, "file"))
        result.changes.append(f"{kernel.name}: file {kernel.file} -> {ck.file}")
    _refresh_ports(entry, kernel, ck, result)
    _refresh_dispatch(entry, kernel, ck, surface, result)
    _refresh_wave_mark_and_pin(entry, kernel, ck, result)
    _refresh_predicates(entry, kernel, ck, result)


def _refresh_ports(entry, kernel, ck, result) -> None:
    from ruamel.yaml.comments import CommentedMap

    ports = entry.get("ports")
    for b in BACKENDS:
        code = ck.port(b)
        if same_port(kernel.port(b), code):
            continue
        if ports is None:
            ports = CommentedMap()
            set_key(entry, "ports", ports, _prev_key(entry, "ports"))
        set_key(ports, b, styled_like(code, [v for v in ports.values() if isinstance(v, str)]))
        result.changes.append(f"{kernel.name}: {b} port {kernel.port(b)} -> {code}")


def _refresh_dispatch(entry, kernel, ck, surface, result) -> None:
    """Dispatch entries changed in place, removed, or added in the flow style of their siblings."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    diff = diff_dispatch(kernel.dispatch, ck.dispatch, surface.unresolved_selectors)
    if diff.clean:
        return
    seq = entry.get("dispatch")
    if seq is None:
        seq = CommentedSeq()
        set_key(entry, "dispatch", seq, _prev_key(entry, "dispatch"))
    pos = {id(d): j for j, d in enumerate(kernel.dispatch)}
    for reg_entry, site, _ in diff.changed:
        item = seq[pos[id(reg_entry)]]
        for key, value in (("entry_point", site.entry_point), ("fallback", site.fallback)):
            if item.get(key) != value:
                item[key] = styled_like(value, [item.get(key)])
        result.changes.append(f"{kernel.name}: dispatch {reg_entry.entry_point!r}/{reg_entry.fallback!r} -> "
                              f"{site.entry_point!r}/{site.fallback!r}")
    for reg_entry in sorted(diff.missing, key=lambda d: -pos[id(d)]):
        del seq[pos[id(reg_entry)]]
        result.changes.append(f"{kernel.name}: dispatch {reg_entry.entry_point!r}/{reg_entry.fallback!r} removed")
    if diff.extra:
        as_block_list(seq)
    for site in diff.extra:
        item = CommentedMap()
        strings = _dispatch_strings(seq)
        item["entry_point"] = styled_like(site.entry_point, strings)
        item["fallback"] = styled_like(site.fallback, strings)
        item.fa.set_flow_style()
        seq.append(item)
        result.changes.append(f"{kernel.name}: dispatch {site.entry_point!r}/{site.fallback!r} added")


def _refresh_wave_mark_and_pin(entry, kernel, ck, result) -> None:
    """`rocm_any_wave_size` and `hip_source`; a pin the code could not resolve is kept, with a note."""
    if kernel.rocm_any_wave_size != ck.any_wave:
        set_key(entry, "rocm_any_wave_size", ck.any_wave, _prev_key(entry, "rocm_any_wave_size"))
        result.changes.append(f"{kernel.name}: rocm_any_wave_size -> {str(ck.any_wave).lower()}")
    if ck.pin_resolved:
        pin = ck.pinned
        if (kernel.hip_source or None) != pin and not (pin is None and "hip_source" not in entry):
            set_key(entry, "hip_source", styled_like(pin, [entry.get("hip_source")]), _prev_key(entry, "hip_source"))
            result.changes.append(f"{kernel.name}: hip_source {kernel.hip_source} -> {pin}")
    elif ck.any_wave:
        result.notes.append(f"{kernel.name}: the HIP source of the .rocm slot could not be resolved; hip_source kept")


def _refresh_predicates(entry, kernel, ck, result) -> None:
    from ruamel.yaml.comments import CommentedSeq

    if set(kernel.predicates) != set(ck.predicates):
        seq = entry.get("predicates")
        if seq is None:
            seq = CommentedSeq()
            seq.fa.set_flow_style()
            set_key(entry, "predicates", seq, _prev_key(entry, "predicates"))
        for j in reversed(range(len(seq))):
            if seq[j] not in ck.predicates:
                result.changes.append(f"{kernel.name}: predicate {seq[j]} removed")
                del seq[j]
        for p in ck.predicates:
            if p not in seq:
                seq.append(styled_like(p, list(seq)))
                result.changes.append(f"{kernel.name}: predicate {p} added")


def _remove_gone_kernels(registry, matched, surface, doc_kernels, result) -> None:
    """Kernels gone from the code (kept when their file could not be analyzed)."""
    removed = []
    for i, kernel in enumerate(registry.kernels):
        if i in matched:
            continue
        if kernel.file in surface.unanalyzable:
            result.notes.append(f"{kernel.name}: {kernel.file} could not be analyzed; the entry is kept")
            continue
        users = [j for j, e in enumerate(registry.exemptions) if e.kernel == kernel.name]
        if users:
            raise SyncError(f"kernel-ports: sync: kernel {kernel.name!r} is gone from the code but exemptions[{users[0]}] "
                            "names it; remove or retarget that exemption first")
        removed.append(i)
    for i in reversed(removed):
        del doc_kernels[i]
        result.changes.append(f"{registry.kernels[i].name}: removed (table {registry.kernels[i].table} is gone)")


def _add_new_kernels(y, registry, unmatched, doc_kernels, result) -> None:
    """Kernels new in the code, each after the last kernel of its file, under a name not yet taken."""
    if unmatched:
        as_block_list(doc_kernels)
    taken = {k.name for k in registry.kernels}
    for ck in unmatched:
        take_free_name(ck, taken)
        item = y.load("\n".join(render_kernel(kernel_entry(ck), 0)) + "\n")[0]
        files = [k.get("file") for k in doc_kernels]
        at = max((j for j, f in enumerate(files) if f == ck.file), default=len(files) - 1) + 1
        doc_kernels.insert(at, item)
        if at > 0:
            blank_line_before(doc_kernels, at)
        result.changes.append(f"{ck.name}: added (table {ck.table} in {ck.file})")


def _refresh_launchers(doc, registry, surface, result) -> None:
    """`launchers:` gains and loses files; a sorted list stays sorted."""
    from ruamel.yaml.comments import CommentedSeq

    new, gone = launcher_drift(registry, surface)
    if new or gone:
        seq = doc.get("launchers")
        if seq is None:
            seq = CommentedSeq()
            keys = list(doc.keys())
            anchor = next((k for k in ("conventions", "backends", "compile", "sources", "root") if k in keys), None)
            doc.insert(keys.index(anchor) + 1 if anchor else len(keys), "launchers", seq)
        if new:
            as_block_list(seq)
        for i, path in sorted(gone, reverse=True):
            del seq[i]
            result.changes.append(f"launchers: {path} removed")
        was_sorted = list(seq) == sorted(seq)
        for path, _ in new:
            value = styled_like(path, list(seq) or [double_quoted("")])
            if was_sorted:
                at = next((j for j, p in enumerate(seq) if str(p) > path), len(seq))
                seq.insert(at, value)
            else:
                seq.append(value)
            result.changes.append(f"launchers: {path} added")


def _dispatch_strings(seq) -> list:
    """The strings of existing dispatch entries, so a new one takes their quoting."""
    return [v for item in seq if hasattr(item, "values") for v in item.values()] or [double_quoted("")]


def validate_text(text: str, registry) -> None:
    """Load the rewritten registry (from a temporary file outside the tree); raise SyncError if invalid."""
    from kernel_ports.registry.load import RegistryError, load_registry

    fd, tmp = tempfile.mkstemp(prefix="kernel-ports-sync-", suffix=".yaml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        try:
            load_registry(tmp, str(registry.root))
        except RegistryError as exc:
            where = f" at {exc.key}" if exc.key else ""
            raise SyncError(f"kernel-ports: sync: the refreshed registry would not load ({exc.message}{where}); "
                            "nothing was written") from None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass

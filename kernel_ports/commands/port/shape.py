"""Where a generated port goes in the engine's own files, and in what words.

Each function here reads one construct of the existing port (the one being
ported from) at the location the facts give, verifies it is there, and
returns the insertion that adds the new port beside it, cloned from the
existing text with the backend's names swapped: the holder and accessor
(`KernelHolder& get_x_kernel_cuda() {...}` -> `..._hip`), the helper
factory's `case Backend::Cuda:` arm, the table's slot line and the include
of the new body header. Insertions for the new backend are wrapped in the
build guard of the configuration that enables its factory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from kernel_ports.commands.port.edits import (
    AnchorError,
    expect,
    line_end,
    line_start,
    matching_brace,
    offset_of,
    replace_word,
    scan_to,
)
from kernel_ports.registry.model import define_name

ENUMERATOR = {"metal": "Metal", "cuda": "Cuda", "rocm": "Rocm"}
SLOT_ORDER = ("metal", "cuda", "rocm")


@dataclass(frozen=True)
class Guard:
    """The preprocessor lines around code that exists only in one build configuration."""

    configuration: str
    defines: tuple

    def wrap(self, text: str) -> str:
        if not self.defines:
            return text
        names = [define_name(d) for d in self.defines]
        head = f"#ifdef {names[0]}" if len(names) == 1 else "#if " + " && ".join(f"defined({n})" for n in names)
        return f"{head}\n{text}#endif\n"


def short(name: str) -> str:
    return name.split("::")[-1].split("<")[0]


def counterpart(name: str, source: str, target: str, fallback: str) -> str:
    """The target backend's name for a source-backend name: CUDA <-> HIP parts swapped."""
    words = {"cuda": ("cuda", "cu"), "rocm": ("hip", "rocm")}
    new_word = {"cuda": "cuda", "rocm": "hip"}[target]
    parts = name.split("_")
    for i, part in enumerate(parts):
        if part.lower() in words[source]:
            parts[i] = new_word.upper() if part.isupper() else new_word
            return "_".join(parts)
    return fallback


def _call_parts(text: str, call_at: int, factory_short: str, where: str) -> tuple:
    """(offset of the factory's short name, offset of '(', offset of the matching ')')."""
    paren = text.find("(", call_at)
    name_at = text.rfind(factory_short, call_at, paren) if paren > 0 else -1
    if name_at < 0:
        raise AnchorError(f"{where}: expected a call of {factory_short} here")
    close = scan_to(text, paren + 1, ")")
    if close < 0:
        raise AnchorError(f"{where}: the call of {factory_short} does not close")
    return name_at, paren, close


def retarget_call(text: str, call_at: int, names: dict, where: str) -> tuple:
    """(start, end, new text) replacing the factory callee and its body constants in the call at call_at."""
    name_at, paren, close = _call_parts(text, call_at, names["factory_from"], where)
    args = text[paren:close + 1]
    for old, new in names["constants"].items():
        args = replace_word(args, old, new, count_expected=1, what=f"{where}: the factory's arguments")
    return name_at, close + 1, names["factory_to"] + text[name_at + len(names["factory_from"]):paren] + args


def function_span(text: str, name_at: int, where: str) -> tuple:
    """(start of the definition's first line, end of the line closing its body)."""
    brace = scan_to(text, name_at, "{")
    semi = scan_to(text, name_at, ";")
    if brace < 0 or (0 <= semi < brace):
        raise AnchorError(f"{where}: no function body follows the accessor's name")
    close = matching_brace(text, brace)
    if close < 0:
        raise AnchorError(f"{where}: the accessor's body does not close")
    start = line_start(text, name_at)
    prev = line_start(text, max(0, start - 1))
    if start and text[prev:start].lstrip().startswith("template"):
        start = prev
    return start, line_end(text, close)


def camel_counterpart(name: str, source: str, target: str) -> str:
    """A type name's target-backend spelling: `HolderCuda` -> `HolderHip` (else the target word appended)."""
    old = {"cuda": ("Cuda", "CUDA"), "rocm": ("Hip", "HIP", "Rocm", "ROCm")}[source]
    new = {"cuda": "Cuda", "rocm": "Hip"}[target]
    for word in old:
        at = name.rfind(word)
        if at >= 0:
            return name[:at] + new + name[at + len(word):]
    return name + new


def holder_type_span(text: str, type_name: str, method_at: int, where: str) -> tuple:
    """(start of the `struct X {` line, end of the line closing it with `};`) for the holder type around method_at."""
    hits = [m for m in re.finditer(r"\b(?:struct|class)\s+" + re.escape(type_name) + r"\b", text[:method_at])]
    if not hits:
        raise AnchorError(f"{where}: no definition of the holder type {type_name} before its get()")
    brace = scan_to(text, hits[-1].end(), "{")
    close = matching_brace(text, brace) if brace >= 0 else -1
    if close < method_at:
        raise AnchorError(f"{where}: the holder type {type_name} does not enclose its get()")
    return line_start(text, hits[-1].start()), line_end(text, close)


def cloned_holder_type(text: str, span: tuple, type_name: str, fc, names: dict, where: str) -> str:
    """The holder type for the target: renamed, its factory call retargeted."""
    call_at = offset_of(text, fc.loc.line, fc.loc.column)
    if not span[0] <= call_at < span[1]:
        raise AnchorError(f"{where}: the factory call at line {fc.loc.line} is not inside {type_name}")
    s, e, new = retarget_call(text, call_at, names, where)
    clone = text[span[0]:s] + new + text[e:span[1]]
    return replace_word(clone, type_name, names["holder_to"])


def cloned_accessor(text: str, acc, fc, names: dict, source: str, target: str, where: str) -> tuple:
    """(insert offset, text): the accessor and its holder for the target, after the source's accessor."""
    at = offset_of(text, acc.loc.line, acc.loc.column)
    old_name = short(acc.name)
    expect(text, at, old_name, "the accessor", where)
    start, end = function_span(text, at, where)
    pieces = []  # (start, end, new) in file offsets
    pieces.append((at, at + len(old_name), names["accessor_to"]))
    if names.get("holder_from"):  # the holder type builds the kernel; the accessor only names the type
        clone = text[start:at] + names["accessor_to"] + text[at + len(old_name):end]
        return end, replace_word(clone, names["holder_from"], names["holder_to"])
    if fc is not None:  # the factory call is in the accessor itself
        call_at = offset_of(text, fc.loc.line, fc.loc.column)
        if not start <= call_at < end:
            raise AnchorError(f"{where}: the factory call at line {fc.loc.line} is not inside {old_name}")
        pieces.append(retarget_call(text, call_at, names, f"{acc.loc.path}:{fc.loc.line}"))
    else:  # the accessor passes the backend to a helper as a constant
        body = text[at + len(old_name):end]
        hits = [m for m in re.finditer(r"::\s*" + ENUMERATOR[source] + r"\b", body)]
        if len(hits) != 1:
            raise AnchorError(f"{where}: expected one {ENUMERATOR[source]} backend constant in {old_name}, found {len(hits)}")
        m = hits[0]
        base = at + len(old_name)
        pieces.append((base + m.end() - len(ENUMERATOR[source]), base + m.end(), ENUMERATOR[target]))
    clone = text[start:end]
    for s, e, new in sorted(pieces, reverse=True):
        clone = clone[: s - start] + new + clone[e - start:]
    return end, clone


def helper_case(text: str, fc, names: dict, guard: Guard, source: str, target: str, where: str) -> tuple:
    """(insert offset, text): a `case Backend::<Target>:` arm after the helper's source arm."""
    call_at = offset_of(text, fc.loc.line, fc.loc.column)
    stmt_start = line_start(text, call_at)
    semi = scan_to(text, call_at, ";")
    if semi < 0:
        raise AnchorError(f"{where}: the factory call's statement does not end")
    stmt_end = line_end(text, semi)
    prev_end = stmt_start
    prev_start = line_start(text, max(0, prev_end - 1))
    case_line = text[prev_start:prev_end]
    m = re.match(r"^(\s*case\s+[\w:\s]*?)\b" + ENUMERATOR[source] + r"(\s*:\s*)$", case_line)
    if not m:
        raise AnchorError(f"{where}: expected `case ...::{ENUMERATOR[source]}:` on the line before the factory call, "
                          f"found {case_line.strip()!r}")
    s, e, new = retarget_call(text, call_at, names, where)
    stmt = text[stmt_start:s] + new + text[e:stmt_end]
    arm = m.group(1) + ENUMERATOR[target] + m.group(2) + stmt
    if SLOT_ORDER.index(target) > SLOT_ORDER.index(source):
        return stmt_end, guard.wrap(arm)
    before = line_start(text, max(0, prev_start - 1))  # ahead of the source's arm and of a guard around it
    return (before if prev_start and text[before:prev_start].lstrip().startswith("#if") else prev_start), guard.wrap(arm)


def slot_insert(text: str, table_text_span: tuple, slot, names: dict, guard: Guard, source: str, target: str,
                where: str) -> list:
    """[(offset, text)]: the target's slot line, cloned from the source's, in designator order."""
    at = offset_of(text, slot.loc.line, slot.loc.column)
    init = slot.text
    if text[at:at + len(init)] == init:
        end = at + len(init)
    else:
        end = scan_to(text, at, ",")
        if end < 0 or not table_text_span[0] <= end < table_text_span[1]:
            raise AnchorError(f"{where}: the .{source} slot's initializer is not where the facts put it")
    start = line_start(text, at)
    designator = re.search(r"\.\s*" + source + r"\s*=\s*$", text[start:at])
    if designator is None:
        raise AnchorError(f"{where}: expected `.{source} =` before the slot's initializer")
    tail = text[end:line_end(text, end)]
    inserts = []
    if not tail.lstrip().startswith(","):
        inserts.append((end, ","))
        tail = "," + tail
    head = text[start:at]
    head = head[: designator.start()] + head[designator.start():].replace(source, target, 1)
    value = init
    spelled = names["slot_from"]
    if spelled not in value:
        raise AnchorError(f"{where}: the .{source} slot does not call {spelled}")
    value = value.replace(spelled, names["slot_to"], 1)
    line = guard.wrap(head + value + tail.rstrip("\n") + "\n")
    if SLOT_ORDER.index(target) > SLOT_ORDER.index(source):
        inserts.append((line_end(text, end), line))
    else:
        before = start
        prev = line_start(text, max(0, start - 1))
        if start and text[prev:start].lstrip().startswith("#if"):
            before = prev
        inserts.append((before, line))
    return inserts


def any_wave_insert(text: str, span: tuple, after_slot: int, indent: str, comment: str, where: str) -> tuple:
    """(offset, text): the wave-size decision written into the table, as a comment on its mark."""
    body = text[span[0]:span[1]]
    m = re.search(r"^([ \t]*)\.\s*rocm_any_wave_size\s*=\s*(\w+)", body, re.M)
    if m is None:
        return after_slot, f"{indent}// {comment}\n{indent}.rocm_any_wave_size = false,\n"
    if m.group(2) != "false":
        raise AnchorError(f"{where}: the table sets rocm_any_wave_size = {m.group(2)} without a ROCm port; "
                          "decide the mark before porting")
    return span[0] + m.start(), f"{m.group(1)}// {comment}\n"


def table_span(text: str, table, where: str) -> tuple:
    at = offset_of(text, table.loc.line, table.loc.column)
    expect(text, at, table.name, "the port table", where)
    return function_span(text, at, where)


def include_insert(text: str, launcher: str, header: str, root_files: set, include_dirs: tuple) -> tuple | None:
    """(offset, text): `#include` of the new header among the launcher's quoted includes (None: already there)."""
    quoted = list(re.finditer(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"[^\n]*\n', text, re.M))
    folder = PurePosixPath(launcher).parent
    name = PurePosixPath(header).name
    spelled = name
    for m in quoted:
        path = PurePosixPath(m.group(1))
        if (folder / path.name).as_posix() in root_files and path.name != path.as_posix():
            if any((PurePosixPath(d) / path).as_posix() == (folder / path.name).as_posix() for d in include_dirs):
                spelled = (path.parent / name).as_posix()
                break
    if any(m.group(1) in (spelled, name) for m in quoted):
        return None
    line = f'#include "{spelled}"\n'
    for m in quoted:
        if m.group(1) > spelled and m.group(1).startswith(spelled.rsplit("/", 1)[0] if "/" in spelled else ""):
            return m.start(), line
    if quoted:
        return quoted[-1].end(), line
    raise AnchorError(f"{launcher}: no quoted #include to place the include of {name} beside")

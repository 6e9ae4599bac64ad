"""`kernel-ports port rocm KERNEL`: a kernel's ROCm port generated from its CUDA port.

Everything the generator needs is in the project index: the table and its
`.cuda` slot, the slot's accessor and holder, the factory call it reaches
and the body constant that call compiles. From them it plans, as text:

* the body constant for the new backend, the source body passed through the
  rename table of `kernel_ports.commands.port.renames` (for ROCm, in `<stem>_hip.h`
  next to the launcher, the way the engine names its other HIP headers; a
  second kernel of the same launcher adds its constant to that header);
* the holder and its accessor, cloned from the source backend's, behind the
  build guard of the configuration that enables the target factory (the
  registry configuration in which the tree's existing calls of that factory
  exist and the default one does not). A holder built by a helper factory
  that switches on a backend constant gets a new `case` arm in that helper;
* the table's slot, cloned from the source slot's line;
* for ROCm, the wave-size decision: `rocm_any_wave_size` stays false, with
  a comment naming the lane operations the new body uses (found with the
  KP105 patterns of `checkers.lane_ops`), or saying there are none and the
  mark may be set after a run at wavefront width 64.

`kernel_ports.commands.port.apply` then builds the edited tree in a scratch copy,
re-indexes it, refreshes the registry through the code `sync --write` uses,
and prints a diff or writes the files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from kernel_ports.checkers.lane_ops import find_lane_ops, lane_op_patterns
from kernel_ports.frontend.hip import scan_body
from kernel_ports.commands.port import shape
from kernel_ports.commands.port.edits import AnchorError, FileEdit, line_number, offset_of
from kernel_ports.commands.port.renames import RenameError, apply_renames, hip_only_names, table_for
from kernel_ports.surface import code_surface, match_kernels

SOURCE_FOR = {"rocm": "cuda", "cuda": "rocm"}
LABEL = {"metal": "Metal", "cuda": "CUDA", "rocm": "ROCm"}


class PortError(Exception):
    """The kernel cannot be ported by the generator (one line for the user, exit 2)."""


@dataclass
class Plan:
    kernel: str
    source: str
    target: str
    table: str
    new_files: dict = field(default_factory=dict)  # path -> text
    edits: dict = field(default_factory=dict)  # path -> FileEdit
    renames: list = field(default_factory=list)  # renames.Applied
    lane_ops: list = field(default_factory=list)  # "text (path:line)"
    constant: str = ""
    accessor: str = ""
    configuration: str = ""
    names: dict = field(default_factory=dict)

    def edit(self, root: Path, path: str) -> FileEdit:
        if path not in self.edits:
            if path in self.new_files:
                raise PortError(f"kernel-ports: port: internal error: {path} is both new and edited")
            self.edits[path] = FileEdit(path, (root / path).read_text(encoding="utf-8"))
        return self.edits[path]

    def texts(self) -> dict:
        """path -> (old text or None, new text)."""
        out = {p: (None, t) for p, t in self.new_files.items()}
        out.update({p: (e.original, e.result()) for p, e in self.edits.items()})
        return dict(sorted(out.items()))


def find_kernel(registry, index, name: str):
    """(registry kernel or None, surface CodeKernel, the PortTable facts of its definitions)."""
    surface = code_surface(index)
    matched, unmatched = match_kernels(registry, surface)
    ck = next((matched[i] for i, k in enumerate(registry.kernels) if k.name == name and i in matched), None)
    kernel = next((k for k in registry.kernels if k.name == name), None)
    if ck is None:
        ck = next((c for c in unmatched if c.name == name), None)
    if ck is None:
        known = sorted({k.name for k in registry.kernels} | {c.name for c in unmatched})
        if kernel is not None:
            raise PortError(f"kernel-ports: port: kernel {name!r} is in the registry but its table {kernel.table} "
                            "is not in the code")
        raise PortError(f"kernel-ports: port: no kernel named {name!r} (kernels: {', '.join(known) or 'none'})")
    defs = [t for t in index.port_tables if (t.qualified_name or t.name) == ck.qualified_name]
    if len(defs) != 1:
        raise PortError(f"kernel-ports: port: table {ck.table} is defined {len(defs)} times (under #if); port it by hand")
    return kernel, ck, defs[0]


def target_guard(registry, index, target: str) -> shape.Guard:
    """The configuration in which the target backend's factory may be called."""
    confs = {c.name: c for c in registry.compile.configurations}
    default = next((c for c in registry.compile.configurations if c.name == "default"), registry.compile.configurations[0])
    calls = [f for f in index.factory_calls if f.backend == target]
    if calls:
        if all(default.name in f.configurations for f in calls):
            return shape.Guard(default.name, ())
        common = set.intersection(*(set(f.configurations) for f in calls)) - {default.name}
        named = sorted((c for c in common if confs.get(c) and confs[c].defines), key=lambda c: (len(confs[c].defines), c))
        if named:
            return shape.Guard(named[0], tuple(confs[named[0]].defines))
    if target == "rocm" and "rocm" in confs and confs["rocm"].defines:
        return shape.Guard("rocm", tuple(confs["rocm"].defines))
    if target != "rocm":
        return shape.Guard(default.name, ())
    raise PortError("kernel-ports: port: no build configuration enables hip_kernel: add one to "
                    "compile.configurations (e.g. rocm: [\"MLXCEL_BRIDGE_ROCM_BACKEND\"]) or a hip_kernel call behind it")


def _source_factory(slot, source: str, where: str):
    calls = [f for f in slot.factory_calls if f.backend == source]
    if len(calls) != 1:
        raise PortError(f"kernel-ports: port: {where}: the {LABEL[source]} slot reaches {len(calls)} {source} factory "
                        "calls; the generator needs exactly one")
    return calls[0]


def _body_constant(index, fc, which: str, where: str):
    names = fc.source_constants if which == "source" else fc.header_constants
    written = fc.source_text if which == "source" else fc.header_text
    if which == "header" and not written:
        return None
    if len(names) != 1 or len(re.findall(r"\b" + re.escape(names[0]) + r"\b", written)) != 1:
        raise PortError(f"kernel-ports: port: {where}: the factory's {which} argument {written!r} is not one named "
                        "constant; port it by hand")
    defs = index.hip_source(names[0])
    if len(defs) != 1:
        raise PortError(f"kernel-ports: port: {where}: the {which} constant {names[0]} has {len(defs)} definitions")
    return defs[0]


def _names(plan, ck, slot, consts, index, registry) -> dict:
    source, target = plan.source, plan.target
    acc_short = shape.short(slot.accessor_function or slot.accessor or "")
    templated = "<" in (slot.accessor or "")
    if templated:
        enum_from, enum_to = shape.ENUMERATOR[source], shape.ENUMERATOR[target]
        if f"::{enum_from}" not in slot.accessor.replace(" ", ""):
            raise PortError(f"kernel-ports: port: {ck.table}: the templated accessor {slot.accessor} names no "
                            f"{enum_from} backend constant")
        slot_to = slot.accessor.replace(enum_from, enum_to)
        accessor_to = acc_short
    else:
        accessor_to = shape.counterpart(acc_short, source, target, f"{acc_short}_{'hip' if target == 'rocm' else 'cuda'}")
        slot_to = accessor_to
    word = "HIP" if target == "rocm" else "CUDA"
    constants = {}
    for which, hs in consts.items():
        if hs is not None:
            fallback = f"{ck.name.upper()}_{word}_{which.upper()}"
            constants[hs.name] = shape.counterpart(hs.name, source, target, fallback)
    taken_fns = {f.name for f in index.functions.values() if f.loc is not None and f.loc.path == ck.file}
    if not templated and accessor_to in taken_fns:
        raise PortError(f"kernel-ports: port: {ck.file} already defines {accessor_to}; remove it or port by hand")
    for new in constants.values():
        if index.hip_source(new):
            raise PortError(f"kernel-ports: port: a body constant {new} already exists; remove it or port by hand")
    return {"factory_from": shape.short(registry.backends[source].factory),
            "factory_to": shape.short(registry.backends[target].factory),
            "accessor_to": accessor_to, "slot_from": slot.accessor, "slot_to": slot_to,
            "constants": constants, "templated": templated}


def _raw_literal(body: str, tag: str) -> str:
    delim = ""
    while f"){delim}\"" in body:
        delim = tag if not delim else delim + "_"
    return f'R"{delim}({body}){delim}"'


def _declaration(root: Path, hs, new_name: str) -> str:
    """`constexpr const char* NEW = ` as the source constant's own line writes it."""
    text = (root / hs.loc.path).read_text(encoding="utf-8")
    start = offset_of(text, hs.loc.line, 1)
    at = re.compile(r"\b" + re.escape(hs.name) + r"\b").search(text, start, shape.line_end(text, start))
    if at is None:
        return f"constexpr const char* {new_name} = "
    at = at.start()
    head = text[start:at].lstrip()
    piece = hs.piece_locs[0] if hs.piece_locs else None
    if piece is not None and piece.line == hs.loc.line:
        rest = text[at + len(hs.name):offset_of(text, piece.line, piece.column)]
    else:
        rest = " = "
    if "=" not in rest or not head:
        return f"constexpr const char* {new_name} = "
    return f"{head}{new_name}{rest.split('=')[0]}= "


def _wave_comment(plan, lane_ops: list) -> str:
    if lane_ops:
        return (f"rocm_any_wave_size stays false: lane operations in {plan.constant} "
                f"({', '.join(lane_ops)}); validated at wavefront width 32 only")
    return f"rocm_any_wave_size stays false: no lane operation in {plan.constant}; set it after a wave64 run"



def plan_bodies(plan: Plan, registry, root: Path, consts: dict) -> list:
    """[(new name, comment lines, declaration, [(lane op, body line)])]: the target's body constants, renamed."""
    table = table_for(plan.source, plan.target)
    tag = "hip" if plan.target == "rocm" else "cuda"
    blocks = []
    for which, hs in consts.items():
        if hs is None:
            continue
        if plan.source == "rocm" and hip_only_names(hs.text):
            raise PortError(f"kernel-ports: port: {hs.name} uses {', '.join(hip_only_names(hs.text))}, which has no "
                            "CUDA counterpart; port it by hand")
        new_body, applied = apply_renames(hs.text, table)
        plan.renames += [(hs.name, a) for a in applied]
        new_name = plan.names["constants"][hs.name]
        scan = scan_body(new_body)
        data = new_body.encode("utf-8")
        lines = [data.count(b"\n", 0, off) + 1 for off in scan.token_offsets]
        uses = find_lane_ops(scan.tokens, lines, lane_op_patterns(registry))
        renamed = ", ".join(sorted({f"{a.old} -> {a.new}" for a in applied})) or "none needed"
        comment = [f"// {new_name}: {LABEL[plan.target]} body of {plan.kernel}, generated by "
                   f"`kernel-ports port {plan.target} {plan.kernel}` from {hs.name} ({hs.loc.path}:{hs.loc.line}).",
                   f"// {LABEL[plan.source]} -> {LABEL[plan.target]} renames: {renamed}."]
        if plan.target == "rocm":
            ops = ", ".join(dict.fromkeys(u.text for u in uses))
            comment.append(f"// Lane operations: {ops}; validated at wavefront width 32 only." if uses else
                           "// No lane operation: rocm_any_wave_size may be set after a run at wavefront width 64.")
        blocks.append((new_name, comment, _declaration(root, hs, new_name) + _raw_literal(new_body, tag) + ";\n",
                       [(u.text, u.line) for u in uses]))
    return blocks


def place_header(plan: Plan, root: Path, ck, blocks: list, namespace: str) -> str:
    """Put the ROCm body constants in `<stem>_hip.h` next to the launcher; returns its path."""
    launcher = PurePosixPath(ck.file)
    header = (launcher.parent / f"{launcher.stem}_hip.h").as_posix()
    decl_line = {}
    if (root / header).exists():
        edit = plan.edit(root, header)
        text = edit.original
        closing = list(re.finditer(r"^\}[^\n]*namespace[^\n]*\n", text, re.M))
        at = closing[-1].start() if closing else len(text)
        base = line_number(text, at)
        chunk = ""
        for name, comment, decl, _ in blocks:
            decl_line[name] = base + chunk.count("\n") + len(comment)
            chunk += "\n".join(comment) + "\n" + decl + "\n"
        edit.insert(at, chunk)
    else:
        head = [f"// {LABEL[plan.target]} bodies of {ck.file}, written by `kernel-ports port`.", "#pragma once", ""]
        if namespace:
            head += [f"namespace {namespace} {{", ""]
        text = "\n".join(head) + "\n"
        for name, comment, decl, _ in blocks:
            decl_line[name] = text.count("\n") + 1 + len(comment)
            text += "\n".join(comment) + "\n" + decl + "\n"
        if namespace:
            text += f"}}  // namespace {namespace}\n"
        plan.new_files[header] = text
    for name, _, _, uses in blocks:
        plan.lane_ops += [f"{u} ({header}:{decl_line[name] + line - 1})" for u, line in uses]
    return header


def _namespace(qualified: str) -> str:
    parts = [p for p in qualified.split("::")[:-1] if p and "(" not in p]
    return "::".join(parts)


def _place_in_launcher(plan: Plan, root: Path, ck, blocks: list, before_offset: int) -> None:
    """`port cuda`: the CUDA body constants go in the launcher, before the ROCm port's accessor."""
    chunk = "".join("\n".join(comment) + "\n" + decl + "\n" for _, comment, decl, _ in blocks)
    plan.edit(root, ck.file).insert(before_offset, chunk)


def _guard_line_before(text: str, offset: int) -> int:
    start = shape.line_start(text, offset)
    prev = shape.line_start(text, max(0, start - 1))
    return prev if start and text[prev:start].lstrip().startswith("#if") else start


def plan_port(registry, index, kernel_name: str, target: str) -> Plan:
    source = SOURCE_FOR[target]
    root = Path(registry.root)
    kernel, ck, table = find_kernel(registry, index, kernel_name)
    where = f"{ck.file}:{table.loc.line}"
    have = table.slots.get(target)
    if have is not None or (kernel is not None and kernel.port(target)):
        at = f" ({have.loc.path}:{have.loc.line})" if have is not None and have.loc else " (in the registry)"
        raise PortError(f"kernel-ports: port: {kernel_name} already has a {LABEL[target]} port: "
                        f".{target} = {(have.accessor if have else kernel.port(target))}{at}")
    slot = table.slots.get(source)
    if slot is None:
        raise PortError(f"kernel-ports: port: {kernel_name} has no {LABEL[source]} port to generate the "
                        f"{LABEL[target]} port from ({where})")
    plan = Plan(kernel=kernel_name, source=source, target=target, table=ck.table)
    fc = _source_factory(slot, source, where)
    consts = {"source": _body_constant(index, fc, "source", where), "header": _body_constant(index, fc, "header", where)}
    guard = target_guard(registry, index, target)
    plan.configuration = guard.configuration
    plan.names = _names(plan, ck, slot, consts, index, registry)
    plan.constant = plan.names["constants"][consts["source"].name]
    plan.accessor = plan.names["slot_to"]
    try:
        blocks = plan_bodies(plan, registry, root, consts)
        _plan_code(plan, registry, root, index, ck, table, slot, fc, guard, blocks)
    except (AnchorError, RenameError) as exc:
        raise PortError(f"kernel-ports: port: {exc}") from None
    return plan


def _plan_code(plan, registry, root, index, ck, table, slot, fc, guard, blocks) -> None:
    names, source, target = plan.names, plan.source, plan.target
    acc = next((a for a in index.accessors if a.name == slot.accessor), None)
    if acc is None or acc.loc is None:
        raise AnchorError(f"{ck.file}: the accessor {slot.accessor} of the .{source} slot has no known definition")
    acc_edit = plan.edit(root, acc.loc.path)
    holder = _holder_type(plan, slot, fc, acc_edit.original, source, target)
    direct = fc.enclosing_function == acc.function or holder is not None
    if target == "rocm":
        header = place_header(plan, root, ck, blocks, _namespace(table.qualified_name))
        include_dirs = tuple(_rel_dir(d, root) for d in registry.compile.include_dirs)
        launcher = plan.edit(root, ck.file)
        files = {p for p in index.files_scanned} | set(plan.new_files)
        inc = shape.include_insert(launcher.original, ck.file, header, files, tuple(d for d in include_dirs if d))
        if inc is not None:
            launcher.insert(*inc)
    else:
        acc_at = offset_of(acc_edit.original, acc.loc.line, acc.loc.column)
        _place_in_launcher(plan, root, ck, blocks, _guard_line_before(acc_edit.original, acc_at))
    if not names["templated"]:
        at, clone = shape.cloned_accessor(acc_edit.original, acc, fc if direct else None, names, source, target,
                                          f"{acc.loc.path}:{acc.loc.line}")
        if holder is not None:
            clone = holder + "\n" + clone
        if shape.SLOT_ORDER.index(target) > shape.SLOT_ORDER.index(source):
            acc_edit.insert(at, "\n" + guard.wrap(clone))
        else:  # ahead of the source's accessor and of the guard around it
            acc_at = offset_of(acc_edit.original, acc.loc.line, acc.loc.column)
            acc_edit.insert(_guard_line_before(acc_edit.original, acc_at), guard.wrap(clone) + "\n")
    if not direct:
        helper_edit = plan.edit(root, fc.loc.path)
        helper_edit.insert(*shape.helper_case(helper_edit.original, fc, names, guard, source, target,
                                              f"{fc.loc.path}:{fc.loc.line}"))
    table_edit = plan.edit(root, table.loc.path)
    text = table_edit.original
    span = shape.table_span(text, table, f"{table.loc.path}:{table.loc.line}")
    inserts = shape.slot_insert(text, span, slot, names, guard, source, target, f"{table.loc.path}:{slot.loc.line}")
    for at, piece in inserts:
        table_edit.insert(at, piece)
    if target == "rocm":
        slot_line = text[shape.line_start(text, offset_of(text, slot.loc.line, slot.loc.column)):]
        indent = slot_line[: len(slot_line) - len(slot_line.lstrip())]
        comment = _wave_comment(plan, plan.lane_ops)
        if _has_wave_mark(registry, index, root, table.loc.path):
            table_edit.insert(*shape.any_wave_insert(text, span, inserts[-1][0], indent, comment,
                                                     f"{table.loc.path}:{table.loc.line}"))
        else:  # this engine's table type has no mark: the decision is a comment on the slot
            table_edit.insert(inserts[-1][0], f"{indent}// {comment.replace('rocm_any_wave_size stays false', 'wave32 only')}\n")


def _holder_type(plan, slot, fc, text: str, source: str, target: str):
    """The cloned holder type when the source's factory call sits in a holder type's method (else None)."""
    names = plan.names
    type_name = shape.short(slot.holder_type or "")
    step = next((c for c in slot.chain if c.kind == "holder" and c.loc and c.loc.path == fc.loc.path
                 and c.name.split("::")[-2:-1] == [type_name]), None)
    if step is None or not type_name or fc.loc.path != slot.loc.path:
        return None
    where = f"{fc.loc.path}:{step.loc.line}"
    span = shape.holder_type_span(text, type_name, offset_of(text, step.loc.line, step.loc.column), where)
    names["holder_from"] = type_name
    names["holder_to"] = shape.camel_counterpart(type_name, source, target)
    return shape.cloned_holder_type(text, span, type_name, fc, names, where)


def _has_wave_mark(registry, index, root: Path, path: str) -> bool:
    """Does the table type (as the launcher sees it) declare rocm_any_wave_size? True when its definition is not found."""
    import networkx as nx

    name = shape.short(registry.conventions.table_type)
    seen = {path} | (nx.descendants(index.include_graph, path) if path in index.include_graph else set())
    head = re.compile(r"\b(?:struct|class)\s+" + re.escape(name) + r"\b[^;{]*\{")
    for rel in sorted(seen):
        try:
            text = (root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        m = head.search(text)
        if m:
            close = shape.matching_brace(text, m.end() - 1)
            return "rocm_any_wave_size" in text[m.end():close]
    return True


def _rel_dir(d, root: Path) -> str:
    try:
        return Path(d).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return ""

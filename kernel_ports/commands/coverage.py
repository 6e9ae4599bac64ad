"""Views for people adding ports: the kernels × backends matrix and the
per-kernel ROCm checklist.

Both are built from the registry and the project index (code is the truth;
the registry column says what was reviewed), and from the findings of the
rules that judge an item, so the checklist can never disagree with `check`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace

from kernel_ports.checkers.dtype_keys import DtypeKeys
from kernel_ports.registry.model import BACKENDS


@dataclass(frozen=True)
class KernelRow:
    kernel: str
    table: str
    file: str
    ports: dict  # backend -> accessor in code (None: no port)
    registry_ports: dict  # backend -> accessor in the registry
    rocm_any_wave_size: bool
    predicates: tuple
    dispatch_sites: tuple  # "path:line entry_point -> fallback"
    in_code: bool
    in_registry: bool
    line: int = 0  # the table function's line in `file` (0: not in code)
    slot_lines: dict = field(default_factory=dict)  # backend -> line of its slot initializer


def matrix_rows(registry, index) -> list[KernelRow]:
    rows = []
    seen = set()
    for table in sorted(index.port_tables, key=lambda t: (t.file, t.name)):
        kernel = registry.kernel_for_table(table.qualified_name) or registry.kernel_for_table(table.name)
        seen.add(kernel.name if kernel else None)
        rows.append(
            KernelRow(
                kernel=kernel.name if kernel else table.name,
                table=table.name,
                file=table.file,
                ports={b: (table.slots.get(b).accessor if table.slots.get(b) else None) for b in BACKENDS},
                registry_ports=dict(kernel.ports) if kernel else {b: None for b in BACKENDS},
                rocm_any_wave_size=table.rocm_any_wave_size,
                predicates=tuple(sorted({p.name for p in index.predicates if table.name in p.tables})),
                dispatch_sites=tuple(
                    f"{s.loc.path}:{s.loc.line} {s.entry_point} -> {s.fallback}"
                    for s in sorted(index.selector_calls, key=lambda s: s.loc)
                    if table.name in s.tables
                ),
                in_code=True,
                in_registry=kernel is not None,
                line=table.loc.line,
                slot_lines={b: s.loc.line for b, s in table.slots.items() if s is not None and s.loc is not None},
            )
        )
    for kernel in registry.kernels:
        if kernel.name not in seen:
            rows.append(
                KernelRow(kernel.name, kernel.table, kernel.file, {b: None for b in BACKENDS}, dict(kernel.ports), kernel.rocm_any_wave_size, kernel.predicates, (), False, True)
            )
    return rows


def render_matrix(rows: list[KernelRow], fmt: str) -> str:
    """markdown or json; the html page is `kernel_ports.commands.dashboard`."""
    if fmt == "json":
        return json.dumps({"version": 1, "backends": list(BACKENDS), "kernels": [asdict(r) for r in rows]}, indent=2) + "\n"
    header = ["kernel", "table", *BACKENDS, "any-wave", "predicates", "dispatch sites"]

    def cells(r: KernelRow) -> list[str]:
        ports = []
        for b in BACKENDS:
            mark = "yes" if r.ports[b] else "—"
            if bool(r.ports[b]) != bool(r.registry_ports.get(b)) or not r.in_code:
                mark += " (registry differs)"
            ports.append(mark)
        status = "" if r.in_registry else " (not in registry)"
        status = status if r.in_code else " (not in code)"
        return [r.kernel + status, r.table, *ports, "yes" if r.rocm_any_wave_size else "no", ", ".join(r.predicates) or "—", "; ".join(r.dispatch_sites) or "—"]

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in cells(r)) + " |" for r in rows]
    totals = {b: sum(bool(r.ports[b]) for r in rows) for b in BACKENDS}
    lines.append("")
    lines.append(f"{len(rows)} kernels; ports: " + ", ".join(f"{b} {n}" for b, n in totals.items()))
    return "\n".join(lines) + "\n"


# -- the ROCm checklist -------------------------------------------------------


@dataclass(frozen=True)
class Item:
    name: str
    done: bool
    detail: str
    where: str = ""  # path:line the next step is taken at ("" when done)
    next_step: str = ""  # what to do about it ("" when done)


def rocm_checklist(registry, index, findings) -> dict:
    """kernel name -> [Item]; `findings` are those of `check` on the same tree."""
    by_kernel: dict = {}
    for row in matrix_rows(registry, index):
        table = index.table(row.table) if row.in_code else None
        slot = table.slots.get("rocm") if table else None
        factories = [f for f in (slot.factory_calls if slot else ()) if f.backend == "rocm"]
        hip_names = sorted({n for f in factories for n in (*f.source_constants, *f.header_constants)})
        hip_found = [n for n in hip_names if index.hip_source(n)]
        kernel = registry.kernel_for_table(row.table)
        own = [f for f in findings if f.kernel == row.kernel or (table and f.path == table.file)]
        lane_problems = [f for f in own if f.rule in ("KP105", *DEVICE_CODES)]
        invocations = [i for i in index.invocations if row.table in i.tables]
        # Judged as if the table had a ROCm port already: a Metal-only launch
        # with no dtype key is not a finding today, but it is work for the port.
        dtype_problems = [
            f"{i.loc.path}:{i.loc.line} {code}"
            for i in invocations
            for code, _ in DtypeKeys().judge(i, "with a rocm port")
            if code == "KP201"
        ]
        items = [
            Item("HIP source constant", bool(hip_found), ", ".join(hip_found) or "no raw-string HIP body reached from a rocm factory"),
            Item("holder calling hip_kernel", bool(factories), ", ".join(f"{f.loc.path}:{f.loc.line}" for f in factories) or "no hip_kernel call reached"),
            Item("table slot .rocm", slot is not None, slot.accessor if slot else "the .rocm slot is null"),
            Item("predicate reads the table", bool(row.predicates), ", ".join(row.predicates) or "no predicate calls has_kernel_port on this table"),
            Item(
                "dtype keys on every invocation",
                bool(invocations) and not dtype_problems,
                f"{len(invocations)} invocation(s)" + ("; no input dtype key at " + "; ".join(sorted(set(dtype_problems))) if dtype_problems else ""),
            ),
            Item(
                "wave-size decision",
                slot is not None and not [f for f in lane_problems if f.rule in ("KP105", "KP502")],
                ("marked rocm_any_wave_size" if row.rocm_any_wave_size else "wave32 only (unmarked)")
                + "".join(sorted({f"; {_WAVE_PROBLEM[f.rule]}" for f in lane_problems if f.rule in _WAVE_PROBLEM})),
            ),
            Item(
                "registry entry",
                kernel is not None and kernel.port("rocm") == (slot.accessor if slot else None) and kernel.rocm_any_wave_size == row.rocm_any_wave_size,
                f"{kernel.where.path}:{kernel.where.line}" if kernel else "not in the registry",
            ),
        ]
        built = device_build_item(index, row, own)
        if built is not None:
            items.append(built)
        steps = _NextSteps(registry, index, row, table, kernel, lane_problems, invocations, dtype_problems)
        by_kernel[row.kernel] = [i if i.done else replace(i, **steps.of(i.name)) for i in items]
    return by_kernel


class _NextSteps:
    """For an item not done: where to act (path:line) and what to do, in the engine's own terms."""

    def __init__(self, registry, index, row, table, kernel, lane_problems, invocations, dtype_problems):
        self.row, self.table, self.kernel = row, table, kernel
        self.registry, self.lane, self.dtype = registry, lane_problems, dtype_problems
        self.invocations = invocations
        self.device = [f for f in lane_problems if f.rule in DEVICE_CODES]
        cuda = table.slots.get("cuda") if table else None
        self.cuda = cuda
        self.table_at = f"{table.loc.path}:{table.loc.line}" if table else (
            f"{kernel.where.path}:{kernel.where.line}" if kernel else str(registry.path))
        calls = [f for f in (cuda.factory_calls if cuda else ()) if f.backend == "cuda"]
        consts = [h for f in calls for c in f.source_constants for h in index.hip_source(c)]
        self.cuda_body_at = f"{consts[0].loc.path}:{consts[0].loc.line}" if consts else self.table_at
        acc = next((c for c in (cuda.chain if cuda else ()) if c.kind == "accessor" and c.loc), None)
        self.cuda_accessor_at = f"{acc.loc.path}:{acc.loc.line}" if acc else self.table_at
        self.gen = f"run `kernel-ports port rocm {row.kernel}`, or " if cuda else ""

    def of(self, name: str) -> dict:
        where, step = {
            "HIP source constant": (self.cuda_body_at, f"{self.gen}add a raw-string *_HIP_SOURCE constant "
                                    "(the body in a *_hip.h header next to the launcher) compiled by hip_kernel"),
            "holder calling hip_kernel": (self.cuda_accessor_at, f"{self.gen}add an accessor whose holder calls "
                                          "hip_kernel, behind the ROCm build define"),
            "table slot .rocm": (self.table_at, f"{self.gen}add a `.rocm` slot returning the HIP accessor's "
                                 f".get() to {self.row.table}"),
            "predicate reads the table": (self.table_at, f"answer the support predicate with has_kernel_port({self.row.table}())"),
            "dtype keys on every invocation": self._dtype(),
            "wave-size decision": self._wave(),
            "device build": self._device(),
            "registry entry": (f"{self.kernel.where.path}:{self.kernel.where.line}" if self.kernel else str(self.registry.path),
                               "run `kernel-ports sync --write` and review the registry diff"),
        }[name]
        return {"where": where, "next_step": step}

    def _dtype(self) -> tuple:
        if not self.invocations:
            return self.table_at, "launch the kernel through select_kernel_port on this table"
        first = sorted(self.dtype)[0].split(" ")[0] if self.dtype else self.table_at
        return first, "name an input dtype in the launch's template args, e.g. {\"T\", x.dtype()}"

    def _device(self) -> tuple:
        if self.device:
            f = self.device[0]
            return f"{f.path}:{f.line}", (f"fix the HIP body for what {f.rule} says (the compiler's message and the "
                                          "assignment are in `kernel-ports check --device-compile rocm`)")
        return self.table_at, "add the .rocm port first; its HIP body is then built for every target"

    def _wave(self) -> tuple:
        if self.lane:
            f = self.lane[0]
            return f"{f.path}:{f.line}", "remove the lane operations from the HIP body, or leave rocm_any_wave_size false"
        return self.table_at, ("add the .rocm slot first; then leave rocm_any_wave_size false (wave32 only), or set it "
                               "after a run at wavefront width 64 when the body uses no lane operation")


DEVICE_CODES = ("KP501", "KP502")
_WAVE_PROBLEM = {"KP105": "lane operations found (KP105)", "KP502": "contradicted on 64 lanes (KP502)"}


def device_build_item(index, row, own_findings) -> Item | None:
    """Per target: how the HIP bodies the table's .rocm slot reaches built (only when a device build ran)."""
    info = index.device
    if not info.get("compiler"):
        return None
    builds = [b for b in index.device_builds if row.table in b.tables]
    problems = [f for f in own_findings if f.rule in DEVICE_CODES]
    targets = list(dict.fromkeys([*info.get("targets", ()), *(b.target for b in builds)]))
    per_target = [target_state(t, [b for b in builds if b.target == t], row.rocm_any_wave_size)
                  for t in targets if any(b.target == t for b in builds)]
    detail = "; ".join(per_target) or ("no HIP body reached from the .rocm slot was built" if row.ports.get("rocm")
                                       else "no .rocm port to build")
    if problems:
        detail += "; " + ", ".join(sorted({f.rule for f in problems}))
    return Item("device build", bool(builds) and not problems, detail)


def target_state(target: str, builds: list, marked: bool) -> str:
    from kernel_ports.index.device import span

    built = [b for b in builds if b.result == "built"]
    if built:
        state = "built" if len(built) == len(builds) else f"{len(built)}/{len(builds)} variants built"
        lanes = sorted({i for b in built for i in b.lane_intrinsics})
        return (f"{target}: {state} (VGPRs {span(b.vgprs for b in built)}, occupancy "
                f"{span(b.occupancy for b in built)}, scratch {span(b.scratch_bytes for b in built)} B"
                + (f", lane ops {', '.join(lanes)}" if lanes else "") + ")")
    if all(b.at_guard for b in builds):
        return f"{target}: stops at its wavefront guard" + ("" if marked else " (wave32 only: expected)")
    return f"{target}: no variant built ({builds[0].result})"


def render_checklist(checklist: dict, fmt: str, device_note: str = "") -> str:
    if fmt == "json":
        doc = {k: [asdict(i) for i in items] for k, items in checklist.items()}
        return json.dumps({"version": 1, "backend": "rocm", "kernels": doc}, indent=2) + "\n"
    lines = []
    complete = 0
    for kernel, items in checklist.items():
        done = sum(i.done for i in items)
        complete += done == len(items)
        lines.append(f"{kernel}: {done}/{len(items)}")
        for item in items:
            lines.append(f"  [{'x' if item.done else ' '}] {item.name}: {item.detail}")
            if item.next_step:
                lines.append(f"      next: {item.where}: {item.next_step}")
    lines.append(f"{complete} of {len(checklist)} kernels have a complete ROCm port")
    if device_note:
        lines.append(device_note)
    return "\n".join(lines) + "\n"

"""Whether a backend test's outcome decides which port, holder or factory is used or whether a custom-kernel
launch happens (KP101, SPEC §3), from what the front end recorded it decides (``BackendTest.decides``,
frontend/clang/decisions.py) and the project's call graph.

The front end follows the outcome within its translation unit; what it cannot see there is answered here:
a function called in a decided region decides a kernel when it reaches a launch, a selector call, a factory
call, a holder's accessor or a port table through any chain of calls; a function the outcome is given to
(whose body that unit did not hold) is judged the same way; and an outcome returned by a function that other
units call decides a kernel when one of those callers reaches one (their use of the result is not followed,
so the answer errs towards a finding).
"""

from __future__ import annotations

from typing import Optional

from kernel_ports.checkers.base import Context


def reaches_kernel(ctx: Context) -> set:
    """Usrs of the functions that reach a kernel construct, themselves or through the functions they call."""
    return ctx.derived("reaches_kernel", lambda: _reaches_kernel(ctx))


def _reaches_kernel(ctx: Context) -> set:
    idx = ctx.index
    graph = idx.call_graph
    found = {u for u, f in idx.functions.items() if f.invokes or f.selects or f.factory_calls}
    found |= {a.usr for a in idx.accessors} | {t.usr for t in idx.port_tables if t.usr}
    stack = [u for u in found if u in graph]
    while stack:
        for caller in graph.predecessors(stack.pop()):
            if caller not in found:
                found.add(caller)
                stack.append(caller)
    return found


def what_it_decides(ctx: Context, tests: list) -> Optional[str]:
    """What the outcome of a test (its facts at one place, one per configuration) decides of the kernels, in a
    few words; None when it decides none (it shapes numerics, or picks between library operations)."""
    reach = reaches_kernel(ctx)
    idx = ctx.index
    for effect in (e for bt in tests for e in bt.decides):
        kind = effect[0]
        if kind == "kernel":
            return f"the {effect[1]} at {effect[2]}"
        if kind == "unknown":
            return f"code the analysis could not follow ({effect[1]})"
        if kind in ("call", "arg") and effect[1] in reach:
            how = "a call of" if kind == "call" else "what it gives"
            return f"{how} {_short(effect[2])}(), which reaches a kernel"
    units = None
    for effect in (e for bt in tests for e in bt.decides if e[0] == "returned"):
        if effect[1] not in idx.call_graph:
            continue
        if units is None:
            path = tests[0].loc.path
            units = idx.translation_units_of(path) | {path}
        for caller in idx.call_graph.predecessors(effect[1]):
            info = idx.functions.get(caller)
            if info is not None and info.loc.path not in units and caller in reach:
                return f"the result of {_short(effect[2])}() in {info.qualified_name}, which reaches a kernel"
    return None


def _short(name: str) -> str:
    return (name or "").split("::")[-1]

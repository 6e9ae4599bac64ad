"""The :class:`ProjectIndex` the rules read: every fact of the tree, the include graph and the call graph.

How rules consume it: iterate the fact lists (``index.port_tables``,
``index.invocations`` ...); use ``index.includers_of(path)`` for the
translation units that see a header and ``index.call_graph`` (networkx
DiGraph keyed by Clang USR, nodes carrying ``name``/``kind``) for reachability;
``index.compiled_bodies[str(factory_call.loc)]`` says what a factory call
compiles (source and header bodies, the project files they ``#include``, and
what could not be read).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import networkx as nx

from kernel_ports.facts import PortTable, SelectorCall, sort_key, to_jsonable


@dataclass
class ProjectIndex:
    port_tables: list = field(default_factory=list)
    selector_calls: list = field(default_factory=list)
    invocations: list = field(default_factory=list)
    factory_calls: list = field(default_factory=list)
    predicates: list = field(default_factory=list)
    backend_tests: list = field(default_factory=list)
    holder_accesses: list = field(default_factory=list)
    accessors: list = field(default_factory=list)
    holders: list = field(default_factory=list)
    refusals: list = field(default_factory=list)
    hip_sources: list = field(default_factory=list)
    compiled_bodies: dict = field(default_factory=dict)  # str(factory call loc) -> CompiledBodies
    rust_gates: list = field(default_factory=list)
    seam_calls: list = field(default_factory=list)
    parse_quality: list = field(default_factory=list)
    unanalyzable: list = field(default_factory=list)  # (path, reason) -> KP901
    unconfirmed: list = field(default_factory=list)  # Unconfirmed -> KP902
    missing_from_shim: tuple = ()  # qualified names calls use that the bundled ROCm shim does not declare (the fork's)
    include_graph: nx.DiGraph = field(default_factory=nx.DiGraph)  # includer -> included (project paths)
    # caller usr -> callee usr; a function whose body the walk left unread (FunctionInfo.body_walked False, see
    # frontend/focus.py) is a node without out-edges, and is reached from no function whose body was read
    call_graph: nx.DiGraph = field(default_factory=nx.DiGraph)
    files_scanned: list = field(default_factory=list)  # every C-family/Rust path read
    clang_files: list = field(default_factory=list)  # (path, configuration) parsed by Clang
    functions: dict = field(default_factory=dict)  # usr -> clang.FunctionInfo (merged)
    timings: dict = field(default_factory=dict)
    headers: dict = field(default_factory=dict)  # the header set that judged the tree (frontend/headers.py)
    # check --device-compile rocm (index/device.py): DeviceBuild per body, target and variant; what built them
    device_builds: list = field(default_factory=list)
    device: dict = field(default_factory=dict)

    # ---------------------------------------------------------------- queries
    def includers_of(self, path: str) -> set:
        """Every project file that includes ``path`` directly or transitively."""
        if path not in self.include_graph:
            return set()
        return set(nx.ancestors(self.include_graph, path))

    def translation_units_of(self, path: str) -> set:
        """The parsed translation units that see ``path`` (itself if it is one)."""
        tus = {p for p, _ in self.clang_files}
        out = {t for t in self.includers_of(path) if t in tus}
        if path in tus:
            out.add(path)
        return out

    def table(self, name: str) -> Optional[PortTable]:
        short = name.split("::")[-1]
        return next((t for t in self.port_tables if t.name == short or t.qualified_name == name), None)

    def selector(self, sid: str) -> Optional[SelectorCall]:
        return next((s for s in self.selector_calls if str(s.loc) == sid), None)

    def hip_source(self, name: str):
        return [h for h in self.hip_sources if h.name == name]

    def to_json(self) -> dict:
        def lst(items):
            return [to_jsonable(x) for x in sorted(items, key=sort_key)]

        return {
            "version": 1,
            "port_tables": lst(self.port_tables),
            "selector_calls": lst(self.selector_calls),
            "invocations": lst(self.invocations),
            "factory_calls": lst(self.factory_calls),
            "predicates": lst(self.predicates),
            "backend_tests": lst(self.backend_tests),
            "holder_accesses": lst(self.holder_accesses),
            "accessors": lst(self.accessors),
            "holders": lst(self.holders),
            "refusals": lst(self.refusals),
            "hip_sources": lst(self.hip_sources),
            "compiled_bodies": {
                k: {"bodies": [f"{h.loc.path}:{h.name}" for h in v.bodies], "unresolved": list(v.unresolved)}
                for k, v in sorted(self.compiled_bodies.items())
            },
            "rust_gates": lst(self.rust_gates),
            "seam_calls": lst(self.seam_calls),
            "files": [to_jsonable(q) for q in sorted(self.parse_quality, key=lambda q: (q.path, q.configuration))],
            "unanalyzable": [{"path": p, "reason": r} for p, r in sorted(self.unanalyzable)],
            "unconfirmed": lst(self.unconfirmed),
            "include_graph": sorted([a, b] for a, b in self.include_graph.edges),
            "headers": self.headers,
            "device_builds": lst(self.device_builds),
        }

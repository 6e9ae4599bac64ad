"""What one parse of a translation unit takes and gives: the job, the registry names it needs, the raw facts.

:class:`ParseJob` and :class:`Conventions` go to a parser worker; :class:`TUResult`
comes back, picklable and cacheable (``kernel_ports.cache.format`` names these classes
``model.<Class>``), with the facts whose evidence is local to the unit and the
per-function summaries (:class:`FunctionInfo`, :class:`CallEdge` with the
:class:`Guard` they sit under) that :mod:`kernel_ports.index` joins across units.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from kernel_ports.facts import Location, SelectorCall

@dataclass(frozen=True)
class Guard:
    """The code sits under ``param in values`` (or not in, when negated)."""

    param: str
    values: tuple
    negated: bool = False


@dataclass(frozen=True)
class CallEdge:
    callee_usr: str
    callee: str  # qualified name
    spelling: str  # as written (template args included)
    loc: Location
    targs: tuple  # explicit template args: ('const', enumerator) | ('param', name) | None
    args: tuple  # per argument: frozenset of value refs (see _Resolver.sources)
    guards: tuple = ()
    returns_ref: Optional[str] = None  # the callee returns a reference to this type (canonical)
    returns_kernel_ref: bool = False  # the callee returns CustomKernelFunction&
    is_method: bool = False
    in_slot: Optional[str] = None  # id of the port-table slot lambda it sits in
    member_call: Optional[str] = None  # method called on this call's result (h().get())
    bound_to: Optional[str] = None  # local reference variable bound to the result
    bound_then: tuple = ()  # methods later called on that variable


@dataclass
class FunctionInfo:
    usr: str
    name: str
    qualified_name: str
    loc: Location
    params: tuple = ()
    template_params: tuple = ()
    returns_ref: Optional[str] = None  # canonical type returned by reference
    returns_kernel_ref: bool = False
    returns_bool: bool = False  # the result type is bool (a support predicate answers with one)
    is_method_of: Optional[str] = None  # class qualified name
    calls: list = field(default_factory=list)  # CallEdge
    factory_calls: list = field(default_factory=list)  # (FactoryCall, guards)
    returned: frozenset = frozenset()  # value refs of returned expressions
    returned_statics: tuple = ()  # (name, type, Location) static/global variables returned
    invokes: bool = False  # contains an invocation
    selects: bool = False  # contains a selector call
    backend_queries: tuple = ()  # registry backend queries called directly
    has_port_args: tuple = ()  # frozensets of value refs, one per has_kernel_port call
    calls_default_device: bool = False
    param_const_args: dict = field(default_factory=dict)  # unused placeholder for merges
    body_walked: bool = True  # False: a body the focus left unread (frontend/focus.py); the fields above it are empty


@dataclass
class RawSlot:
    backend: str
    text: str
    loc: Location
    slot_id: str
    accessor: Optional[str]  # spelling
    accessor_usr: Optional[str]
    accessor_function: Optional[str]
    accessor_targs: tuple
    holder_type: Optional[str]
    edges: list  # CallEdge from the getter (lambda or function)
    factory_calls: list  # FactoryCall directly in the getter
    getter_function_usr: Optional[str] = None  # slot given as a function, not a lambda


@dataclass
class RawTable:
    name: str
    qualified_name: str
    usr: str
    loc: Location
    variable: str
    slots: dict  # backend -> RawSlot | None
    rocm_any_wave_size: bool


@dataclass
class RawInvocation:
    loc: Location
    callee_text: str
    kernel_refs: frozenset  # value refs for the kernel object
    template_args_text: str
    template_args: tuple
    template_args_resolved: bool
    inputs_text: str
    inputs: tuple
    enclosing_function: str
    enclosing_usr: str
    in_macro: bool
    dtype_checks: tuple = ()
    unresolved: tuple = ()
    output_dtypes_text: str = ""  # the output-dtypes argument as written (a local's initializer when it is one)


@dataclass
class RawSelector:
    fact: SelectorCall
    table_refs: frozenset


@dataclass
class RawHolderAccess:
    kind: str
    accessor: str
    accessor_usr: str
    method: Optional[str]
    loc: Location
    in_table_slot: bool
    enclosing_function: str
    enclosing_usr: str
    in_macro: bool


@dataclass
class RawPredicate:
    fact_args: dict  # keyword args for Predicate minus tables
    table_refs: tuple  # frozensets


@dataclass
class TUResult:
    path: str  # the translation unit (relative)
    configuration: str
    ok: bool = True
    error: str = ""
    seconds: float = 0.0
    diagnostics: int = 0
    errors: int = 0
    diag_by_file: dict = field(default_factory=dict)  # path -> (diagnostics, errors)
    files_walked: list = field(default_factory=list)  # project files whose declarations were read
    includes: list = field(default_factory=list)  # (includer, included) project-relative or abs
    functions: list = field(default_factory=list)
    tables: list = field(default_factory=list)
    factory_calls: list = field(default_factory=list)
    selectors: list = field(default_factory=list)
    invocations: list = field(default_factory=list)
    holder_accesses: list = field(default_factory=list)
    backend_tests: list = field(default_factory=list)
    refusals: list = field(default_factory=list)
    predicates: list = field(default_factory=list)
    seam_calls: list = field(default_factory=list)
    seen: set = field(default_factory=set)  # (path, line, kind) confirmed typed constructs
    untyped: list = field(default_factory=list)  # (path, line, column, kind, name, reason)
    shim_missing: list = field(default_factory=list)  # (path, line, qualified name): calls the ROCm shim cannot declare
    skipped: dict = field(default_factory=dict)  # path -> [(first_line, last_line)]
    first_errors: list = field(default_factory=list)  # the first Clang errors, "path:line: message"
    error_lines: dict = field(default_factory=dict)  # project path -> [(line, message)] of its Clang errors (capped)


@dataclass(frozen=True)
class Conventions:
    """The registry names the Clang walk needs, in picklable form."""

    factories: tuple  # ((qualified name, backend), ...)
    selector: str
    has_port: str
    table_type: str
    backend_queries: tuple
    seams: tuple
    predicates: tuple  # qualified or plain names
    backends: tuple

    @classmethod
    def from_registry(cls, registry) -> "Conventions":
        conv = registry.conventions
        return cls(
            factories=tuple((_norm(b.factory), name) for name, b in registry.backends.items()),
            selector=_norm(conv.selector),
            has_port=_norm(conv.has_port),
            table_type=_norm(conv.table_type),
            backend_queries=tuple(_norm(q) for q in conv.backend_queries),
            seams=tuple(s.name for s in conv.test_seams),
            predicates=tuple(sorted({p for k in registry.kernels for p in k.predicates})),
            backends=tuple(registry.backends),
        )

    def target_kind_by_name(self, name: str) -> Optional[str]:
        """Which registry function a call Clang could not resolve names, by its last segment (None: none)."""
        if not name:
            return None
        if any(f.split("::")[-1] == name for f, _ in self.factories):
            return "factory_call"
        if self.selector.split("::")[-1] == name:
            return "selector_call"
        if self.has_port.split("::")[-1] == name:
            return "has_port_call"
        return None


def _norm(qname: str) -> str:
    return qname[2:] if qname.startswith("::") else qname


class NameSet:
    """Names as the registry gives them: ``q in names`` when a qualified name of the set is ``q`` or a plain one is
    its last segment. Two set lookups: a walk asks for every function of a unit, with hundreds of names."""

    def __init__(self, names):
        names = tuple(names)
        self.qualified = frozenset(n for n in names if "::" in n)
        self.plain = frozenset(n for n in names if "::" not in n)

    def __contains__(self, qualified: str) -> bool:
        return qualified in self.qualified or qualified.rsplit("::", 1)[-1] in self.plain


@dataclass(frozen=True)
class ParseJob:
    abspath: str
    relpath: str
    configuration: str
    args: tuple
    root: str
    project_files: frozenset  # relative paths of in-scope project files
    conventions: Conventions
    unsaved: Optional[bytes] = None
    fault: Optional[str] = None  # test hook: "crash" | "hang" | "error"
    unread_bodies: frozenset = frozenset()  # (relpath, line, column) of free-function bodies not to walk (focus.py)
    withheld: tuple = ()  # absolute paths of project files the scope refused (KP901): Clang sees them empty
    # (relpath, absolute path, sha256 of the text the witness read, ((start, end), ...)): unread bodies Clang is
    # given blank (session.blanked_sources)
    hidden_bodies: tuple = ()

"""Typed facts the front ends extract from the source tree.

Front ends know no rules: they only say what is in the code. Every fact is a
frozen, keyword-only dataclass carrying

* ``loc`` -- a :class:`Location` (POSIX path relative to the registry root,
  1-based line and column of the construct, macro-expanded constructs located
  at their expansion site), and
* ``configurations`` -- the names of the build configurations
  (``registry.compile.configurations``) under which the construct exists.
  A fact seen identically in several configurations is stored once with all of
  their names; a fact whose content differs between configurations (typically
  an invocation's template arguments under ``#ifdef``) is stored once per
  distinct content, so a rule that iterates facts judges each configuration's
  variant.  Facts that do not depend on the C++ preprocessor (Rust, HIP bodies
  read syntactically) carry an empty set.

Names are kept as written where a rule or a registry compares against
spelling (accessor spellings such as ``get_x_kernel<GpuKernelBackend::Metal>``)
and as fully qualified names (``ns::f``) where identity matters.  Clang USRs
identify functions across translation units; they are the node keys of the
call graph in :class:`kernel_ports.index.ProjectIndex`.

``to_jsonable`` turns any fact (or tree of facts) into plain JSON data with a
stable ordering.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(frozen=True, order=True)
class Location:
    path: str  # POSIX, relative to the registry root
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"


NO_CONFIGS: frozenset = frozenset()


@dataclass(frozen=True, kw_only=True)
class Fact:
    loc: Location
    configurations: frozenset = NO_CONFIGS


# --------------------------------------------------------------------------
# Factories, holders, accessors, port tables
# --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class FactoryCall(Fact):
    """A call of one of the registry's backend factories (``metal_kernel`` ...)."""

    backend: str  # registry backend name: metal | cuda | rocm
    factory: str  # qualified name of the called factory
    kernel_name: Optional[str]  # the first argument when it is a string literal
    name_text: str  # the first argument as written
    source_constants: tuple = ()  # names of constants (variables) the source argument reads
    source_literal: Optional[str] = None  # the source argument's text when it is a literal
    source_text: str = ""  # the source argument as written
    header_constants: tuple = ()  # names of constants the header argument reads
    header_literal: Optional[str] = None
    header_text: str = ""  # "" when the argument is defaulted
    enclosing_function: str = ""  # qualified name ("" at namespace scope)
    enclosing_usr: str = ""
    in_table_slot: bool = False  # syntactically inside a port-table slot lambda
    in_macro: bool = False
    # the input and output names (the second and third arguments): string literals at the call or returned by the
    # helper it calls; None when they could not be read
    input_names: Optional[tuple] = None
    output_names: Optional[tuple] = None


@dataclass(frozen=True, kw_only=True)
class ChainStep:
    """One hop of a slot's resolution: getter -> accessor -> holder -> helper -> factory."""

    kind: str  # getter | accessor | holder | helper | factory
    name: str  # qualified name (the accessor as written for kind == accessor)
    usr: str = ""
    loc: Optional[Location] = None
    bindings: tuple = ()  # ((parameter name, constant), ...) propagated into this step


@dataclass(frozen=True, kw_only=True)
class Slot:
    """A non-null port-table slot."""

    backend: str
    accessor: Optional[str]  # spelling as written, e.g. get_partial_kernel<GpuKernelBackend::Metal>
    accessor_function: Optional[str]  # qualified name of the accessor function (template args dropped)
    accessor_usr: Optional[str]
    holder_type: Optional[str]  # the type the accessor returns a reference to
    chain: tuple = ()  # ChainStep, in call order, deduplicated
    factory_calls: tuple = ()  # FactoryCall reached (after constant propagation)
    hip_sources: tuple = ()  # source/header constant names the reached factories compile
    loc: Optional[Location] = None  # the slot initializer
    configurations: frozenset = NO_CONFIGS  # configurations where the slot is non-null
    resolved: bool = False  # at least one factory call was reached
    text: str = ""  # the initializer as written


@dataclass(frozen=True, kw_only=True)
class PortTable(Fact):
    """A function returning ``const <table_type>&`` that builds a static table."""

    name: str  # unqualified function name
    qualified_name: str
    usr: str
    file: str  # == loc.path
    slots: dict = field(default_factory=dict, hash=False)  # backend -> Slot | None
    rocm_any_wave_size: bool = False
    variable: str = ""  # the static table variable's name


@dataclass(frozen=True, kw_only=True)
class Accessor(Fact):
    """A function returning a reference to a kernel holder, as used somewhere.

    One record per distinct spelling used in the tree (slots and direct
    accesses); ``loc`` is the function's definition.
    """

    name: str  # as written, template arguments included
    function: str  # qualified name
    usr: str
    holder_type: Optional[str]
    factory_calls: tuple = ()  # reached with the spelling's template arguments propagated


@dataclass(frozen=True, kw_only=True)
class Holder(Fact):
    """The object an accessor returns a reference to (usually a function-local static)."""

    name: str  # variable name
    type: str  # its type as spelled by Clang
    accessor_usr: str
    accessor: str  # qualified name of the accessor function holding it
    factory_calls: tuple = ()


@dataclass(frozen=True, kw_only=True)
class HolderAccess(Fact):
    """A way of reaching a kernel holder other than calling a table slot.

    kind: ``accessor_get`` (``get_x_kernel().get()``), ``bound_ref_get``
    (``auto& h = get_x_kernel(); h.get()``), ``accessor_call`` (an accessor that
    returns the kernel function itself, called without ``.get()``) or
    ``factory_call`` (a backend factory called directly in a launching
    function).
    """

    kind: str
    accessor: str  # spelling as written (the factory's qualified name for factory_call)
    accessor_usr: str
    method: Optional[str]  # the member called on the holder (get), if any
    in_table_slot: bool
    enclosing_function: str
    enclosing_usr: str
    enclosing_is_accessor: bool = False  # inside another accessor/holder implementation
    in_macro: bool = False


# --------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SelectorCall(Fact):
    entry_point: Optional[str]  # string literal, else None
    fallback: Optional[str]
    entry_point_text: str
    fallback_text: str
    table_text: str
    tables: tuple  # resolved port-table names (unqualified); ("unknown",) if not resolvable
    enclosing_function: str
    enclosing_usr: str
    in_macro: bool = False

    @property
    def id(self) -> str:
        return str(self.loc)


@dataclass(frozen=True, kw_only=True)
class TemplateArgEntry:
    name: Optional[str]  # the key string, when literal
    value_text: str
    is_dtype: bool  # the value is a Dtype (by canonical type)
    source_input: Optional[str]  # array whose dtype it is (x for x.dtype()), if known
    from_parameter: bool  # the value (or the whole vector) arrives as a parameter
    constant: bool = False  # a compile-time constant (float32, 4, true)
    loc: Optional[Location] = None  # where the entry is written
    how: str = ""  # initializer | push_back | emplace_back | inline | helper | assign | insert
    parameter: Optional[str] = None  # the launching function's parameter the value arrives through
    untyped: bool = False  # Clang could not type the value (a declaration it depends on did not compile)
    value: Optional[str] = None  # a constant's value as Clang evaluates it (4, true, float16), when it can


@dataclass(frozen=True, kw_only=True)
class InputArray:
    text: str  # expression as written
    name: Optional[str]  # the variable, when it is one
    dtype_fixed: Optional[bool]  # True: constant dtype; False: follows its source; None: unknown
    fixed_dtype: Optional[str] = None  # the constant, when known
    how: str = ""  # why dtype_fixed (astype, scalar, constructor, parameter ...)
    dtype_follows: tuple = ()  # other names whose dtype this one's equals: arrays it is copied from, the array or
    # Dtype parameter it is cast to (astype(a, x.dtype()) -> x; astype(a, dt) -> dt)


@dataclass(frozen=True, kw_only=True)
class Invocation(Fact):
    """A call of a CustomKernelFunction object (a kernel launch)."""

    callee_text: str  # the kernel object as written
    selector_calls: tuple  # locations (str) of the SelectorCall(s) it resolves to
    tables: tuple  # port-table names reached ("unknown",) if none resolved
    accessors: tuple = ()  # accessor functions called directly for the kernel object (bypass)
    template_args_text: str = ""
    template_args: tuple = ()  # TemplateArgEntry
    template_args_resolved: bool = True  # False when some part could not be followed
    inputs_text: str = ""
    inputs: tuple = ()  # InputArray
    enclosing_function: str = ""
    enclosing_usr: str = ""
    in_macro: bool = False
    kernel_from_parameter: bool = False  # the kernel object is a parameter (tables via callers)
    dtype_checks: tuple = ()  # (a, b) arrays whose dtypes the enclosing function compares (== / !=)
    output_dtypes_text: str = ""  # the output-dtypes argument as written (a local's initializer when it is one)
    unresolved: tuple = ()  # why the template args may be incomplete (untyped entries, Clang errors in the function)


# --------------------------------------------------------------------------
# Backend tests, refusals, predicates
# --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BackendTest(Fact):
    """A test of the backend kind or of a backend's availability.

    operator: ``==``, ``!=``, ``switch``, ``ternary``, ``!``, ``&&``, ``||``,
    ``condition`` (used directly as an if/while condition), ``bool-local``
    (stored in a bool variable/member), ``return`` (returned from a function
    that is not a plain forwarding of the query), ``argument``.
    origin: ``runtime`` (derived from a registry backend query), ``compile_time``
    (a template parameter or a parameter only ever given constants) or
    ``unknown``.
    """

    query: Optional[str]  # qualified name of the backend query it derives from (runtime)
    operator: str
    origin: str
    via: str  # direct | local | member | parameter | function | template_parameter
    compared_to: tuple = ()  # enumerator names on the other side, if any
    text: str = ""
    in_macro: bool = False
    macro: Optional[str] = None
    enclosing_function: str = ""
    enclosing_usr: str = ""
    # what the outcome decides (a runtime test; frontend/clang/decisions.py): ("kernel", what, place),
    # ("call", usr, name), ("arg", usr, name), ("returned", usr, name), ("unknown", why)
    decides: tuple = ()


@dataclass(frozen=True, kw_only=True)
class Refusal(Fact):
    """``if (<availability/port test>) throw ...`` written by hand."""

    test_text: str
    tested: tuple  # qualified names of the functions tested (queries, has_port, predicates)
    enclosing_function: str
    enclosing_usr: str
    in_macro: bool = False


@dataclass(frozen=True, kw_only=True)
class Predicate(Fact):
    name: str
    qualified_name: str
    usr: str
    tables: tuple  # port tables read through has_kernel_port (unqualified names)
    has_port_calls: int  # number of has_kernel_port calls in the body
    backend_queries: tuple  # registry backend queries consulted directly or through a wrapper
    calls: tuple  # every function called (qualified names)
    default_device_check: bool
    unresolved_tables: bool = False  # a has_kernel_port argument could not be resolved
    returns_bool: bool = True  # False: a function that consults has_kernel_port but answers no yes/no question
    forwards_to: Optional[str] = None  # qualified name of the one function whose result it returns unchanged, when it
    # calls nothing else (a bridge wrapper `bool f() { return ns::f(); }`)


# --------------------------------------------------------------------------
# HIP bodies, Rust, seams
# --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class HipSource(Fact):
    """A kernel-body string constant (raw string literals, possibly concatenated)."""

    name: str
    text: str  # the body, pieces joined
    piece_locs: tuple = ()  # Location of each literal piece
    identifiers: tuple = ()  # identifiers used by the body as code (comments/strings excluded)
    tokens: tuple = ()  # every non-comment token of the body, in order
    is_raw: bool = True
    token_lines: tuple = ()  # the file line of each token (same length as tokens)
    includes: tuple = ()  # quoted #include paths of the body, as spelled


@dataclass(frozen=True, kw_only=True)
class CompiledBodies(Fact):
    """What one factory call compiles (``loc`` is the call's).

    ``bodies``: the HipSource of its source argument and of its header
    argument (named constants, several for a concatenation of constants, or
    the literal written at the call), then every project file those bodies
    pull in with ``#include "..."``, transitively. ``unresolved``: what could
    not be read (an argument that is neither a literal nor a known constant,
    an include that names no project file), so a rule can fail closed.
    """

    bodies: tuple = ()  # HipSource
    unresolved: tuple = ()  # human-readable descriptions


@dataclass(frozen=True, kw_only=True)
class DeviceBuild(Fact):
    """One variant of a HIP body built for one target (``check --device-compile rocm``; ``loc`` is the body's).

    ``result``: ``built``, ``failed`` (this variant did not compile), or how the whole compile ended
    (``refused``, ``timeout``, ``memory``, ``crash``). ``message``/``message_loc``: the compiler's first error
    for this variant, at the body's (or header's) own file:line:col; ``at_guard``: that error is the body's own
    ``#error`` directive. Resource figures are ``None`` unless it built.
    """

    body: str  # the HipSource's "path:name"
    kernel_name: str
    factory_call: str  # the factory call's location
    tables: tuple = ()  # port tables whose .rocm slot reaches the call
    target: str
    wavefront: int  # lanes of the target
    assignment: str  # the template arguments and dtypes, as written for a reader
    guessed: tuple = ()  # template constants given a guessed value
    result: str
    message: str = ""
    message_loc: Optional[Location] = None
    at_guard: bool = False
    sgprs: Optional[int] = None
    vgprs: Optional[int] = None
    sgpr_spill: Optional[int] = None
    vgpr_spill: Optional[int] = None
    scratch_bytes: Optional[int] = None
    lds_bytes: Optional[int] = None
    occupancy: Optional[int] = None
    lane_intrinsics: tuple = ()  # the cross-lane llvm.amdgcn.* operations its kernel reaches
    compiler: str = ""  # path and version


@dataclass(frozen=True, kw_only=True)
class GateExpr:
    """The boolean structure of a Rust gate.

    op: ``||``, ``&&``, ``!``, ``call``, ``if`` (if/else-if chain: args are the
    conditions, in order), ``match`` (args are the arm bodies, ``patterns`` the
    arm patterns), ``lit``, ``other``.
    """

    op: str
    text: str
    args: tuple = ()
    path: Optional[str] = None  # call: the callee path as written (crate::ffi::f)
    name: Optional[str] = None  # call: the last path segment
    patterns: tuple = ()


@dataclass(frozen=True, kw_only=True)
class RustGate(Fact):
    kind: str  # fn_body | if | while | match | let
    function: Optional[str]  # enclosing fn name
    expr: GateExpr
    calls: tuple  # callee paths as written
    call_names: tuple  # last segments
    in_cfg_test: bool
    text: str = ""


@dataclass(frozen=True, kw_only=True)
class SeamCall(Fact):
    name: str
    language: str  # cpp | rust
    is_declaration: bool = False
    is_definition: bool = False
    is_forwarding: bool = False  # the only statement of a wrapper passing the call through
    in_test: bool = False  # #[cfg(test)] module / #[test] fn (path globs are the rule's)
    enclosing_function: Optional[str] = None


# --------------------------------------------------------------------------
# Quality and fail-closed records
# --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ParseQuality:
    path: str
    configuration: str
    parsed: bool
    diagnostics: int  # errors+warnings after filtering the prelude's __va_list_tag noise
    errors: int
    seconds: float
    translation_unit: Optional[str] = None  # the TU it was seen through (headers)
    cached: bool = False
    first_errors: tuple = ()  # the first Clang errors, "path:line: message"


@dataclass(frozen=True, kw_only=True)
class Unconfirmed(Fact):
    """A candidate the witness saw that Clang lost or could not type (KP902)."""

    kind: str  # factory_call | port_table | selector_call | invocation | has_port_call | walk_failure | DAMAGED_TABLE
    name: str  # the callee / type name the witness matched
    reason: str
    text: str = ""


# A port table Clang parsed with an error inside its initialiser (a designator naming no field, a getter that does
# not compile): Clang recovers such an initialiser by guessing, so which slot holds which getter is not known.
DAMAGED_TABLE = "damaged_port_table"


# --------------------------------------------------------------------------


def to_jsonable(obj: Any) -> Any:
    """Plain JSON data for facts, with deterministic ordering of sets."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {}
        for f in dataclasses.fields(obj):
            out[f.name] = to_jsonable(getattr(obj, f.name))
        return out
    if isinstance(obj, (frozenset, set)):
        return sorted(to_jsonable(x) for x in obj)
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    return obj


class _FactOrder:
    """Sort key of a fact: its location, then (only to break a tie, computed then) its content as JSON text."""

    __slots__ = ("base", "fact", "_content")

    def __init__(self, base: tuple, fact: Any):
        self.base = base
        self.fact = fact
        self._content = None

    def content(self) -> str:
        if self._content is None:
            self._content = repr(to_jsonable(self.fact))
        return self._content

    def __lt__(self, other: "_FactOrder") -> bool:
        if self.base != other.base:
            return self.base < other.base
        return self.content() < other.content()

    def __eq__(self, other) -> bool:
        return isinstance(other, _FactOrder) and self.base == other.base and self.content() == other.content()

    __hash__ = None


def sort_key(fact: Any):
    """Stable ordering for fact lists: by location, then content."""
    loc = getattr(fact, "loc", None)
    base = (loc.path, loc.line, loc.column) if loc is not None else ("", 0, 0)
    return _FactOrder(base, fact)

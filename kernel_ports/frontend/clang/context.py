"""The shared context of one walk: the unit being read, what the walk has learnt of it so far, how to read a cursor.

:class:`UnitContext` is what every part of the walk shares: the job and its
registry names (``conv``), the result being filled (``res``), the canonical
types of the registry's and MLX's API in this unit (:meth:`UnitContext.find_api_types`),
the functions read so far and their callers, writes to data members, and the
helpers that turn a cursor into a location, its text, a qualified name or a
canonical type. :class:`Frame` is the function being read: its guards, locals,
assignments and parameters. :class:`Extractor` is the shape of one fact
family's part of the walk (:mod:`kernel_ports.frontend.clang.walk` calls it).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

from kernel_ports.facts import Location
from kernel_ports.frontend.clang.model import FunctionInfo, ParseJob, TUResult
from kernel_ports.frontend.clang.prelude import prelude_api
from kernel_ports.frontend.clang.toolchain import ADDRESS_OF, cindex
from kernel_ports.frontend.headers import ROCM_SHIM_DIR

MLX_DTYPE = "mlx::core::Dtype"  # MLX API (SPEC §1), not an engine convention
FIRST_ERRORS = 5  # Clang errors a result lists (facts: files[].first_errors)
# the namespace the bundled ROCm shim's rocm.h stands in for, and Clang's error for a name it does not declare
SHIM_NAMESPACE = "mlx::core::rocm"
_NOT_IN_SHIM = re.compile(r"^no member named '(\w+)' in namespace '" + re.escape(SHIM_NAMESPACE) + "'$")
_SHIM_ROCM_H = os.path.normpath(str(ROCM_SHIM_DIR / "mlx" / "backend" / "rocm" / "rocm.h"))
ERROR_LINES_KEPT = 200  # per file, for the summary's causes and the nearest error a KP902 names



_STRIP_KINDS = None


def strip_kinds():
    global _STRIP_KINDS
    if _STRIP_KINDS is None:
        K = cindex().CursorKind
        _STRIP_KINDS = {K.UNEXPOSED_EXPR, K.PAREN_EXPR, K.CXX_FUNCTIONAL_CAST_EXPR, K.CSTYLE_CAST_EXPR,
                        K.CXX_STATIC_CAST_EXPR, K.CXX_CONST_CAST_EXPR}
    return _STRIP_KINDS


class Frame:
    """The function being walked."""

    def __init__(self, info: FunctionInfo, cursor):
        self.info = info
        self.cursor = cursor
        self.guards: list = []
        self.slot: Optional[str] = None
        self.locals: dict = {}  # var usr -> init cursor
        self.local_cursors: dict = {}  # var usr -> VAR_DECL cursor
        self.member_calls: dict = {}  # var usr -> [(method, call cursor)]
        self.assigns: dict = {}  # var usr -> [rhs cursor]
        self.params: dict = {}  # param usr -> index
        self.scans: dict = {}  # what a scan of the whole function found, by the scan's name (see scan)

    def scan(self, name: str, compute):
        """``compute()``, asked of the function once: the answer of a scan of its whole body, which each launch,
        argument or template-args entry in it would otherwise make again."""
        found = self.scans.get(name)
        if found is None:
            found = self.scans[name] = compute()
        return found


class Extractor:
    """One fact family's part of the walk (pylint's checker shape).

    The walk collects, once per unit, every method named ``visit_<event>`` or
    ``leave_<event>`` of its extractors and calls them where the event happens
    (the events and their arguments are listed in :mod:`.walk`); after the
    traversal it calls each extractor's :meth:`finish` in the order of
    ``walk.EXTRACTORS``, each isolated (a failure is a KP902 named ``phase``).
    An extractor reads and writes the shared state through ``self.walk`` (a
    :class:`UnitContext`) and keeps its own; it never calls another extractor.
    """

    phase = ""  # the name of its finish() in a KP902 that says the phase failed

    def __init__(self, walk):
        self.walk = walk

    def finish(self) -> None:
        """A pass over what the traversal collected, after the whole unit is walked."""


class UnitContext:
    """What every part of the walk of one unit shares (see the module docstring)."""

    def __init__(self, tu, job: ParseJob, res: TUResult):
        self.ci = cindex()
        self.K = self.ci.CursorKind
        self.tu = tu
        self.job = job
        self.res = res
        self.conv = job.conventions
        self.root = job.root.rstrip("/") + "/"
        self._rel_cache: dict = {}
        self._file_bytes: dict = {}
        self._file_names: dict = {}  # libclang's pointer to a file of this unit -> its name (file_name)
        self._qname_cache: dict = {}
        self.macro_ranges: dict = {}  # rel path -> [(start_off, end_off, name)]
        self.kernel_type: Optional[str] = None  # canonical CustomKernelFunction
        self.table_type: Optional[str] = None
        self.dtype_type: Optional[str] = None
        self.functions: dict = {}  # usr -> FunctionInfo (this TU)
        self.fn_cursors: dict = {}  # usr -> definition cursor
        self.callers: dict = {}  # usr -> [(caller ctx, call cursor)]
        self.field_writes: dict = {}  # field usr -> [(value cursor, ctx)]: initialisers and assignments in this TU
        self.backend_enum: Optional[str] = None
        self.slot_lambdas: set = set()  # hashes of lambdas that are port-table slots
        self.seam_set = set(self.conv.seams)
        self.error_lines: dict = {}  # rel path -> [(line, message)] of Clang errors
        self.bindings: set = set()  # usrs of the names a structured binding declares (read in prescan)
        self.reads_rocm_shim = False  # the unit's mlx/backend/rocm/rocm.h is the bundled shim's
        # set by the backend-test phase (backend_tests.py) for the phases after it
        self.tainted: dict = {}  # decl usr -> (query, via): values derived from a backend query
        self.tainted_fns: dict = {}  # function usr -> query: functions returning such a value
        self.query_wrappers_known = False  # FunctionInfo.backend_queries include those reached through wrappers

    def read_diagnostics(self):
        """Clang's diagnostics of the unit (counted per project file, the first errors kept) and its include graph."""
        res = self.res
        # diagnostics (the prelude's __va_list_tag pair is not the file's)
        for d in self.tu.diagnostics:
            if "__va_list_tag" in d.spelling:
                continue
            if d.severity < 2:
                continue
            rel = self.rel(d.location.file) if d.location.file else None
            res.diagnostics += 1
            if d.severity >= 3:
                res.errors += 1
                if len(res.first_errors) < FIRST_ERRORS:
                    where = rel or (d.location.file.name if d.location.file else "")
                    res.first_errors.append(f"{where}:{d.location.line}: {d.spelling}")
                if rel:
                    self.error_lines.setdefault(rel, []).append((d.location.line, d.spelling))
            if rel:
                n, e = res.diag_by_file.get(rel, (0, 0))
                res.diag_by_file[rel] = (n + 1, e + (1 if d.severity >= 3 else 0))
        # include graph (project files only; the PCH hides std/stub includes)
        for inc in self.tu.get_includes():
            if inc.include and os.path.normpath(inc.include.name) == _SHIM_ROCM_H:
                self.reads_rocm_shim = True
            src = self.rel(inc.source) if inc.source else None
            dst = self.rel(inc.include) if inc.include else None
            if src and dst:
                res.includes.append((src, dst))
        res.error_lines = {rel: lines[:ERROR_LINES_KEPT] for rel, lines in self.error_lines.items()}
        self._shim_missing()

    def _shim_missing(self):
        """Calls of names the bundled ROCm shim does not declare (functions of the ROCm fork's backend that name no
        registry function): Clang makes a recovery expression of each, which no walk event sees, so they are read
        from its errors; the index confirms the witness's candidate there and the parse notes list the names."""
        if not self.reads_rocm_shim:
            return
        for rel, lines in self.error_lines.items():
            for line, message in lines:
                m = _NOT_IN_SHIM.match(message)
                if m and self.conv.target_kind_by_name(m.group(1)) is None:
                    self.res.shim_missing.append((rel, line, f"{SHIM_NAMESPACE}::{m.group(1)}"))

    def rel(self, f) -> Optional[str]:
        """Project-relative path of a clang File (or name), None outside the project."""
        if f is None:
            return None
        name = f if isinstance(f, str) else self.file_name(f)
        r = self._rel_cache.get(name)
        if r is None and name not in self._rel_cache:
            p = os.path.normpath(name if os.path.isabs(name) else os.path.join(os.getcwd(), name))
            r = p[len(self.root):] if p.startswith(self.root) else None
            if r is not None and r not in self.job.project_files and r != self.job.relpath:
                r = None
            self._rel_cache[name] = r
        return r

    def loc(self, c) -> Location:
        l = c.location
        f = l.file
        return Location(self.rel(f) or (self.file_name(f) if f else ""), l.line, l.column)

    def file_name(self, f) -> str:
        """The name of a clang File of this unit, asked of libclang once per file: the walk asks for the files of
        ~10k places a large unit, each answer a string libclang makes and the bindings decode. A file is known by
        libclang's pointer to it, which stays the file's while the unit lives (the context lives no longer)."""
        key = bytes(f.obj)  # (the pointer's own bytes: its value)
        name = self._file_names.get(key)
        if name is None:
            name = self._file_names[key] = f.name
        return name

    def text(self, c) -> str:
        ext = c.extent
        start, end = ext.start, ext.end  # (each read of ext.start asks libclang again; a location keeps its answer)
        f, fe = start.file, end.file
        name = self.file_name(f) if f is not None else None
        if name is None or fe is None or name != self.file_name(fe):
            return " ".join(t.spelling for t in c.get_tokens())
        data = self._file_bytes.get(name)
        if data is None:
            try:
                data = Path(name).read_bytes() if not (self.job.unsaved and name == self.job.abspath) else self.job.unsaved
            except OSError:
                data = b""
            self._file_bytes[name] = data
        return data[start.offset : end.offset].decode("utf-8", "replace") or c.spelling

    def in_macro(self, c):
        l = c.location
        rel = self.rel(l.file) if l.file else None
        for s, e, name in self.macro_ranges.get(rel, ()):
            if s <= l.offset < e:
                return name
        return None

    def qname(self, c) -> str:
        key = c.hash
        q = self._qname_cache.get(key)
        if q is not None:
            return q
        parts = []
        cur = c
        TU = self.K.TRANSLATION_UNIT
        while cur is not None and cur.kind != TU:
            sp = cur.spelling
            if cur.kind in (self.K.NAMESPACE,) and not sp:
                pass  # anonymous namespace
            elif cur.kind == self.K.LINKAGE_SPEC:
                pass
            elif sp:
                parts.append(sp)
            cur = cur.semantic_parent
        q = "::".join(reversed(parts))
        self._qname_cache[key] = q
        return q

    def strip(self, c):
        kinds = strip_kinds()
        K = self.K
        while c is not None:
            if c.kind in kinds:
                ch = list(c.get_children())
                # a functional cast carries a TYPE_REF first
                ch = [x for x in ch if x.kind not in (K.TYPE_REF, K.NAMESPACE_REF, K.TEMPLATE_REF)]
                if len(ch) != 1:
                    return c
                c = ch[0]
                continue
            if c.kind == K.CALL_EXPR:
                ref = c.referenced
                rk = ref.kind if ref is not None else None
                if rk != K.CONSTRUCTOR and rk != K.CONVERSION_FUNCTION:
                    return c  # (most calls: their arguments' places are not read)
                ch = [x for x in c.get_children() if x.location.line != 0]  # defaulted arguments have no place
                # implicit conversions / copies: a constructor call with one argument
                if rk == K.CONSTRUCTOR and len(ch) == 1 and (
                    ch[0].extent.start.offset == c.extent.start.offset or c.spelling in ("variant", "basic_string", "vector", "pair", "function", "optional", "TemplateArg")
                ):
                    c = ch[0]
                    continue
                # conversion operators (operator T()) called implicitly (MLX's Dtype converts to its Val enum for
                # == and switch; the implicit member reference has no location, so it is not among ``ch``)
                if rk == K.CONVERSION_FUNCTION and len(ch) <= 1:
                    ch = ch or list(c.get_children())
                if rk == K.CONVERSION_FUNCTION and len(ch) == 1:
                    m = ch[0]
                    mch = list(m.get_children())
                    if m.kind == K.MEMBER_REF_EXPR and len(mch) == 1:
                        c = mch[0]
                        continue
            return c
        return c

    def canonical(self, t) -> str:
        try:
            return t.get_canonical().spelling
        except Exception:
            return ""

    def ref_target(self, t) -> Optional[str]:
        """Canonical spelling of what a reference type refers to (const stripped)."""
        TK = self.ci.TypeKind
        if t.kind in (TK.LVALUEREFERENCE, TK.RVALUEREFERENCE):
            s = self.canonical(t.get_pointee())
            return re.sub(r"^const ", "", s)
        return None

    def var_init(self, c):
        K = self.K
        for ch in c.get_children():
            if ch.kind in (K.TYPE_REF, K.NAMESPACE_REF, K.TEMPLATE_REF, K.PARM_DECL, K.ANNOTATE_ATTR, K.VISIBILITY_ATTR):
                continue
            if ch.kind.is_expression() or ch.kind == K.INIT_LIST_EXPR:
                return ch
        return None

    def decomposition(self, c):
        """(the names it binds, its initialiser) of a structured binding ``auto [a, b] = init;``, else None.

        libclang 18 exposes the DecompositionDecl and each BindingDecl as unexposed declarations: the
        decomposition's children are its bindings (unexposed declarations without children) and the initialiser."""
        K = self.K
        if c.kind != K.UNEXPOSED_DECL:
            return None
        names, init = [], None
        for ch in c.get_children():
            if ch.kind == K.UNEXPOSED_DECL:
                names.append(ch)
            elif ch.kind.is_expression() or ch.kind == K.INIT_LIST_EXPR:
                init = ch
        return (names, init) if names and init is not None else None

    def is_binding(self, r) -> bool:
        """``r`` is a name a structured binding of this unit declares (a use of it reads the initialiser's value)."""
        return r.kind == self.K.UNEXPOSED_DECL and r.get_usr() in self.bindings

    def has_throw(self, s) -> bool:
        """The branch throws at its top level (a refusal), not somewhere nested."""
        K = self.K
        if s.kind == K.CXX_THROW_EXPR:
            return True
        if s.kind == K.COMPOUND_STMT:
            return any(self.has_throw(x) for x in s.get_children())
        if s.kind == K.UNEXPOSED_EXPR:
            return any(x.kind == K.CXX_THROW_EXPR for x in s.get_children())
        return False

    def enum_const(self, c) -> Optional[str]:
        c = self.strip(c)
        if c.kind == self.K.DECL_REF_EXPR:
            r = c.referenced
            if r is not None and r.kind == self.K.ENUM_CONSTANT_DECL:
                return r.spelling
        return None

    def callee(self, call):
        """(decl cursor, explicit template args) of a call, looking through dependent lookups."""
        K = self.K
        ref = call.referenced
        ch = list(call.get_children())
        head = self.strip(ch[0]) if ch else None
        if head is not None and head.kind == K.MEMBER_REF_EXPR:
            pass
        targs = []
        if head is not None and head.kind in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF):
            for x in head.get_children():
                if x.kind == K.DECL_REF_EXPR:
                    r = x.referenced
                    if r is not None and r.kind == K.ENUM_CONSTANT_DECL:
                        targs.append(("const", r.spelling))
                    elif r is not None and r.kind in (K.TEMPLATE_NON_TYPE_PARAMETER, K.PARM_DECL):
                        targs.append(("param", r.spelling))
                    else:
                        targs.append(None)
            # a dependent call in a template names an overload set: take its
            # (single, in practice) template
            od = head if head.kind == K.OVERLOADED_DECL_REF else next(
                (x for x in head.get_children() if x.kind == K.OVERLOADED_DECL_REF), None)
            if (ref is None or ref.kind == K.OVERLOADED_DECL_REF) and od is not None:
                try:
                    ref = self.ci.conf.lib.clang_getOverloadedDecl(od, 0)
                except Exception:
                    ref = None
        if ref is not None and ref.kind == K.OVERLOADED_DECL_REF:
            try:
                ref = self.ci.conf.lib.clang_getOverloadedDecl(ref, 0)
            except Exception:
                ref = None
        if ref is not None and ref.kind.is_invalid():
            ref = None
        return ref, tuple(targs)

    def callee_spelling(self, c) -> str:
        """The callee as written: `get_x_kernel<GpuKernelBackend::Metal>` (no object, no args)."""
        K = self.K
        ch = list(c.get_children())
        if not ch:
            return c.spelling
        head = ch[0]
        if self.strip(head).kind == K.MEMBER_REF_EXPR:
            return c.spelling
        txt = re.sub(r"\s+", "", self.text(head))
        return txt.split("::", 1)[-1] if txt.startswith("::") else txt or c.spelling

    def call_args(self, call):
        """The arguments of a call (the callee expression and defaulted arguments dropped)."""
        K = self.K
        ch = list(call.get_children())
        if call.referenced is not None and call.referenced.kind == K.CONSTRUCTOR:
            return ch
        return ch[1:]

    def root_name(self, o) -> Optional[str]:
        K = self.K
        o = self.strip(o)
        if o.kind == K.DECL_REF_EXPR:
            return o.spelling
        if o.kind == K.MEMBER_REF_EXPR:
            return None
        return None

    def list_elements(self, s):
        """Elements of a braced list, looking through vector/initializer_list construction."""
        K = self.K
        s = self.strip(s)
        if s.kind == K.CALL_EXPR and s.referenced is not None and s.referenced.kind == K.CONSTRUCTOR:
            ch = list(s.get_children())
            non_default = [x for x in ch if x.location.line != 0]
            if len(non_default) == 1:
                return self.list_elements(non_default[0])
            if not non_default:
                return []
            return None
        if s.kind == K.INIT_LIST_EXPR:
            ch = list(s.get_children())
            return ch
        return None

    def result_use(self, c, parents, ctx):
        """What happens to a call's reference result: `.m()` on it, or bound to a local."""
        K = self.K
        par = list(parents)
        while par and par[-1].kind in strip_kinds():
            par.pop()
        if par and par[-1].kind == K.UNARY_OPERATOR and \
                self.ci.conf.lib.clang_getCursorUnaryOperatorKind(par[-1]) == ADDRESS_OF:
            # `holder = &get_x_kernel();` or `auto* holder = &get_x_kernel();`: a pointer bound to the holder
            p = par[-2] if len(par) >= 2 else None
            target = None
            if p is not None and p.kind == K.VAR_DECL:
                target = p
            elif p is not None and p.kind == K.BINARY_OPERATOR:
                ch = list(p.get_children())
                lhs = self.strip(ch[0]) if len(ch) == 2 and ch[1] == par[-1] else None
                if lhs is not None and lhs.kind == K.DECL_REF_EXPR and lhs.referenced is not None and lhs.referenced.kind == K.VAR_DECL:
                    target = lhs.referenced
            if target is not None:
                methods = tuple(m for m, _ in ctx.member_calls.get(target.get_usr(), ()))
                return None, target.spelling, methods
            return None, None, ()
        if par:
            p = par[-1]
            if p.kind == K.MEMBER_REF_EXPR and len(par) >= 2 and par[-2].kind == K.CALL_EXPR:
                return par[-2].spelling, None, ()
            if p.kind == K.VAR_DECL:
                u = p.get_usr()
                methods = tuple(m for m, _ in ctx.member_calls.get(u, ()))
                if self.ref_target(p.type) is not None or True:
                    return None, p.spelling, methods
        return None, None, ()


    def find_api_types(self, top_children):
        """Canonical types of CustomKernelFunction (a factory's result), the table type, Dtype."""
        K = self.K
        wanted_fns = {q for q, _ in self.conv.factories} | {self.conv.selector} | set(self.conv.backend_queries)
        wanted_types = {self.conv.table_type, MLX_DTYPE}
        prefixes = set()
        for q in wanted_fns | wanted_types:
            parts = q.split("::")
            for i in range(1, len(parts)):
                prefixes.add("::".join(parts[:i]))

        for ch, q in _declarations_under(top_children, prefixes, K.NAMESPACE):
            k = ch.kind
            if k == K.FUNCTION_DECL and q in wanted_fns:
                if any(q == f for f, _ in self.conv.factories) and self.kernel_type is None:
                    self.kernel_type = self.canonical(ch.result_type)
                if q in self.conv.backend_queries and self.backend_enum is None:
                    rt = ch.result_type.get_canonical()
                    if rt.kind == self.ci.TypeKind.ENUM:
                        self.backend_enum = rt.spelling
            elif k in (K.STRUCT_DECL, K.CLASS_DECL, K.TYPE_ALIAS_DECL, K.TYPEDEF_DECL) and q in wanted_types:
                t = self.canonical(ch.type)
                if q == self.conv.table_type:
                    self.table_type = t
                else:
                    self.dtype_type = t
        api = prelude_api(self.job.args)
        if api:
            # declarations of the stubs, precompiled in the prelude, are not among the unit's
            for f, _ in self.conv.factories:
                got = api["functions"].get(f)
                if got is not None and self.kernel_type is None:
                    self.kernel_type = got["result"]
            for q in self.conv.backend_queries:
                got = api["functions"].get(q)
                if got is not None and got["enum"] and self.backend_enum is None:
                    self.backend_enum = got["result"]
            if self.dtype_type is None and MLX_DTYPE in api["types"]:
                self.dtype_type = api["types"][MLX_DTYPE]
            if self.table_type is None and self.conv.table_type in api["types"]:
                self.table_type = api["types"][self.conv.table_type]
        if self.kernel_type is None:
            # no factory declared: the selector returns the kernel type by reference
            for ch, q in _declarations_under(self.tu.cursor.get_children(), prefixes, K.NAMESPACE):
                if ch.kind == K.FUNCTION_DECL and q == self.conv.selector and self.kernel_type is None:
                    self.kernel_type = self.ref_target(ch.result_type)
        self.dtype_type = self.dtype_type or MLX_DTYPE
        self.table_type = self.table_type or self.conv.table_type


def same_cursor(a, b) -> bool:
    return a is not None and b is not None and a == b


def c_string_value(text: str) -> Optional[str]:
    """The value of a C++ string literal as written (raw or escaped, concatenated pieces)."""
    text = text.strip()
    out = []
    pos = 0
    pat = re.compile(r'(?:u8|u|U|L)?R"([^(\s]*)\((.*?)\)\1"|(?:u8|u|U|L)?"((?:\\.|[^"\\])*)"', re.S)
    for m in pat.finditer(text):
        if text[pos:m.start()].strip():
            return None
        pos = m.end()
        if m.group(2) is not None:
            out.append(m.group(2))
        else:
            out.append(re.sub(r"\\(.)", lambda mm: {"n": "\n", "t": "\t"}.get(mm.group(1), mm.group(1)), m.group(3)))
    if not out or text[pos:].strip():
        return None
    return "".join(out)


def _declarations_under(children, prefixes: set, namespace_kind):
    """(cursor, qualified name) of each declaration among ``children`` and in the namespaces named in ``prefixes``
    below them, in source order (depth first, as the declarations are written). A loop over a stack rather than a
    recursive closure: a closure that calls itself is a reference cycle, and one holding the walk would keep the
    unit's translation unit alive after the parse."""
    stack = [(iter(children), "")]
    while stack:
        it, prefix = stack[-1]
        ch = next(it, None)
        if ch is None:
            stack.pop()
            continue
        q = f"{prefix}::{ch.spelling}" if prefix else ch.spelling
        if ch.kind == namespace_kind:
            if q in prefixes:
                stack.append((iter(ch.get_children()), q))
            continue
        yield ch, q

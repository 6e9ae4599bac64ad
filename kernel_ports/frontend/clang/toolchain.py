"""What parsing needs from the machine: libclang's Python bindings and the compiler's own headers.

:func:`cindex` loads the bindings once, declares the two operator-kind calls the
walk uses (libclang 17+), and installs :func:`_speed_up_cursors` (the walk asks
a unit for children some ten thousand times). :func:`builtin_include_dir` finds
the compiler's built-in headers (``stddef.h`` ...: the libclang wheel ships no
resource headers) and :func:`system_cxx_headers` checks that a C++ standard
library is installed; either missing is a :class:`FrontEndError`, which the CLI
reports in one line.
"""

from __future__ import annotations

import ctypes
import glob
import os
import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache


class FrontEndError(Exception):
    """A setup problem the CLI reports in one line (exit 2)."""


@lru_cache(maxsize=1)
def builtin_include_dir() -> str:
    """A directory with the compiler built-in headers (stddef.h, stdarg.h ...)."""
    for cc in ("gcc", "cc", "clang"):
        try:
            out = subprocess.run([cc, "-print-file-name=include"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            continue
        d = out.stdout.strip()
        if d and os.path.isabs(d) and os.path.isfile(os.path.join(d, "stddef.h")):
            return d
    for d in sorted(glob.glob("/usr/lib/llvm-*/lib/clang/*/include")) + sorted(glob.glob("/usr/lib/gcc/*/*/include")):
        if os.path.isfile(os.path.join(d, "stddef.h")):
            return d
    raise FrontEndError("no compiler built-in headers (stddef.h) found: install gcc or clang so that `gcc -print-file-name=include` works")


@lru_cache(maxsize=1)
def system_cxx_headers() -> str:
    """Check that a C++ standard library is installed (libclang finds it itself)."""
    for pattern in ("/usr/include/c++/*/vector", "/usr/local/include/c++/*/vector", "/usr/include/*/c++/*/vector",
                    "/usr/lib/llvm-*/include/c++/v1/vector", "/usr/include/c++/v1/vector"):
        hits = sorted(glob.glob(pattern))
        if hits:
            return os.path.dirname(hits[-1])
    raise FrontEndError("no system C++ standard library headers found (e.g. /usr/include/c++/<version>/vector): install g++ or libstdc++-dev")


# Which libclang parses. The bindings (``clang.cindex``) are the pinned wheel's; the library they drive may be
# another the machine has. VERIFIED_SYSTEM_MAJORS: the majors whose facts the test suite holds byte-identical to
# the wheel's on the goldens (tests/test_golden.py runs both). AUTO_SYSTEM_MAJORS: those of them taken without
# being asked for, because they parse faster. Debian 12's libclang 19.1.7 gives the wheel's facts but not its
# speed (Clang time within noise of 18.1.1's on both benchmark trees, each parser process ~40 MiB larger:
# benchmarks/RESULTS.md), so none is today; `KERNEL_PORTS_LIBCLANG=system` or a path uses one.
LIBCLANG_ENV = "KERNEL_PORTS_LIBCLANG"
VERIFIED_SYSTEM_MAJORS = (19,)
AUTO_SYSTEM_MAJORS: tuple = ()
SYSTEM_PACKAGE = "libclang1-19"  # the Debian 12 package of the newest verified major
_SYSTEM_GLOBS = ("/usr/lib/llvm-*/lib/libclang-*.so.1", "/usr/lib/*-linux-gnu/libclang-*.so.1")
_MAJOR = re.compile(r"libclang-(\d+)\.so")
# what the walk needs of a library beyond the bindings' own table (which cindex checks when it loads one)
# calls the walk makes beyond the bindings' own table: name, argument types, result type ("cursor" stands for
# the bindings' Cursor, known once they are loaded)
_EXTRA_CALLS = (
    ("clang_getCursorBinaryOperatorKind", ("cursor",), ctypes.c_int),
    ("clang_getCursorUnaryOperatorKind", ("cursor",), ctypes.c_int),
    ("clang_Cursor_Evaluate", ("cursor",), ctypes.c_void_p),
    ("clang_EvalResult_getKind", (ctypes.c_void_p,), ctypes.c_int),
    ("clang_EvalResult_getAsLongLong", (ctypes.c_void_p,), ctypes.c_longlong),
    ("clang_EvalResult_dispose", (ctypes.c_void_p,), None),
)


@dataclass(frozen=True)
class Libclang:
    """The libclang a run parses with, chosen without loading it (the parent process never does)."""

    source: str  # "wheel" (the pinned libclang wheel), "system" (found in the system's library folders), "path"
    path: str  # the shared library
    version: str  # "18.1.1" for the wheel; a system library's major from its name ("19"); "" when unknown

    @property
    def label(self) -> str:
        """What judged the tree, for the summary and `facts`."""
        version = f"libclang {self.version}" if self.version else "libclang"
        where = "the libclang wheel" if self.source == "wheel" else f"{self.source}: {self.path}"
        return f"{version} ({where})"

    @property
    def key(self) -> str:
        """The library for cache keys: a parse or a prelude made by one libclang is never read with another."""
        real = os.path.realpath(self.path)
        try:
            st = os.stat(real)
            return f"{self.source}|{real}|{st.st_size}|{st.st_mtime_ns}"
        except OSError:
            return f"{self.source}|{real}|missing"


def wheel_libclang() -> Libclang:
    import importlib.util

    spec = importlib.util.find_spec("clang")
    if spec is None or not spec.origin:
        raise FrontEndError("libclang's Python bindings are not installed: pip install libclang==18.1.1")
    package = os.path.dirname(spec.origin)
    # the version from the wheel's metadata folder beside the package (importlib.metadata costs ~0.1 s to import)
    dist = sorted(glob.glob(os.path.join(os.path.dirname(package), "libclang-*.dist-info")))
    version = os.path.basename(dist[-1])[len("libclang-"):-len(".dist-info")] if dist else ""
    return Libclang("wheel", os.path.join(package, "native", "libclang.so"), version)


def system_libclangs() -> list:
    """The system's libclang libraries, [(major, path)], newest first, one per library file."""
    found, seen = [], set()
    for pattern in _SYSTEM_GLOBS:
        for path in sorted(glob.glob(pattern)):
            m = _MAJOR.search(os.path.basename(path))
            real = os.path.realpath(path)
            if m and real not in seen and os.path.isfile(real):
                seen.add(real)
                found.append((int(m.group(1)), path))
    return sorted(found, key=lambda mp: -mp[0])


def libclang() -> Libclang:
    """The libclang this run parses with: ``$KERNEL_PORTS_LIBCLANG`` (``wheel``, ``system``, a library's path;
    unset or ``auto``: the newest system libclang of a major verified and worth taking (``AUTO_SYSTEM_MAJORS``)
    newer than the wheel's, else the wheel).
    A setting that names nothing usable is a :class:`FrontEndError`."""
    return _choose(os.environ.get(LIBCLANG_ENV, "").strip() or "auto")


@lru_cache(maxsize=8)
def _choose(setting: str) -> Libclang:
    if setting == "wheel":
        return wheel_libclang()
    if setting in ("auto", "system"):
        wheel_major = int((wheel_libclang().version or "0").split(".")[0] or 0) if setting == "auto" else 0
        # auto with no major worth taking takes the wheel: the system's folders are not searched (~0.01 s of globs)
        for major, path in system_libclangs() if setting == "system" or AUTO_SYSTEM_MAJORS else ():
            if setting == "system" or (major in AUTO_SYSTEM_MAJORS and major in VERIFIED_SYSTEM_MAJORS
                                       and major > wheel_major):
                return Libclang("system", path, str(major))
        if setting == "system":
            raise FrontEndError(f"{LIBCLANG_ENV}=system: no system libclang found (Debian 12: apt-get install "
                                f"{SYSTEM_PACKAGE})")
        return wheel_libclang()
    if os.path.isfile(setting):
        for major, path in system_libclangs():  # a system library named by its path is still the system's
            if os.path.realpath(path) == os.path.realpath(setting):
                return Libclang("system", path, str(major))
        m = _MAJOR.search(os.path.basename(os.path.realpath(setting)))
        return Libclang("path", os.path.abspath(setting), m.group(1) if m else "")
    raise FrontEndError(f"{LIBCLANG_ENV}={setting!r}: not wheel, system, auto or a libclang library file")


_ci = None
_loaded: tuple = ()  # (the setting, the Libclang) the bindings were loaded with in this process


def cindex():
    """The bindings, loaded once per process with the library :func:`libclang` chooses."""
    global _ci, _loaded
    if _ci is not None:
        if os.environ.get(LIBCLANG_ENV, "") != _loaded[0] and libclang() != _loaded[1]:
            # a process keeps the library it loaded: a parser forked from it would otherwise parse with that one
            # under the other's cache keys
            raise FrontEndError(f"this process parses with {_loaded[1].label}; {LIBCLANG_ENV} now names "
                                f"{libclang().label}")
        return _ci
    import clang.cindex as ci

    chosen = libclang()
    if not ci.conf.loaded:
        ci.conf.set_library_file(chosen.path)
    elif os.path.realpath(ci.conf.get_filename()) != os.path.realpath(chosen.path):
        raise FrontEndError(f"libclang's bindings were loaded with {ci.conf.get_filename()} before "
                            f"kernel_ports chose {chosen.label}")
    try:
        lib = ci.conf.lib  # (the bindings declare their whole function table here: a call missing raises)
    except ci.LibclangError as exc:
        raise FrontEndError(f"{chosen.label} cannot serve the bindings: {str(exc).split('. ')[0]}") from None
    missing = [name for name, _, _ in _EXTRA_CALLS if not hasattr(lib, name)]
    if missing:
        raise FrontEndError(f"{chosen.label} lacks {', '.join(missing)} (libclang 17 or newer is needed)")
    for name, argtypes, restype in _EXTRA_CALLS:
        fn = getattr(lib, name)
        fn.argtypes = [ci.Cursor if t == "cursor" else t for t in argtypes]
        fn.restype = restype
    _speed_up_cursors(ci)
    _ci, _loaded = ci, (os.environ.get(LIBCLANG_ENV, ""), chosen)
    return _ci


def _speed_up_cursors(ci):
    """Cheaper ``Cursor.get_children``, ``Cursor.kind`` and ``Cursor.get_usr``, with the same results.

    The bindings' ``get_children`` builds a new C callback per call and asserts
    each child against the null cursor (two more libclang calls per child);
    the walk asks for children ~10k times a unit, so this was a third of its
    time. Here one callback serves every call. ``kind`` is read from a table
    instead of through ``CursorKind.from_id``.

    While a unit's walk runs (:func:`remember_children`), a cursor's children
    are listed once: the walk and its queries asked for the same node's
    children four times on average (its expression walk, ``strip``, the
    callee, argument sources), and the cursors handed out again keep what the
    bindings cache on them (spelling, extent, location). A cursor is known by
    its bytes (kind and libclang's pointers to the node), which are equal only
    for the same node.
    """
    if getattr(ci.Cursor, "_kp_fast", False):
        return
    visit = ci.conf.lib.clang_visitChildren
    collected: list = []

    @ci.callbacks["cursor_visit"]
    def _collect(child, parent, data):
        collected.append(child)
        return 1  # CXChildVisit_Continue

    K = ci.CursorKind
    # cursors that never have children: libclang visits none under a reference (its CursorVisitor returns at once
    # for every reference kind but a base specifier), and a literal has none; a tenth of a walk's asks, answered
    # without a call
    childless = frozenset(k.value for k in (
        K.TYPE_REF, K.TEMPLATE_REF, K.NAMESPACE_REF, K.MEMBER_REF, K.LABEL_REF, K.OVERLOADED_DECL_REF,
        K.VARIABLE_REF, K.INTEGER_LITERAL, K.FLOATING_LITERAL, K.IMAGINARY_LITERAL, K.STRING_LITERAL,
        K.CHARACTER_LITERAL, K.CXX_BOOL_LITERAL_EXPR, K.CXX_NULL_PTR_LITERAL_EXPR))

    def get_children(self):
        nonlocal collected
        if self._kind_id in childless:
            return iter(())
        tu = self._tu
        memo = getattr(tu, "_kp_children", None)
        if memo is not None:
            key = bytes(self)
            out = memo.recall(key)
            if out is not None:
                return iter(out)
        outer, collected = collected, []
        try:
            visit(self, _collect, None)
            out = collected
        finally:
            collected = outer
        for child in out:
            child._tu = tu  # keeps the unit alive as long as its cursors, as the bindings do
        if memo is not None:
            memo.keep(key, out)
        return iter(out)

    kinds = ci.CursorKind._kinds

    class Kind:
        """``Cursor.kind`` from the table, kept on the cursor once read: a descriptor without ``__set__``, so the
        cursor's own attribute answers the walk's later asks without a call (the bridge: 260k asks)."""

        def __get__(self, cursor, owner=None):
            if cursor is None:
                return self
            k = kinds[cursor._kind_id] if 0 <= cursor._kind_id < len(kinds) else None
            k = k if k is not None else ci.CursorKind.from_id(cursor._kind_id)
            cursor.__dict__["kind"] = k
            return k

    ci.Cursor._kp_collect = _collect  # the callback must outlive every call
    ci.Cursor._kp_childless = childless  # (for tests)
    ci.Cursor._kp_bindings = (ci.Cursor.get_children, ci.Cursor.kind, ci.Cursor.get_usr)  # the originals, for tests
    ci.Cursor.get_children = get_children
    ci.Cursor.get_usr = _remembered_usr(ci.Cursor.get_usr)
    ci.Cursor.kind = Kind()
    ci.Cursor._kp_fast = True


def _remembered_usr(usr_of):
    """``Cursor.get_usr`` that, while a unit's walk runs (:func:`remember_children`), asks libclang once per node:
    the walk asks ~5 times per node (the real engine's bridge: 15.8k asks of 3.3k nodes), each a libclang call and
    a string made from its result. A node is known by its cursor's bytes, as for its children."""

    def get_usr(self):
        usrs = getattr(getattr(self, "_tu", None), "_kp_usrs", None)
        if usrs is None:
            return usr_of(self)
        key = bytes(self)
        usr = usrs.get(key)
        if usr is None:
            usr = usrs[key] = usr_of(self)
        return usr

    return get_usr


# children lists a walk's memory holds in each of its two generations: the walk asks again for a node's children
# soon after the first time (its expression walk, ``strip``, the callee, argument sources, all within one
# declaration), so the lists of the nodes read long ago are let go. Unbounded, the memory of the real engine's
# largest unit held ~20 MiB of cursors per parser process until its walk ended, at the run's peak.
CHILDREN_KEPT = 4096


class ChildrenMemory:
    """The children lists a walk asked for lately: two generations, the older dropped when the younger is full
    (a list found in the older one moves to the younger)."""

    __slots__ = ("young", "old", "limit")

    def __init__(self, limit: int = CHILDREN_KEPT):
        self.young: dict = {}
        self.old: dict = {}
        self.limit = limit

    def recall(self, key: bytes):
        """The list kept under ``key`` (kept young again when it was old), or None."""
        out = self.young.get(key)
        if out is None:
            out = self.old.get(key)
            if out is not None:
                self.keep(key, out)
        return out

    def keep(self, key: bytes, children: list) -> None:
        if len(self.young) >= self.limit:
            self.old, self.young = self.young, {}
        self.young[key] = children

    def __len__(self) -> int:
        return len(self.young) + len(self.old)


def remember_children(tu, on: bool) -> None:
    """Turn the per-unit memory of children lists and USRs (see :func:`_speed_up_cursors`) on for a walk, and off
    after it: the lists hold cursors, which hold the unit, so they must go when the walk ends."""
    if on:
        tu._kp_children = ChildrenMemory()
        tu._kp_usrs = {}
    else:
        for memory in ("_kp_children", "_kp_usrs"):
            if hasattr(tu, memory):
                delattr(tu, memory)


# CXBinaryOperatorKind / CXUnaryOperatorKind (libclang 17+)
BINOPS = {11: "<", 12: ">", 13: "<=", 14: ">=", 15: "==", 16: "!=", 17: "&", 18: "^", 19: "|", 20: "&&", 21: "||", 22: "="}
UNOPS = {10: "!", 9: "~"}
ADDRESS_OF = 5  # CXUnaryOperator_AddrOf


def skipped_ranges(tu, fileobj):
    """Lines the preprocessor skipped in a file: [(first, last)]."""
    calls = _skipped_ranges_calls()
    if calls is None:
        return []
    fn, dispose, contents = calls
    if contents is not None:
        size = ctypes.c_size_t(0)
        data = contents(tu, fileobj, ctypes.byref(size))
        # libclang answers from the skipped ranges of the whole unit, the prelude's thousands included (~0.3 ms a
        # call); a file in which no conditional directive can be written has none of its own
        if data and not may_hold_conditional(ctypes.string_at(data, size.value)):
            return []
    lst = fn(tu, fileobj)
    out = []
    try:
        for i in range(lst.contents.count):
            r = lst.contents.ranges[i]
            out.append((r.start.line, r.end.line))
    finally:
        dispose(lst)
    return out


@lru_cache(maxsize=1)
def _skipped_ranges_calls():
    """libclang's skipped-ranges call and its dispose, declared once (a ctypes structure class made per call cost a
    third of a millisecond, a few hundred times a run); None when this libclang has none."""
    ci = cindex()

    class CXSourceRangeList(ctypes.Structure):
        _fields_ = [("count", ctypes.c_uint), ("ranges", ctypes.POINTER(ci.SourceRange))]

    lib = ci.conf.lib
    try:
        fn = lib.clang_getSkippedRanges
    except AttributeError:
        return None
    fn.argtypes = [ci.TranslationUnit, ci.File]
    fn.restype = ctypes.POINTER(CXSourceRangeList)
    dispose = lib.clang_disposeSourceRangeList
    dispose.argtypes = [ctypes.POINTER(CXSourceRangeList)]
    try:
        contents = lib.clang_getFileContents  # the text Clang read for a file (a blanked or unsaved one's too)
        contents.argtypes = [ci.TranslationUnit, ci.File, ctypes.POINTER(ctypes.c_size_t)]
        contents.restype = ctypes.c_void_p
    except AttributeError:
        contents = None
    return fn, dispose, contents


# after line splices are undone: `#` or `%:`, then blanks or block comments, then `if...` or `el...`
_SPLICE = re.compile(rb"\\[ \t\v\f]*(?:\r\n|\r|\n)")
_CONDITIONAL = re.compile(rb"(?:#|%:)(?:[ \t\v\f]|/\*.*?\*/)*(?:if|el)", re.S)


def may_hold_conditional(data: bytes) -> bool:
    """Whether a file's text may hold a conditional directive (``#if``, ``#ifdef``, ``#ifndef``, ``#elif...``,
    ``#else``): the only thing that makes the preprocessor skip lines. Over-approximate: a ``#if`` in a string
    or a comment counts too, and so does any file with a ``??`` (a trigraph may spell ``#`` or a splice)."""
    if b"??" in data:
        return True
    if b"\\" in data:
        data = _SPLICE.sub(b"", data)
    return _CONDITIONAL.search(data) is not None


def evaluate_integer(ci, cursor):
    """The value of an integer or bool expression Clang can evaluate at compile time (a literal, a constant, a
    macro), else None."""
    lib = ci.conf.lib
    result = lib.clang_Cursor_Evaluate(cursor)
    if not result:
        return None
    try:
        return lib.clang_EvalResult_getAsLongLong(result) if lib.clang_EvalResult_getKind(result) == 1 else None
    finally:
        lib.clang_EvalResult_dispose(result)

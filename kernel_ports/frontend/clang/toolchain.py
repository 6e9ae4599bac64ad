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


_ci = None


def cindex():
    global _ci
    if _ci is None:
        import clang.cindex as ci

        lib = ci.conf.lib
        for name, argtypes, restype in (
            ("clang_getCursorBinaryOperatorKind", [ci.Cursor], ctypes.c_int),
            ("clang_getCursorUnaryOperatorKind", [ci.Cursor], ctypes.c_int),
            ("clang_Cursor_Evaluate", [ci.Cursor], ctypes.c_void_p),
            ("clang_EvalResult_getKind", [ctypes.c_void_p], ctypes.c_int),
            ("clang_EvalResult_getAsLongLong", [ctypes.c_void_p], ctypes.c_longlong),
            ("clang_EvalResult_dispose", [ctypes.c_void_p], None),
        ):
            fn = getattr(lib, name)
            fn.argtypes = argtypes
            fn.restype = restype
        _speed_up_cursors(ci)
        _ci = ci
    return _ci


def _speed_up_cursors(ci):
    """Cheaper ``Cursor.get_children`` and ``Cursor.kind``, with the same results.

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

    def get_children(self):
        nonlocal collected
        tu = self._tu
        memo = getattr(tu, "_kp_children", None)
        if memo is not None:
            key = bytes(self)
            out = memo.get(key)
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
            memo[key] = out
        return iter(out)

    kinds = ci.CursorKind._kinds

    def kind(self):
        k = kinds[self._kind_id] if 0 <= self._kind_id < len(kinds) else None
        return k if k is not None else ci.CursorKind.from_id(self._kind_id)

    ci.Cursor._kp_collect = _collect  # the callback must outlive every call
    ci.Cursor._kp_bindings = (ci.Cursor.get_children, ci.Cursor.kind)  # the originals, for tests
    ci.Cursor.get_children = get_children
    ci.Cursor.kind = property(kind)
    ci.Cursor._kp_fast = True


def remember_children(tu, on: bool) -> None:
    """Turn the per-unit memory of children lists (see :func:`_speed_up_cursors`) on for a walk, and off after
    it: the lists hold cursors, which hold the unit, so they must go when the walk ends."""
    if on:
        tu._kp_children = {}
    elif hasattr(tu, "_kp_children"):
        del tu._kp_children


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

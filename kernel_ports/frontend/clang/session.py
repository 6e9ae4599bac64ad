"""Parsing one translation unit: the parse, and the walk that reads it (its command line: :mod:`.args`).

One call of :func:`parse_translation_unit` parses one file under one build
configuration and returns a picklable :class:`TUResult`: the facts whose
evidence is local to the translation unit, plus per-function summaries (call
edges with constant arguments and the ``switch``/``if`` guards they sit under)
that :mod:`kernel_ports.index` joins across translation units to resolve port
table slots to factory calls and invocations to selector calls.

A prelude Clang no longer accepts (``-include-pch``, :mod:`.prelude`) is dropped
and the file parsed without it.

Unread bodies given blank
-------------------------
The bodies the walk leaves unread (``frontend/focus.py``) that nothing outside
depends on (``declarations.hideable_body``) are blanked in the text Clang is given,
every byte but line ends a space, so lines, columns and offsets stay: a fifth
of Clang's time on a padded launcher. The blanks are made only in a file that
still holds the text the witness read, and checked after the walk: each must
be the body of a function the walk left unread, or lie where the preprocessor
skipped. Otherwise the unit is parsed again as written.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from kernel_ports.frontend.clang.model import ParseJob, TUResult
from kernel_ports.frontend.clang.toolchain import cindex
from kernel_ports.frontend.clang.walk import Walk


def parse_translation_unit(job: ParseJob) -> TUResult:
    """Parse one file in one configuration; never raises for a bad source."""
    if job.fault == "crash":
        os._exit(139)  # test hook: behave like a parser crash
    if job.fault == "hang":
        time.sleep(3600)
    t0 = time.perf_counter()
    blanked = blanked_sources(job)
    res, walk = _parse_and_walk(job, blanked)
    if blanked and res.ok and not _blanks_confirmed(blanked, walk, res):
        # a body the witness took for an unread function's is not one in Clang's view of the unit: the blanks
        # may have changed what Clang read, so the unit is read again as written
        res, walk = _parse_and_walk(job, [])
    res.seconds = time.perf_counter() - t0
    return res


def _parse_and_walk(job: ParseJob, blanked: list) -> tuple:
    """(result, walk or None) of one parse of the unit, the ``blanked`` files' texts given for theirs."""
    ci = cindex()
    res = TUResult(path=job.relpath, configuration=job.configuration)
    try:
        # excludeDecls: the declarations of the precompiled prelude (the standard library, ~15k of them) are not
        # listed among the unit's top-level cursors; none is a project declaration, and reading their locations
        # only to drop them cost more than the rest of the walk
        index = ci.Index.create(excludeDecls=True)
        # PARSE_INCOMPLETE: the implicit instantiations Clang makes at the end of a unit (function template bodies:
        # std::call_once's for each holder lambda, std::function's for each getter) are not made. The walk never
        # visits an instantiation, only the code as written, so no fact depends on them; what is lost is an error
        # that only an instantiation would show (tests/frontend/test_parse_options.py). A fifth of Clang's time.
        opts = ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD | ci.TranslationUnit.PARSE_INCOMPLETE | 0x200  # KeepGoing
        given = {path: text for _, path, _, text in blanked}
        if job.unsaved is not None:
            given.setdefault(job.abspath, job.unsaved)
        given.update((p, "") for p in job.withheld)
        unsaved = list(given.items()) or None
        try:
            tu = index.parse(job.abspath, args=list(job.args), unsaved_files=unsaved, options=opts)
        except ci.TranslationUnitLoadError:
            if "-include-pch" not in job.args:
                raise
            # a prelude Clang no longer accepts (the system headers changed since it was built): parse without it
            i = job.args.index("-include-pch")
            tu = index.parse(job.abspath, args=list(job.args[:i] + job.args[i + 2:]), unsaved_files=unsaved, options=opts)
    except Exception as exc:  # TranslationUnitLoadError and friends
        res.ok = False
        res.error = f"Clang could not parse the file: {exc}"
        return res, None
    if job.fault == "error":
        res.ok = False
        res.error = "injected parser failure"
        return res, None
    walk = Walk(tu, job, res)
    try:
        walk.run()
    except RecursionError:
        res.ok = False
        res.error = "AST too deep to walk"
    return res, walk


# every byte but a line end turned into a space: a blanked body keeps its lines and columns
_BLANK = bytes(b if b in (0x0A, 0x0D) else 0x20 for b in range(256))


def blanked_sources(job: ParseJob) -> list:
    """[(relpath, abspath, spans, text)]: each file of ``job.hidden_bodies`` with those bodies blanked, if it
    still holds the text the witness read them in (else it is parsed as it is) and each span is a ``{...}``."""
    out = []
    for rel, path, digest, spans in job.hidden_bodies:
        if path in job.withheld:
            continue
        try:
            data = job.unsaved if (path == job.abspath and job.unsaved is not None) else Path(path).read_bytes()
        except OSError:
            continue
        if hashlib.sha256(data).hexdigest() != digest:
            continue
        if not all(0 <= a < b <= len(data) and data[a] == 0x7B and data[b - 1] == 0x7D for a, b in spans):
            continue
        parts, at = [], 0
        for a, b in spans:
            if a < at:
                break  # overlapping spans: not what the witness writes
            parts += [data[at:a + 1], data[a + 1:b - 1].translate(_BLANK)]
            at = b - 1
        else:
            out.append((rel, path, spans, b"".join(parts) + data[at:]))
    return out


def _blanks_confirmed(blanked: list, walk, res: TUResult) -> bool:
    """Whether every blanked body is one Clang read as the body of a function the walk left unread, or lies
    where this configuration's preprocessor skipped (or never entered) the file."""
    if walk is None:
        return False
    walked = set(res.files_walked)
    for rel, _, spans, text in blanked:
        skipped = res.skipped.get(rel, ())
        for a, b in spans:
            if (rel, a, b) in walk.unread_seen or rel not in walked:
                continue
            line = line_of(text, a)
            if not any(first <= line <= last for first, last in skipped):
                return False
    return True


def line_of(text: bytes, offset: int) -> int:
    """The 1-based line of a byte offset, lines ended as Clang ends them (``\\r\\n``, ``\\n`` or ``\\r``)."""
    before = text[:offset]
    return before.count(b"\n") + before.count(b"\r") - before.count(b"\r\n") + 1

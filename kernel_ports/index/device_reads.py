"""What the device plan (:mod:`.device_plan`) reads from the tree besides the index's facts, recorded as it reads.

Two kinds of read: a file's bytes taken as they are (a body's literal pieces, read again at their recorded
places: ``data``), and a question tree-sitter answers about a file (a launcher's guards, a body chosen by a
condition: ``guards``, ``choices``), each answer kept per file content and question in the cache, as data, so a
warm check parses no file again. Every read is recorded on the object (``direct``, ``asked``, ``hashes``): the
device stage's entry (:mod:`.device_entry`) is valid while each file read directly is unchanged and each question
about a changed file still has the answer it had.

This module imports no compiler, no plan and no tree-sitter until a question is asked of a file.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path


def _data(by_path: dict, path: str):
    f = by_path.get(path)
    return getattr(f, "data", None) if f is not None else None


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """The device front end's code and what its plan reads with (the witness): part of every device cache key."""
    here = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for p in sorted((here / "frontend" / "device").glob("*.py")) + [here / "index" / "device.py",
                                                                       here / "index" / "device_plan.py",
                                                                       Path(__file__), here / "frontend" / "witness.py"]:
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


class TreeReads:
    """The plan's reads of the tree: ``data`` (bytes as they are), ``guards`` and ``choices`` (tree-sitter's
    answers, cached per file content and question). ``direct``: the paths read as bytes; ``asked``: (path,
    question) -> the answer the plan was given; ``hashes``: path -> content hash (None: not in the tree)."""

    def __init__(self, by_path: dict, cache=None):
        self.by_path = by_path
        self.cache = cache
        self.hashes: dict = {}
        self.direct: set = set()
        self.asked: dict = {}

    def hash_of(self, path: str):
        if path not in self.hashes:
            data = _data(self.by_path, path)
            self.hashes[path] = None if data is None else hashlib.sha256(data).hexdigest()
        return self.hashes[path]

    def data(self, path: str):
        """A file's bytes (None when it is not in the tree), recorded as read directly."""
        self.direct.add(path)
        self.hash_of(path)
        return _data(self.by_path, path)

    def _answer(self, path: str, question: tuple, ask, empty):
        data = _data(self.by_path, path)
        if data is None:
            return empty
        # keyed by the code that answers too, so an answer from an older front end is never read back
        key = hashlib.sha256(repr(("device-plan-read", code_digest(), question, self.hash_of(path))).encode()).hexdigest()
        got = self.cache.get(key) if self.cache is not None else None
        if got is None:
            got = ask(data)
            if self.cache is not None:
                self.cache.put(key, got)
        return got

    def _record(self, path: str, question: tuple, answer):
        self.hash_of(path)
        self.asked[(path, question)] = answer
        return answer

    def guards(self, path: str, line: int, variables: set) -> dict:
        from kernel_ports.frontend.device.guards import guard_values

        question = ("guards", line, tuple(sorted(variables)))
        got = self._answer(path, question, lambda d: guard_values(d, line, variables), {})
        return self._record(path, question, got if isinstance(got, dict) else {})

    def choices(self, path: str, name: str, line: int) -> list:
        from kernel_ports.frontend.device.alternatives import conditional_bodies

        question = ("choices", name, line)
        got = self._answer(path, question, lambda d: conditional_bodies(path, d, name, line), [])
        return self._record(path, question, [tuple(x) for x in got] if isinstance(got, list) else [])

    def ask_again(self, path: str, question: tuple):
        """The answer to a recorded question now (the device entry asks it again of a changed file); None for a
        question of a kind this code does not ask."""
        if type(question) is not tuple or not question:
            return None
        if question[0] == "guards" and len(question) == 3 and type(question[1]) is int and type(question[2]) is tuple:
            return self.guards(path, question[1], set(question[2]))
        if question[0] == "choices" and len(question) == 3 and type(question[1]) is str and type(question[2]) is int:
            return self.choices(path, question[1], question[2])
        return None

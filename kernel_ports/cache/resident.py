"""The cache entries a resident server keeps decoded between checks (``kernel-ports serve``).

A served check runs in a process forked from the server for that one check (:mod:`kernel_ports.commands.serve`),
so what it does to the values it is handed never reaches the server. Before it starts, the server holds, decoded,
the entries the check before read or stored; the check takes each from there instead of reading and decoding its
file, and says at its end which entries it read or stored (its parser processes' too), which the server then decodes
for the next one, with the entries those name (a unit's parse, its function groups).

A kept value stands for its file while the file's identity is what it was when it was decoded: the same key, the
same inode, size and modification time. A cache writer replaces a file whole (``os.replace``), which gives it a new
inode, so an entry rewritten since is read from its file again. An edit in place that restores the modification
time would go unseen. That needs write access to the cache, which can already make a check see wrong facts (see
:mod:`kernel_ports.cache.format`).

Each kept value is handed out once per check: a reader may change what it is given (a unit's cached result gets its
function list joined in), and a second read of the same entry must see it as stored, so it is read from its file.
"""

from __future__ import annotations

import os
from typing import Callable, Optional


def _identity(path: str) -> Optional[tuple]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class ResidentEntries:
    """Decoded entries by path, the entries the current check read, and those waiting to be decoded.

    An entry is kept while one of the last ``KEEP_CHECKS`` checks read it (a check answered from its whole-check
    entry reads that entry alone, and must not drop the units the next edit needs) and the kept files' sizes stay
    under ``MAX_KEPT_BYTES`` (the oldest reads go first)."""

    KEEP_CHECKS = 8
    MAX_KEPT_BYTES = 64 * 1024 * 1024  # of entry files: decoded, several times that (a real engine's check reads ~5 MB)

    def __init__(self) -> None:
        self._kept: dict = {}  # path -> (file identity, key, value)
        self._last_read: dict = {}  # path -> number of the last check that read it
        self._waiting: dict = {}  # path -> key, to decode when the server is idle
        self._checks = 0
        self._given: set = set()  # paths handed out in the current check
        self.read: dict = {}  # path -> key of every entry the current check asked for or stored
        self.hits = 0

    def __len__(self) -> int:
        return len(self._kept)

    def read_entry(self, path, key: str, read_file: Callable):
        """The entry at ``path`` under ``key``: the kept value when it still stands for the file, else the file's."""
        where = os.fspath(path)
        self.read[where] = key
        kept = self._kept.get(where)
        if kept is not None and where not in self._given and kept[1] == key and kept[0] == _identity(where):
            self._given.add(where)
            self.hits += 1
            return kept[2]
        return read_file(path, key)

    def wrote(self, path, key: str) -> None:
        """An entry the current check stored (itself, or a parser process of it): the next check is likely to read
        it, so it is kept like one read (a cold check reads nothing, and the edit after it would find nothing kept)."""
        self.read[os.fspath(path)] = key

    def begin_check(self) -> None:
        """In the check's own process: nothing handed out or read yet."""
        self._given, self.read, self.hits = set(), {}, 0

    def after_check(self, read: dict) -> None:
        """In the server, what a check read (path -> key): those entries are kept, once decoded (:meth:`decode_one`)."""
        self._checks += 1
        for where, key in read.items():
            if type(where) is str and type(key) is str:
                self._want(where, key, self._checks)
        stale = self._checks - self.KEEP_CHECKS
        for where in [w for w, n in self._last_read.items() if n <= stale]:
            self._forget(where)
        by_age = sorted(self._kept, key=self._last_read.get, reverse=True)
        total = 0
        for where in by_age:
            total += self._kept[where][0][1]
            if total > self.MAX_KEPT_BYTES:
                self._forget(where)

    def _forget(self, where: str) -> None:
        self._kept.pop(where, None)
        self._last_read.pop(where, None)
        self._waiting.pop(where, None)

    def waiting(self) -> int:
        return len(self._waiting)

    def decode_one(self, read_file: Callable, names: Optional[Callable] = None) -> None:
        """Decode one entry waiting to be (a missing or damaged one is not kept). ``names(path, value)``: the
        entries (path, key) a decoded value names, which whoever reads it reads next (a unit's parse names its
        function groups): those are decoded too."""
        where, key = self._waiting.popitem()
        identity = _identity(where)
        value = read_file(where, key) if identity is not None else None
        if value is not None and _identity(where) == identity:  # (not replaced while it was read)
            self._kept[where] = (identity, key, value)
            for other, other_key in (names(where, value) if names is not None else ()):
                self._want(os.fspath(other), other_key, self._last_read.get(where, self._checks))
        else:
            self._kept.pop(where, None)

    def _want(self, where: str, key: str, check: int) -> None:
        self._last_read[where] = max(check, self._last_read.get(where, 0))
        kept = self._kept.get(where)
        if kept is None or kept[1] != key or kept[0] != _identity(where):
            self._waiting[where] = key

"""The per-file data cache of the index: where entries live, how their keys are made, the front ends' version.

Entries are data (:mod:`kernel_ports.cache.format` owns the format): nothing read can run. This module owns the
key helpers every stage uses (the witness's, the Clang parses', the dependency-keyed copies) and
:data:`FRONTEND_VERSION`, which folds the front ends' own source into every key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import zlib
from pathlib import Path
from typing import Optional

from kernel_ports import __version__
from kernel_ports.cache import format as cachefmt

# the sources whose every change can change what a front end records; the packages are globbed in code_digest
_FRONT_END_SOURCES = ("facts.py", "frontend/witness.py", "frontend/declarations.py", "frontend/hip.py", "frontend/rust.py",
                      "frontend/focus.py", "frontend/headers.py", "frontend/isolation.py", "cache/units.py")
_FRONT_END_PACKAGES = ("index", "frontend/clang")


def _code_digest() -> str:
    """The front ends' own source, so a changed extractor never reads stale cache entries."""
    h = hashlib.sha256(__version__.encode())
    here = Path(__file__).resolve().parent.parent
    packaged = tuple(sorted(p.relative_to(here).as_posix() for pkg in _FRONT_END_PACKAGES for p in (here / pkg).glob("*.py")))
    for rel in _FRONT_END_SOURCES[:1] + packaged + _FRONT_END_SOURCES[1:]:
        try:
            h.update((here / rel).read_bytes())
        except OSError:
            pass
    return h.hexdigest()[:16]


FRONTEND_VERSION = f"{__version__}+{_code_digest()}"


def dir_key(d, root: Path) -> str:
    """A directory for cache keys: relative to the root when inside it."""
    try:
        return "<root>/" + Path(d).resolve().relative_to(root).as_posix()
    except ValueError:
        return str(d)


def _function_info():
    # imported on use: the early prelude build reads this module, and the Clang front end's model is not needed
    # until a cached parse is decoded
    from kernel_ports.frontend.clang.model import FunctionInfo

    return FunctionInfo


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class FileCache:
    """Per-file results under ``<cache>/data-v2``, as data (:mod:`kernel_ports.cache.format`): nothing read can run.

    A Clang result's key is the file's path and content hash, the tool
    version, the registry's compile section and conventions, the stub set and
    the configuration; the entry also records the hashes of the project
    headers the translation unit included, and is valid only while they match.
    An entry that cannot be read, is of another format or key, or was damaged
    is a miss.
    """

    def __init__(self, root: Optional[Path]):
        self.root = root / cachefmt.CACHE_SUBDIR if root is not None else None
        # the shared values this object stored (their repr -> key): a parser process stores a project header's
        # function records again for each unit that includes it, and a repr is a third of an encoding's cost
        self._shared: dict = {}

    def _path(self, key: str) -> Optional[Path]:
        return None if self.root is None else self.root / key[:2] / f"{key}.json"

    def get(self, key: str):
        p = self._path(key)
        return None if p is None else cachefmt.read_entry(p, key)

    def put(self, key: str, value) -> None:
        p = self._path(key)
        if p is not None:
            cachefmt.write_entry(p, key, value)

    def put_many(self, keys: list, value) -> None:
        """The same value under several keys, encoded once."""
        if self.root is not None:
            cachefmt.write_entries([(self._path(k), k) for k in keys], value)

    def put_shared(self, value: list, remember: bool = True) -> str:
        """Store ``value`` under a key made from its content; the key. The entry is written even when one is there
        (an earlier run's may be damaged, and it is small), but once per content by this object when
        ``remember`` (a value this process is likely to store again: a header's records, read by many units)."""
        # A repr tells apart what an encoding tells apart (True from 1, a set from a frozenset, a tuple from a
        # list), so one repr never stands for two entries; equal values whose reprs differ (sets in another order)
        # are only encoded twice.
        seen = repr(value) if remember else None
        key = self._shared.get(seen) if remember else None
        if key is not None:
            return key
        body, digest = cachefmt.encode_body(value)
        key = sha(f"shared|{digest}".encode())
        p = self._path(key)
        if p is not None:
            cachefmt.write_encoded(p, key, body, digest)
        if remember and len(self._shared) < 256:  # (a bound: a process sees few versions of its headers)
            self._shared[seen] = key
        return key

    def note_stored(self, key: str) -> None:
        """An entry a parser process stored under ``key`` for this check (see :func:`cachefmt.note_written`)."""
        p = self._path(key)
        if p is not None:
            cachefmt.note_written(p, key)

    def has(self, key: str) -> bool:
        """Whether an entry file is there (not whether it is valid: reading it says that)."""
        p = self._path(key)
        return p is not None and p.is_file()


def definitions_key(witness_key: str) -> str:
    return sha(f"d|{witness_key}".encode())


def deps_key(key: str, deps: dict) -> str:
    """The cache key of a parse made with these contents of the files it read."""
    return sha(f"{key}|{sorted(deps.items())}".encode())


def cached_parse(cache: FileCache, key: str, hashes: dict, shared: dict):
    """The cached Clang result of a unit under ``key``, valid for the current contents of the files it read, or None.
    ``shared``: the function groups of project headers decoded so far in this run, by key (see :func:`store_parse`)."""
    entry = _current_entry(cache, key, hashes)
    if entry is None:
        return None
    _, tu_res, runs, group_keys = entry
    functions = _joined_functions(cache, tu_res.functions, runs, group_keys, shared)
    if functions is None:
        return None
    tu_res.functions = functions
    tu_res.cached = True
    return tu_res


def _current_entry(cache: FileCache, key: str, hashes: dict):
    """The unit entry under ``key`` made with the current contents of the files it read, or None."""
    entry = cache.get(key)
    if not _unit_entry(entry):
        return None
    if not all(hashes.get(d) == h for d, h in entry[0].items()):
        # an unchanged file includes the same headers: look for the entry
        # parsed with the headers' current contents
        entry = cache.get(deps_key(key, {d: hashes.get(d) for d in entry[0]}))
        if not _unit_entry(entry) or not all(hashes.get(d) == h for d, h in entry[0].items()):
            return None
    return entry


def has_current_parse(cache: FileCache, key: str, hashes: dict) -> bool:
    """Whether a unit entry under ``key`` was made with the current contents of the files it read (its function
    groups are not looked at: a lost one makes the parse start late, as any damaged entry does)."""
    return _current_entry(cache, key, hashes) is not None


def _unit_entry(entry) -> bool:
    return type(entry) is tuple and len(entry) == 4 and type(entry[0]) is dict


_KEY = re.compile(r"[0-9a-f]{64}")


def named_entries(path, value) -> list:
    """The entries (path, key) a unit's entry at ``path`` names: its function groups, in the same cache folder
    (what :func:`cached_parse` reads after it). Anything else names none."""
    if not _unit_entry(value) or type(value[3]) is not list:
        return []
    folder = Path(path).parent.parent
    return [(folder / k[:2] / f"{k}.json", k) for k in value[3] if type(k) is str and _KEY.fullmatch(k)]


def store_parse(cache: FileCache, key: str, rel: str, res, hashes: dict) -> None:
    """Keep a unit's Clang result under its key and under the contents of the files it read.

    Its function records are stored apart, in groups keyed by their content: one per project header (a header's
    records are the same in every unit that includes it) and the unit's own in runs (:func:`_own_runs`), most of
    which every configuration of the unit records alike; a run decodes each group once. The unit's entry names
    the groups and says in which order its function list interleaves them."""
    # every project file the unit included, not only those with declarations: a header that is all
    # junk has none, and its fixed version must not be answered with the broken parse
    read = set(res.files_walked) | {p for edge in res.includes for p in edge}
    deps = {d: hashes[d] for d in read if d in hashes}
    deps[rel] = hashes[rel]
    runs, groups, own_groups = _split_functions(rel, res.functions)
    group_keys = [cache.put_shared(g, remember=i not in own_groups) for i, g in enumerate(groups)]
    cache.put_many([key, deps_key(key, deps)], (deps, dataclasses.replace(res, functions=[]), runs, group_keys))


# A unit's own records are cut after each record whose USR's CRC-32 is 0 modulo this: the cuts fall after the
# same functions in every configuration, so a function only one configuration declares (or records otherwise)
# changes the run it sits in and no other (the bridge unit of a real engine: 505 of its 508 records alike in
# its two configurations)
OWN_RUN_CUT = 16


def _split_functions(rel: str, functions: list) -> tuple:
    """(runs [group index, count] in list order, the groups, the indexes of the groups of the unit's own records)."""
    group_of: dict = {}  # header path -> index in groups
    groups: list = []
    runs: list = []
    own: Optional[int] = None  # the group the unit's own records go to now
    own_groups: set = set()
    for f in functions:
        if f.loc.path == rel:
            if own is None:
                own = len(groups)
                own_groups.add(own)
                groups.append([])
            at = own
            if zlib.crc32(f.usr.encode()) % OWN_RUN_CUT == 0:
                own = None  # the next own record starts a new group
        else:
            if f.loc.path not in group_of:
                group_of[f.loc.path] = len(groups)
                groups.append([])
            at = group_of[f.loc.path]
        groups[at].append(f)
        if runs and runs[-1][0] == at:
            runs[-1][1] += 1
        else:
            runs.append([at, 1])
    return runs, groups, own_groups


def _joined_functions(cache: FileCache, own: list, runs, group_keys, shared: dict):
    """The unit's function list put together again from its groups, or None if a group is missing or the layout
    does not fit (``own``: the records the unit entry holds itself, none since every record is in a group)."""
    if type(runs) is not list or type(group_keys) is not list or own != []:
        return None
    groups = []
    for gk in group_keys:
        if type(gk) is not str:
            return None
        if gk not in shared:
            got = cache.get(gk)
            info = _function_info()
            shared[gk] = got if type(got) is list and all(type(f) is info for f in got) else None
        if shared[gk] is None:
            return None
        groups.append(shared[gk])
    taken = [0] * len(groups)
    out: list = []
    for run in runs:
        if type(run) is not list or len(run) != 2 or type(run[0]) is not int or type(run[1]) is not int:
            return None
        at, count = run
        if not 0 <= at < len(groups) or count < 1:
            return None
        first = taken[at]
        if first + count > len(groups[at]):
            return None
        out.extend(groups[at][first:first + count])
        taken[at] = first + count
    if any(t != len(g) for t, g in zip(taken, groups)):
        return None
    return out

"""The cache's file format: data only, versioned, checked on load.

A cache directory may come from a run the checker does not control (a CI job
restores it with ``actions/cache``; a shared runner keeps a home folder), so
nothing read from it may execute: entries are JSON, never pickle. An entry is

    {"format": FORMAT, "key": <its cache key>, "sha256": <of the body>}\\n<body>

and the body is JSON in which every object is a tagged value: ``{"t": [...]}``
a tuple, ``{"f": [...]}`` a frozenset, ``{"s": [...]}`` a set, ``{"m": [[k, v],
...]}`` a dict (keys of any hashable kind), ``{NAME: [...]}`` (a name of more
than one character, ``module.Class``) an instance of one of the dataclasses
named in :data:`TYPES` (the front ends' results and the facts), its field values
in declaration order, a field declared a tuple, frozenset, set or dict as a plain
array (a dict's as pairs). Lists,
strings, numbers, booleans and null are themselves.

Decoding is typed and generic over dataclass fields: a class is looked up only
among :data:`TYPES` (a name from the file never reaches ``import`` or
``getattr``), the number of values must match the class's fields, and each
value must have the kind its annotation names (``str``, ``Optional[Location]``,
``tuple`` ...). Anything else -- a wrong format version, another entry's key, a
body that does not match its hash (truncated, edited), malformed JSON, an unknown
class, a value of the wrong kind, an entry over :data:`MAX_ENTRY_BYTES` -- is a
:class:`CacheFormatError`, which callers treat as a miss.

The hash detects damage, not intent: whoever can write the cache directory can
write well-formed entries that describe another tree, and so can make a check
see wrong facts -- but never run code. Keep the cache where only the checker's
own runs write it (``actions/cache`` scopes a pull request's saves to that pull
request).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
from pathlib import Path

FORMAT = "kernel-ports-cache/5"
MAX_ENTRY_BYTES = 256 * 1024 * 1024
# The entries' directory under the cache directory. Entries of earlier versions (``v1`` held pickles) live
# elsewhere and are never read.
CACHE_SUBDIR = "data-v2"


def default_cache_dir() -> Path:
    """``$KERNEL_PORTS_CACHE_DIR``, else ``kernel-ports`` under ``$XDG_CACHE_HOME`` or ``~/.cache``."""
    if os.environ.get("KERNEL_PORTS_CACHE_DIR"):
        return Path(os.environ["KERNEL_PORTS_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kernel-ports"


class CacheFormatError(ValueError):
    """An entry that is not one this version wrote for this key: a miss."""


_SIMPLE = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,), "tuple": (tuple,),
           "list": (list,), "dict": (dict,), "set": (set,), "frozenset": (frozenset,), "bytes": (bytes,)}


class _Registry:
    """The dataclasses an entry may hold, by name, with a kind check per field.

    A name is ``<module>.<class>`` with the module one of :data:`_TYPE_MODULES`, imported only when an entry
    names it (a warm check reads findings and needs no front end)."""

    def __init__(self, modules: tuple):
        self._modules = {m.rsplit(".", 1)[-1]: m for m in modules}
        # a name's module part is the module's last segment: two modules sharing one would shadow each other's types
        assert len(self._modules) == len(modules), "cacheable modules need distinct last names"
        self._loaded: set = set()
        self._classes: dict = {}  # name -> (class, field names, field checks)
        self._names: dict = {}  # class -> name

    def _load(self, short: str) -> None:
        if short in self._loaded or short not in self._modules:
            return
        self._loaded.add(short)
        import importlib

        mod_name = self._modules[short]
        mod = importlib.import_module(mod_name)
        for obj in list(vars(mod).values()):
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == mod_name:
                self._add(obj)

    def _add(self, cls):
        name = f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__qualname__}"
        import typing

        fields = tuple(f.name for f in dataclasses.fields(cls))
        try:
            hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
        except Exception:  # an annotation that cannot be evaluated is checked as "anything"
            hints = {}
        kinds = tuple(_kinds(hints.get(f)) for f in fields)
        checks = tuple(k or object for k in kinds)
        # fields declared a tuple, frozenset, set or dict are stored as plain arrays (a dict's as [key, value]
        # pairs), made that kind again by the decoder: most of an entry's objects would otherwise be tags
        as_list = tuple((i, _PLAIN[k[0]]) for i, k in enumerate(kinds) if k is not None and len(k) == 1 and k[0] in _PLAIN)
        self._classes[name] = (cls, fields, checks, as_list)
        self._names[cls] = name

    def layout(self, cls) -> tuple:
        """(name, field names, (index, kind) of each field stored as a plain array) of a cacheable class."""
        name = self.name_of(cls)
        _, fields, _, as_list = self._classes[name]
        return name, fields, as_list

    def name_of(self, cls) -> str:
        if cls not in self._names:
            self._load(cls.__module__.rsplit(".", 1)[-1])
        try:
            return self._names[cls]
        except KeyError:
            raise TypeError(f"{cls.__qualname__} is not a cacheable type") from None

    def build(self, name, values):
        if type(name) is not str:
            raise CacheFormatError("a type name that is not a string")
        if name not in self._classes:
            self._load(name.partition(".")[0])
        try:
            cls, fields, checks, as_list = self._classes[name]
        except KeyError:
            raise CacheFormatError(f"unknown type {name!r}") from None
        if type(values) is not list or len(values) != len(fields):
            raise CacheFormatError(f"{name}: {len(fields)} field values expected")
        try:
            for i, kind in as_list:
                if type(values[i]) is list:
                    values[i] = kind(values[i])
        except (TypeError, ValueError):
            raise CacheFormatError(f"{name}: a container field that cannot be rebuilt") from None
        if not all(map(isinstance, values, checks)):
            bad = next(f for f, c, v in zip(fields, checks, values) if not isinstance(v, c))
            raise CacheFormatError(f"{name}.{bad}: a value of another kind")
        obj = object.__new__(cls)
        obj.__dict__.update(zip(fields, values))  # frozen classes too: no __init__ or __setattr__ runs
        return obj


_PLAIN = {tuple: tuple, frozenset: frozenset, set: set, dict: dict}


def _kinds(hint):
    """The Python types a value annotated ``hint`` may have, or None for any."""
    import typing

    if hint is None or hint is typing.Any:
        return None
    if isinstance(hint, type):
        if dataclasses.is_dataclass(hint):
            return (hint,)
        return _SIMPLE.get(hint.__name__) or (hint,)
    origin = typing.get_origin(hint)
    if origin is typing.Union or type(hint).__name__ == "UnionType":
        out = ()
        for arg in typing.get_args(hint):
            k = (type(None),) if arg is type(None) else _kinds(arg)
            if k is None:
                return None
            out += k
        return out
    if isinstance(origin, type):
        return _SIMPLE.get(origin.__name__) or (origin,)
    return None


# the modules whose dataclasses an entry may hold (the front ends' results and the facts they are made of)
_TYPE_MODULES = ("kernel_ports.facts", "kernel_ports.frontend.clang.model", "kernel_ports.frontend.witness",
                 "kernel_ports.frontend.hip", "kernel_ports.frontend.rust", "kernel_ports.findings",
                 "kernel_ports.frontend.declarations",
                 "kernel_ports.frontend.device.build_model")
TYPES = _Registry(_TYPE_MODULES)


_LAYOUTS: dict = {}  # dataclass -> (its name in TYPES, ((field, plain kind or None), ...))


def _layout(t):
    name, fields, as_list = TYPES.layout(t)
    plain = dict(as_list)
    lay = _LAYOUTS[t] = (name, tuple((f, plain.get(i)) for i, f in enumerate(fields)))
    return lay


def _to_data(obj):
    t = type(obj)
    if obj is None or t is str or t is bool or t is int or t is float:
        return obj
    if t is list:
        return [_to_data(x) for x in obj]
    if t is tuple:
        return {"t": [_to_data(x) for x in obj]}
    if t is frozenset or t is set:
        return {"f" if t is frozenset else "s": [_to_data(x) for x in obj]}
    if t is dict:
        return {"m": [[_to_data(k), _to_data(v)] for k, v in obj.items()]}
    lay = _LAYOUTS.get(t)
    if lay is None and dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        lay = _layout(t)
    if lay is not None:
        name, fields = lay
        d = obj.__dict__
        values = []
        for f, kind in fields:
            v = d[f]
            if kind is not None and type(v) is kind:  # a plain array: the decoder makes it the declared kind again
                values.append([[_to_data(k), _to_data(x)] for k, x in v.items()] if kind is dict else [_to_data(x) for x in v])
            else:
                values.append(_to_data(v))
        return {name: values}
    raise TypeError(f"{t.__name__} cannot be stored in the cache")


def _hashable(x):
    try:
        hash(x)
    except TypeError:
        raise CacheFormatError("an unhashable set element or dict key") from None
    return x


def _from_object(o: dict):
    if len(o) == 1:
        (tag, v), = o.items()
        if type(v) is list:
            if len(tag) > 1:  # a dataclass, by name
                return TYPES.build(tag, v)
            if tag == "t":
                return tuple(v)
            if tag == "f":
                return frozenset(_hashable(x) for x in v)
            if tag == "s":
                return {_hashable(x) for x in v}
            if tag == "m":
                if not all(type(kv) is list and len(kv) == 2 for kv in v):
                    raise CacheFormatError("a dict entry is not a pair")
                return {_hashable(k): val for k, val in v}
    raise CacheFormatError("an untagged object")


def encode(key: str, value) -> bytes:
    """The bytes of an entry holding ``value`` under ``key``; TypeError for a value that is not plain data."""
    return _with_head(key, *encode_body(value))


def encode_body(value) -> tuple:
    """(the JSON body of an entry holding ``value``, its SHA-256): the same for every key it is stored under."""
    body = json.dumps(_to_data(value), separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    return body, hashlib.sha256(body).hexdigest()


def _with_head(key: str, body: bytes, digest: str) -> bytes:
    head = json.dumps({"format": FORMAT, "key": key, "sha256": digest}).encode()
    return head + b"\n" + body


def decode(key: str, data: bytes):
    """The value of an entry written by :func:`encode` for ``key``; CacheFormatError for anything else."""
    if len(data) > MAX_ENTRY_BYTES:
        raise CacheFormatError("entry too large")
    head, sep, body = data.partition(b"\n")
    if not sep:
        raise CacheFormatError("no header line")
    try:
        meta = json.loads(head)
    except ValueError:
        raise CacheFormatError("unreadable header") from None
    if type(meta) is not dict or meta.get("format") != FORMAT or meta.get("key") != key:
        raise CacheFormatError("another format or another entry's key")
    if meta.get("sha256") != hashlib.sha256(body).hexdigest():
        raise CacheFormatError("body does not match its hash (truncated or edited)")
    try:
        return json.loads(body, object_hook=_from_object)
    except CacheFormatError:
        raise
    except (ValueError, TypeError, RecursionError) as exc:
        raise CacheFormatError(f"unreadable body: {type(exc).__name__}") from None


# In a check a resident server runs (``kernel-ports serve``): the entries the server keeps decoded
# (:class:`kernel_ports.cache.resident.ResidentEntries`), which answer for their files while those are unchanged
RESIDENT = None


def read_entry(path, key: str):
    """The value stored at ``path`` under ``key``; None for a missing, unreadable, foreign or damaged entry."""
    if RESIDENT is not None:
        return RESIDENT.read_entry(path, key, read_entry_file)
    return read_entry_file(path, key)


def read_entry_file(path, key: str):
    """:func:`read_entry` from the file itself."""
    try:
        with open(path, "rb") as fh:
            return decode(key, fh.read(MAX_ENTRY_BYTES + 1))
    except (OSError, CacheFormatError):
        return None


def write_entry(path: Path, key: str, value) -> bool:
    """Store ``value`` at ``path`` atomically; a value that is not plain data, or a failed write, stores nothing
    (False)."""
    return write_entries([(path, key)], value)


def write_entries(places: list, value) -> bool:
    """Store ``value`` at each ``(path, key)`` of ``places``, encoding it once; False if any was not stored."""
    try:
        body, digest = encode_body(value)
    except (TypeError, ValueError, RecursionError):
        return False
    return all([write_encoded(path, key, body, digest) for path, key in places])


def write_encoded(path: Path, key: str, body: bytes, digest: str) -> bool:
    """Store a body made by :func:`encode_body` at ``path`` under ``key``."""
    if not _write_atomically(path, _with_head(key, body, digest)):
        return False
    note_written(path, key)
    return True


def note_written(path, key: str) -> None:
    """In a served check, an entry this check (or a parser process of it) stored: the next check is likely to read
    it, so the server decodes it meanwhile."""
    if RESIDENT is not None:
        RESIDENT.wrote(path, key)


def _write_atomically(path: Path, data: bytes) -> bool:
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return False
    return True

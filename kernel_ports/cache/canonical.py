"""A digest of plain data that is the same for equal values in every run: sets and dicts sorted (a set's order
follows the string hash seed, which differs per process), dataclasses by their fields in declaration order.

What the cache's whole-stage entries key or check by (:mod:`kernel_ports.index.device_entry`,
:mod:`kernel_ports.index.focus_entry`): an entry written by one run must be found by the next when nothing it read
changed. A value that is not plain data (no dataclass, container, string, number, bool or None) raises
:class:`NotCanonical`: no entry is used or kept for it.
"""

from __future__ import annotations

import dataclasses
import hashlib


class NotCanonical(Exception):
    """A value with no canonical text (not plain data)."""


_FIELDS: dict = {}  # dataclass -> its field names


def _fields(t) -> tuple:
    names = _FIELDS.get(t)
    if names is None:
        names = _FIELDS[t] = tuple(f.name for f in dataclasses.fields(t))
    return names


def canonical(o, skip: dict | None = None):
    """``o`` as nested tuples whose ``repr`` is the same for equal values in every run; ``skip``: class name ->
    field names left out (fields made from others that the value also holds)."""
    t = type(o)
    if o is None or t is str or t is int or t is bool or t is float:
        return o
    if t is tuple or t is list:
        return (t.__name__,) + tuple([canonical(x, skip) for x in o])
    if t is frozenset or t is set:
        return ("set",) + tuple(sorted([repr(canonical(x, skip)) for x in o]))
    if t is dict:
        return ("dict",) + tuple(sorted([(repr(canonical(k, skip)), canonical(v, skip)) for k, v in o.items()]))
    if dataclasses.is_dataclass(t):
        left_out = skip.get(t.__name__, ()) if skip else ()
        return (t.__qualname__,) + tuple([(n, canonical(getattr(o, n), skip)) for n in _fields(t) if n not in left_out])
    raise NotCanonical(t.__name__)


def digest(value, skip: dict | None = None) -> str:
    return hashlib.sha256(repr(canonical(value, skip)).encode("utf-8", "surrogatepass")).hexdigest()

"""The cache holds data only: an entry that would run code when unpickled runs nothing, and a damaged entry is a miss.

A CI job may restore the cache from a run it does not control, so every entry file is replaced here by a pickle
whose ``__reduce__`` would create a marker file; the next check must create no marker, report the same result, and
rewrite the entries as data.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from kernel_ports import cli
from kernel_ports.cache import format as cachefmt
from kernel_ports.facts import Location, SelectorCall
from tests.conftest import REGISTRY


class _Planted:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('ran')",))


def _check(capsys, cache: Path) -> dict:
    code = cli.main(["check", "--registry", str(REGISTRY), "--format", "json", "--cache-dir", str(cache)])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    return json.loads(out)


def _entries(cache: Path) -> list:
    """Every file of the cache the checker reads as data (the precompiled preludes are Clang's own binary files)."""
    base = cache / cachefmt.CACHE_SUBDIR
    return sorted(p for p in base.rglob("*") if p.is_file() and "pch" not in p.relative_to(base).parts)


@pytest.fixture(scope="module")
def cold(tmp_path_factory):
    import contextlib
    import io

    cache = tmp_path_factory.mktemp("cache")
    buf = io.StringIO()  # a module-scoped fixture cannot take capsys
    with contextlib.redirect_stdout(buf):
        code = cli.main(["check", "--registry", str(REGISTRY), "--format", "json", "--cache-dir", str(cache)])
    assert code in (0, 1)
    return cache, json.loads(buf.getvalue())


def test_planted_pickles_run_nothing_and_change_nothing(cold, capsys, tmp_path):
    cache, expected = cold
    entries = _entries(cache)
    assert len(entries) > 20  # witness, Rust, Clang, focus, header-body entries and the registry marker
    marker = tmp_path / "ran"
    payload = pickle.dumps(_Planted(marker))
    for p in entries:
        p.write_bytes(payload)
    assert _check(capsys, cache) == expected
    assert not marker.exists(), "a cache entry ran code"
    # the entries were written again, as data
    rewritten = [p for p in _entries(cache) if p.suffix == ".json"]
    assert rewritten and all(p.read_bytes().startswith(b'{"format": "%s"' % cachefmt.FORMAT.encode()) for p in rewritten)
    assert _check(capsys, cache) == expected


@pytest.mark.parametrize("damage", ["truncate", "garbage", "flip"])
def test_damaged_entries_are_misses(cold, capsys, damage):
    cache, expected = cold
    _check(capsys, cache)  # entries as data again after the other test
    for p in _entries(cache):
        data = p.read_bytes()
        if damage == "truncate":
            p.write_bytes(data[: len(data) // 2])
        elif damage == "garbage":
            p.write_bytes(b"\x80\x04\x95not json at all\n\xff")
        elif len(data) > 10:  # one byte of the body changed: the hash no longer matches
            i = len(data) - 3
            p.write_bytes(data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:])
    assert _check(capsys, cache) == expected


def _entry(value, key="k"):
    return cachefmt.encode(key, value)


def test_round_trip_of_facts_and_containers():
    value = (
        {"a": [1, 2.5, None, True], ("t", 1): frozenset({"x", ("y", 2)})},
        {1, 2},
        SelectorCall(loc=Location("a.cpp", 3, 4), configurations=frozenset({"default"}), entry_point="e", fallback=None,
                     entry_point_text='"e"', fallback_text="", table_text="t()", tables=("t",), enclosing_function="f",
                     enclosing_usr="c:@F@f"),
    )
    assert cachefmt.decode("k", _entry(value)) == value


@pytest.mark.parametrize(
    "body",
    [
        b'{"builtins.object":[]}',  # not a cacheable type
        b'{"os.system":["true"]}',
        b'{"facts.Location":["a.cpp",1]}',  # a field missing
        b'{"facts.Location":["a.cpp","one",1]}',  # a field of the wrong kind
        b'{"facts.Location":["a.cpp",1,2],"x":1}',  # two keys
        b'{"x":1}',  # an untagged object
        b'{"f":[[1]]}',  # an unhashable set element
    ],
)
def test_foreign_bodies_are_rejected(body):
    with pytest.raises(cachefmt.CacheFormatError):
        cachefmt.decode("k", _with_header(body))


def _with_header(body: bytes) -> bytes:
    import hashlib

    head = json.dumps({"format": cachefmt.FORMAT, "key": "k", "sha256": hashlib.sha256(body).hexdigest()}).encode()
    return head + b"\n" + body


def test_nesting_that_exhausts_the_decoder_is_a_miss():
    with pytest.raises(cachefmt.CacheFormatError):
        cachefmt.decode("k", _with_header(b"[" * 100000 + b"]" * 100000))


def test_other_key_or_format_is_rejected():
    data = _entry([1, 2])
    with pytest.raises(cachefmt.CacheFormatError):
        cachefmt.decode("other", data)
    with pytest.raises(cachefmt.CacheFormatError):
        cachefmt.decode("k", data.replace(cachefmt.FORMAT.encode(), b"kernel-ports-cache/1"))
    with pytest.raises(cachefmt.CacheFormatError):
        cachefmt.decode("k", data[:-1])
    with pytest.raises(TypeError):
        cachefmt.encode("k", object())  # what is not plain data is not stored

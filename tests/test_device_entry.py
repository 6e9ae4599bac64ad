"""The device stage's entry (kernel_ports/index/device_entry.py): reused while every read of the tree it records
reads the same, a miss as soon as one does not.

The reads are made through a real TreeReads (tree-sitter answers a launcher's guards) over small texts written
here; no compiler is needed. The engine-level controls (a launcher edited by a comment reuses the entry, a launch
constant changed builds again) are in tests/test_device_compile.py, which needs hipcc."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

from kernel_ports.cache.units import FileCache
from kernel_ports.facts import DeviceBuild, Location
from kernel_ports.index import device_entry
from kernel_ports.index.device_reads import TreeReads
from tests.conftest import REPO

LAUNCHER = b"""void launch(int dim) {
  if (dim != 64 && dim != 128) throw 1;
  run(dim);
}
"""
BODY = b'const char* BODY = R"(extern "C" __global__ void k() {})";\n'
BUILD = DeviceBuild(loc=Location("b.h", 1, 1), body="b.h:BODY", kernel_name="k", factory_call="a.cpp:3:3",
                    target="gfx1030", wavefront=32, assignment="dim=64", result="built", sgprs=12)
COUNTS = {"bodies": 1, "variants": 1, "pairs": 1}


def tree(launcher: bytes = LAUNCHER, body: bytes = BODY) -> dict:
    return {"a.cpp": SimpleNamespace(data=launcher), "b.h": SimpleNamespace(data=body)}


def stored(tmp_path) -> FileCache:
    """An entry made as the plan makes its reads: the body's file as bytes, a question about the launcher."""
    cache = FileCache(tmp_path)
    reads = TreeReads(tree(), cache)
    reads.data("b.h")
    assert reads.guards("a.cpp", 3, {"dim"}) == {"dim": (64, 128)}
    device_entry.store(cache, "key", reads, [BUILD], COUNTS)
    return cache


def test_unchanged_reads_answer_from_the_entry(tmp_path):
    cache = stored(tmp_path)
    assert device_entry.lookup(cache, "key", tree()) == ([BUILD], COUNTS)


def test_launcher_edited_where_no_guard_changes_reuses_the_entry(tmp_path):
    cache = stored(tmp_path)
    edited = LAUNCHER + b"// a comment at the end\nstatic int unrelated(int x) { return x == 7; }\n"
    assert device_entry.lookup(cache, "key", tree(launcher=edited)) == ([BUILD], COUNTS)


def test_a_changed_guard_is_a_miss(tmp_path):
    cache = stored(tmp_path)
    edited = LAUNCHER.replace(b"dim != 128", b"dim != 256")
    assert device_entry.lookup(cache, "key", tree(launcher=edited)) is None


def test_a_body_file_read_as_bytes_changed_is_a_miss(tmp_path):
    cache = stored(tmp_path)
    assert device_entry.lookup(cache, "key", tree(body=BODY + b"// edited\n")) is None


def test_a_launcher_gone_is_a_miss(tmp_path):
    cache = stored(tmp_path)
    assert device_entry.lookup(cache, "key", {"b.h": SimpleNamespace(data=BODY)}) is None


def test_another_key_or_no_cache_is_a_miss(tmp_path):
    cache = stored(tmp_path)
    assert device_entry.lookup(cache, "other", tree()) is None
    assert device_entry.lookup(cache, None, tree()) is None
    assert device_entry.lookup(FileCache(None), "key", tree()) is None


def test_an_entry_of_another_kind_under_the_key_is_a_miss(tmp_path):
    cache = FileCache(tmp_path)
    cache.put("key", {"kind": "check", "builds": [BUILD], "counts": COUNTS, "hashes": [], "direct": [], "asked": []})
    assert device_entry.lookup(cache, "key", tree()) is None
    cache.put("key", {"kind": device_entry.ENTRY_KIND, "builds": ["not a build"], "counts": COUNTS, "hashes": [],
                      "direct": [], "asked": []})
    assert device_entry.lookup(cache, "key", tree()) is None


def test_digest_follows_content_and_ignores_set_order():
    a = DeviceBuild(loc=Location("b.h", 1, 1), body="b", kernel_name="k", factory_call="f", target="gfx1030",
                    wavefront=32, assignment="x", result="built", configurations=frozenset({"default", "rocm"}))
    assert device_entry.digest([a]) == device_entry.digest([DeviceBuild(**{**a.__dict__})])
    assert device_entry.digest([a]) != device_entry.digest([DeviceBuild(**{**a.__dict__, "assignment": "y"})])
    # a set's text is the same under every hash seed, so an entry written by one run is found by the next
    code = ("from kernel_ports.index.device_entry import digest\n"
            "print(digest([frozenset('abcdefghij'), {'x': {3, 1, 2}, 'y': frozenset({'p', 'q', 'r'})}]))")
    seen = {subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(REPO)),
                           capture_output=True, text=True, check=True, cwd=REPO).stdout for seed in ("1", "2", "3")}
    assert len(seen) == 1 and len(next(iter(seen)).strip()) == 64

"""The functions a unit reads from project headers are cached once per header and content, not once per unit, and
a unit's own functions in runs that every configuration records alike are cached once for all of them: a warm
index put together from those shared entries equals the cold one, and a shared entry that is missing or damaged
makes exactly the units that name it parse again."""

from __future__ import annotations

import json

from helpers import files_under
from kernel_ports.cache import format as cachefmt
from kernel_ports.facts import to_jsonable
from kernel_ports.frontend.clang import FunctionInfo, TUResult
from kernel_ports.index import build_index


def _entries(cache) -> list:
    """(path, decoded value) of every per-file entry under the cache directory."""
    out = []
    for p in sorted((cache / cachefmt.CACHE_SUBDIR).glob("*/*.json")):
        if p.parent.name == "pch":  # the preludes' API lists, not entries
            continue
        data = p.read_bytes()
        key = json.loads(data.partition(b"\n")[0])["key"]
        out.append((p, key, cachefmt.decode(key, data)))
    return out


def _shared_groups(cache) -> dict:
    return {key: (p, v) for p, key, v in _entries(cache)
            if type(v) is list and v and all(type(f) is FunctionInfo for f in v)}


def _units_naming(cache, group_key: str) -> set:
    return {(v[1].path, v[1].configuration) for _, _, v in _entries(cache)
            if type(v) is tuple and len(v) == 4 and isinstance(v[1], TUResult) and group_key in v[3]}


def _everything(index) -> tuple:
    functions = sorted((usr, json.dumps(to_jsonable(f), sort_keys=True)) for usr, f in index.functions.items())
    facts = dict(index.to_json(), files=None)  # parse times and cache hits differ between runs, nothing else may
    return (json.dumps(facts, sort_keys=True, indent=0).splitlines(), functions,
            sorted((a, b, tuple(sorted(d.items()))) for a, b, d in index.call_graph.edges(data=True)))


def test_header_functions_are_stored_once_and_put_back_in_place(engine_registry, tmp_path):
    cache = tmp_path / "cache"
    files = files_under(engine_registry.root)
    cold = build_index(engine_registry, files, jobs=2, cache_dir=cache)
    assert not any(q.cached for q in cold.parse_quality)
    groups = _shared_groups(cache)
    assert groups, "no header's functions were stored apart"
    # the dedup is real: some header's records serve several units (and configurations)
    assert max(len(_units_naming(cache, k)) for k in groups) >= 2
    for _, _, v in _entries(cache):
        if type(v) is tuple and len(v) == 4 and isinstance(v[1], TUResult):
            assert {f.loc.path for f in v[1].functions} <= {v[1].path}  # a unit entry keeps its own functions only
    warm = build_index(engine_registry, files, jobs=2, cache_dir=cache)
    assert warm.parse_quality and all(q.cached for q in warm.parse_quality)
    assert _everything(warm) == _everything(cold)


def _unit_groups(cache, path: str) -> dict:
    """configuration -> {group key: the usrs of its records} of the unit entry of ``path``."""
    groups = _shared_groups(cache)
    return {v[1].configuration: {k: {f.usr for f in groups[k][1]} for k in v[3]}
            for _, _, v in _entries(cache)
            if type(v) is tuple and len(v) == 4 and isinstance(v[1], TUResult) and v[1].path == path}


def test_a_units_own_functions_recorded_alike_in_both_configurations_are_stored_once(engine_registry, tmp_path):
    cache = tmp_path / "cache"
    files = files_under(engine_registry.root)
    cold = build_index(engine_registry, files, jobs=2, cache_dir=cache)
    rope = "src/lib/mlx-cpp/turbo/rope.cpp"
    by_config = _unit_groups(cache, rope)
    assert set(by_config) == {"default", "rocm"}
    hip_only = {usr for usr, f in cold.functions.items() if f.name == "get_rope_kernel_hip"}
    assert hip_only, "the control: rope.cpp declares a function under its ROCm switch"
    own = {k: usrs for groups in by_config.values() for k, usrs in groups.items()
           if any(cold.functions[u].loc.path == rope for u in usrs)}
    both = set(by_config["default"]) & set(by_config["rocm"])
    # quiet: the records both configurations make alike are one entry, named by both unit entries
    assert any(k in both for k in own)
    # negative: the function only the ROCm configuration declares sits in a group the default one does not name
    rocm_only = [k for k in by_config["rocm"] if hip_only & by_config["rocm"][k]]
    assert rocm_only and not set(rocm_only) & set(by_config["default"])
    warm = build_index(engine_registry, files, jobs=2, cache_dir=cache)
    assert all(q.cached for q in warm.parse_quality) and _everything(warm) == _everything(cold)


def test_a_damaged_or_missing_header_group_reparses_the_units_that_name_it(engine_registry, tmp_path):
    cache = tmp_path / "cache"
    files = files_under(engine_registry.root)
    cold = build_index(engine_registry, files, jobs=2, cache_dir=cache)
    groups = _shared_groups(cache)
    damaged_key, (damaged_path, _) = next(iter(sorted(groups.items())))
    missing_key, (missing_path, _) = sorted(groups.items())[-1]
    expected = _units_naming(cache, damaged_key) | _units_naming(cache, missing_key)
    data = damaged_path.read_bytes()
    damaged_path.write_bytes(data[: len(data) // 2])  # truncated: its hash no longer matches
    missing_path.unlink()
    again = build_index(engine_registry, files, jobs=2, cache_dir=cache)
    assert {(q.path, q.configuration) for q in again.parse_quality if not q.cached} == expected
    assert _everything(again) == _everything(cold)


def _record(name: str, line: int) -> FunctionInfo:
    from kernel_ports.facts import Location

    return FunctionInfo(usr=f"c:@F@{name}", name=name, qualified_name=f"ns::{name}",
                        loc=Location("src/lib/turbo/kernel_port.h", line, 1))


def test_a_process_encodes_each_header_group_once(tmp_path, monkeypatch):
    from kernel_ports.cache.units import FileCache

    encoded = []
    real = cachefmt.encode_body
    monkeypatch.setattr(cachefmt, "encode_body", lambda value: encoded.append(value) or real(value))
    cache = FileCache(tmp_path)
    group = [_record("get", 10), _record("select", 20)]
    key = cache.put_shared(group)
    # the same records again (new objects, as the next unit's walk makes them): the same key, not encoded again
    assert cache.put_shared([_record("get", 10), _record("select", 20)]) == key
    assert len(encoded) == 1
    # one record differs: its own entry, encoded
    other = cache.put_shared([_record("get", 10), _record("select", 21)])
    assert other != key and len(encoded) == 2
    # equal as Python values but not as data (True == 1): its own entry too, so a warm run reads back what was stored
    flagged = _record("get", 10)
    flagged.returns_bool = 1
    typed = cache.put_shared([flagged, _record("select", 20)])
    assert typed != key and len(encoded) == 3
    # each entry holds its own records, readable by another process's cache object
    fresh = FileCache(tmp_path)
    assert fresh.get(key) == group
    assert fresh.get(other)[1].loc.line == 21
    # the entry is written again by an object that did not store it (an earlier run's may be damaged)
    path = fresh._path(key)
    path.write_bytes(b"damaged")
    assert fresh.put_shared(list(group)) == key and FileCache(tmp_path).get(key) == group

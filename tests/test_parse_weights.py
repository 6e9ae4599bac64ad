"""The order parses start in: a unit's weight counts the MLX headers it includes that the prelude lacks, so a
small unit reading a large such header is not left to parse alone at the end of a cold run."""

from __future__ import annotations

from types import SimpleNamespace

import networkx as nx

from kernel_ports.index import plan


def _mlx(tmp_path):
    inc = tmp_path / "include"
    (inc / "mlx" / "backend").mkdir(parents=True)
    (inc / "mlx" / "mlx.h").write_text('#include "mlx/array.h"\n#include "mlx/ops.h"\n')
    (inc / "mlx" / "array.h").write_text("x" * 5000)
    (inc / "mlx" / "ops.h").write_text("x" * 5000)
    (inc / "mlx" / "primitives.h").write_text("x" * 40000)
    (inc / "mlx" / "backend" / "copy.h").write_text("x" * 300)
    return str(inc)


def _tree():
    data = {"big.cpp": b"y" * 20000, "small.cpp": b"y" * 2000, "small.h": b"y" * 500}
    by_path = {p: SimpleNamespace(data=d) for p, d in data.items()}
    witnessed = {
        "big.cpp": SimpleNamespace(includes=[("mlx/mlx.h", True), ("mlx/array.h", True), ("vector", True)]),
        "small.cpp": SimpleNamespace(includes=[("small.h", False), ("mlx/ops.h", True)]),
        "small.h": SimpleNamespace(includes=[("mlx/primitives.h", True), ("mlx/backend/copy.h", False)]),
    }
    g = nx.DiGraph()
    g.add_edge("small.cpp", "small.h")
    g.add_node("big.cpp")
    return by_path, witnessed, g


def test_headers_outside_the_prelude_make_a_small_unit_dear(tmp_path):
    by_path, witnessed, g = _tree()
    outside = plan.outside_prelude_bytes(_mlx(tmp_path))
    w = plan.unit_weights({"big.cpp", "small.cpp"}, g, by_path, witnessed, outside)
    # its own bytes, its header's, and primitives.h and copy.h (read through its header); mlx.h's own and
    # what it names count nothing, nor a standard header
    assert w == {"big.cpp": 20000, "small.cpp": 2000 + 500 + 40000 + 300}
    assert w["small.cpp"] > w["big.cpp"]


def test_without_real_headers_the_weight_is_the_project_bytes(tmp_path):
    by_path, witnessed, g = _tree()
    assert plan.outside_prelude_bytes(None) is None
    assert plan.outside_prelude_bytes(str(tmp_path / "nowhere")) is None
    w = plan.unit_weights({"big.cpp", "small.cpp"}, g, by_path, witnessed, None)
    assert w == {"big.cpp": 20000, "small.cpp": 2500}


def test_the_dear_unit_starts_first(tmp_path, monkeypatch):
    """Parsing.start hands the pool its jobs heaviest first."""
    from kernel_ports.index import parsing as parsing_mod

    by_path, witnessed, g = _tree()
    weights = plan.unit_weights({"big.cpp", "small.cpp"}, g, by_path, witnessed,
                                plan.outside_prelude_bytes(_mlx(tmp_path)))
    submitted = []
    p = parsing_mod.Parsing(SimpleNamespace(timings={}), SimpleNamespace(root=tmp_path), {}, 2,
                            SimpleNamespace(parser_memory_mib=0), 10.0)
    p.pool = SimpleNamespace(submit=lambda jobs: submitted.extend(jobs))
    p.units = SimpleNamespace(registry=None, tu_weight=weights, cc={}, root=tmp_path)
    monkeypatch.setattr(parsing_mod.prelude, "plan_preludes", lambda *a: ({}, {}))
    monkeypatch.setattr(parsing_mod.prelude, "build_preludes", lambda *a: {})
    monkeypatch.setattr(parsing_mod.clang, "build_args", lambda *a, **k: ())
    monkeypatch.setattr(parsing_mod, "_parse_job", lambda units, hashes, rel, conf, pch: rel)
    conf = SimpleNamespace(name="default")
    p.start([("big.cpp", conf, "k1"), ("small.cpp", conf, "k2")])
    assert [job[1][1] for job in submitted] == ["small.cpp", "big.cpp"]

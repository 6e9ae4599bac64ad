"""The precompiled prelude: built once, reused by later runs even for one changed file, and never a reason to lose
a file (a prelude Clang rejects is dropped for that parse)."""

import dataclasses
from pathlib import Path

import pytest

from helpers import files_under, make_registry, write_tree
from kernel_ports.frontend import clang
from kernel_ports.index import build_index
from kernel_ports.index.pool import ParsePool

LAUNCHER = r'''#include <vector>
#include "mlx/mlx.h"
namespace eng {
mlx::core::fast::CustomKernelFunction make_%(n)s() {
  return mlx::core::fast::metal_kernel("k%(n)s", {"x"}, {"out"}, "out[0] = x[0];");
}
}  // namespace eng
'''


def _record_parse_jobs(monkeypatch):
    jobs = []
    real = ParsePool.submit

    def submit(self, todo):
        jobs.extend(job for _, (kind, job, _) in todo if kind == "parse")
        return real(self, todo)

    monkeypatch.setattr(ParsePool, "submit", submit)
    return jobs


def test_one_changed_file_uses_the_prelude_of_an_earlier_run(tmp_path, monkeypatch):
    root = tmp_path / "tree"
    write_tree(root, {f"src/k{n}.cpp": LAUNCHER % {"n": n} for n in range(3)})
    reg = make_registry(root)
    cache = tmp_path / "cache"
    first = build_index(reg, files_under(root), jobs=2, cache_dir=cache)
    assert len(first.factory_calls) == 3
    assert list((cache / "data-v2" / "pch").glob("prelude-*.pch"))
    (root / "src/k1.cpp").write_text((LAUNCHER % {"n": 1}) + "// edited\n")
    jobs = _record_parse_jobs(monkeypatch)
    second = build_index(reg, files_under(root), jobs=2, cache_dir=cache)
    assert [j.relpath for j in jobs] == ["src/k1.cpp"]  # the others come from the cache
    assert "-include-pch" in jobs[0].args
    assert {fc.kernel_name for fc in second.factory_calls} == {"k0", "k1", "k2"}


def test_a_rejected_prelude_does_not_lose_the_file(tmp_path):
    write_tree(tmp_path, {"src/k.cpp": LAUNCHER % {"n": 0}})
    reg = make_registry(tmp_path)
    bad = tmp_path / "stale.pch"
    bad.write_bytes(b"not a precompiled header")
    conf = reg.compile.configurations[0]
    job = clang.ParseJob(
        abspath=str(tmp_path / "src/k.cpp"), relpath="src/k.cpp", configuration=conf.name,
        args=tuple(clang.build_args(reg, conf, "src/k.cpp")) + ("-include-pch", str(bad)),
        root=str(Path(reg.root)), project_files=frozenset({"src/k.cpp"}), conventions=clang.Conventions.from_registry(reg))
    res = clang.parse_translation_unit(job)
    assert res.ok and res.errors == 0
    assert [fc.kernel_name for fc in res.factory_calls] == ["k0"]


def test_stubs_precompiled_only_when_no_header_shadows_them(tmp_path, monkeypatch):
    own = tmp_path / "own"
    assert not clang.stubs_shadowed(["-x", "c++", f"-I{own}", "-isystem", str(tmp_path / "sys")])
    (own / "mlx").mkdir(parents=True)
    (own / "mlx" / "array.h").write_text("#pragma once\n")
    assert clang.stubs_shadowed(["-x", "c++", f"-I{own}"])
    assert clang.stubs_shadowed(["-isystem", str(own)])
    monkeypatch.setenv("CPLUS_INCLUDE_PATH", str(own))
    assert clang.stubs_shadowed(["-x", "c++"])


def test_a_prelude_with_the_stubs_gives_the_same_facts(tmp_path):
    """The stubs' declarations are not among the unit's when precompiled; what the walk needs of them comes from
    the file written beside the prelude, and the facts are those of a parse that reads the stubs itself."""
    from kernel_ports.registry.load import load_registry
    from tests.conftest import REGISTRY

    engine = load_registry(REGISTRY)
    write_tree(tmp_path / "t", {"src/direct.cpp": DIRECT})
    snippet = make_registry(tmp_path / "t")
    cases = [(engine, "src/lib/mlx-cpp/turbo/kv_cache.cpp"),  # a templated holder, a backend switch, dtype keys, a launch
             (snippet, "src/direct.cpp")]  # no selector declared: the kernel type is only what the factory returns
    for reg, rel in cases:
        _same_facts_with_stubs_prelude(reg, rel, tmp_path)


DIRECT = r'''#include "mlx/mlx.h"
namespace eng {
mlx::core::fast::CustomKernelFunction& get_k() {
  static auto k = mlx::core::fast::metal_kernel("k", {"x"}, {"out"}, "out[0] = x[0];");
  return k;
}
mlx::core::array launch(const mlx::core::array& x) {
  return get_k()({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"T", x.dtype()}}, std::nullopt, false, {})[0];
}
}  // namespace eng
'''


def _same_facts_with_stubs_prelude(reg, rel, tmp_path):
    from kernel_ports.facts import to_jsonable
    from kernel_ports.index.prelude import prelude_args

    root = Path(reg.root).resolve()
    conv = clang.Conventions.from_registry(reg)
    project = frozenset(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    for conf in reg.compile.configurations:
        args = tuple(clang.build_args(reg, conf, rel))
        assert not clang.stubs_shadowed(args)
        seen = []
        for with_stubs in (False, True):
            pch = clang.build_prelude(list(prelude_args(args, root)), tmp_path / "pch", with_stubs)
            assert pch and Path(pch).with_suffix(".api.json").is_file() == with_stubs
            # the stubs compile the warm-up (the launch-shaped code whose instantiations the prelude keeps)
            assert ("kernel_ports_prelude_warm_up" in Path(pch).with_suffix(".h").read_text()) == with_stubs
            job = clang.ParseJob(abspath=str(root / rel), relpath=rel, configuration=conf.name,
                                    args=args + ("-include-pch", pch), root=str(root), project_files=project,
                                    conventions=conv)
            res = clang.parse_translation_unit(job)
            assert res.ok and res.errors == 0
            seen.append([to_jsonable(getattr(res, f)) for f in ("factory_calls", "selectors", "invocations", "tables",
                                                                 "backend_tests", "holder_accesses", "predicates", "seen", "untyped")])
        assert seen[0] == seen[1]
        assert seen[1][2]  # the launch was found: the kernel type came from the file beside the prelude


ROCM_LAUNCHER = r'''#include <vector>
#include "mlx/mlx.h"
namespace eng {
mlx::core::fast::CustomKernelFunction make_%(n)s() {
#ifdef WITH_ROCM
  return mlx::core::fast::hip_kernel("k%(n)s", {"x"}, {"out"}, "out[0] = x[0];");
#else
  return mlx::core::fast::metal_kernel("k%(n)s", {"x"}, {"out"}, "out[0] = x[0];");
#endif
}
}  // namespace eng
'''


def test_configurations_share_one_prelude(tmp_path, monkeypatch):
    root = tmp_path / "tree"
    write_tree(root, {f"src/k{n}.cpp": ROCM_LAUNCHER % {"n": n} for n in range(3)})
    reg = make_registry(root, configurations=(("default", ()), ("rocm", ("WITH_ROCM",))))
    jobs = _record_parse_jobs(monkeypatch)
    idx = build_index(reg, files_under(root), jobs=2, cache_dir=tmp_path / "cache")
    assert {fc.backend for fc in idx.factory_calls} == {"metal", "rocm"}
    pchs = {j.args[j.args.index("-include-pch") + 1] for j in jobs}
    assert len(jobs) == 6 and len(pchs) == 1
    assert len(list((tmp_path / "cache" / "data-v2" / "pch").glob("prelude-*.pch"))) == 1


def test_which_defines_share_the_default_prelude(tmp_path):
    from kernel_ports.index.prelude import shared_prelude_defines

    def shared(*configs):
        return shared_prelude_defines(make_registry(tmp_path, configurations=configs))

    assert shared(("default", ("A=1",)), ("rocm", ("A=1", "WITH_ROCM", "LEVEL=2"))) == {"WITH_ROCM", "LEVEL"}
    # reserved names and NDEBUG may change the standard headers; a changed value is not an addition
    assert shared(("default", ()), ("dbg", ("_GLIBCXX_DEBUG", "NDEBUG", "X"))) == {"X"}
    assert shared(("default", ("A=1",)), ("other", ("A=2", "Y"))) == frozenset()


@pytest.mark.parametrize("header_set", ["stubs", "real"])
def test_every_warm_up_launch_compiles_against_the_header_set(tmp_path, header_set):
    """The warm-up is left out of the prelude when it does not compile, which costs every unit half its parse and
    no fact: so nothing else would show a launch form (named vectors, make_tuple, const values) the headers reject."""
    from kernel_ports.frontend import headers

    reg = make_registry(tmp_path / "t")
    if header_set == "stubs":
        reg = _with_stubs(reg)
    elif not headers.resolve_for(reg).mlx.real:
        pytest.skip("real MLX headers not installed: pip install 'kernel-ports[mlx]' (mlx-cpu)")
    text = _built_prelude_text(reg, tmp_path)
    for fn in ("launch(", "launch_named(", "launch_const(", "make(", "hold(", "use("):
        assert f"inline auto {fn}" in text or f"inline auto& {fn}" in text, fn


def test_a_warm_up_part_the_headers_reject_leaves_the_others(tmp_path, monkeypatch):
    """A launch form an older MLX does not compile gives up its own part of the warm-up, not the whole warm-up."""
    from kernel_ports.frontend.clang import prelude as pre

    rejected = "namespace kernel_ports_prelude_warm_up {\ninline auto rejected() { return mlx::core::no_such_op(); }\n}\n"
    monkeypatch.setattr(pre, "WARM_UPS", (pre.PRELUDE_WARM_UP, rejected))
    text = _built_prelude_text(_with_stubs(make_registry(tmp_path / "t")), tmp_path)
    assert "inline auto launch(" in text and "rejected" not in text


def _with_stubs(reg):
    return dataclasses.replace(reg, compile=dataclasses.replace(reg.compile, mlx_headers="stubs", cxx_headers="stubs"))


def _built_prelude_text(reg, tmp_path) -> str:
    """The source of the prelude (with the resolved headers) built for a unit of ``reg``'s default configuration."""
    from kernel_ports.index.prelude import prelude_args

    args = prelude_args(tuple(clang.build_args(reg, reg.compile.default_configuration, "src/k.cpp")), Path(reg.root).resolve())
    pch = clang.build_prelude(list(args), tmp_path / "pch", True)
    assert pch is not None
    return Path(pch).with_suffix(".h").read_text()

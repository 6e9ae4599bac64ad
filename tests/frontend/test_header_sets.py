"""The stubs are a verified fallback: the sample engine gives the same facts with them as with the real MLX and
cxx headers; header resolution, the ROCm shim and the summary that names the headers."""

import dataclasses

import pytest

from helpers import files_under, make_registry, walked_digest, write_tree
from kernel_ports.frontend import headers
from kernel_ports.index import build_index

REAL_PACKAGES = "pip install 'kernel-ports[mlx]' (mlx-cpu) and apt-get install librust-cxx-dev"


def _with_headers(registry, mlx, cxx):
    return dataclasses.replace(registry, compile=dataclasses.replace(registry.compile, mlx_headers=mlx, cxx_headers=cxx))


def _facts(index) -> dict:
    doc = index.to_json()
    assert all(q["parsed"] and q["errors"] == 0 for q in doc["files"]), doc["files"]
    return {k: v for k, v in doc.items() if k not in ("files", "headers")}


def test_the_sample_engine_gives_the_same_facts_with_stubs_and_real_headers(engine_registry, engine_index, tmp_path):
    real = headers.resolve_for(engine_registry)
    if not (real.mlx.real and real.cxx.real):
        pytest.skip(f"real headers not installed: {REAL_PACKAGES}")
    assert engine_index.headers["mlx"] == real.mlx.label
    stubs_reg = _with_headers(engine_registry, "stubs", "stubs")
    stubs = build_index(stubs_reg, files_under(stubs_reg.root), jobs=2, cache_dir=tmp_path / "cache")
    assert stubs.headers["mlx"] == "stubs" and stubs.headers["cxx"] == "stubs"
    with_real, with_stubs = _facts(engine_index), _facts(stubs)
    for key in with_real:
        assert with_real[key] == with_stubs[key], key
    assert with_real["invocations"] and with_real["port_tables"] and with_real["factory_calls"]


def test_auto_prefers_the_env_dir_then_the_build_tree_then_the_package(tmp_path, monkeypatch):
    def mlx_tree(d):
        for rel in ("mlx/mlx.h", "mlx/fast.h"):
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_text("#pragma once\n")
        (d / "mlx/version.h").write_text("#define MLX_VERSION_MAJOR 0\n#define MLX_VERSION_MINOR 31\n#define MLX_VERSION_PATCH 2\n")
        return d

    root = tmp_path / "engine"
    tree = mlx_tree(root / "build" / "_deps" / "mlx-src")
    monkeypatch.delenv("MLX_INCLUDE_DIR", raising=False)
    got = headers.resolve(root)
    assert (got.mlx.kind, got.mlx.directory) == ("tree", str(tree))
    assert "MLX 0.31.2" in got.description and got.hip_shim and got.rocm_shim
    env = mlx_tree(tmp_path / "env")
    monkeypatch.setenv("MLX_INCLUDE_DIR", str(env))
    assert headers.resolve(root).mlx.directory == str(env)
    assert headers.resolve(root, "stubs").mlx.kind == "stubs"
    # a fast.h that declares hip_kernel (a ROCm build of MLX) gets no shim declaration
    (env / "mlx/fast.h").write_text("CustomKernelFunction hip_kernel(const std::string& name);\n")
    (env / "mlx/backend/rocm").mkdir(parents=True)
    (env / "mlx/backend/rocm/rocm.h").write_text("#pragma once\n")
    headers._resolve.cache_clear()
    rocm = headers.resolve(root)
    assert not rocm.hip_shim and not rocm.rocm_shim and "-include" not in rocm.args()
    assert "ROCm shim" not in rocm.description


def test_cxx_from_a_cargo_registry_prefers_the_version_the_lock_file_pins(tmp_path, monkeypatch):
    cargo = tmp_path / "cargo"
    for version in ("1.0.90", "1.0.100", "1.0.87"):
        inc = cargo / "registry/src/index.crates.io-0/" / f"cxx-{version}" / "include"
        inc.mkdir(parents=True)
        (inc / "cxx.h").write_text(f"// cxx {version}\n")
    root = tmp_path / "engine"
    write_tree(root, {"core/Cargo.lock": '[[package]]\nname = "cxx"\nversion = "1.0.90"\n'})
    monkeypatch.setenv("CARGO_HOME", str(cargo))
    got = headers.resolve(root, "stubs")
    assert got.cxx.kind == "cargo" and got.cxx.forward_to.endswith("cxx-1.0.90/include/cxx.h")
    assert f'-D{headers.CXX_FORWARD_MACRO}="{got.cxx.forward_to}"' in got.args()
    (root / "core/Cargo.lock").unlink()
    headers._resolve.cache_clear()
    assert headers.resolve(root, "stubs").cxx.forward_to.endswith("cxx-1.0.100/include/cxx.h")
    assert headers.resolve(root, "stubs", "stubs").cxx.kind == "stubs"


BRIDGE = r'''#include "rust/cxx.h"
#include "mlx/mlx.h"
#ifdef WITH_ROCM
#include "mlx/backend/rocm/rocm.h"
#endif
namespace eng {
struct MlxArray { mlx::core::array inner; };
rust::String name_of(rust::Str s, rust::Slice<const float> xs, rust::isize n) {
  return rust::String(std::string(s) + std::to_string(xs.size() + n));
}
mlx::core::fast::CustomKernelFunction make() {
#ifdef WITH_ROCM
  if (mlx::core::rocm::is_available() && mlx::core::rocm::device_warp_size() == 32) {
    return mlx::core::fast::hip_kernel("k", {"x"}, {"out"}, "out[0] = x[0];");
  }
#endif
  return mlx::core::fast::metal_kernel("k", {"x"}, {"out"}, "out[0] = x[0];");
}
}  // namespace eng
'''


@pytest.mark.parametrize("which", ["stubs", "auto"])
def test_a_bridge_shaped_unit_parses_cleanly_in_every_configuration(tmp_path, which):
    write_tree(tmp_path, {"src/bridge.cpp": BRIDGE})
    reg = _with_headers(make_registry(tmp_path, configurations=(("default", ()), ("rocm", ("WITH_ROCM",)))), which, which)
    idx = build_index(reg, files_under(tmp_path), jobs=1, use_cache=False)
    assert [(q.configuration, q.errors) for q in idx.parse_quality] == [("default", 0), ("rocm", 0)], \
        [q.first_errors for q in idx.parse_quality]
    assert {fc.backend for fc in idx.factory_calls} == {"metal", "rocm"}


def test_clang_errors_are_summarised_and_listed(tmp_path):
    from kernel_ports import parse_summary

    write_tree(tmp_path, {f"src/b{i}.cpp": '#include "engine/missing.h"\n' + BRIDGE for i in range(2)})
    reg = make_registry(tmp_path)
    idx = build_index(reg, files_under(tmp_path), jobs=1, use_cache=False)
    errors = parse_summary.parse_errors(idx)
    assert errors["files"] == 2 and errors["causes"][0] == {"message": "'engine/missing.h' file not found", "count": 2}
    assert all(q.first_errors and "src/b" in q.first_errors[0] for q in idx.parse_quality)
    (note,) = [n for n in parse_summary.notes(idx.headers, errors) if "Clang errors" in n]
    assert "2 file(s) parsed with Clang errors" in note and "'engine/missing.h' file not found ×2" in note


LOST_LAUNCH = r'''#include <optional>
#include "mlx/mlx.h"
mlx::core::fast::CustomKernelFunction& pick_kernel();
mlx::core::array launch_wrapped(const mlx::core::array& x, const Wrapped& w) {
  auto& kernel = pick_kernel();
  return kernel({x}, {x.shape()}, {w.dt}, {1, 1, 1}, {1, 1, 1}, {{"T", w.dt}}, std::nullopt, false, {})[0];
}
'''


def test_a_kp902_names_the_nearest_clang_error(tmp_path):
    from kernel_ports.checkers.analysis import FrontEndFailures
    from kernel_ports.checkers import Context

    write_tree(tmp_path, {"src/run.cpp": LOST_LAUNCH})
    reg = make_registry(tmp_path)
    idx = build_index(reg, files_under(tmp_path), jobs=1, use_cache=False)
    (u,) = idx.unconfirmed
    assert u.loc.line == 6 and "(nearest Clang error: line 4: unknown type name 'Wrapped')" in u.reason
    (f,) = [f for f in FrontEndFailures().check(Context(registry=reg, index=idx, scope=None)) if f.rule == "KP902"]
    assert f.line == 6 and "nearest Clang error: line 4: unknown type name 'Wrapped'" in f.message


def test_the_registry_names_the_line_of_a_header_directory_without_headers(tmp_path):
    from kernel_ports.registry.load import RegistryError, load_registry

    (tmp_path / "src").mkdir()
    (tmp_path / "mlx-inc" / "mlx").mkdir(parents=True)
    for rel in ("mlx.h", "fast.h"):
        (tmp_path / "mlx-inc" / "mlx" / rel).write_text("#pragma once\n")
    reg = tmp_path / "registry.yaml"
    reg.write_text("version: 1\nroot: src\nkernels: []\ncompile:\n  mlx_headers: mlx-inc\n  cxx_headers: stubs\n")
    loaded = load_registry(reg)
    assert loaded.compile.mlx_headers == str(tmp_path / "mlx-inc") and loaded.compile.cxx_headers == "stubs"
    assert headers.resolve_for(loaded).mlx.kind == "path"
    reg.write_text("version: 1\nroot: src\nkernels: []\ncompile:\n  std: c++20\n  cxx_headers: nowhere\n")
    with pytest.raises(RegistryError) as info:
        load_registry(reg)
    assert str(info.value).startswith(f"{reg}:6: compile.cxx_headers: ") and "holds no rust/cxx.h" in str(info.value)


def test_an_include_folder_holding_one_folder_is_read_once_for_both_digests(tmp_path, monkeypatch):
    import builtins

    from kernel_ports.frontend import headers as headers_mod

    inc = tmp_path / "include"
    (inc / "mlx" / "backend").mkdir(parents=True)
    (inc / "mlx" / "mlx.h").write_text("#pragma once\n")
    (inc / "mlx" / "backend" / "b.h").write_text("int b();\n")
    headers_mod._dir_digest.cache_clear()
    opened = []
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda p, *a, **k: opened.append(str(p)) or real_open(p, *a, **k))
    set_digest = headers_mod._dir_digest(str(inc), "mlx")  # what the header set reads
    whole = headers_mod._dir_digest(str(inc), "")  # what a command line's -isystem folder is keyed by
    monkeypatch.setattr(builtins, "open", real_open)
    assert whole == set_digest == walked_digest(str(inc)) and len(opened) == 2  # each header opened once
    # negative control: a file beside the folder is hashed too (a plain walk of the whole folder)
    (inc / "extra.h").write_text("int extra();\n")
    headers_mod._dir_digest.cache_clear()
    assert headers_mod._dir_digest(str(inc), "") == walked_digest(str(inc)) != set_digest
    headers_mod._dir_digest.cache_clear()

"""`kernel-ports port`: what it writes compiles and passes `check` and `sync --check`.

A copy of the sample engine gets every kernel that has a CUDA port and no ROCm
port ported (`port rocm K --write`, one after the other, as a developer would),
then each translation unit is compiled in every build configuration against
the stubs (and the real MLX headers with the ROCm shim when the tree and the
machine have them), and the check and the registry comparison must be clean.
"""

from __future__ import annotations

import inspect
import json
import shutil
import subprocess

import pytest

import tests.test_sample_engine as sample
from kernel_ports.cli import main
from kernel_ports.commands.port.renames import CUDA_TO_HIP, HIP_TO_CUDA, apply_renames
from tests.mutate import Mutation, engine_copy

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
UNPORTED = sorted(k["name"] for k in sample.REGISTRY["kernels"] if k["ports"]["cuda"] and not k["ports"]["rocm"])


def run(capsys, copy, *argv):
    code = main([*argv, "--registry", str(copy.registry_path), "--root", str(copy.root)])
    out, err = capsys.readouterr()
    return code, out, err


def compile_flags(configuration: str, header_set: str, root) -> list:
    """The sample engine's own compile flags, pointed at the copy."""
    takes_set = "header_set" in inspect.signature(sample._compile_flags).parameters
    if header_set != "stubs":
        real = getattr(sample, "REAL", None)
        if not takes_set or real is None:
            pytest.skip("real MLX headers with the ROCm shim: this tree has no header resolution for them yet")
        if not (real.mlx.real and real.cxx.real):
            pytest.skip("real headers not installed: pip install mlx-cpu and apt-get install librust-cxx-dev")
        flags = sample._compile_flags(configuration, header_set)
    else:
        flags = sample._compile_flags(configuration, "stubs") if takes_set else sample._compile_flags(configuration)
    return [f.replace(str(sample.ENGINE), str(root)) for f in flags]


def compiles_everywhere(copy, unit: str) -> None:
    """One translation unit of a copy compiles against the stubs in every build configuration."""
    for configuration in sorted(sample.CONFIGURATIONS):
        cmd = ["g++", *compile_flags(configuration, "stubs", copy.root), str(copy.root / unit)]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert result.returncode == 0, f"{configuration}: {result.stderr}"


@pytest.fixture(scope="module")
def ported(tmp_path_factory):
    """A copy of the sample engine with every kernel that has a CUDA port and no ROCm port ported to ROCm."""
    copy = engine_copy(tmp_path_factory.mktemp("ported"))
    for kernel in UNPORTED:
        code = main(["port", "rocm", kernel, "--write", "--registry", str(copy.registry_path), "--root", str(copy.root)])
        assert code == 0, kernel
    return copy


def test_the_sample_engine_has_kernels_to_port():
    assert len(UNPORTED) >= 1
    assert "gumbel" in UNPORTED  # the helper-factory shape (switch on a backend constant)


@needs_gxx
@pytest.mark.parametrize("header_set", ["stubs", "real"])
@pytest.mark.parametrize("configuration", sorted(sample.CONFIGURATIONS))
def test_ported_tree_compiles(ported, configuration, header_set):
    units = sorted(p for p in ported.root.rglob("*.cpp"))
    for unit in units:
        cmd = ["g++", *compile_flags(configuration, header_set, ported.root), str(unit)]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert result.returncode == 0, f"{' '.join(cmd)}\n{result.stderr}"


def test_ported_tree_is_clean_and_in_sync(ported, capsys):
    code, out, _ = run(capsys, ported, "check")
    assert code == 0, out
    assert "0 error(s), 0 warning(s)" in out
    code, out, err = run(capsys, ported, "sync", "--check")
    assert code == 0, out + err
    code, out, _ = run(capsys, ported, "matrix", "--format", "json")
    kernels = {k["kernel"]: k for k in json.loads(out)["kernels"]}
    for name in UNPORTED:
        assert kernels[name]["ports"]["rocm"] and kernels[name]["registry_ports"]["rocm"], name
        assert kernels[name]["rocm_any_wave_size"] is False


def test_ported_files_in_the_engines_shape(ported):
    header = (ported.root / "src/lib/mlx-cpp/turbo/attention_hip.h").read_text(encoding="utf-8")
    assert "constexpr const char* SDPA_EXACT_HIP_SOURCE = R\"(" in header
    assert "constexpr const char* SDPA_WINDOW_HIP_SOURCE = R\"(" in header  # the second kernel joins the header
    launcher = (ported.root / "src/lib/mlx-cpp/turbo/attention.cpp").read_text(encoding="utf-8")
    assert launcher.count('#include "turbo/attention_hip.h"') == 1
    assert "#ifdef MLXCEL_BRIDGE_ROCM_BACKEND\nKernelHolder& get_sdpa_exact_kernel_hip() {" in launcher
    assert "      // rocm_any_wave_size stays false: no lane operation in SDPA_EXACT_HIP_SOURCE" in launcher
    sampling = (ported.root / "src/lib/mlx-cpp/turbo/sampling.cpp").read_text(encoding="utf-8")
    assert "    case GpuKernelBackend::Rocm:\n      return mlx::core::fast::hip_kernel(" in sampling
    assert "make_gumbel_kernel(GpuKernelBackend::Rocm)" in sampling


def test_refuses_a_kernel_that_has_a_rocm_port(ported, capsys):
    code, out, err = run(capsys, ported, "port", "rocm", "gumbel")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "gumbel already has a ROCm port: .rocm = get_gumbel_kernel_hip" in err


def test_diff_only_writes_nothing(tmp_path, capsys):
    copy = engine_copy(tmp_path)
    before = {p: p.read_bytes() for p in copy.root.rglob("*") if p.is_file()}
    registry = copy.registry_path.read_bytes()
    code, out, err = run(capsys, copy, "port", "rocm", "sdpa_exact")
    assert code == 0, err
    assert {p: p.read_bytes() for p in copy.root.rglob("*") if p.is_file()} == before
    assert copy.registry_path.read_bytes() == registry
    assert "+++ b/" in out and "attention_hip.h" in out
    assert "-      rocm: null\n+      rocm: get_sdpa_exact_kernel_hip\n" in out
    assert "lane operations: none" in err


def _hipcc_or_skip():
    from kernel_ports.frontend.device.compiler import DEBIAN_PACKAGES, CompilerMissing, find_compiler

    try:
        find_compiler()
    except CompilerMissing:
        pytest.skip(f"building the generated HIP body needs hipcc: apt install {DEBIAN_PACKAGES}")


def test_the_generated_hip_body_is_built_for_both_targets(tmp_path, capsys):
    _hipcc_or_skip()
    code, _, err = run(capsys, engine_copy(tmp_path), "port", "rocm", "sdpa_exact")
    assert code == 0, err
    (line,) = [x for x in err.splitlines() if "built SDPA_EXACT_HIP_SOURCE:" in x]
    assert "gfx1030: built (" in line and "gfx90a: built (" in line and "occupancy" in line
    assert "KP501" not in err


def test_a_generated_body_that_does_not_build_is_reported(tmp_path, capsys):
    _hipcc_or_skip()
    # the CUDA body calls a function HIP does not have: the generated port carries it, and its build says so
    copy = engine_copy(tmp_path, Mutation("src/lib/mlx-cpp/turbo/attention.cpp",
                                          'SDPA_EXACT_CUDA_SOURCE = R"(\n  const int d = threadIdx.x;\n',
                                          'SDPA_EXACT_CUDA_SOURCE = R"(\n  const int d = __cuda_only_lane(threadIdx.x);\n'))
    code, _, err = run(capsys, copy, "port", "rocm", "sdpa_exact")
    assert code == 0, err
    assert "gfx1030: no variant built (failed)" in err
    (finding,) = [x for x in err.splitlines() if "check on the ported tree:" in x and "[KP501]" in x]
    assert "__cuda_only_lane" in finding and "attention" in finding


def test_lane_operations_are_renamed_listed_and_keep_the_port_unmarked(tmp_path, capsys):
    shuffle = Mutation("src/lib/mlx-cpp/turbo/sampling.cpp",
                       "  const int row = blockIdx.x * blockDim.x + threadIdx.x;\n  float best = -INFINITY;\n",
                       "  const int row = blockIdx.x * blockDim.x + threadIdx.x;\n  float best = -INFINITY;\n"
                       "  best = __shfl_xor_sync(0xffffffff, best, 1);  // __shfl_xor_sync named in a comment\n")
    copy = engine_copy(tmp_path, shuffle)
    code, out, err = run(capsys, copy, "port", "rocm", "gumbel", "--write")
    assert code == 0, err
    assert "rename in GUMBEL_CUDA_SOURCE: __shfl_xor_sync -> __shfl_xor (body line 4" in err
    header = (copy.root / "src/lib/mlx-cpp/turbo/sampling_hip.h").read_text(encoding="utf-8")
    assert "  best = __shfl_xor(best, 1);  // __shfl_xor_sync named in a comment\n" in header
    line = header.splitlines().index("  best = __shfl_xor(best, 1);  // __shfl_xor_sync named in a comment") + 1
    launcher = (copy.root / "src/lib/mlx-cpp/turbo/sampling.cpp").read_text(encoding="utf-8")
    assert (f"// rocm_any_wave_size stays false: lane operations in GUMBEL_HIP_SOURCE "
            f"(__shfl_xor (src/lib/mlx-cpp/turbo/sampling_hip.h:{line}))") in launcher
    assert run(capsys, copy, "check")[0] == 0


def test_an_anchor_out_of_place_is_refused(tmp_path, capsys):
    joined = Mutation("src/lib/mlx-cpp/turbo/sampling.cpp",
                      "    case GpuKernelBackend::Cuda:\n      return mlx::core::fast::cuda_kernel(",
                      "    case GpuKernelBackend::Cuda: return mlx::core::fast::cuda_kernel(")
    copy = engine_copy(tmp_path, joined)
    code, out, err = run(capsys, copy, "port", "rocm", "gumbel")
    assert code == 2 and out == ""
    assert "expected `case ...::Cuda:` on the line before the factory call" in err and err.count("\n") == 1


def test_refusals_name_the_reason(tmp_path, capsys):
    copy = engine_copy(tmp_path)
    code, _, err = run(capsys, copy, "port", "rocm", "top_k")
    assert code == 2 and "top_k has no CUDA port to generate the ROCm port from" in err
    code, _, err = run(capsys, copy, "port", "rocm", "nope")
    assert code == 2 and "no kernel named 'nope'" in err
    drift = engine_copy(tmp_path / "drift", Mutation("registry.yaml", "      cuda: get_gumbel_kernel_cuda\n", "      cuda: null\n"))
    code, _, err = run(capsys, drift, "port", "rocm", "sdpa_exact")
    assert code == 2 and "already differs from the code" in err and "run `kernel-ports sync` first" in err


def test_rename_tables_round_trip_code_and_leave_comments():
    body = "  v += __shfl_down_sync(0xffffffff, v, 8);  // __shfl_down_sync\n  __syncwarp(0xffffffff);\n"
    hip, applied = apply_renames(body, CUDA_TO_HIP)
    assert hip == "  v += __shfl_down(v, 8);  // __shfl_down_sync\n  __builtin_amdgcn_wave_barrier();\n"
    assert [(a.old, a.new, a.line) for a in applied] == [("__shfl_down_sync", "__shfl_down", 1),
                                                          ("__syncwarp", "__builtin_amdgcn_wave_barrier", 2)]
    back, _ = apply_renames(hip, HIP_TO_CUDA)
    assert back == body


SWIGLU_CUDA_BODY = '''constexpr const char* SWIGLU_CUDA_SOURCE = R"(
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= SIZE) {
    return;
  }
  const float g = static_cast<float>(gate[i]);
  const float silu = g / (1.0f + expf(-g));
  out[i] = static_cast<T>(silu * static_cast<float>(up[i]));
)";

'''
SWIGLU_CUDA_HOLDER = '''KernelHolder& get_swiglu_kernel_cuda() {
  static KernelHolder holder([] {
    return mlx::core::fast::cuda_kernel("mlxcel_swiglu", {"gate", "up"}, {"out"}, SWIGLU_CUDA_SOURCE);
  });
  return holder;
}

'''
# swiglu as a Metal + ROCm kernel whose HIP body exchanges a value between lanes
METAL_AND_ROCM_ONLY = (
    Mutation("src/lib/mlx-cpp/turbo/activations.cpp", SWIGLU_CUDA_BODY, ""),
    Mutation("src/lib/mlx-cpp/turbo/activations.cpp", SWIGLU_CUDA_HOLDER, ""),
    Mutation("src/lib/mlx-cpp/turbo/activations.cpp",
             "      .cuda = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_swiglu_kernel_cuda().get(); },\n", ""),
    Mutation("registry.yaml", "      cuda: get_swiglu_kernel_cuda\n", "      cuda: null\n"),
    Mutation("src/lib/mlx-cpp/turbo/activations_hip.h", "  const float g = static_cast<float>(gate[i]);\n",
             "  const float g = static_cast<float>(gate[i]) + 0.0f * __shfl_xor(1.0f, 1);\n"),
)


@needs_gxx
def test_port_cuda_from_a_rocm_port(tmp_path, capsys):
    copy = engine_copy(tmp_path, *METAL_AND_ROCM_ONLY)
    assert run(capsys, copy, "check")[0] == 0
    code, out, err = run(capsys, copy, "port", "cuda", "swiglu", "--write")
    assert code == 0, err
    assert "rename in SWIGLU_HIP_SOURCE: __shfl_xor -> __shfl_xor_sync" in err
    launcher = (copy.root / "src/lib/mlx-cpp/turbo/activations.cpp").read_text(encoding="utf-8")
    assert "+ 0.0f * __shfl_xor_sync(0xffffffff, 1.0f, 1);" in launcher
    # the CUDA holder is not behind the ROCm guard, and the slot keeps designator order
    assert launcher.index("KernelHolder& get_swiglu_kernel_cuda()") < launcher.index("#ifdef MLXCEL_BRIDGE_ROCM_BACKEND")
    assert launcher.index(".cuda = +[]") < launcher.index(".rocm = +[]")
    assert run(capsys, copy, "check")[0] == 0
    assert run(capsys, copy, "sync", "--check")[0] == 0
    compiles_everywhere(copy, "src/lib/mlx-cpp/turbo/activations.cpp")


SDPA_EXACT_CUDA_HOLDER = '''KernelHolder& get_sdpa_exact_kernel_cuda() {
  static KernelHolder holder([] {
    return mlx::core::fast::cuda_kernel("mlxcel_sdpa_exact", {"q", "k", "v", "scale"}, {"out"}, SDPA_EXACT_CUDA_SOURCE);
  });
  return holder;
}
'''
SDPA_EXACT_CUDA_HOLDER_TYPE = '''// A holder type of its own, built under std::call_once in its get().
struct SdpaExactKernelCuda {
  std::once_flag once;
  std::optional<mlx::core::fast::CustomKernelFunction> kernel;

  mlx::core::fast::CustomKernelFunction& get() {
    std::call_once(once, [this] {
      kernel = mlx::core::fast::cuda_kernel(
          "mlxcel_sdpa_exact", {"q", "k", "v", "scale"}, {"out"}, std::string(SDPA_EXACT_CUDA_SOURCE));
    });
    return *kernel;
  }
};

SdpaExactKernelCuda& get_sdpa_exact_kernel_cuda() {
  static SdpaExactKernelCuda holder;
  return holder;
}
'''


@needs_gxx
def test_port_clones_a_holder_type(tmp_path, capsys):
    copy = engine_copy(tmp_path, Mutation("src/lib/mlx-cpp/turbo/attention.cpp", SDPA_EXACT_CUDA_HOLDER,
                                          SDPA_EXACT_CUDA_HOLDER_TYPE))
    assert run(capsys, copy, "check")[0] == 0
    code, _, err = run(capsys, copy, "port", "rocm", "sdpa_exact", "--write")
    assert code == 0, err
    launcher = (copy.root / "src/lib/mlx-cpp/turbo/attention.cpp").read_text(encoding="utf-8")
    assert "#ifdef MLXCEL_BRIDGE_ROCM_BACKEND\nstruct SdpaExactKernelHip {" in launcher
    assert 'kernel = mlx::core::fast::hip_kernel(\n          "mlxcel_sdpa_exact"' in launcher
    assert "std::string(SDPA_EXACT_HIP_SOURCE)" in launcher
    assert "SdpaExactKernelHip& get_sdpa_exact_kernel_hip() {\n  static SdpaExactKernelHip holder;" in launcher
    assert run(capsys, copy, "check")[0] == 0
    assert run(capsys, copy, "sync", "--check")[0] == 0
    compiles_everywhere(copy, "src/lib/mlx-cpp/turbo/attention.cpp")


KV_WRITE_ROCM_CASE = '''#ifdef MLXCEL_BRIDGE_ROCM_BACKEND
    case GpuKernelBackend::Rocm:
      return mlx::core::fast::hip_kernel("mlxcel_kv_write", {"cache", "values", "offset"}, {"out"}, KV_WRITE_HIP_SOURCE);
#endif
'''
KV_WRITE_ROCM_SLOT = '''#ifdef MLXCEL_BRIDGE_ROCM_BACKEND
      .rocm = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_kv_write_kernel<GpuKernelBackend::Rocm>().get(); },
#endif
'''
# kv_write without its ROCm port: the holder template and its factory's switch stay, the Rocm arm and slot go
KV_WRITE_WITHOUT_ROCM = (
    Mutation("src/lib/mlx-cpp/turbo/kv_cache.cpp", KV_WRITE_ROCM_CASE, ""),
    Mutation("src/lib/mlx-cpp/turbo/kv_cache.cpp", KV_WRITE_ROCM_SLOT + "      .rocm_any_wave_size = true,\n",
             "      .rocm_any_wave_size = false,\n"),
    Mutation("src/lib/mlx-cpp/turbo/kv_cache.cpp", '#include "turbo/kv_cache_hip.h"\n', ""),
    Mutation("registry.yaml", "      rocm: get_kv_write_kernel<GpuKernelBackend::Rocm>\n    rocm_any_wave_size: true\n"
             "    hip_source: KV_WRITE_HIP_SOURCE  # two concatenated raw literals\n",
             "      rocm: null\n    rocm_any_wave_size: false\n    hip_source: null\n"),
)


@needs_gxx
def test_port_of_a_holder_templated_on_the_backend(tmp_path, capsys):
    copy = engine_copy(tmp_path, *KV_WRITE_WITHOUT_ROCM)
    (copy.root / "src/lib/mlx-cpp/turbo/kv_cache_hip.h").unlink()
    assert run(capsys, copy, "check")[0] == 0
    code, _, err = run(capsys, copy, "port", "rocm", "kv_write", "--write")
    assert code == 0, err
    launcher = (copy.root / "src/lib/mlx-cpp/turbo/kv_cache.cpp").read_text(encoding="utf-8")
    assert KV_WRITE_ROCM_CASE in launcher and KV_WRITE_ROCM_SLOT in launcher  # as the engine wrote them by hand
    assert "get_kv_write_kernel_hip" not in launcher  # the template serves the new backend: no new accessor
    assert run(capsys, copy, "check")[0] == 0
    assert run(capsys, copy, "sync", "--check")[0] == 0
    compiles_everywhere(copy, "src/lib/mlx-cpp/turbo/kv_cache.cpp")


def test_a_new_file_never_replaces_an_existing_one(tmp_path):
    from kernel_ports.commands.port.apply import _create
    from kernel_ports.commands.port.generate import PortError

    target = tmp_path / "x_hip.h"
    _create(target, "one\n")
    with pytest.raises(PortError, match="never overwritten"):
        _create(target, "two\n")
    assert target.read_text(encoding="utf-8") == "one\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x_hip.h"]  # no temporary left behind

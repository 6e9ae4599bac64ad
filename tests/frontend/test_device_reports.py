"""The device front end without a compiler: the unit it writes, and its reading of hipcc's output.

The compiler texts below are what HIP 5.2's hipcc (Debian clang 15.0.6) printed for units this front end wrote
(kept verbatim, save the mangled names' variants); tests/test_device_compile.py runs the compiler itself."""

from __future__ import annotations

from kernel_ports.facts import Location
from kernel_ports.frontend.device import reports, source
from kernel_ports.frontend.device.build_model import BodyBuild, Piece, Variant
from kernel_ports.index.device_plan import body_integer_inputs, include_problem

BODY = Piece(path="src/k_hip.h", line=7, column=40, text="\n  const int i = threadIdx.x;\n  out[i] = x[i] * x_shape[0];\n", raw=True)


def build(*variants, header=()):
    return BodyBuild(body="src/k_hip.h:K_SRC", kernel_name="my_kernel", input_names=("x", "w"), output_names=("out",),
                     source=(BODY,), header=header, variants=variants)


F32 = Variant(template_args=(("T", "float32"), ("N", "128"), ("FAST", "true")), input_dtypes=(("x", "float32"), ("w", "uint32")),
              output_dtypes=(("out", "float32"),))
BF16 = Variant(template_args=(("T", "bfloat16"), ("N", "128"), ("FAST", "true")), input_dtypes=(("x", "bfloat16"), ("w", "uint32")),
               output_dtypes=(("out", "bfloat16"),), guessed=("N",))


def test_unit_wraps_each_variant_as_the_rocm_jit_does():
    unit = source.translation_unit(build(F32, BF16))
    assert unit.count("namespace mlx::core::rocm { namespace kp_v") == 2
    # per input the pointer, then _shape only because the text names x_shape; nothing for w; then the output
    assert "__global__ void custom_kernel_my_kernel(const float* x, const int32_t* x_shape, const uint32_t* w, float* out)" in unit
    assert "const hip_bfloat16* x, const int32_t* x_shape, const uint32_t* w, hip_bfloat16* out" in unit
    assert "x_strides" not in unit and "w_shape" not in unit
    assert "  using T = float;\n  constexpr int N = 128;\n  constexpr bool FAST = true;\n" in unit
    assert "using bfloat16_t = hip_bfloat16;" in unit and "#include <hip/hip_bfloat16.h>" in unit


def test_line_marks_put_the_body_at_its_file_line_and_column():
    unit = source.translation_unit(build(F32))
    lines = unit.split("\n")
    at = lines.index('#line 7 "src/k_hip.h@v0"')
    # the raw literal's first line is padded to the column after R"( so columns match the file
    assert lines[at + 1] == " " * 39 and lines[at + 2] == "  const int i = threadIdx.x;"


def test_escaped_pieces_are_marked_line_by_line():
    pieces = (Piece(path="a.cpp", line=3, column=10, text="int a = 1;\n", raw=False),
              Piece(path="a.cpp", line=4, column=10, text="int b = a;\n", raw=False))
    unit = source.translation_unit(BodyBuild(body="a.cpp:s", kernel_name="k", input_names=(), output_names=(),
                                             source=pieces, header=(), variants=(Variant((), (), ()),)))
    assert '#line 3 "a.cpp@v0"\n' + " " * 9 + "int a = 1;\n" + '#line 4 "a.cpp@v0"\n' in unit


def test_variant_is_read_from_the_mangled_name_length_prefix():
    assert reports.variant_of("_ZN3mlx4core4rocm5kp_v015custom_kernel_kEPKfPf") == 0
    assert reports.variant_of("_ZN3mlx4core4rocm6kp_v1243custom_kernel_mlxcel_paged_attention_decodeEPKf") == 12
    assert reports.variant_of("_Z10__shfl_xorfii") is None


STDERR_FAILED = """\
src/k_hip.h@v1:9:26: error: use of undeclared identifier 'x_shapee'
<kernel-signature>@v0:3:1: error: unknown type name 'hip_bfloat17'
/usr/include/hip/amd_detail/amd_hip_runtime.h:12:3: error: something inside a system header
1 error generated when compiling for gfx1030.
error: local memory (66560) exceeds limit (65536) in function '_ZN3mlx4core4rocm5kp_v143custom_kernel_kEPKf'
"""


def test_diagnostics_map_to_the_body_and_variant_and_echo_no_outside_path():
    got = reports.diagnostics(STDERR_FAILED, set(), build(F32, BF16))
    assert (got[0].path, got[0].line, got[0].column, got[0].variant) == ("src/k_hip.h", 9, 26, 1)
    assert got[1].variant == 0 and "the runtime wraps the body in" in got[1].message and got[1].path == "src/k_hip.h"
    assert got[2].variant is None and "/usr/include" not in got[2].message and "<amd_hip_runtime.h>" in got[2].message
    assert got[3].message.startswith("local memory (66560)") and got[3].variant == 1


def test_error_directive_in_the_body_is_told_from_other_errors():
    guarded = Piece(path="g.h", line=1, column=30, text="\n#if X\n#error only 32 lanes\n#endif\n", raw=True)
    b = BodyBuild(body="g.h:G", kernel_name="g", input_names=(), output_names=(), source=(guarded,), header=(),
                  variants=(F32,))
    (d,) = reports.diagnostics('g.h@v0:3:2: error: only 32 lanes\n', set(), b)
    assert d.at_error_directive and d.line == 3


REMARKS = """\
remark: <kernel-signature>@v0:2:0: Function Name: _ZN3mlx4core4rocm5kp_v015custom_kernel_kEPKfPf [-Rpass-analysis=kernel-resource-usage]
remark: <kernel-signature>@v0:2:0:     SGPRs: 8 [-Rpass-analysis=kernel-resource-usage]
remark: <kernel-signature>@v0:2:0:     VGPRs: 5 [-Rpass-analysis=kernel-resource-usage]
remark: <kernel-signature>@v0:2:0:     ScratchSize [bytes/lane]: 128 [-Rpass-analysis=kernel-resource-usage]
remark: <kernel-signature>@v0:2:0:     Occupancy [waves/SIMD]: 16 [-Rpass-analysis=kernel-resource-usage]
remark: <kernel-signature>@v0:2:0:     SGPRs Spill: 0 [-Rpass-analysis=kernel-resource-usage]
remark: <kernel-signature>@v0:2:0:     VGPRs Spill: 3 [-Rpass-analysis=kernel-resource-usage]
remark: <kernel-signature>@v0:2:0:     LDS Size [bytes/block]: 132 [-Rpass-analysis=kernel-resource-usage]
"""


def test_resource_usage_remarks():
    (usage,) = reports.resource_usage(REMARKS).values()
    assert (usage.sgprs, usage.vgprs, usage.scratch_bytes, usage.occupancy, usage.vgpr_spill, usage.lds_bytes) == (8, 5, 128, 16, 3, 132)
    assert list(reports.resource_usage(REMARKS)) == [0]


IR = """\
define protected amdgpu_kernel void @_ZN3mlx4core4rocm5kp_v015custom_kernel_kEPKfPf(ptr addrspace(1) noundef %0) #5 {
  %3 = call noundef float @_Z10__shfl_xorfii(float noundef %2, i32 noundef 16, i32 noundef 32)
  ret void
}

define linkonce_odr hidden noundef float @_Z10__shfl_xorfii(float noundef %0, i32 noundef %1, i32 noundef %2) #7 {
  %4 = call i32 @_ZL9__lane_idv()
  %9 = call i32 @llvm.amdgcn.ds.bpermute(i32 %7, i32 %8)
  ret float %10
}

define internal noundef i32 @_ZL9__lane_idv() #7 {
  %1 = call i32 @llvm.amdgcn.mbcnt.lo(i32 -1, i32 0)
  %2 = call i32 @llvm.amdgcn.mbcnt.hi(i32 -1, i32 %1)
  ret i32 %2
}

define protected amdgpu_kernel void @_ZN3mlx4core4rocm5kp_v115custom_kernel_kEPKfPf(ptr addrspace(1) noundef %0) #5 {
  call void @__assert_fail(ptr null, ptr null, i32 0, ptr null)
  ret void
}

define weak hidden void @__assert_fail(ptr noundef %0, ptr noundef %1, i32 noundef %2, ptr noundef %3) #2 {
  %5 = call i64 @__ockl_fprintf_stderr_begin()
  ret void
}

define internal i64 @__ockl_fprintf_stderr_begin() #10 {
  %1 = call i32 @llvm.amdgcn.mbcnt.lo(i32 -1, i32 0)
  %2 = call i32 @llvm.amdgcn.readfirstlane(i32 %1)
  ret i64 0
}
"""


def test_lane_intrinsics_through_called_helpers_but_not_the_assert_service():
    got = reports.lane_intrinsics(IR)
    assert got[0] == ("ds.bpermute", "mbcnt (lane id)")
    assert got[1] == ()


def test_body_integer_pointer_bindings_state_input_dtypes():
    text = "const uint32_t* wr = packed + row;\nconst float* xr = x;\nconst int* ids = rows;\n"
    assert body_integer_inputs(text, ("packed", "x", "rows")) == {"packed": "uint32", "rows": "int32"}


def test_includes_outside_the_tree_are_refused():
    def resolve(name, _from):
        return {"turbo/common.h": "src/turbo/common.h", "common.h": "src/turbo/common.h"}.get(name)

    def problem(line):
        return include_problem((Piece(path="src/k.h", line=5, column=1, text=line, raw=True),), "/r", resolve)

    # the folder the spelled name is found under, so that the compiler's search finds the same file
    assert problem('#include "turbo/common.h"\n') == (None, ("/r/src",))
    assert problem('#include "common.h"\n') == (None, ("/r/src/turbo",))
    assert problem("#include <hip/hip_runtime.h>\n") == (None, ())
    (where, message), _ = problem('\n  #include "/etc/hostname"\n')
    assert where == Location("src/k.h", 6, 1) and "absolute path" in message
    assert "outside the tree" in problem('#include "../../secret.h"\n')[0][1]
    assert "computed include" in problem("#include KERNEL_HEADER\n")[0][1]


def test_launcher_guards_name_the_values_a_constant_takes():
    from kernel_ports.frontend.device.guards import guard_values

    src = b"""
int launch(int dim, int bits, int other) {
  if (dim != 64 && dim != 128) throw 1;
  switch (bits) { case 4: break; case 8: break; }
  int k = run(dim, bits, other);
  if (dim == 256) return 0;
  return k;
}
"""
    got = guard_values(src, 5, {"dim", "bits", "other"})
    assert got["dim"] == (64, 128) and sorted(got["bits"]) == [4, 8] and "other" not in got


def test_body_chosen_by_a_condition_is_two_bodies_at_their_own_lines():
    from kernel_ports.frontend.device.alternatives import conditional_bodies

    src = b'''void probe(bool far) {
  const std::string body = far
      ? "  out[0] = inp[1 << 20];\\n"
        "  out[1] = 0.0f;\\n"
      : R"(
  out[0] = inp[0];
)";
  auto k = fast::hip_kernel("p", {"inp"}, {"out"}, body);
}
'''
    (first, cond), (second, other) = conditional_bodies("a.cpp", src, "body", 8)
    assert cond == "far" and other == "!(far)"
    assert [(p.line, p.column, p.raw) for p in first] == [(3, 10, False), (4, 10, False)]
    assert first[0].text == "  out[0] = inp[1 << 20];\n"
    assert (second[0].line, second[0].raw, second[0].text) == (5, True, "\n  out[0] = inp[0];\n")

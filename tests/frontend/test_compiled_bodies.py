"""What a factory call compiles: source and header bodies (constants, literals
written at the call, concatenated pieces) and the project files they include,
each token placed on its file line."""

from helpers import files_under, make_registry, write_tree
from kernel_ports.frontend.hip import scan_body
from kernel_ports.index import build_index

LANE_H = '''#pragma once
// a device helper the HIP bodies include
__device__ inline float lane_sum(float v) {
  return v + __shfl_xor(v, 1);  // @lane-helper
}
#include "dev/more.h"
'''

MORE_H = '''#pragma once
__device__ inline int wave() { return warpSize; }  // @more
#include "dev/lane.h"
'''

BODIES_H = '''#pragma once
constexpr const char* CONST_HIP_SOURCE = R"(
  #include "dev/lane.h"
  out[0] = lane_sum(x[0]);
)";
constexpr const char* CONST_HIP_HEADER = "#include \\"dev/missing.h\\"\\n";
'''

LAUNCH_CPP = '''#include "mlx/mlx.h"
#include "bodies.h"
namespace eng {
mlx::core::fast::CustomKernelFunction from_constants() {
  return mlx::core::fast::hip_kernel("a", {"x"}, {"out"}, CONST_HIP_SOURCE, CONST_HIP_HEADER);
}
mlx::core::fast::CustomKernelFunction from_literals() {
  return mlx::core::fast::hip_kernel("b", {"x"}, {"out"},
      R"(
  int i = threadIdx.x;
)"
      R"(
  out[i] = __ballot(x[i] > 0);  // @literal-ballot
)",
      "#include \\"dev/lane.h\\"\\n");
}
mlx::core::fast::CustomKernelFunction from_elsewhere(const char* body) {
  return mlx::core::fast::hip_kernel("c", {"x"}, {"out"}, body);
}
}  // namespace eng
'''

TREE = {"src/dev/lane.h": LANE_H, "src/dev/more.h": MORE_H, "src/bodies.h": BODIES_H, "src/launch.cpp": LAUNCH_CPP}


def _line(path, marker):
    return next(i for i, line in enumerate(TREE[path].splitlines(), 1) if f"@{marker}" in line)


def _tokens_at(h, token):
    return [line for tok, line in zip(h.tokens, h.token_lines) if tok == token]


def test_scan_body_offsets_and_includes():
    scan = scan_body('#include "a.h"\n#include <b.h>\n// __shfl in a comment\nint x = __shfl(y, 1);\n')
    assert scan.includes == ("a.h",)
    text = '#include "a.h"\n#include <b.h>\n// __shfl in a comment\nint x = __shfl(y, 1);\n'.encode()
    (off,) = [o for t, o in zip(scan.tokens, scan.token_offsets) if t == "__shfl"]
    assert text[off:off + 6] == b"__shfl"
    pp = scan_body("#if __AMDGCN_WAVEFRONT_SIZE == 64 /* w */\nint a;\n#endif\n")
    (off,) = [o for t, o in zip(pp.tokens, pp.token_offsets) if t == "__AMDGCN_WAVEFRONT_SIZE"]
    assert off == 4


def test_factory_calls_compile_constants_literals_and_included_files(tmp_path):
    write_tree(tmp_path, TREE)
    reg = make_registry(tmp_path, include_dirs=("src",))
    idx = build_index(reg, files_under(reg.root), jobs=1, use_cache=False)
    by_name = {fc.kernel_name: idx.compiled_bodies[str(fc.loc)] for fc in idx.factory_calls}

    a = by_name["a"]
    assert [h.name for h in a.bodies] == ["CONST_HIP_SOURCE", "CONST_HIP_HEADER", "src/dev/lane.h", "src/dev/more.h"]
    assert any("dev/missing.h" in u for u in a.unresolved)
    lane = a.bodies[2]
    assert _tokens_at(lane, "__shfl_xor") == [_line("src/dev/lane.h", "lane-helper")]
    assert _tokens_at(a.bodies[3], "warpSize") == [_line("src/dev/more.h", "more")]

    b = by_name["b"]
    assert b.unresolved == ()
    src, hdr = b.bodies[0], b.bodies[1]
    assert src.name.endswith("#source") and src.loc.path == "src/launch.cpp"
    assert _tokens_at(src, "__ballot") == [_line("src/launch.cpp", "literal-ballot")]
    assert _tokens_at(src, "threadIdx") == [_line("src/launch.cpp", "literal-ballot") - 3]
    assert hdr.name.endswith("#header") and [h.name for h in b.bodies[2:]] == ["src/dev/lane.h", "src/dev/more.h"]

    c = by_name["c"]
    assert c.bodies == () and c.unresolved and "neither a literal nor a named constant" in c.unresolved[0]
    # the bodies read here are listed with the other kernel bodies
    assert {"src/dev/lane.h", "src/dev/more.h"} <= {h.name for h in idx.hip_sources}

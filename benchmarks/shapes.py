"""Files of the sizes a real engine has, written for the benchmark tree.

- :func:`bridge_unit`: one translation unit of ~300k characters, as a Rust
  bridge file is: hundreds of small FFI-shaped functions (raw pointers and
  lengths in, vectors out, shape checks) and a few launches, made by embedding
  renamed copies of some sample launchers.
- :func:`kernels_header`: a ~170k-character header of kernel bodies in raw
  string constants (Metal, CUDA and HIP), included by many launchers, as an
  engine's collected kernel sources are.

Every line is generated here; the code is ordinary C++ that the Clang front
end parses without errors against the stub headers.
"""

from __future__ import annotations


def _ffi_function(i: int) -> str:
    """One bridge-shaped function: argument checks, a copy into a vector, a small computation."""
    return f"""
// FFI entry {i}: validates the caller's buffer and returns a reduced copy.
MLXCEL_API int bridge_entry_{i}(const float* data, std::size_t len, int axis, float* out, std::size_t out_len) {{
  if (data == nullptr || out == nullptr || len == 0) {{
    return -1;
  }}
  if (axis < 0 || out_len < len / {1 + i % 4}) {{
    return -2;
  }}
  std::vector<float> values(data, data + len);
  float acc = 0.0f;
  for (std::size_t k = 0; k < values.size(); ++k) {{
    acc += values[k] * static_cast<float>((k + {i}) % 7);
    if (k < out_len) {{
      out[k] = acc / static_cast<float>(k + 1);
    }}
  }}
  return static_cast<int>(values.size() % {97 + i});
}}
"""


def bridge_unit(launchers: list[str], target_chars: int) -> str:
    """The launchers' texts (already renamed apart) followed by FFI functions up to ``target_chars``."""
    head = ("// Generated bridge unit: FFI entry points for the host language, and a few kernels launched\n"
            "// directly from here.\n#include <cstddef>\n#include <vector>\n\n")
    parts = [head] + launchers
    size = sum(map(len, parts))
    body = ["\nnamespace mlxcel {\n"]
    i = 0
    while size + sum(map(len, body)) < target_chars:
        body.append(_ffi_function(i))
        i += 1
    body.append("\n}  // namespace mlxcel\n")
    return "".join(parts + body)


_BODY = """  {index} gid = {gid};
  if (gid >= n) {{{{
    return;
  }}}}
  float v = {load} * {{scale}}f;
  for (int r = 0; r < {{rounds}}; ++r) {{{{
    v = {fma}(v, 0.5f, {rf});
  }}}}
  out[gid] = {store};
"""

# the same generated kernel in each backend's spelling: thread index, fused multiply-add, conversions
_BODIES = {
    "METAL": _BODY.format(index="uint", gid="thread_position_in_grid.x", load="float(inp[gid])", fma="metal::fma",
                          rf="float(r)", store="T(v)"),
    "CUDA": _BODY.format(index="const int", gid="blockIdx.x * blockDim.x + threadIdx.x",
                         load="static_cast<float>(inp[gid])", fma="fmaf", rf="static_cast<float>(r)",
                         store="static_cast<T>(v)"),
    "HIP": _BODY.format(index="const int", gid="hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x",
                        load="static_cast<float>(inp[gid])", fma="__fmaf_rn", rf="static_cast<float>(r)",
                        store="static_cast<T>(v)"),
}


def kernels_header(target_chars: int) -> str:
    """Raw-string kernel bodies up to ``target_chars``, three backends per generated kernel."""
    parts = ["// Generated collection of kernel bodies (raw string constants).\n#pragma once\n\nnamespace mlxcel {\n"]
    size = len(parts[0])
    i = 0
    while size < target_chars:
        for backend, body in _BODIES.items():
            steps = "".join(f"  // step {s} of generated kernel {i}\n" + body.format(scale=1 + (i + s) % 5, rounds=2 + s)
                            for s in range(3))
            text = f'\n// Generated kernel {i}, {backend.lower()} body.\nconstexpr const char* GEN_{i}_{backend}_SOURCE = R"(\n{steps})";\n'
            parts.append(text)
            size += len(text)
        i += 1
    parts.append("\n}  // namespace mlxcel\n")
    return "".join(parts)

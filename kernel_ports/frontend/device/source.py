"""The translation unit the ROCm runtime would build for a body, every variant of it in one unit.

MLX's ROCm JIT (SPEC §5 "Device builds") compiles a default header, the call's ``header`` argument, and in
``namespace mlx::core::rocm`` one ``__global__ void custom_kernel_<name>(...)``: per input ``const T* in``, then
``in_shape``/``in_strides``/``in_ndim`` only when the source text names them, per output ``T* out``; the body
opens with one ``constexpr``/``using`` line per template argument. The default header below is written here
from that description. Each variant sits in its own namespace (``kp_v<N>``), so one compile builds them all and
the kernel's own name is kept; ``#line`` marks name the body's file with ``@v<N>`` (``@h`` for the header) so
every diagnostic maps back to the body's file:line:col and to the variant it came from.
"""

from __future__ import annotations

import re

from kernel_ports.frontend.device.build_model import BodyBuild, Piece, Variant

DEFAULT_HEADER_TAG = "<rocm-jit-default-header>"
WRAPPER_TAG = "<kernel-signature>"
VARIANT_NAMESPACE = "kp_v"

# dtype name -> the C++ type the ROCm JIT writes for it
C_TYPES = {"float32": "float", "float16": "__half", "bfloat16": "hip_bfloat16", "int32": "int32_t",
           "uint32": "uint32_t", "int64": "int64_t", "uint64": "uint64_t", "int16": "int16_t", "uint16": "uint16_t",
           "int8": "int8_t", "uint8": "uint8_t", "bool_": "bool", "bool": "bool", "float64": "double"}

DEFAULT_HEADER = r"""#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <hip/hip_bfloat16.h>
#include <cstdint>
#define inf (1.0f / 0.0f)
namespace mlx::core::rocm {
using float16_t = __half;
using bfloat16_t = hip_bfloat16;
template <typename T>
__host__ __device__ constexpr T ceildiv(T numerator, T denominator) {
  return (numerator + denominator - 1) / denominator;
}
__device__ inline uint32_t thread_index() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
__device__ inline uint32_t block_index() {
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}
__device__ inline uint32_t global_thread_index() {
  return thread_index() + block_index() * (blockDim.x * blockDim.y * blockDim.z);
}
template <typename IdxT = int64_t>
__device__ IdxT elem_to_loc(IdxT elem, const int32_t* shape, const int64_t* strides, int ndim) {
  IdxT loc = 0;
  for (int axis = ndim - 1; axis >= 0 && elem > 0; --axis) {
    loc += (elem % shape[axis]) * strides[axis];
    elem /= shape[axis];
  }
  return loc;
}
}  // namespace mlx::core::rocm
"""

_IDENT = re.compile(r"[^A-Za-z0-9_]")


def _quoted(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _marked(pieces, tag: str) -> str:
    """Pieces of kernel text, each line a piece starts at marked with its file line (and padded to its column);
    inside a raw piece the lines then follow the file, an escaped piece's lines all sit on the piece's line."""
    out = []
    at_line_start = True
    for p in pieces:
        lines = p.text.split("\n")
        marked = False
        for i, text in enumerate(lines):
            last = i == len(lines) - 1
            if last and text == "" and i > 0:
                break  # the piece ended with a newline
            if at_line_start and (not marked or not p.raw):
                out.append(f"#line {p.line + i if p.raw else p.line} {_quoted(p.path + tag)}\n"
                           + " " * ((p.column if i == 0 else 1) - 1))
                marked = True
            out.append(text)
            if not last:
                out.append("\n")
            at_line_start = not last
    return "".join(out)


def _parameters(build: BodyBuild, variant: Variant, source_text: str) -> str:
    dtypes = dict(variant.input_dtypes + variant.output_dtypes)
    params = []
    for name in build.input_names:
        params.append(f"const {C_TYPES.get(dtypes.get(name, 'float32'), 'float')}* {name}")
        if f"{name}_shape" in source_text:
            params.append(f"const int32_t* {name}_shape")
        if f"{name}_strides" in source_text:
            params.append(f"const int64_t* {name}_strides")
        if f"{name}_ndim" in source_text:
            params.append(f"const int {name}_ndim")
    for name in build.output_names:
        params.append(f"{C_TYPES.get(dtypes.get(name, 'float32'), 'float')}* {name}")
    return ", ".join(params)


def _template_lines(variant: Variant) -> str:
    lines = []
    for name, value in variant.template_args:
        if value in C_TYPES:
            lines.append(f"  using {name} = {C_TYPES[value]};")
        elif value in ("true", "false"):
            lines.append(f"  constexpr bool {name} = {value};")
        else:
            lines.append(f"  constexpr int {name} = {value};")
    return "\n".join(lines)


def kernel_function_name(build: BodyBuild) -> str:
    return "custom_kernel_" + _IDENT.sub("_", build.kernel_name)


def translation_unit(build: BodyBuild) -> str:
    """The unit's text: the default header, the call's header, then one kernel per variant."""
    source_text = "".join(p.text for p in build.source)
    parts = [f"#line 1 {_quoted(DEFAULT_HEADER_TAG)}\n", DEFAULT_HEADER]
    if build.header:
        parts += [_marked(build.header, "@h"), "\n"]
    fn = kernel_function_name(build)
    for i, variant in enumerate(build.variants):
        tag = f"@v{i}"
        parts.append(f"#line 1 {_quoted(WRAPPER_TAG + tag)}\n"
                     f"namespace mlx::core::rocm {{ namespace {VARIANT_NAMESPACE}{i} {{\n"
                     f"__global__ void {fn}({_parameters(build, variant, source_text)}) {{\n"
                     f"{_template_lines(variant)}\n")
        parts.append(_marked(build.source, tag))
        parts.append(f"\n#line 1 {_quoted(WRAPPER_TAG + tag)}\n}}\n}} }}\n")
    return "".join(parts)


def read_tag(spelled: str):
    """(path in the tree or None, variant index or None, is the call's header) of a diagnostic's file name."""
    m = re.fullmatch(r"(.*)@(v(\d+)|h)", spelled)
    if m is None:
        return None, None, False
    path, _, index = m.groups()
    if path in (WRAPPER_TAG, DEFAULT_HEADER_TAG):
        return None, int(index) if index is not None else None, False
    return path, int(index) if index is not None else None, index is None


def piece_line_text(pieces, line: int):
    """The text of a raw piece's file line, for telling an ``#error`` directive from other errors."""
    for p in pieces:
        lines = p.text.split("\n")
        if p.raw and p.line <= line < p.line + len(lines):
            return lines[line - p.line]
    return None

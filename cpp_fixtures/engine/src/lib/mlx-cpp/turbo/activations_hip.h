// HIP body of SwiGLU. Elementwise and free of lane operations, but the port
// has not been validated on 64-lane devices, so swiglu_ports() leaves it
// unmarked (wave32 only) until it is.
#pragma once

namespace mlxcel {

constexpr const char* SWIGLU_HIP_SOURCE = R"(
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= SIZE) {
    return;
  }
  const float g = static_cast<float>(gate[i]);
  const float silu = g / (1.0f + expf(-g));
  out[i] = static_cast<T>(silu * static_cast<float>(up[i]));
)";

}  // namespace mlxcel

// HIP body of the fused residual-add + RMS norm.
#pragma once

namespace mlxcel {

// One 32-lane wavefront per row: the sum of squares is reduced with
// __shfl_xor, so this port is validated only at wavefront width 32 and
// fused_norm_ports() leaves rocm_any_wave_size false.
constexpr const char* FUSED_NORM_HIP_SOURCE = R"(
  const int row = blockIdx.x;
  const int lane = threadIdx.x;
  float sum = 0.0f;
  for (int i = lane; i < N; i += 32) {
    const float h = static_cast<float>(x[row * N + i]) + static_cast<float>(residual[row * N + i]);
    sum += h * h;
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    sum += __shfl_xor(sum, offset);
  }
  const float inv = rsqrtf(sum / N + eps[0]);
  for (int i = lane; i < N; i += 32) {
    const float h = static_cast<float>(x[row * N + i]) + static_cast<float>(residual[row * N + i]);
    out[row * N + i] = static_cast<T>(h * inv * static_cast<float>(weight[i]));
  }
)";

}  // namespace mlxcel

// HIP body of rotary position embedding. rope_ports() marks its ROCm port
// rocm_any_wave_size, so neither the body nor the header may use a
// lane-level operation.
#pragma once

namespace mlxcel {

constexpr const char* ROPE_HIP_HEADER = R"(
__device__ inline float rope_angle(float position, float base, int pair, int dims) {
  return position * powf(base, -2.0f * pair / dims);
}
)";

constexpr const char* ROPE_HIP_SOURCE = R"(
  // One thread per (even, odd) pair and one grid row per token: no lane
  // exchange, so no __shfl_xor, ballot or lane id, at any wavefront width.
  const int pair = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y;
  if (pair >= D / 2) {
    return;
  }
  const float theta = rope_angle(static_cast<float>(positions[row]), base[0], pair, D);
  const float c = cosf(theta);
  const float s = sinf(theta);
  const float a = static_cast<float>(x[row * D + 2 * pair]);
  const float b = static_cast<float>(x[row * D + 2 * pair + 1]);
  out[row * D + 2 * pair] = static_cast<T>(a * c - b * s);
  out[row * D + 2 * pair + 1] = static_cast<T>(a * s + b * c);
)";

}  // namespace mlxcel

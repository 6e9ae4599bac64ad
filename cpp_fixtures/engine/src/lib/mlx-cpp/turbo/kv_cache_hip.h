// HIP body of the KV-cache write. kv_write_ports() marks its ROCm port
// rocm_any_wave_size: plain loads and stores, no lane-level operation.
#pragma once

namespace mlxcel {

// Two concatenated raw literals: index arithmetic, then the copy.
constexpr const char* KV_WRITE_HIP_SOURCE =
    R"(
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y;
  if (col >= W) {
    return;
  }
  const int start = offset[0];
  const int index = row * W + col;
)"
    R"(
  const bool fresh = row >= start && row < start + NEW_ROWS;
  out[index] = fresh ? values[(row - start) * W + col] : cache[index];
)";

}  // namespace mlxcel

// KV-cache write: copies the cache with NEW_ROWS rows replaced from offset.
// One holder template serves all three backends.
#include <algorithm>
#include <optional>
#include <vector>

#include "mlx/mlx.h"
#include "turbo/gpu_backend.h"
#include "turbo/kernel_port.h"
#include "turbo/kv_cache_hip.h"
#include "turbo/turbo_kernels.h"

namespace mlxcel {
namespace {

using mlx::core::array;

constexpr const char* KV_WRITE_METAL_SOURCE = R"(
  uint col = thread_position_in_grid.x;
  uint row = thread_position_in_grid.y;
  int start = offset[0];
  uint index = row * W + col;
  bool fresh = int(row) >= start && int(row) < start + NEW_ROWS;
  out[index] = fresh ? values[(row - start) * W + col] : cache[index];
)";

constexpr const char* KV_WRITE_CUDA_SOURCE = R"(
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y;
  if (col >= W) {
    return;
  }
  const int start = offset[0];
  const int index = row * W + col;
  const bool fresh = row >= start && row < start + NEW_ROWS;
  out[index] = fresh ? values[(row - start) * W + col] : cache[index];
)";

// B is a compile-time constant chosen by a table slot; this switch is the
// table's own choice, not a runtime backend test.
template <GpuKernelBackend B>
mlx::core::fast::CustomKernelFunction make_kv_write_kernel() {
  switch (B) {
    case GpuKernelBackend::Metal:
      return mlx::core::fast::metal_kernel("mlxcel_kv_write", {"cache", "values", "offset"}, {"out"}, KV_WRITE_METAL_SOURCE);
    case GpuKernelBackend::Cuda:
      return mlx::core::fast::cuda_kernel("mlxcel_kv_write", {"cache", "values", "offset"}, {"out"}, KV_WRITE_CUDA_SOURCE);
#ifdef MLXCEL_BRIDGE_ROCM_BACKEND
    case GpuKernelBackend::Rocm:
      return mlx::core::fast::hip_kernel("mlxcel_kv_write", {"cache", "values", "offset"}, {"out"}, KV_WRITE_HIP_SOURCE);
#endif
    default:
      return nullptr;  // unreachable: slots instantiate only ported backends
  }
}

template <GpuKernelBackend B>
KernelHolder& get_kv_write_kernel() {
  static KernelHolder holder([] { return make_kv_write_kernel<B>(); });
  return holder;
}

}  // namespace

const KernelPorts& kv_write_ports() {
  static const KernelPorts ports{
      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_kv_write_kernel<GpuKernelBackend::Metal>().get(); },
      .cuda = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_kv_write_kernel<GpuKernelBackend::Cuda>().get(); },
#ifdef MLXCEL_BRIDGE_ROCM_BACKEND
      .rocm = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_kv_write_kernel<GpuKernelBackend::Rocm>().get(); },
#endif
      .rocm_any_wave_size = true,
  };
  return ports;
}

bool kv_write_available() {
  if (mlx::core::default_device() != mlx::core::Device(mlx::core::Device::gpu)) {
    return false;
  }
  return has_kernel_port(kv_write_ports());
}

namespace {

// A small wrapper around the selector: the launch below reaches the table
// only through it.
mlx::core::fast::CustomKernelFunction& kv_write_kernel() {
  return select_kernel_port("kv_cache_write", "mlx::core::slice_update", kv_write_ports());
}

}  // namespace

array kv_cache_write(const array& cache, const array& values, int offset) {
  mlx::core::fast::CustomKernelFunction& kernel = kv_write_kernel();
  const int width = cache.shape(-1);
  const int rows = cache.shape(0);
  const int new_rows = values.shape(0);
  // values follow the cache dtype; offset is an int32 scalar.
  const array fresh = mlx::core::astype(values, cache.dtype());
  const array offset_array({offset}, mlx::core::int32);
  KernelTemplateArgs template_args;
  template_args.push_back({"T", cache.dtype()});
  template_args.emplace_back("W", width);
  template_args.emplace_back("NEW_ROWS", new_rows);
#ifndef MLXCEL_BRIDGE_ROCM_BACKEND
  // Only the Metal and CUDA bodies are compiled with this flag.
  template_args.emplace_back("CONTIGUOUS", true);
#endif
  std::vector<array> outputs = kernel(
      {cache, fresh, offset_array},
      {cache.shape()},
      {cache.dtype()},
      {width, rows, 1},
      {std::min(width, 256), 1, 1},
      template_args,
      std::nullopt,
      false,
      {});
  return outputs[0];
}

}  // namespace mlxcel

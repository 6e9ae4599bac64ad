// Backend detection and the ROCm wavefront width (a helper file).
#include "turbo/gpu_backend.h"

#include <atomic>

#include "mlx/array.h"
#include "mlx/backend/cuda/cuda.h"
#include "mlx/backend/metal/metal.h"
#ifdef MLXCEL_BRIDGE_ROCM_BACKEND
#include "mlx/backend/rocm/rocm.h"
#endif

namespace mlxcel {
namespace {

std::atomic<int> forced_rocm_warp_size{0};

GpuKernelBackend detect_gpu_kernel_backend() {
#ifdef MLXCEL_BRIDGE_ROCM_BACKEND
  if (mlx::core::rocm::is_available()) {
    return GpuKernelBackend::Rocm;
  }
#endif
  if (mlx::core::cu::is_available()) {
    return GpuKernelBackend::Cuda;
  }
  if (mlx::core::metal::is_available()) {
    return GpuKernelBackend::Metal;
  }
  return GpuKernelBackend::None;
}

// The sample engine has no device query for the wavefront width, so it
// assumes 64 lanes (CDNA): the width on which 32-lane ports go wrong.
int detected_rocm_warp_size() {
  return 64;
}

}  // namespace

GpuKernelBackend gpu_kernel_backend() {
  static const GpuKernelBackend backend = detect_gpu_kernel_backend();
  return backend;
}

bool custom_kernels_available() {
  return gpu_kernel_backend() != GpuKernelBackend::None;
}

bool gpu_backend_available() {
  if (!custom_kernels_available()) {
    return false;
  }
  return mlx::core::default_device() == mlx::core::Device(mlx::core::Device::gpu);
}

int rocm_port_warp_size() {
  const int forced = forced_rocm_warp_size.load();
  return forced > 0 ? forced : detected_rocm_warp_size();
}

void set_rocm_port_warp_size_for_tests(int warp_size) {
  forced_rocm_warp_size.store(warp_size);
}

}  // namespace mlxcel

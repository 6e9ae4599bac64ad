// The one place that maps the running backend to a table slot.
#include "turbo/kernel_port.h"

#include <stdexcept>
#include <string>

namespace mlxcel {
namespace {

// A ROCm port written with 32-lane shuffles gives wrong numbers on 64-lane
// devices, so an unmarked ROCm port counts only at width 32.
bool rocm_port_runs_at_device_width(const KernelPorts& ports) {
  return ports.rocm_any_wave_size || rocm_port_warp_size() == 32;
}

KernelPortGetter port_for_running_backend(const KernelPorts& ports) {
  switch (gpu_kernel_backend()) {
    case GpuKernelBackend::Metal:
      return ports.metal;
    case GpuKernelBackend::Cuda:
      return ports.cuda;
    case GpuKernelBackend::Rocm:
      return rocm_port_runs_at_device_width(ports) ? ports.rocm : nullptr;
    case GpuKernelBackend::None:
      return nullptr;
  }
  return nullptr;
}

}  // namespace

bool has_kernel_port(const KernelPorts& ports) {
  return port_for_running_backend(ports) != nullptr;
}

mlx::core::fast::CustomKernelFunction& select_kernel_port(
    const char* entry_point, const char* fallback, const KernelPorts& ports) {
  const KernelPortGetter port = port_for_running_backend(ports);
  if (port != nullptr) {
    return port();
  }
  std::string reason = "has no custom kernel port for the running GPU backend";
  if (gpu_kernel_backend() == GpuKernelBackend::Rocm && ports.rocm != nullptr) {
    reason = "has a ROCm port validated only at wavefront width 32, but the device runs " +
             std::to_string(rocm_port_warp_size()) + " lanes";
  }
  throw std::runtime_error(std::string(entry_point) + " " + reason + "; callers must check " +
                           "the kernel's support predicate first and use " + fallback);
}

}  // namespace mlxcel

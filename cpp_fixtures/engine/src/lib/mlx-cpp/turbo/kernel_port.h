// Port tables: one declaration of a kernel's per-backend ports.
//
// A port table is a function returning `const KernelPorts&` that holds a
// `static const KernelPorts` with one slot per backend. A null slot means
// "no port for that backend". Launchers dispatch only through
// select_kernel_port(); support predicates answer only through
// has_kernel_port() on the same table.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mlx/fast.h"
#include "turbo/gpu_backend.h"

namespace mlxcel {

using KernelPortGetter = mlx::core::fast::CustomKernelFunction& (*)();

struct KernelPorts {
  KernelPortGetter metal = nullptr;
  KernelPortGetter cuda = nullptr;
  KernelPortGetter rocm = nullptr;
  // Set only when the HIP body uses no lane-level operation, so the port is
  // correct at wavefront width 32 and 64 alike.
  bool rocm_any_wave_size = false;
};

// Template arguments of a kernel invocation.
using KernelTemplateArgs = std::vector<std::pair<std::string, mlx::core::fast::TemplateArg>>;

// True when the running backend has a port in this table that may run at
// the device's wavefront width.
bool has_kernel_port(const KernelPorts& ports);

// The port for the running backend. Throws a message naming the entry point
// and the fallback its caller should take when there is none.
mlx::core::fast::CustomKernelFunction& select_kernel_port(
    const char* entry_point, const char* fallback, const KernelPorts& ports);

// Builds a kernel on first use. Accessors own one holder per port.
class KernelHolder {
 public:
  using Factory = mlx::core::fast::CustomKernelFunction (*)();

  explicit KernelHolder(Factory factory) : factory_(factory) {}

  mlx::core::fast::CustomKernelFunction& get() {
    std::call_once(once_, [this] { kernel_.emplace(factory_()); });
    return *kernel_;
  }

 private:
  Factory factory_;
  std::once_flag once_;
  std::optional<mlx::core::fast::CustomKernelFunction> kernel_;
};

}  // namespace mlxcel

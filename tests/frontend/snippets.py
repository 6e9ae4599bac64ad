"""A small engine-shaped tree for unit tests, written for these tests only.

Each construct the front ends must recognise appears once, in a spelling
chosen to exercise one path of the extraction; tests look facts up by the
marker comments' line numbers (``line_of``).
"""

# Shared by the snippet trees: the includes, the port-table types and a
# call_once holder, as an engine declares them.
PORTS_PRELUDE = r'''#pragma once
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>
#include "mlx/mlx.h"
'''

KERNEL_PORTS_TYPES = r'''using KernelPortGetter = mlx::core::fast::CustomKernelFunction& (*)();
struct KernelPorts {
  KernelPortGetter metal = nullptr;
  KernelPortGetter cuda = nullptr;
  KernelPortGetter rocm = nullptr;
  bool rocm_any_wave_size = false;
};
using Args = std::vector<std::pair<std::string, mlx::core::fast::TemplateArg>>;
'''

HOLDER_CLASS = r'''class Holder {
 public:
  using Make = mlx::core::fast::CustomKernelFunction (*)();
  explicit Holder(Make make) : make_(make) {}
  mlx::core::fast::CustomKernelFunction& get() {
    std::call_once(once_, [this] { k_.emplace(make_()); });
    return *k_;
  }
 private:
  Make make_;
  std::once_flag once_;
  std::optional<mlx::core::fast::CustomKernelFunction> k_;
};
'''

PORTS_H = PORTS_PRELUDE + r'''
namespace mlxcel {
enum class GpuKernelBackend { None, Metal, Cuda, Rocm };
GpuKernelBackend gpu_kernel_backend();
bool custom_kernels_available();
void set_rocm_port_warp_size_for_tests(int warp_size);
''' + KERNEL_PORTS_TYPES + r'''bool has_kernel_port(const KernelPorts& ports);
mlx::core::fast::CustomKernelFunction& select_kernel_port(const char* entry, const char* fallback, const KernelPorts& ports);
''' + HOLDER_CLASS + r'''}  // namespace mlxcel
'''

ALPHA_CPP = r'''#include "eng/ports.h"
namespace mlxcel {
using mlx::core::array;
constexpr const char* ALPHA_METAL = R"(out[0] = x[0];)";
// the HIP body is split over two raw pieces; a lane op sits only in a comment
constexpr const char* ALPHA_HIP_SOURCE = R"(
  int i = threadIdx.x;   // __shfl_xor would be wrong here
)" R"(
  out[i] = x[i];
)";

template <GpuKernelBackend B>
mlx::core::fast::CustomKernelFunction make_alpha() {
  switch (B) {
    case GpuKernelBackend::Metal:
      return mlx::core::fast::metal_kernel("alpha", {"x"}, {"out"}, ALPHA_METAL);  // @alpha-metal-factory
#ifdef WITH_ROCM
    case GpuKernelBackend::Rocm:
      return mlx::core::fast::hip_kernel("alpha", {"x"}, {"out"}, ALPHA_HIP_SOURCE);  // @alpha-hip-factory
#endif
    default:
      return nullptr;
  }
}

template <GpuKernelBackend B>
Holder& get_alpha_kernel() {
  static Holder holder([] { return make_alpha<B>(); });
  return holder;
}

const KernelPorts& alpha_ports() {  // @alpha-table
  static const KernelPorts ports{
      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_alpha_kernel<GpuKernelBackend::Metal>().get(); },
#ifdef WITH_ROCM
      .rocm = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_alpha_kernel<GpuKernelBackend::Rocm>().get(); },
#endif
      .rocm_any_wave_size = true,
  };
  return ports;
}

const KernelPorts& alpha_small_ports() {  // @alpha-small-table
  static const KernelPorts ports{
      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_alpha_kernel<GpuKernelBackend::Metal>().get(); },
  };
  return ports;
}

bool alpha_available() {  // @alpha-predicate
  if (mlx::core::default_device() != mlx::core::Device(mlx::core::Device::gpu)) {
    return false;
  }
  return has_kernel_port(alpha_ports()) || has_kernel_port(alpha_small_ports());
}

static Args make_args(const array& in, int n) {
  Args a = {{"T", in.dtype()}};
  a.push_back({"N", n});
  return a;
}

#define LAUNCH_ALPHA(k, args) k({x, scale}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, args, std::nullopt, false, {})

array alpha(const array& x, bool small) {
  const KernelPorts& table = small ? alpha_small_ports() : alpha_ports();
  auto& kernel = select_kernel_port("alpha", "graph", table);  // @alpha-select
  const array scale{2.0f};
  auto out = LAUNCH_ALPHA(kernel, make_args(x, 4));  // @alpha-invoke
  return out[0];
}
}  // namespace mlxcel
'''

BETA_LAUNCH_H = r'''#pragma once
#include "eng/ports.h"
namespace mlxcel {
inline mlx::core::array launch_beta(mlx::core::fast::CustomKernelFunction& kernel, const mlx::core::array& x,
                                    mlx::core::Dtype acc) {
  const mlx::core::array y = mlx::core::astype(x, mlx::core::float32);
  Args targs;
  targs.emplace_back("ACC", acc);
#ifndef WITH_ROCM
  targs.push_back({"T", x.dtype()});
#endif
  auto out = kernel({x, y}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, targs, std::nullopt, false, {});  // @beta-invoke
  return out[0];
}
}  // namespace mlxcel
'''

BETA_CPP = r'''#include "eng/beta_launch.h"
namespace mlxcel {
Holder& get_beta_kernel() {
  static Holder holder([] { return mlx::core::fast::cuda_kernel("beta", {"x", "y"}, {"out"}, "out[0] = x[0];"); });
  return holder;
}
const KernelPorts& beta_ports() {
  static const KernelPorts ports{
      .cuda = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_beta_kernel().get(); },
  };
  return ports;
}
static mlx::core::fast::CustomKernelFunction& beta_kernel() {
  return select_kernel_port("beta", "graph", beta_ports());  // @beta-select
}
mlx::core::array beta(const mlx::core::array& x) {
  return launch_beta(beta_kernel(), x, mlx::core::float32);
}
}  // namespace mlxcel
'''

BAD_CPP = r'''#include "eng/ports.h"
namespace mlxcel {
Holder& get_alpha_direct();
template <GpuKernelBackend B> Holder& get_alpha_kernel();
// gpu_kernel_backend() == GpuKernelBackend::Cuda in a comment is not a test
static const char* kDoc = "gpu_kernel_backend() == GpuKernelBackend::Cuda";
#define IS_CUDA() (gpu_kernel_backend() == GpuKernelBackend::Cuda)

static bool is_rocm(GpuKernelBackend k) { return k == GpuKernelBackend::Rocm; }  // @param-test

struct Cached {
  GpuKernelBackend kind;
  Cached() { kind = gpu_kernel_backend(); }
  bool metal() const { return kind == GpuKernelBackend::Metal; }  // @member-test
};

int choose() {
  if (gpu_kernel_backend() == GpuKernelBackend::Cuda) return 1;  // @eq-test
  if (GpuKernelBackend::Metal != gpu_kernel_backend()) return 2;  // @ne-reversed-test
  auto b = gpu_kernel_backend();
  switch (b) {  // @switch-test
    case GpuKernelBackend::Rocm: return 3;
    default: break;
  }
  bool ok = custom_kernels_available();  // @bool-local
  int v = ok ? 4 : 5;  // @ternary-test
  if (IS_CUDA()) return 6;  // @macro-test
  if (is_rocm(gpu_kernel_backend())) return 7;
  return v;
}

void refuse() {
  if (!custom_kernels_available()) {  // @refusal
    throw std::runtime_error("no custom kernels");
  }
}

mlx::core::fast::CustomKernelFunction& direct() {
  auto& h = get_alpha_kernel<GpuKernelBackend::Metal>();  // @bound-ref
  h.get();
  set_rocm_port_warp_size_for_tests(64);  // @seam
  return get_alpha_kernel<GpuKernelBackend::Metal>().get();  // @direct-get
}
}  // namespace mlxcel
'''

TREE = {
    "src/eng/ports.h": PORTS_H,
    "src/eng/alpha.cpp": ALPHA_CPP,
    "src/eng/beta_launch.h": BETA_LAUNCH_H,
    "src/eng/beta.cpp": BETA_CPP,
    "src/eng/bad.cpp": BAD_CPP,
    "src/eng/unused_note.h": "#pragma once\n// select_kernel_port(\"x\", \"y\", t) only in a comment\n",
}

KERNELS = (
    {"name": "alpha", "table": "alpha_ports", "predicates": ["alpha_available"]},
    {"name": "beta", "table": "beta_ports"},
)


def line_of(marker: str) -> tuple:
    """(path, line) of the line carrying ``// @marker``."""
    for path, text in TREE.items():
        for i, line in enumerate(text.splitlines(), 1):
            if f"@{marker}" in line and (f"@{marker}" + " ") in line + " ":
                return path, i
    raise KeyError(marker)

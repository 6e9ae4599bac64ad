// Sampling kernels: a Metal-only top-k and a Gumbel-max sampler with Metal
// and CUDA ports built by one helper factory.
#include <mutex>
#include <optional>
#include <vector>

#include "mlx/mlx.h"
#include "turbo/gpu_backend.h"
#include "turbo/kernel_port.h"
#include "turbo/turbo_kernels.h"

namespace mlxcel {
namespace {

using mlx::core::array;

// A string, not a test: "top_k asks top_k_ports(), never
// gpu_kernel_backend() == GpuKernelBackend::Cuda or metal::is_available()".
constexpr const char* TOP_K_DISPATCH_NOTE =
    "top_k asks top_k_ports(), never gpu_kernel_backend() == GpuKernelBackend::Cuda or metal::is_available()";

// One thread per row; K passes, each taking the largest logit below the last.
constexpr const char* TOP_K_METAL_SOURCE = R"(
  uint row = thread_position_in_grid.x;
  float prev = INFINITY;
  for (int j = 0; j < K; ++j) {
    float best = -INFINITY;
    uint best_i = 0;
    for (uint i = 0; i < V; ++i) {
      float value = float(logits[row * V + i]);
      if (value < prev && value > best) {
        best = value;
        best_i = i;
      }
    }
    out[row * K + j] = best_i;
    prev = best;
  }
)";

// argmax(logits / temperature - log(-log(u))) per row.
constexpr const char* GUMBEL_METAL_SOURCE = R"(
  uint row = thread_position_in_grid.x;
  float best = -INFINITY;
  uint best_i = 0;
  for (uint i = 0; i < V; ++i) {
    float g = -metal::log(-metal::log(uniform[row * V + i]));
    float score = float(logits[row * V + i]) * inv_temp[0] + g;
    if (score > best) {
      best = score;
      best_i = i;
    }
  }
  out[row] = best_i;
)";

constexpr const char* GUMBEL_CUDA_SOURCE = R"(
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  float best = -INFINITY;
  unsigned int best_i = 0;
  for (int i = 0; i < V; ++i) {
    const float g = -logf(-logf(uniform[row * V + i]));
    const float score = static_cast<float>(logits[row * V + i]) * inv_temp[0] + g;
    if (score > best) {
      best = score;
      best_i = i;
    }
  }
  out[row] = best_i;
)";

// A holder type of its own: the factory runs inside std::call_once.
struct TopKKernel {
  std::once_flag once;
  std::optional<mlx::core::fast::CustomKernelFunction> kernel;

  mlx::core::fast::CustomKernelFunction& get() {
    std::call_once(once, [this] {
      kernel = mlx::core::fast::metal_kernel("mlxcel_top_k", {"logits"}, {"out"}, TOP_K_METAL_SOURCE);
    });
    return *kernel;
  }
};

TopKKernel& get_top_k_kernel() {
  static TopKKernel holder;
  return holder;
}

// backend is always a constant passed by a table slot's holder.
mlx::core::fast::CustomKernelFunction make_gumbel_kernel(GpuKernelBackend backend) {
  switch (backend) {
    case GpuKernelBackend::Metal:
      return mlx::core::fast::metal_kernel("mlxcel_gumbel", {"logits", "uniform", "inv_temp"}, {"out"}, GUMBEL_METAL_SOURCE);
    case GpuKernelBackend::Cuda:
      return mlx::core::fast::cuda_kernel("mlxcel_gumbel", {"logits", "uniform", "inv_temp"}, {"out"}, GUMBEL_CUDA_SOURCE);
    default:
      return nullptr;  // unreachable: no slot asks for another backend
  }
}

KernelHolder& get_gumbel_kernel() {
  static KernelHolder holder([] { return make_gumbel_kernel(GpuKernelBackend::Metal); });
  return holder;
}

KernelHolder& get_gumbel_kernel_cuda() {
  static KernelHolder holder([] { return make_gumbel_kernel(GpuKernelBackend::Cuda); });
  return holder;
}

}  // namespace

const KernelPorts& top_k_ports() {
  static const KernelPorts ports{
      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_top_k_kernel().get(); },
  };
  return ports;
}

const KernelPorts& gumbel_ports() {
  static const KernelPorts ports{
      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_gumbel_kernel().get(); },
      .cuda = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_gumbel_kernel_cuda().get(); },
  };
  return ports;
}

// No device pre-check: top_k_indices also serves GPU-resident logits when
// the default device is the CPU.
bool top_k_available() {
  return has_kernel_port(top_k_ports());
}

bool gumbel_sample_available() {
  if (mlx::core::default_device() != mlx::core::Device(mlx::core::Device::gpu)) {
    return false;
  }
  return has_kernel_port(gumbel_ports());
}

array top_k_indices(const array& logits, int k) {
  mlx::core::fast::CustomKernelFunction& kernel = select_kernel_port("top_k_indices", "mlx::core::argpartition", top_k_ports());
  const int vocab = logits.shape(-1);
  const int rows = static_cast<int>(logits.size()) / vocab;
  // Metal-only table: Metal's JIT cache key already includes input dtypes,
  // so no "T" key is needed.
  KernelTemplateArgs template_args = {{"K", k}, {"V", vocab}};
  std::vector<array> outputs = kernel(
      {logits},
      {{rows, k}},
      {mlx::core::uint32},
      {rows, 1, 1},
      {1, 1, 1},
      template_args,
      std::nullopt,
      false,
      {});
  return outputs[0];
}

array gumbel_sample(const array& logits, const array& uniform, float temperature) {
  mlx::core::fast::CustomKernelFunction& kernel = select_kernel_port("gumbel_sample", "mlx::core::random::categorical", gumbel_ports());
  const int vocab = logits.shape(-1);
  const int rows = static_cast<int>(logits.size()) / vocab;
  // Fixed dtypes: the noise is float32 and so is the scalar.
  const array u = mlx::core::astype(uniform, mlx::core::float32);
  const array inv_temp{1.0f / temperature};
  KernelTemplateArgs template_args;
  template_args.emplace_back("T", logits.dtype());
  template_args.emplace_back("V", vocab);
  std::vector<array> outputs = kernel(
      {logits, u, inv_temp},
      {{rows}},
      {mlx::core::uint32},
      {rows, 1, 1},
      {1, 1, 1},
      template_args,
      std::nullopt,
      false,
      {});
  return outputs[0];
}

}  // namespace mlxcel

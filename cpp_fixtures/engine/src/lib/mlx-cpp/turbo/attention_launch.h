// The launch shared by both attention tables. It lives in a header, so the
// dtype key has to be judged here, in every file that includes it.
#pragma once

#include <optional>
#include <vector>

#include "mlx/mlx.h"

namespace mlxcel {

// q: [heads, D]; k, v: [heads, L, D]. One thread per (dim, head).
inline mlx::core::array launch_attention(mlx::core::fast::CustomKernelFunction& kernel,
                                         const mlx::core::array& q, const mlx::core::array& k,
                                         const mlx::core::array& v, float scale, int window) {
  const int heads = q.shape(0);
  const int head_dim = q.shape(-1);
  const int length = k.shape(1);
  // k and v follow q's dtype; scale is a float32 scalar.
  const mlx::core::array keys = mlx::core::astype(k, q.dtype());
  const mlx::core::array values = mlx::core::astype(v, q.dtype());
  const mlx::core::array scale_array{scale};
  std::vector<mlx::core::array> outputs = kernel(
      {q, keys, values, scale_array},
      {q.shape()},
      {q.dtype()},
      {head_dim, heads, 1},
      {head_dim, 1, 1},
      {{"T", q.dtype()}, {"D", head_dim}, {"L", length}, {"WINDOW", window}},
      std::nullopt,
      false,
      {});
  return outputs[0];
}

}  // namespace mlxcel

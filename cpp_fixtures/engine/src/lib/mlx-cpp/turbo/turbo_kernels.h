// Fused GPU kernels of the engine: entry points and their support predicates.
//
// Call a predicate first; an entry point throws (naming its fallback) when
// the running backend has no port for it.
#pragma once

#include "mlx/array.h"

namespace mlxcel {

// fused_norm.cpp
mlx::core::array fused_add_rms_norm(const mlx::core::array& x, const mlx::core::array& residual,
                                    const mlx::core::array& weight, float eps);
bool fused_add_rms_norm_available();

// rope.cpp
mlx::core::array apply_rope(const mlx::core::array& x, const mlx::core::array& positions,
                            float base);
bool rope_available();

// attention.cpp (window == 0: attend to every key)
mlx::core::array scaled_dot_product_attention(const mlx::core::array& q,
                                              const mlx::core::array& k,
                                              const mlx::core::array& v, float scale, int window);
bool sdpa_available();

// kv_cache.cpp
mlx::core::array kv_cache_write(const mlx::core::array& cache, const mlx::core::array& values,
                                int offset);
bool kv_write_available();

// sampling.cpp
mlx::core::array top_k_indices(const mlx::core::array& logits, int k);
bool top_k_available();
mlx::core::array gumbel_sample(const mlx::core::array& logits, const mlx::core::array& uniform,
                               float temperature);
bool gumbel_sample_available();

// activations.cpp
mlx::core::array swiglu(const mlx::core::array& gate, const mlx::core::array& up);
bool swiglu_available();

}  // namespace mlxcel

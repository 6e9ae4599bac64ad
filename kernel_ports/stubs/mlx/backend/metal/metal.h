// kernel-ports stub: Metal availability (a backend query, SPEC §2).
#pragma once

namespace mlx::core::metal {
bool is_available();
}  // namespace mlx::core::metal

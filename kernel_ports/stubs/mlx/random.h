// kernel-ports stub: the random-number ops launchers use to make kernel inputs.
#pragma once

#include <optional>

#include "mlx/array.h"

namespace mlx::core::random {

// `width` bytes per element: 4 gives uint32, 2 uint16, 1 uint8.
array bits(const Shape& shape, int width = 4, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

}  // namespace mlx::core::random

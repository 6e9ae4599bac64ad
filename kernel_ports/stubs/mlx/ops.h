// kernel-ports stub: the few MLX ops that launchers call around a launch.
#pragma once

#include "mlx/array.h"

namespace mlx::core {

array astype(array a, Dtype dtype, StreamOrDevice s = {});
array zeros(const Shape& shape, Dtype dtype, StreamOrDevice s = {});
array reshape(const array& a, Shape shape, StreamOrDevice s = {});
array contiguous(const array& a, bool allow_col_major = false, StreamOrDevice s = {});
template <typename T>
array full(Shape shape, T value, Dtype dtype, StreamOrDevice s = {});
template <typename T>
array full(Shape shape, T value, StreamOrDevice s = {});
array argmax(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
array take_along_axis(const array& a, const array& indices, int axis, StreamOrDevice s = {});

}  // namespace mlx::core

// kernel-ports stub: the MLX ops that launchers call around a launch.
//
// Only what makes the code around a launch type: an op that is missing makes
// every value computed from it untyped, and the dtype-key rules then have to
// fail closed. Declarations only, following the MLX the engine pins.
#pragma once

#include <optional>
#include <vector>

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
array ones(const Shape& shape, Dtype dtype, StreamOrDevice s = {});
array arange(int start, int stop, int step = 1, StreamOrDevice s = {});

// shape and layout: the result has the first argument's dtype
array flatten(const array& a, StreamOrDevice s = {});
array transpose(const array& a, std::vector<int> axes, StreamOrDevice s = {});
array transpose(const array& a, StreamOrDevice s = {});
array squeeze(const array& a, int axis, StreamOrDevice s = {});
array expand_dims(const array& a, int axis, StreamOrDevice s = {});
array broadcast_to(const array& a, const Shape& shape, StreamOrDevice s = {});
array slice(const array& a, Shape start, Shape stop, StreamOrDevice s = {});
array slice(const array& a, Shape start, Shape stop, Shape strides, StreamOrDevice s = {});
array take(const array& a, const array& indices, int axis, StreamOrDevice s = {});
array take(const array& a, const array& indices, StreamOrDevice s = {});
array concatenate(std::vector<array> arrays, int axis, StreamOrDevice s = {});
array concatenate(std::vector<array> arrays, StreamOrDevice s = {});

// elementwise and reductions
array add(const array& a, const array& b, StreamOrDevice s = {});
array subtract(const array& a, const array& b, StreamOrDevice s = {});
array multiply(const array& a, const array& b, StreamOrDevice s = {});
array divide(const array& a, const array& b, StreamOrDevice s = {});
array minimum(const array& a, const array& b, StreamOrDevice s = {});
array maximum(const array& a, const array& b, StreamOrDevice s = {});
array greater(const array& a, const array& b, StreamOrDevice s = {});
array less(const array& a, const array& b, StreamOrDevice s = {});
array equal(const array& a, const array& b, StreamOrDevice s = {});
array where(const array& condition, const array& x, const array& y, StreamOrDevice s = {});
array negative(const array& a, StreamOrDevice s = {});
array abs(const array& a, StreamOrDevice s = {});
array exp(const array& a, StreamOrDevice s = {});
array log(const array& a, StreamOrDevice s = {});
array log1p(const array& a, StreamOrDevice s = {});
array sqrt(const array& a, StreamOrDevice s = {});
array rsqrt(const array& a, StreamOrDevice s = {});
array square(const array& a, StreamOrDevice s = {});
array tanh(const array& a, StreamOrDevice s = {});
array sigmoid(const array& a, StreamOrDevice s = {});
array clip(const array& a, const std::optional<array>& a_min, const std::optional<array>& a_max, StreamOrDevice s = {});
array sum(const array& a, bool keepdims = false, StreamOrDevice s = {});
array sum(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
array mean(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
array max(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
array softmax(const array& a, int axis, bool precise = false, StreamOrDevice s = {});
array matmul(const array& a, const array& b, StreamOrDevice s = {});
array argmin(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
array argsort(const array& a, int axis, StreamOrDevice s = {});
array argpartition(const array& a, int kth, int axis, StreamOrDevice s = {});
array argpartition(const array& a, int kth, StreamOrDevice s = {});
array operator+(const array& a, const array& b);
array operator-(const array& a, const array& b);
array operator*(const array& a, const array& b);
array operator/(const array& a, const array& b);
void eval(std::vector<array> outputs);

}  // namespace mlx::core

// kernel-ports stub: the slice of MLX's array API that engine launchers use.
//
// The Clang front end adds this directory with -idirafter, so a real MLX
// include directory (from compile_commands.json or the registry) always wins.
// Signatures follow the MLX the engine pins, not upstream head. Nothing is
// linked, so most members are declarations only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <variant>
#include <vector>

namespace mlx::core {

// A struct around an enum, as in MLX: a template arg built from
// `x.dtype()` must have the class type `Dtype` (the dtype-key rules look
// for it), not decay to an integer. As in MLX, comparisons and `switch`
// go through the conversion to `Val` (there is no operator==), which the
// front end looks through.
struct Dtype {
  enum class Val {
    bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64,
    float16, float32, float64, bfloat16, complex64,
  };
  constexpr explicit Dtype(Val v, uint8_t bytes) : val_(v), size_(bytes) {}
  constexpr operator Val() const { return val_; }
  constexpr Val val() const { return val_; }
  constexpr uint8_t size() const { return size_; }

 private:
  Val val_;
  uint8_t size_;
};

inline constexpr Dtype bool_{Dtype::Val::bool_, 1};
inline constexpr Dtype uint8{Dtype::Val::uint8, 1};
inline constexpr Dtype uint16{Dtype::Val::uint16, 2};
inline constexpr Dtype uint32{Dtype::Val::uint32, 4};
inline constexpr Dtype uint64{Dtype::Val::uint64, 8};
inline constexpr Dtype int8{Dtype::Val::int8, 1};
inline constexpr Dtype int16{Dtype::Val::int16, 2};
inline constexpr Dtype int32{Dtype::Val::int32, 4};
inline constexpr Dtype int64{Dtype::Val::int64, 8};
inline constexpr Dtype float16{Dtype::Val::float16, 2};
inline constexpr Dtype float32{Dtype::Val::float32, 4};
inline constexpr Dtype float64{Dtype::Val::float64, 8};
inline constexpr Dtype bfloat16{Dtype::Val::bfloat16, 2};
inline constexpr Dtype complex64{Dtype::Val::complex64, 8};

// `Device::gpu` is a static member of the nested enum's type, so both
// `Device(Device::gpu)` and `default_device().type == Device::gpu` compile.
// As in MLX, `==` is a defaulted member (so `!=` is C++20's rewritten `==`)
// and a device compares equal to a device type.
struct Device {
  enum class DeviceType { cpu, gpu };
  static constexpr DeviceType cpu = DeviceType::cpu;
  static constexpr DeviceType gpu = DeviceType::gpu;
  constexpr Device(DeviceType t, int i = 0) : type(t), index(i) {}
  DeviceType type;
  int index;
  bool operator==(const Device&) const = default;
};

inline bool operator==(const Device& device, Device::DeviceType type) { return device.type == type; }

const Device& default_device();

struct Stream {
  int index;
  Device device;
  constexpr explicit Stream(int i, Device d) : index(i), device(d) {}
  bool operator==(const Stream&) const = default;
};

struct ThreadLocalStream : public Stream {
  using Stream::Stream;
};

// Every op and every CustomKernelFunction takes one of these last; `{}` is
// "the default stream of the default device". The alternatives are MLX's:
// they are part of the kernel type's canonical spelling.
using StreamOrDevice = std::variant<std::monostate, Stream, ThreadLocalStream, Device, Device::DeviceType>;

// MLX's Shape is a small-vector class with inline storage, not an alias of
// std::vector. That difference is visible to Clang: canonical types in
// facts, and which constructor a braced list of ints picks. The stub keeps
// the class (with MLX's template parameters) and stores its items in a
// std::vector, which nobody can see.
template <typename T, size_t kSize = 10, typename Allocator = std::allocator<T>>
class SmallVector {
 public:
  SmallVector() = default;
  SmallVector(std::initializer_list<T> items) : items_(items) {}
  template <typename It>
  SmallVector(It first, It last) : items_(first, last) {}
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  T& operator[](size_t i) { return items_[i]; }
  const T& operator[](size_t i) const { return items_[i]; }
  T& back() { return items_.back(); }
  const T& back() const { return items_.back(); }
  void push_back(T value) { items_.push_back(value); }
  T* begin() { return items_.data(); }
  T* end() { return items_.data() + items_.size(); }
  const T* begin() const { return items_.data(); }
  const T* end() const { return items_.data() + items_.size(); }
  bool operator==(const SmallVector& other) const { return items_ == other.items_; }
  bool operator!=(const SmallVector& other) const { return items_ != other.items_; }

 private:
  std::vector<T, Allocator> items_;
};

using ShapeElem = int32_t;
using Shape = SmallVector<ShapeElem>;

class array {
 public:
  // A float list makes a float32 array (used for scalar kernel inputs).
  array(std::initializer_list<float> data);
  array(std::initializer_list<float> data, Dtype dtype);
  array(std::initializer_list<int> data, Dtype dtype);
  // A C++ scalar makes a 0-d array (of the scalar's dtype unless one is given).
  template <typename T>
  explicit array(T value, Dtype dtype = float32);

  Dtype dtype() const;
  const Shape& shape() const;
  int shape(int dim) const;  // negative dims count from the end
  size_t ndim() const;
  size_t size() const;
  size_t nbytes() const;
  void eval();
  template <typename T>
  T* data();
  template <typename T>
  const T* data() const;
  template <typename T>
  T item();

 private:
  std::shared_ptr<void> data_;
};

}  // namespace mlx::core

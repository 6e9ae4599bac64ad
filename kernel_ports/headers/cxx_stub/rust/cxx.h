// kernel-ports stub: the part of the cxx crate's C++ API (rust/cxx.h) that
// engine bridges use, for parsing when no cxx crate is installed. Declarations
// only, nothing is linked. The names sit in cxx's inline namespace, as in the
// crate, so canonical types read the same with the real header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <string>
#include <type_traits>

namespace rust {
inline namespace cxxbridge1 {

class String;

// A borrowed UTF-8 string (&str).
class Str final {
 public:
  Str() noexcept;
  Str(const String&) noexcept;
  Str(const std::string&);
  Str(const char*);
  Str(const char*, std::size_t);
  explicit operator std::string() const;
  const char* data() const noexcept;
  std::size_t size() const noexcept;
  std::size_t length() const noexcept;
  bool empty() const noexcept;
  const char* begin() const noexcept;
  const char* end() const noexcept;
  bool operator==(const Str&) const noexcept;
  bool operator!=(const Str&) const noexcept;
};

// An owned UTF-8 string (String).
class String final {
 public:
  String() noexcept;
  String(const String&) noexcept;
  String(String&&) noexcept;
  ~String() noexcept;
  String(const std::string&);
  String(const char*);
  String(const char*, std::size_t);
  String& operator=(const String&) & noexcept;
  String& operator=(String&&) & noexcept;
  explicit operator std::string() const;
  const char* data() const noexcept;
  std::size_t size() const noexcept;
  std::size_t length() const noexcept;
  bool empty() const noexcept;
  const char* c_str() noexcept;
  char* begin() noexcept;
  char* end() noexcept;
  const char* begin() const noexcept;
  const char* end() const noexcept;
  bool operator==(const String&) const noexcept;
  bool operator!=(const String&) const noexcept;

 private:
  std::uintptr_t repr[3];
};

// A borrowed contiguous run (&[T] / &mut [T]).
template <typename T>
class Slice final {
 public:
  using value_type = T;
  Slice() noexcept;
  Slice(T*, std::size_t count) noexcept;
  T* data() const noexcept;
  std::size_t size() const noexcept;
  std::size_t length() const noexcept;
  bool empty() const noexcept;
  T& operator[](std::size_t n) const noexcept;
  T& at(std::size_t n) const;
  T& front() const noexcept;
  T& back() const noexcept;
  T* begin() const noexcept;
  T* end() const noexcept;

 private:
  std::uintptr_t repr[2];
};

// An owned heap value (Box<T>).
template <typename T>
class Box final {
 public:
  using element_type = T;
  Box(Box&&) noexcept;
  ~Box() noexcept;
  explicit Box(const T&);
  explicit Box(T&&);
  Box& operator=(Box&&) & noexcept;
  const T* operator->() const noexcept;
  const T& operator*() const noexcept;
  T* operator->() noexcept;
  T& operator*() noexcept;
  template <typename... Fields>
  static Box in_place(Fields&&...);
  static Box from_raw(T*) noexcept;
  T* into_raw() noexcept;

 private:
  Box() noexcept = default;
  T* ptr;
};

// An owned growable array (Vec<T>).
template <typename T>
class Vec final {
 public:
  using value_type = T;
  Vec() noexcept;
  Vec(std::initializer_list<T>);
  Vec(const Vec&);
  Vec(Vec&&) noexcept;
  ~Vec() noexcept;
  Vec& operator=(Vec&&) & noexcept;
  Vec& operator=(const Vec&) &;
  std::size_t size() const noexcept;
  bool empty() const noexcept;
  const T* data() const noexcept;
  T* data() noexcept;
  std::size_t capacity() const noexcept;
  const T& operator[](std::size_t n) const noexcept;
  T& operator[](std::size_t n) noexcept;
  const T& at(std::size_t n) const;
  T& at(std::size_t n);
  const T& front() const noexcept;
  const T& back() const noexcept;
  void reserve(std::size_t new_cap);
  void push_back(const T& value);
  void push_back(T&& value);
  template <typename... Args>
  void emplace_back(Args&&... args);
  void truncate(std::size_t len);
  void clear();
  T* begin() noexcept;
  T* end() noexcept;
  const T* begin() const noexcept;
  const T* end() const noexcept;

 private:
  std::uintptr_t repr[3];
};

// A Rust function pointer callable from C++ (fn(Args) -> Ret).
template <typename Signature>
class Fn;

template <typename Ret, typename... Args>
class Fn<Ret(Args...)> final {
 public:
  Ret operator()(Args... args) const noexcept;
  Fn operator*() const noexcept;

 private:
  Ret (*trampoline)(Args..., void* fn) noexcept;
  void* fn;
};

// What a Rust `Result::Err` becomes when it crosses into C++.
class Error final : public std::exception {
 public:
  Error(const Error&);
  Error(Error&&) noexcept;
  ~Error() noexcept override;
  Error& operator=(const Error&) &;
  Error& operator=(Error&&) & noexcept;
  const char* what() const noexcept override;

 private:
  const char* msg;
  std::size_t len;
};

using isize = std::make_signed<std::size_t>::type;
using usize = std::size_t;
using i8 = std::int8_t;
using u8 = std::uint8_t;
using i16 = std::int16_t;
using u16 = std::uint16_t;
using i32 = std::int32_t;
using u32 = std::uint32_t;
using i64 = std::int64_t;
using u64 = std::uint64_t;
using f32 = float;
using f64 = double;

// The snake_case spellings cxx also offers.
using string = String;
using str = Str;
template <typename T>
using slice = Slice<T>;
template <typename T>
using box = Box<T>;
template <typename T>
using vec = Vec<T>;
template <typename Signature>
using fn = Fn<Signature>;
using error = Error;

}  // namespace cxxbridge1
}  // namespace rust

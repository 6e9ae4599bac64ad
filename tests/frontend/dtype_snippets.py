"""A small tree of kernel launches for the dtype-key facts, written for these tests only.

Every launch uses one table with a CUDA port; each shows one way of passing
template args or inputs. Tests find invocations by the ``// @marker`` on the
launch line (``line_of``).
"""

from snippets import HOLDER_CLASS, KERNEL_PORTS_TYPES, PORTS_PRELUDE

PORTS_H = PORTS_PRELUDE + r'''
namespace mlxcel {
''' + KERNEL_PORTS_TYPES + r'''mlx::core::fast::CustomKernelFunction& select_kernel_port(const char* entry, const char* fallback, const KernelPorts& ports);
const KernelPorts& k_ports();
''' + HOLDER_CLASS + r'''}  // namespace mlxcel
'''

# A header launch defined before its caller: the Dtype parameter and the
# template-args parameter are resolved through callers found later in the unit.
LAUNCH_H = r'''#pragma once
#include "dt/ports.h"
namespace mlxcel {
inline mlx::core::array launch_dt(mlx::core::fast::CustomKernelFunction& kernel, const mlx::core::array& a,
                                  const mlx::core::array& b, mlx::core::Dtype dt) {
  auto out = kernel({a, b}, {a.shape()}, {a.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"T", dt}}, std::nullopt, false, {});  // @param-dtype
  return out[0];
}

// never called here: the Dtype parameter stays a parameter
inline mlx::core::array launch_cast(mlx::core::fast::CustomKernelFunction& kernel, const mlx::core::array& a,
                                    const mlx::core::array& b, mlx::core::Dtype dt) {
  const mlx::core::array bc = mlx::core::astype(b, dt);
  auto out = kernel({a, bc}, {a.shape()}, {dt}, {1, 1, 1}, {1, 1, 1}, {{"T", dt}}, std::nullopt, false, {});  // @cast-to-param
  return out[0];
}

inline mlx::core::array launch_args(mlx::core::fast::CustomKernelFunction& kernel, const mlx::core::array& a,
                                    const Args& targs) {
  auto out = kernel({a}, {a.shape()}, {a.dtype()}, {1, 1, 1}, {1, 1, 1}, targs, std::nullopt, false, {});  // @param-args
  return out[0];
}
}  // namespace mlxcel
'''

LAUNCH_CPP = r'''#include "dt/launch.h"
namespace mlxcel {
using mlx::core::array;

static void add_dtype(Args& args, const array& in) {
  args.push_back({"T", in.dtype()});
}

static void add_nothing(Args& args, int n) {
  args.emplace_back("N", n);
}

void opaque_fill(Args& args);

array callers(const array& x, const array& y) {
  auto& kernel = select_kernel_port("k", "graph", k_ports());
  const array yy = mlx::core::astype(y, x.dtype());
  launch_dt(kernel, x, yy, x.dtype());
  return launch_args(kernel, y, {{"T", y.dtype()}});
}

array checked(const array& x, const array& w) {
  auto& kernel = select_kernel_port("k", "graph", k_ports());
  if (w.dtype() != x.dtype()) {
    throw std::invalid_argument("w must match x");
  }
  const mlx::core::Dtype dt = x.dtype();
  const array alias = w;
  auto out = kernel({x, alias}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"T", dt}}, std::nullopt, false, {});  // @checked
  return out[0];
}

array out_param(const array& x) {
  auto& kernel = select_kernel_port("k", "graph", k_ports());
  Args targs;
  add_dtype(targs, x);
  add_nothing(targs, 3);
  auto out = kernel({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, targs, std::nullopt, false, {});  // @out-param
  return out[0];
}

array out_param_unknown(const array& x) {
  auto& kernel = select_kernel_port("k", "graph", k_ports());
  Args targs;
  opaque_fill(targs);
  auto out = kernel({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, targs, std::nullopt, false, {});  // @out-param-unknown
  return out[0];
}

array pair_local(const array& x) {
  auto& kernel = select_kernel_port("k", "graph", k_ports());
  Args targs;
  std::pair<std::string, mlx::core::fast::TemplateArg> entry{"T", x.dtype()};
  targs.push_back(entry);
  auto out = kernel({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, targs, std::nullopt, false, {});  // @pair-local
  return out[0];
}

// inputs built with ops the stubs declare: full(shape, v, dtype), array(v, dtype), array(v)
array stub_ops(const array& x, float scale, int n) {
  auto& kernel = select_kernel_port("k", "graph", k_ports());
  auto scale_arr = mlx::core::full(mlx::core::Shape{1}, scale, mlx::core::float32);
  auto count = mlx::core::array(n, mlx::core::int32);
  auto plain = mlx::core::array(n);
  auto out = kernel({x, scale_arr, count, plain}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"T", x.dtype()}}, std::nullopt, false, {});  // @stub-ops
  return out[0];
}

// inputs from ops whose result dtype is fixed: random bits of a constant width, argmax
array fixed_result(const array& x, int width) {
  auto& kernel = select_kernel_port("k", "graph", k_ports());
  auto key = mlx::core::random::bits(mlx::core::Shape{2}, 4);
  auto narrow = mlx::core::random::bits(mlx::core::Shape{2}, 2);
  auto plain_key = mlx::core::random::bits(mlx::core::Shape{2});
  auto varying = mlx::core::random::bits(mlx::core::Shape{2}, width);
  auto best = mlx::core::argmax(x, -1);
  auto out = kernel({x, key, narrow, plain_key, varying, best}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"T", x.dtype()}}, std::nullopt, false, {});  // @fixed-result
  return out[0];
}

// inputs refused unless their dtype is one constant; `loose` and `quiet` are not refused
array const_checked(const array& x, const array& idx, const array& offsets, const array& loose, const array& quiet) {
  auto& kernel = select_kernel_port("k", "graph", k_ports());
  if (idx.dtype() != mlx::core::int32 || mlx::core::uint32 != offsets.dtype()) {
    throw std::invalid_argument("idx must be int32 and offsets uint32");
  }
  if (loose.dtype() != mlx::core::int32 && loose.dtype() != mlx::core::int64) {
    throw std::invalid_argument("loose must be an integer");
  }
  if (quiet.dtype() != mlx::core::int32) {
    (void)quiet;
  }
  auto out = kernel({x, idx, offsets, loose, quiet}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"T", x.dtype()}}, std::nullopt, false, {});  // @const-checked
  return out[0];
}

// a wrapper holding its array in a member, and inputs reshaped from keyed arrays
struct Wrapped {
  array inner;
};
array reshaped(const Wrapped& w, const array& y) {
  auto& kernel = select_kernel_port("k", "graph", k_ports());
  auto dt = w.inner.dtype();
  auto flat = mlx::core::reshape(w.inner, {-1});
  auto cast_flat = mlx::core::reshape(mlx::core::astype(y, dt), {-1});
  auto out = kernel({flat, cast_flat, w.inner}, {flat.shape()}, {dt}, {1, 1, 1}, {1, 1, 1}, {{"T", dt}}, std::nullopt, false, {});  // @reshaped
  return out[0];
}

// a bias made at the keyed dtype on both branches, and the float32 output of a first launch fed to a second
array chained(const array& x, const array* bias, int n) {
  auto& kernel = select_kernel_port("k", "graph", k_ports());
  auto dt = x.dtype();
  array bias_arr = bias ? mlx::core::astype(*bias, dt) : mlx::core::zeros({1}, dt);
  array fixed_bias = bias ? mlx::core::astype(*bias, mlx::core::float32) : mlx::core::zeros({1}, mlx::core::float32);
  auto first = kernel({x}, {x.shape()}, {mlx::core::float32, mlx::core::int32}, {1, 1, 1}, {1, 1, 1}, {{"T", dt}}, std::nullopt, false, {});
  auto out = kernel({x, bias_arr, fixed_bias, first[0], first[1]}, {x.shape()}, {dt}, {1, 1, 1}, {1, 1, 1}, {{"T", dt}}, std::nullopt, false, {});  // @chained
  return out[0];
}

// template args kept in a member, filled by the constructor
class MemberLaunch {
 public:
  explicit MemberLaunch(const array& x) : x_(x), targs_{{"N", 4}} {
    targs_.push_back({"T", x_.dtype()});
  }
  array run() {
    auto& kernel = select_kernel_port("k", "graph", k_ports());
    auto out = kernel({x_}, {x_.shape()}, {x_.dtype()}, {1, 1, 1}, {1, 1, 1}, targs_, std::nullopt, false, {});  // @member-args
    return out[0];
  }

 private:
  array x_;
  Args targs_;
};

// ... and one that a method defined in another unit may change
class MemberElsewhere {
 public:
  array run(const array& x) {
    auto& kernel = select_kernel_port("k", "graph", k_ports());
    auto out = kernel({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, more_, std::nullopt, false, {});  // @member-args-elsewhere
    return out[0];
  }
  void fill(const array& y);

 private:
  Args more_;
};
}  // namespace mlxcel
'''

PORTS_CPP = r'''#include "dt/ports.h"
namespace mlxcel {
namespace {
Holder& get_k_kernel() {
  static Holder holder([] { return mlx::core::fast::metal_kernel("k", {"a"}, {"out"}, "out[0] = a[0];"); });
  return holder;
}
Holder& get_k_kernel_cuda() {
  static Holder holder([] { return mlx::core::fast::cuda_kernel("k", {"a"}, {"out"}, "out[0] = a[0];"); });
  return holder;
}
}  // namespace
const KernelPorts& k_ports() {
  static const KernelPorts ports{
      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_k_kernel().get(); },
      .cuda = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_k_kernel_cuda().get(); },
  };
  return ports;
}
}  // namespace mlxcel
'''

TREE = {
    "src/dt/ports.cpp": PORTS_CPP,
    "src/dt/ports.h": PORTS_H,
    "src/dt/launch.h": LAUNCH_H,
    "src/dt/launch.cpp": LAUNCH_CPP,
}


def line_of(marker: str) -> tuple:
    """(path, line) of the line carrying ``// @marker``."""
    for path, text in TREE.items():
        for i, line in enumerate(text.splitlines(), 1):
            if (f"@{marker}" + " ") in line + " ":
                return path, i
    raise KeyError(marker)

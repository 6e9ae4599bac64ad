"""A backend value held in a member is a runtime value however the member is
initialised: assignment, default member initialiser or constructor initialiser."""

from helpers import files_under, make_registry, write_tree
from kernel_ports.index import build_index

MEMBERS_CPP = r'''#include "mlx/mlx.h"
namespace mlxcel {
enum class GpuKernelBackend { None, Metal, Cuda, Rocm };
GpuKernelBackend gpu_kernel_backend();
struct ByDefault {
  GpuKernelBackend kind = gpu_kernel_backend();
};
struct ByInitialiser {
  GpuKernelBackend kind;
  int width;
  ByInitialiser() : kind(gpu_kernel_backend()), width(32) {}
};
struct ByAssignment {
  GpuKernelBackend kind;
  void load() { kind = gpu_kernel_backend(); }
};
struct Constant {
  GpuKernelBackend kind;
  Constant() : kind(GpuKernelBackend::Metal) {}
};
int choose() {
  ByDefault a;
  ByInitialiser b;
  ByAssignment c;
  c.load();
  Constant d;
  int v = 0;
  if (a.kind == GpuKernelBackend::Cuda) v = 1;  // @default-init
  if (b.kind == GpuKernelBackend::Cuda) v = 2;  // @ctor-init
  if (c.kind == GpuKernelBackend::Cuda) v = 3;  // @assigned
  if (b.width == 32) v = 4;  // @other-member
  if (d.kind == GpuKernelBackend::Cuda) v = 5;  // @constant-member
  return v;
}
}  // namespace mlxcel
'''


def _line(marker):
    return next(i for i, line in enumerate(MEMBERS_CPP.splitlines(), 1) if f"@{marker}" in line)


def test_member_initialisers_carry_the_query(tmp_path):
    write_tree(tmp_path, {"src/members.cpp": MEMBERS_CPP})
    reg = make_registry(tmp_path)
    idx = build_index(reg, files_under(reg.root), jobs=1, use_cache=False)
    runtime = {b.loc.line: b for b in idx.backend_tests if b.loc.path == "src/members.cpp" and b.origin == "runtime"}
    for marker in ("default-init", "ctor-init", "assigned"):
        b = runtime.get(_line(marker))
        assert b is not None, marker
        assert (b.via, b.query, b.operator) == ("member", "mlxcel::gpu_kernel_backend", "=="), marker
    assert _line("other-member") not in runtime
    assert _line("constant-member") not in runtime

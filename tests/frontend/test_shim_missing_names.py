"""A call of a name the bundled ROCm shim does not declare (a function of the ROCm fork's backend) is not a lost
construct when it names no target construct: no KP902, and the parse notes say which fork names were missing."""

from helpers import index_tree, marker_line
from snippets import PORTS_H

from kernel_ports import parse_summary

FORK_CPP = r'''#include "eng/ports.h"
#include "mlx/backend/rocm/rocm.h"
namespace mlxcel {
using namespace mlx::core;
// nine arguments: the witness takes each call below for a possible kernel invocation
bool fork_gemm_ok(const array& x, int rows, int cols, int depth, int group, int bits) {
  if (!rocm::is_available()) {
    return true;
  }
  return rocm::fork_only_gemm_probe(0, rows, cols, depth, x.dtype(), x.dtype(), group, bits, true);  // @fork
}
bool fork_other(const array& x, int rows) {
  return rocm::fork_only_tile_probe(x, rows, rows, rows, rows, rows, rows, rows, rows);  // @fork-two
}
bool not_the_shim(const array& x, int rows) {
  return cu::missing_cuda_probe(x, rows, rows, rows, rows, rows, rows, rows, rows);  // @other-namespace
}
}  // namespace mlxcel
'''

TREE = {"src/eng/ports.h": PORTS_H, "src/eng/fork.cpp": FORK_CPP}


def _line(marker):
    return marker_line(FORK_CPP, marker)


def test_fork_names_the_shim_lacks_are_noted_not_lost(tmp_path):
    idx = index_tree(tmp_path, TREE)
    assert idx.headers.get("rocm_shim"), idx.headers  # judged with the shim (mlx-cpu has no mlx/backend/rocm)
    lost = {u.loc.line: u for u in idx.unconfirmed if u.loc.path == "src/eng/fork.cpp"}
    assert _line("fork") not in lost and _line("fork-two") not in lost, idx.unconfirmed
    # negative control: a name missing from a namespace the shim does not stand in for is still a lost candidate
    assert _line("other-namespace") in lost
    assert idx.missing_from_shim == ("mlx::core::rocm::fork_only_gemm_probe", "mlx::core::rocm::fork_only_tile_probe")
    errors = parse_summary.parse_errors(idx)
    assert errors["missing_from_shim"] == list(idx.missing_from_shim)
    (note,) = [n for n in parse_summary.notes({}, errors) if "ROCm shim" in n]
    assert "mlx::core::rocm::fork_only_gemm_probe, mlx::core::rocm::fork_only_tile_probe" in note

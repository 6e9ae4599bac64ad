"""An engine with no port table (launches straight from holders) is judged on what holds without the convention.

`init` with no flags writes that choice, and why, into the registry; `check` runs the dtype-key rules and the
front-end rules, says in its summary that the convention rules wait for the first port table, and does not fail
on them. The same tree gaining one table gets the convention rules back, as today.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kernel_ports import cli

sys.path.insert(0, str(Path(__file__).resolve().parent / "frontend"))
from snippets import KERNEL_PORTS_TYPES  # noqa: E402

LAUNCHER = r'''#include <mutex>
#include <optional>
#include "mlx/mlx.h"
#include "mlx/backend/metal/metal.h"
namespace mlxcel {
using mlx::core::array;
class ScaleHolder {
 public:
  mlx::core::fast::CustomKernelFunction& get() {
    std::call_once(once_, [this] {
      k_.emplace(mlx::core::fast::cuda_kernel("scale", {"x"}, {"out"}, "out[0] = x[0] * 2;"));
    });
    return *k_;
  }
 private:
  std::once_flag once_;
  std::optional<mlx::core::fast::CustomKernelFunction> k_;
};
ScaleHolder& get_scale_kernel() {
  static ScaleHolder holder;
  return holder;
}
array scale(const array& x) {
  if (!mlx::core::metal::is_available()) {  // @backend-test
    return x;
  }
  auto& kernel = get_scale_kernel().get();  // @holder
  auto outs = kernel({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"N", 4}}, std::nullopt, false, {});  // @launch
  return outs[0];
}
}  // namespace mlxcel
'''

TABLE = r'''#include "mlx/mlx.h"
namespace mlxcel {
''' + KERNEL_PORTS_TYPES + r'''mlx::core::fast::CustomKernelFunction& select_kernel_port(const char* entry, const char* fallback,
                                                          const KernelPorts& ports);
mlx::core::fast::CustomKernelFunction& scale_cuda_port();
const KernelPorts& scale_ports() {
  static const KernelPorts ports{.cuda = &scale_cuda_port};
  return ports;
}
}  // namespace mlxcel
'''


def _line(marker):
    return next(i for i, line in enumerate(LAUNCHER.splitlines(), 1) if f"@{marker}" in line)


def _run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _check(capsys, reg, root):
    code, out, err = _run(capsys, "check", "--registry", reg, "--root", root, "--format", "json")
    return code, json.loads(out)


def test_a_tree_without_tables_then_with_its_first(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = tmp_path / "engine"
    (root / "src").mkdir(parents=True)
    (root / "src" / "scale.cpp").write_text(LAUNCHER)
    reg = tmp_path / "reg.yaml"
    code, _, err = _run(capsys, "init", "--root", root, "--output", reg)
    assert code == 0, err
    text = reg.read_text()
    assert "# NOTE: no port table in the tree: the port-table convention rules (KP101," in text
    code, report = _check(capsys, reg, root)
    found = {(f["rule"], f["line"]) for f in report["findings"]}
    # what holds without the convention: the launch's template args name no input dtype
    assert found == {("KP201", _line("launch"))}, report["findings"]
    assert code == 1
    summary = report["summary"]
    assert summary["convention_waits"][:3] == ["KP101", "KP102", "KP103"]
    assert not {"KP101", "KP103", "KP301"} & set(summary["rules_run"]) and "KP201" in summary["rules_run"]
    assert any(n.startswith("no port table in the tree") for n in summary["notes"])

    # the first port table: the convention rules apply again, to the same code
    (root / "src" / "scale_ports.cpp").write_text(TABLE)
    code, report = _check(capsys, reg, root)
    found = {(f["rule"], f["path"], f["line"]) for f in report["findings"]}
    assert ("KP101", "src/scale.cpp", _line("backend-test")) in found, report["findings"]
    assert ("KP103", "src/scale.cpp", _line("holder")) in found, report["findings"]
    table_line = next(i for i, line in enumerate(TABLE.splitlines(), 1) if line.startswith("const KernelPorts& scale_ports"))
    assert ("KP301", "src/scale_ports.cpp", table_line) in found  # the new table is not in the registry yet
    assert "convention_waits" not in report["summary"] and "KP101" in report["summary"]["rules_run"]

"""The precompiled prelude: built once, reused by later runs even for one changed file, and never a reason to lose
a file (a prelude Clang rejects is dropped for that parse)."""

from pathlib import Path

from helpers import files_under, make_registry, write_tree
from kernel_ports import index as index_mod
from kernel_ports.frontend import clang_fe
from kernel_ports.index import build_index

LAUNCHER = r'''#include <vector>
#include "mlx/mlx.h"
namespace eng {
mlx::core::fast::CustomKernelFunction make_%(n)s() {
  return mlx::core::fast::metal_kernel("k%(n)s", {"x"}, {"out"}, "out[0] = x[0];");
}
}  // namespace eng
'''


def _record_parse_jobs(monkeypatch):
    jobs = []
    real = index_mod._Pool.run

    def run(self, todo, timeout):
        jobs.extend(job for _, (kind, job) in todo if kind == "parse")
        return real(self, todo, timeout)

    monkeypatch.setattr(index_mod._Pool, "run", run)
    return jobs


def test_one_changed_file_uses_the_prelude_of_an_earlier_run(tmp_path, monkeypatch):
    root = tmp_path / "tree"
    write_tree(root, {f"src/k{n}.cpp": LAUNCHER % {"n": n} for n in range(3)})
    reg = make_registry(root)
    cache = tmp_path / "cache"
    first = build_index(reg, files_under(root), jobs=2, cache_dir=cache)
    assert len(first.factory_calls) == 3
    assert list((cache / "v1" / "pch").glob("prelude-*.pch"))
    (root / "src/k1.cpp").write_text((LAUNCHER % {"n": 1}) + "// edited\n")
    jobs = _record_parse_jobs(monkeypatch)
    second = build_index(reg, files_under(root), jobs=2, cache_dir=cache)
    assert [j.relpath for j in jobs] == ["src/k1.cpp"]  # the others come from the cache
    assert "-include-pch" in jobs[0].args
    assert {fc.kernel_name for fc in second.factory_calls} == {"k0", "k1", "k2"}


def test_a_rejected_prelude_does_not_lose_the_file(tmp_path):
    write_tree(tmp_path, {"src/k.cpp": LAUNCHER % {"n": 0}})
    reg = make_registry(tmp_path)
    bad = tmp_path / "stale.pch"
    bad.write_bytes(b"not a precompiled header")
    conf = reg.compile.configurations[0]
    job = clang_fe.ParseJob(
        abspath=str(tmp_path / "src/k.cpp"), relpath="src/k.cpp", configuration=conf.name,
        args=tuple(clang_fe.build_args(reg, conf, "src/k.cpp")) + ("-include-pch", str(bad)),
        root=str(Path(reg.root)), project_files=frozenset({"src/k.cpp"}), conventions=clang_fe.Conventions.from_registry(reg))
    res = clang_fe.parse_translation_unit(job)
    assert res.ok and res.errors == 0
    assert [fc.kernel_name for fc in res.factory_calls] == ["k0"]

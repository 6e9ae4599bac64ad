"""The prelude build a cold run waits for first starts before the rest of the index is imported: the CLI starts it
(``prelude.start_for_build``) and hands it to ``build_index``, which then starts no other."""

import subprocess
import sys

from helpers import files_under, make_registry, write_tree
from kernel_ports.index import build_index, prelude
from tests.frontend.test_prelude import LAUNCHER, _record_parse_jobs


def test_the_early_start_imports_no_graph_library():
    # what the early start needs of the index must not pull networkx (nor the rest of the index) in
    code = ("import sys, kernel_ports.index.prelude as p; assert callable(p.start_for_build); "
            "print(sorted(m for m in ('networkx', 'kernel_ports.index.build', 'kernel_ports.index.merge') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_prelude_started_by_the_caller_is_the_one_the_build_uses(tmp_path, monkeypatch):
    root = tmp_path / "tree"
    write_tree(root, {f"src/k{n}.cpp": LAUNCHER % {"n": n} for n in range(3)})
    reg = make_registry(root)
    cache = tmp_path / "cache"
    files = files_under(root)
    early = prelude.start_for_build(reg, files, cache_dir=cache)
    assert early.process is not None  # three sources and no prelude yet: worth starting
    started = []
    monkeypatch.setattr(prelude, "start_early_prelude", lambda *a, **k: started.append(a))
    jobs = _record_parse_jobs(monkeypatch)
    idx = build_index(reg, files, jobs=2, cache_dir=cache, early_prelude=early)
    assert started == []  # build_index started no second build
    assert {fc.kernel_name for fc in idx.factory_calls} == {"k0", "k1", "k2"}
    pchs = {j.args[j.args.index("-include-pch") + 1] for j in jobs}
    assert len(pchs) == 1
    assert [p.name for p in (cache / "data-v2" / "pch").glob("prelude-*.pch")] == [p.rsplit("/", 1)[-1] for p in pchs]


def test_no_early_start_without_a_cache_or_once_the_prelude_is_kept(tmp_path):
    root = tmp_path / "tree"
    write_tree(root, {f"src/k{n}.cpp": LAUNCHER % {"n": n} for n in range(3)})
    reg = make_registry(root)
    files = files_under(root)
    assert prelude.start_for_build(reg, files, use_cache=False).process is None
    build_index(reg, files, jobs=2, cache_dir=tmp_path / "cache")
    assert prelude.start_for_build(reg, files, cache_dir=tmp_path / "cache").process is None  # kept: nothing to build

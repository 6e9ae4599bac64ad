"""After an edit, the edited units start parsing from the last focus's decision (index/plan.py ``TreeFocus.guess``)
while the focus is decided again; a parse started so counts only when the focus then wants that same job, and one
it does not want is given up. Either way the index is a fresh build's."""

from __future__ import annotations

import pytest

from kernel_ports.index import build, build_index
from kernel_ports.index.parsing import Parsing

from tests.frontend.test_focus import PADDED_LAUNCHER, _strip


@pytest.fixture()
def tree(tmp_path, monkeypatch):
    """Three padded launchers, built once into the cache ``c``; (root, build with that cache, the parses started
    ahead and those given up by each build since)."""
    from helpers import files_under, make_registry, write_tree

    root = tmp_path / "tree"
    write_tree(root, {f"src/k{n}.cpp": PADDED_LAUNCHER % {"n": n} for n in range(3)})
    reg = make_registry(root)
    ahead, given_up = [], []
    start_ahead, withdraw = build._start_ahead, Parsing.withdraw
    monkeypatch.setattr(build, "_start_ahead", lambda *a: ahead.append(start_ahead(*a)) or ahead[-1])
    monkeypatch.setattr(Parsing, "withdraw", lambda self, keys: given_up.append(set(keys)) or withdraw(self, keys))

    def index(cache: str = "c"):
        return build_index(reg, files_under(root), jobs=2, cache_dir=tmp_path / cache)

    first = index()
    assert sorted(i.name for i in first.functions.values() if not i.body_walked) == ["pad_0", "pad_1", "pad_2"]
    assert ahead == [] and given_up == []  # (a first build has no decision to start from)
    return root, index, ahead, given_up


def _units(keys: set) -> set:
    return {rel for rel, _, _ in keys}


def test_an_edited_unit_parses_while_the_focus_is_decided_again(tree):
    root, index, ahead, given_up = tree
    k1 = root / "src/k1.cpp"
    # a helper nobody calls: what the file declares changes, so the focus is decided again
    k1.write_text(k1.read_text() + "inline int k1_fresh_helper(int v) { return v + 1; }\n")
    edited = index()
    assert len(ahead) == 1 and _units(ahead[0]) == {"src/k1.cpp"}
    assert given_up == [set()]  # the focus wanted the very jobs started: they count
    fresh = index("fresh")
    assert _strip(edited.to_json()) == _strip(fresh.to_json())
    unread = sorted(i.name for i in edited.functions.values() if not i.body_walked)
    assert unread == ["k1_fresh_helper", "pad_0", "pad_1", "pad_2"]  # the guess had the new helper unread too


def test_a_parse_the_focus_does_not_want_is_given_up(tree):
    """Negative control: an edit in place (no body moves) makes k1's padding call a function of k0 that builds a
    kernel. The guess keeps what the last focus said of that body (unread); the focus now reads it."""
    root, index, ahead, given_up = tree
    k1 = root / "src/k1.cpp"
    text = k1.read_text()
    edit = text.replace("namespace eng {\n", "namespace eng { mlx::core::fast::CustomKernelFunction make_0();\n", 1)
    edit = edit.replace("d.back(); }", "d.back() + (make_0(), 0); }", 1)
    assert edit.count("\n") == text.count("\n") and "make_0();" in edit and "(make_0(), 0)" in edit
    k1.write_text(edit)
    edited = index()
    assert len(ahead) == 1 and _units(ahead[0]) == {"src/k1.cpp"}
    assert given_up == [ahead[0]]  # started on the guess, not what the focus decided: given up
    fresh = index("fresh")
    assert _strip(edited.to_json()) == _strip(fresh.to_json())
    assert sorted(i.name for i in edited.functions.values() if not i.body_walked) == ["pad_0", "pad_2"]


def test_an_edit_that_keeps_the_focus_starts_nothing_ahead(tree):
    """Quiet control: a comment where no declaration moves reuses the focus; nothing waits for it."""
    root, index, ahead, given_up = tree
    k1 = root / "src/k1.cpp"
    k1.write_text(k1.read_text() + "// a comment after the namespace\n")
    index()
    assert ahead == [] and given_up == []


def test_a_header_edited_again_where_it_was_parses_its_units_ahead(tmp_path, monkeypatch):
    """A header every launcher includes gets a new helper where an earlier edit put another: the guessed jobs have
    the keys of that earlier edit's parses, whose entries were made with the header's other contents. Those are
    no parse of the tree as it is: the units start ahead."""
    from helpers import files_under, make_registry, write_tree

    root = tmp_path / "tree"
    launcher = PADDED_LAUNCHER.replace('#include "mlx/mlx.h"\n', '#include "mlx/mlx.h"\n#include "common.h"\n')
    files = {f"src/k{n}.cpp": launcher % {"n": n} for n in range(3)}
    files["src/common.h"] = "#pragma once\ninline int common_base(int v) { return v; }\n"
    write_tree(root, files)
    reg = make_registry(root)
    ahead = []
    start_ahead = build._start_ahead
    monkeypatch.setattr(build, "_start_ahead", lambda *a: ahead.append(start_ahead(*a)) or ahead[-1])

    def index(cache: str = "c"):
        return build_index(reg, files_under(root), jobs=2, cache_dir=tmp_path / cache)

    header = root / "src/common.h"
    original = header.read_text()
    index()
    for n in range(2):
        header.write_text(original + f"inline int common_edit_{n}() {{ return {n}; }}\n")
        edited = index()
        assert _units(ahead[-1]) == {"src/k0.cpp", "src/k1.cpp", "src/k2.cpp"}, n
        assert _strip(edited.to_json()) == _strip(index(f"fresh{n}").to_json())
        header.write_text(original)
        index()
    # the second edit's guessed keys are the first's (the same bodies at the same places), with entries there
    assert len(ahead) == 4 and ahead[2] == ahead[0]
    assert ahead[1] == ahead[3] == set()  # taken back: the first build's parses are current again


def test_a_withdrawn_parse_that_has_replied_is_left_to_store_its_entry(tmp_path, monkeypatch):
    """A worker whose reply is in already is storing that parse's entry: withdrawn then, it is not killed (killed,
    it would leave the entry's temporary file in the cache folder) and takes the next job once it has stored."""
    import time

    from kernel_ports.frontend.clang.model import TUResult
    from kernel_ports.index import pool as pool_mod

    stored = tmp_path / "stored"

    def slow_store(cache, store, res, hashes):
        time.sleep(0.5)
        stored.write_text(store[1])

    # (set before the worker forks, so that it is the worker's)
    monkeypatch.setattr(pool_mod.clang, "parse_translation_unit", lambda job: TUResult(path=job, configuration="d"))
    monkeypatch.setattr(pool_mod, "_store", slow_store)
    pool = pool_mod.ParsePool(1, cache=object(), hashes={})
    try:
        pool.submit([("first", ("parse", "u.cpp", ("u.cpp", "key-1")))])
        worker = pool.workers[0][0]
        deadline = time.monotonic() + 30
        while not pool.workers[0][1].poll() and time.monotonic() < deadline:
            time.sleep(0.01)
        pool.withdraw({"first"})
        assert pool.workers[0][0] is worker and worker.is_alive()
        assert pool.run([("second", ("parse", "v.cpp", None))], timeout=30)["second"][1].path == "v.cpp"
        assert stored.read_text() == "key-1"  # the withdrawn parse's entry was stored before the next job ran
        assert "first" not in pool.results
    finally:
        pool.close()

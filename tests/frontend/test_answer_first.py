"""A served check answers before its parser processes end (index/pool.py ``AFTER_ANSWER``): each worker keeps its
parses' entries until it is told to end (``KEPT_ENTRIES`` at most), and the pool's end waits for the check's process
to have answered; a
command in its own process ends its pool and stores every entry before the index is returned. A worker's standard
output is never the command's (a served check's is its caller's pipe)."""

from __future__ import annotations

import time

import pytest

from kernel_ports.index import build_index, pool as pool_mod

from tests.frontend.test_focus import PADDED_LAUNCHER, _strip


@pytest.fixture()
def tree(tmp_path):
    from helpers import files_under, make_registry, write_tree

    root = tmp_path / "tree"
    write_tree(root, {f"src/k{n}.cpp": PADDED_LAUNCHER % {"n": n} for n in range(2)})
    return make_registry(root), files_under(root), tmp_path / "cache"


def _entries(cache) -> int:
    return sum(1 for p in cache.rglob("*.json") if p.is_file())


def test_in_its_own_process_a_build_stores_every_entry_before_it_returns(tree):
    reg, files, cache = tree
    assert pool_mod.AFTER_ANSWER is None
    index = build_index(reg, files, jobs=2, cache_dir=cache)
    assert len(index.clang_files) == 2
    stored = _entries(cache)
    again = build_index(reg, files, jobs=2, cache_dir=cache)  # every parse from its entry: nothing more is stored
    assert _entries(cache) == stored and _strip(again.to_json()) == _strip(index.to_json())


def test_served_the_pool_ends_and_the_last_entries_are_stored_after_the_answer(tree, monkeypatch):
    reg, files, cache = tree
    own = build_index(reg, files, jobs=2, cache_dir=cache.parent / "own")
    in_own_process = _entries(cache.parent / "own")
    monkeypatch.setattr(pool_mod, "AFTER_ANSWER", [])
    index = build_index(reg, files, jobs=2, cache_dir=cache)
    assert _strip(index.to_json()) == _strip(own.to_json())
    (close,) = pool_mod.AFTER_ANSWER  # the pool's end, waiting for the answer
    time.sleep(1.5)  # (a store made at once would have been written by now: ~0.01 s each)
    assert _entries(cache) < in_own_process  # each worker still keeps its parses' entries
    close()
    assert _entries(cache) == in_own_process


def test_a_workers_standard_output_is_not_the_commands(tmp_path, monkeypatch, capfd):
    from kernel_ports.frontend.clang.model import TUResult

    def noisy(job):
        print("printed by a parser process", flush=True)
        return TUResult(path=job, configuration="d")

    monkeypatch.setattr(pool_mod.clang, "parse_translation_unit", noisy)  # (set before the worker forks)
    pool = pool_mod.ParsePool(1)
    try:
        assert pool.run([("k", ("parse", "u.cpp", None))], timeout=30)["k"][1].path == "u.cpp"
    finally:
        pool.close()
    assert "printed by a parser process" not in capfd.readouterr().out


def test_a_worker_stores_what_it_keeps_once_it_keeps_the_most_it_may(tmp_path, monkeypatch):
    from helpers import files_under, make_registry, write_tree

    root = tmp_path / "tree"
    write_tree(root, {f"src/k{n}.cpp": PADDED_LAUNCHER % {"n": n} for n in range(3)})
    reg, files = make_registry(root), files_under(root)
    build_index(reg, files, jobs=1, cache_dir=tmp_path / "own")
    stored, default = {}, pool_mod.KEPT_ENTRIES
    for most in (default, 1):
        monkeypatch.setattr(pool_mod, "KEPT_ENTRIES", most)  # (read by the worker, forked after this)
        monkeypatch.setattr(pool_mod, "AFTER_ANSWER", [])
        cache = tmp_path / f"most{most}"
        build_index(reg, files, jobs=1, cache_dir=cache)  # one worker, three parses
        time.sleep(1.5)
        stored[most] = _entries(cache)
        for close in pool_mod.AFTER_ANSWER:
            close()
        assert _entries(cache) == _entries(tmp_path / "own")
    # keeping one at most, the worker stored the first two parses' entries as the next jobs came
    assert stored[default] < stored[1] < _entries(tmp_path / "own")


def test_a_pool_with_a_cache_keeps_its_logs_in_the_cache_folder(tmp_path):
    """A served check's pool ends after the check's whole-check entry is kept; a log removed from the temporary
    folder then changed that folder, which the entry may stand on (a command run from it has it on sys.path), and
    every later check missed its entry. With a cache, a pool's logs come and go in the cache's folder."""
    import tempfile

    from kernel_ports.cache.units import FileCache

    cache = FileCache(tmp_path / "cache")
    pools = {"cache": pool_mod.ParsePool(2, cache=cache, hashes={}), "none": pool_mod.ParsePool(1)}
    try:
        for pool in pools.values():
            pool.spawn(2)
        logs = {name: [w[4].path for w in pool.workers] for name, pool in pools.items()}
    finally:
        for pool in pools.values():
            pool.close()
    assert len(logs["cache"]) == 2 and all(p.startswith(str(cache.root) + "/") for p in logs["cache"])
    assert all(p.startswith(tempfile.gettempdir() + "/") for p in logs["none"])


def test_after_the_answer_the_command_lets_go_of_its_callers_streams():
    """A caller reading the served command's output to its end (a pipe) is done once the command has answered,
    while the parser processes still end: the command's process lets go of the streams before it waits for them."""
    import os
    import select

    from kernel_ports.commands import serve

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the served command's process, its standard output the caller's pipe
        try:
            os.dup2(write_end, 1)
            os.close(read_end)
            os.close(write_end)
            pool_mod.AFTER_ANSWER = [lambda: time.sleep(10)]  # a pool that takes long to end
            serve._after_answer()
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], 5)
        assert ready and os.read(read_end, 1) == b""  # the pipe's end, while the process still waits
    finally:
        os.close(read_end)
        os.kill(pid, 9)
        os.waitpid(pid, 0)

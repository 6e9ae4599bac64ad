"""A parser process gives back to the system the heap a finished job freed (index/pool.py): the peak of a run
is the parser processes' resident memory summed, and a process kept the freed heap of the largest unit it had
parsed for the rest of the run."""

import gc
import subprocess
import sys
import threading

import pytest

from kernel_ports.index import pool

# allocates ~64 MiB in 4 KiB blocks from the C heap, keeps one block above them (the heap's top cannot shrink
# back), frees the others and prints the process's anonymous resident KiB: after the frees, then after `give`
GROW_AND_FREE = r"""
import sys
from kernel_ports.index.pool import give_back_free_memory
def anon():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
blocks = [bytearray(4096) for _ in range(16384)]
for b in blocks:
    b[::512] = b"x" * 8  # touched: resident
pin = bytearray(4096)
before = anon()
del blocks
freed = anon()
if sys.argv[1] == "give":
    give_back_free_memory()
print(before, freed, anon())
"""


def _run(mode: str) -> tuple:
    out = subprocess.run([sys.executable, "-c", GROW_AND_FREE, mode], capture_output=True, text=True, check=True)
    return tuple(int(x) for x in out.stdout.split())


@pytest.mark.skipif(not sys.platform.startswith("linux") or pool._malloc_trim() is None, reason="glibc only")
def test_freed_heap_is_given_back_and_only_then():
    before, freed, kept = _run("keep")
    # the control: freed but not given back, the blocks stay resident
    assert freed > before - 16 * 1024 and kept > before - 16 * 1024
    before, freed, given = _run("give")
    assert given < before - 48 * 1024  # most of the 64 MiB went back


def test_a_worker_gives_memory_back_after_each_job(monkeypatch):
    calls = []
    monkeypatch.setattr(pool, "give_back_free_memory", lambda: calls.append(1))
    parent, child = pool.multiprocessing.Pipe()
    # a prelude job that cannot run: the reply is an error, and the worker goes on to the next job
    worker = threading.Thread(target=pool._worker_main, args=(child,))
    frozen = gc.get_freeze_count()
    try:
        worker.start()
        for _ in range(2):
            parent.send(("prelude", None, None))
            status, _ = parent.recv()
            assert status == "error"
        parent.send(None)
        worker.join(10)
    finally:
        if gc.get_freeze_count() > frozen:
            gc.unfreeze()
    assert not worker.is_alive() and len(calls) == 2

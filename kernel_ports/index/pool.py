"""The worker pool the Clang parses and prelude builds run in: one process per worker, a timeout per job, a memory
limit per process, and a crash, hang or exhausted heap answered as a result (``crash``/``timeout``/``error``)
that becomes a KP901 record, never the end of the run (:mod:`kernel_ports.scope.limits` judges the replies).

Jobs are submitted and run while the caller does other work (it decodes the cached results of the other units
while the changed ones parse), and a worker writes the cache entry of a successful parse itself, after sending
the result, so encoding runs beside the other worker's parse rather than after every parse in the parent.
"""

from __future__ import annotations

import functools
import gc
import importlib
import multiprocessing
import os
import sys
import time
from multiprocessing.connection import wait
from pathlib import Path

from kernel_ports.scope import limits
from kernel_ports.frontend import clang
from kernel_ports.cache.units import store_parse


# The modules a worker imports as it starts that its parent does not: the parse and the walk, and the bindings'
# Python module (none of them loads libclang). A server imports them while idle (commands/serve.py), so that a
# served check's workers start with them: each import was ~0.04 s of a worker's start, and the two workers of a
# one-launcher edit started together on two cores, the second parse ~0.05 s after the first.
WORKER_MODULES = ("kernel_ports.frontend.clang.session", "clang.cindex")


# A served check answers its caller before its parser processes end (commands/serve.py sets this to a list): each
# pool's end is put there instead of done, and each worker keeps the entries of its parses to store until it is
# told to end, so neither the stores (~0.01 s a launcher's, ~0.08 s the real engine's bridge's) nor the wait for
# them come between the replies and the answer. None (a command in its own process, which cannot answer before
# it exits): a pool ends when asked, a worker stores each entry once it has replied.
AFTER_ANSWER: "list | None" = None
KEPT_ENTRIES = 32  # the most entries a worker keeps to store later; it stores them all when it has this many


def _worker_main(conn, memory_mib=0, log_path=None, cache=None, hashes=None, defer_stores=False):
    log = _start_worker(memory_mib, log_path)
    kept: list = []  # (store, result) of the parses whose entries wait for the worker's end (defer_stores)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            job = None
        if job is None or len(kept) >= KEPT_ENTRIES:
            for entry in kept:
                _store(cache, *entry, hashes)
            kept = []
        if job is None:
            return
        kind, payload, store = job
        out = None
        try:
            if kind == "parse":
                out = clang.parse_translation_unit(payload)
            else:
                args, cache_dir, with_stubs = payload
                out = clang.build_prelude(list(args), Path(cache_dir), with_stubs)
            reply = ("ok", out)
        except BaseException as exc:  # report, keep serving
            reply = ("error", f"{type(exc).__name__}: {exc}")
        reply = limits.judge_reply(reply, log.since_last() if log is not None else "", memory_mib)
        conn.send(reply)  # first: the parent may be waiting for this unit alone
        if store is not None and cache is not None and reply[0] == "ok" and reply[1].ok:
            if defer_stores:
                kept.append((store, reply[1]))
            else:
                _store(cache, store, reply[1], hashes)
        job = payload = reply = out = None  # (the unit's memory, freed before it is given back)
        give_back_free_memory()


def _start_worker(memory_mib: int, log_path):
    """A worker's set-up before its first job; its standard error's log (None: none)."""
    # the parse and the walk are imported here, by each worker as it starts, while the parent goes on (it decodes
    # the cached units meanwhile and never walks a unit itself): imported in the parent before the fork, they were
    # ~0.025 s of a one-file check's critical path
    for name in WORKER_MODULES:
        importlib.import_module(name)
    try:
        # the bindings' function table is declared on first use, ~0.05 s of the first parse of each worker (a third
        # of a one-launcher edit's parse): it is declared now, while the parent is still planning
        clang.cindex()
    except clang.FrontEndError:
        pass  # the first parse says why
    # what the worker inherited from the parent (modules, the registry, the tree's texts) lives as long as the
    # worker: frozen, the collections a walk's garbage triggers no longer traverse it (a worker's collections took
    # 0.15 s of a cold run's 3 s, 0.06 s frozen)
    gc.freeze()
    gc.enable()  # the parent pauses it while it builds the index; a worker parses unit after unit and must collect
    # a worker reads and prints nothing: its standard input and output are not the command's (a served check's are
    # its caller's, whose pipes would stay open while a worker lives on after the answer)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    sys.stdin, sys.stdout = open(os.devnull), open(os.devnull, "w")  # (whatever file objects were there)
    log = limits.StderrLog(log_path) if log_path else None
    if log is not None:
        log.attach()
    limits.apply_memory_limit(memory_mib)
    return log


def give_back_free_memory() -> None:
    """Return to the system the heap a finished job freed (glibc keeps it otherwise). A parse of the real
    engine's bridge leaves ~70 MiB of freed memory in its process, which stayed resident for the rest of the run,
    beside the parent's merge; a few milliseconds. Elsewhere (no glibc) nothing is done."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.lru_cache(maxsize=1)
def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


def _store(cache, store: tuple, res, hashes: dict) -> None:
    rel, key = store
    try:
        store_parse(cache, key, rel, res, hashes)
    except Exception:  # a cache entry is an optimisation: one that cannot be written is a later miss
        pass


class ParsePool:
    """``submit`` jobs, do something else, then ``run`` more or ``finish``: each returns the results of its jobs.

    A job is ``(key, (kind, payload, store))``: kind ``parse`` (payload a ``clang.ParseJob``) or ``prelude``;
    ``store`` is None or ``(unit path, cache key)`` under which the worker keeps a successful parse in ``cache``,
    keyed with the ``hashes`` of the files it read.
    """

    def __init__(self, n: int, memory_mib: int = 0, cache=None, hashes=None):
        # fork: no re-import of the caller's __main__, and workers start in
        # milliseconds; the parent never touches libclang, so nothing unsafe is
        # inherited.  Elsewhere spawn.
        method = "fork" if sys.platform.startswith("linux") else "spawn"
        self.ctx = multiprocessing.get_context(method)
        self.n = max(1, n)
        self.memory_mib = memory_mib
        self.cache = cache
        self.hashes = hashes
        self.workers: list = []
        self.pending: list = []
        self.results: dict = {}

    def _spawn(self):
        parent, child = self.ctx.Pipe()
        # in the cache's folder when there is one: a served check's pool ends after its whole-check entry is kept,
        # and a log removed from the temporary folder then changed that folder, which the entry stands on when
        # the command is run from it (a command's folder is on its sys.path, whose folders the entry watches)
        root = getattr(self.cache, "root", None)
        log = limits.StderrLog.create(os.path.join(str(root), "logs") if root is not None else None)
        p = self.ctx.Process(target=_worker_main, args=(child, self.memory_mib, log.path, self.cache, self.hashes,
                                                        AFTER_ANSWER is not None), daemon=True)
        p.start()
        child.close()
        return [p, parent, None, None, log]  # process, conn, job key, started, its standard error

    def spawn(self, count: int) -> None:
        """Have ``count`` workers (at most n) before any job is there."""
        while len(self.workers) < min(self.n, count):
            self.workers.append(self._spawn())

    def submit(self, jobs: list) -> None:
        """Queue jobs and hand one to each idle worker; they run while the caller goes on."""
        self.pending.extend(jobs)
        busy = sum(1 for w in self.workers if w[2] is not None)
        while len(self.workers) < min(self.n, len(self.pending) + busy):
            self.workers.append(self._spawn())
        self._dispatch()

    def run(self, jobs: list, timeout: float) -> dict:
        """jobs: [(key, (kind, payload, store))] -> {key: ("ok", result) | ("error"|"crash"|"timeout", msg)}"""
        self.submit(jobs)
        keys = [key for key, _ in jobs]
        while not all(k in self.results for k in keys):
            self._step(timeout)
        return {k: self.results.pop(k) for k in keys}

    def finish(self, timeout: float) -> dict:
        """Wait for every job submitted; the results not returned yet."""
        while self.pending or any(w[2] is not None for w in self.workers):
            self._step(timeout)
        out, self.results = self.results, {}
        return out

    def withdraw(self, keys: set) -> None:
        """Drop the jobs of ``keys``: those waiting, those running (their worker is replaced: nothing it does for them
        counts) and those done."""
        self.pending = [(key, job) for key, job in self.pending if key not in keys]
        for i, w in enumerate(self.workers):
            if w[2] not in keys:
                continue
            try:
                replied = w[1].poll()
                if replied:
                    w[1].recv()  # (dropped)
            except (EOFError, OSError):
                replied = False
            if replied:
                # done with the parse, and storing its entry (a right one, under that job's key): killed now, it
                # would leave the entry's temporary file behind; it takes its next job once it has stored
                w[2] = None
            else:
                self._replace(i, kill=True)
        for key in keys:
            self.results.pop(key, None)

    def _dispatch(self) -> None:
        for w in self.workers:
            if w[2] is None and self.pending:
                key, job = self.pending.pop(0)
                try:
                    w[1].send(job)
                except (OSError, BrokenPipeError):
                    self.results[key] = ("crash", "the parser process could not be started")
                    continue
                w[2], w[3] = key, time.monotonic()

    def _step(self, timeout: float) -> None:
        """Hand out jobs, wait for a reply, a death or a timeout, and record what happened."""
        self._dispatch()
        busy = [w for w in self.workers if w[2] is not None]
        if not busy:
            return
        now = time.monotonic()
        wait_for = max(0.01, min(w[3] + timeout - now for w in busy))
        ready = wait([w[1] for w in busy] + [w[0].sentinel for w in busy], timeout=wait_for)
        for i, w in enumerate(self.workers):
            if w[2] is None:
                continue
            key = w[2]
            if w[1] in ready:
                try:
                    self.results[key] = w[1].recv()
                    w[2] = None
                    if self.results[key][0] in limits.REPLACE_AFTER:  # its heap is not to be trusted any more
                        self._replace(i, kill=True)
                    continue
                except (EOFError, OSError):
                    pass
            if w[0].sentinel in ready or not w[0].is_alive():
                w[0].join(timeout=5)
                self.results[key] = limits.judge_death(w[0].exitcode, w[4].since_last(), self.memory_mib)
                self._replace(i)
            elif time.monotonic() - w[3] > timeout:
                self.results[key] = ("timeout", limits.timeout_detail(timeout))
                self._replace(i, kill=True)

    def _replace(self, i, kill=False):
        w = self.workers[i]
        if kill and w[0].is_alive():
            w[0].kill()
        w[0].join(timeout=5)
        w[4].remove()
        self.workers[i] = self._spawn()

    def close(self):
        """End the workers (each stores the entries it keeps first) and wait for them."""
        for w in self.workers:
            try:
                w[1].send(None)
            except (OSError, BrokenPipeError):
                pass
        for w in self.workers:
            w[0].join(timeout=10)  # an idle worker exits at once; one still writing its last entry, soon after
            if w[0].is_alive():
                w[0].kill()
                w[0].join(timeout=2)
            w[4].remove()
        self.workers = []

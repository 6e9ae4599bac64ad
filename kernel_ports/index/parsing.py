"""The Clang parses of one run: the prelude they load, the parse jobs, and the pool they run in.

Units are started as soon as they are known to need a parse, before the cached results of the other units are
decoded (the two are independent), largest first, so no long parse is left at the tail of the run. The workers
keep each successful parse in the cache themselves (:mod:`kernel_ports.index.pool`).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from kernel_ports.frontend import clang
from kernel_ports.index import pool as parse_pool, prelude
from kernel_ports.index.pool import ParsePool


@dataclass
class UnitJobs:
    """What every parse job of a run shares."""

    registry: object
    root: Path
    conv: object
    by_path: dict
    known: set
    cc: dict
    fault_map: dict
    tu_unread: dict
    withheld: tuple
    tu_weight: dict  # unit -> characters of it and the project files it includes (its parse's rough cost)
    hidden: dict  # path -> (start, end) of the unread bodies Clang may be given blank (frontend/focus.py)


class Parsing:
    """``start`` batches of (unit, configuration, cache key), then ``finish``: (unit, configuration, key) -> reply.
    ``close`` always (it ends the workers and removes a temporary prelude folder). ``units`` and ``early`` (the
    background prelude build) are set once the plan is made."""

    def __init__(self, index, cache, hashes: dict, jobs: int, bounds, timeout: float):
        self.index, self.cache, self.hashes = index, cache, hashes
        self.jobs, self.bounds, self.timeout = jobs, bounds, timeout
        self.units: Optional[UnitJobs] = None
        self.early = None
        self.pool: Optional[ParsePool] = None
        self.tmpdir: Optional[str] = None
        self.pch_dir: Optional[Path] = None
        self.started: Optional[float] = None

    def spawn_workers(self) -> None:
        """Start the workers now, while this process is small: forked later, after the cached results are
        loaded, every page this process then writes while they run would be copied first."""
        self._pool().spawn(self.jobs or 1)

    def _pool(self) -> ParsePool:
        if self.pool is None:
            store_in = self.cache if self.cache.root is not None else None
            self.pool = ParsePool(self.jobs or 1, self.bounds.parser_memory_mib, store_in, self.hashes)
            self.pch_dir = (self.cache.root / "pch") if self.cache.root is not None \
                else Path(tmpdir := tempfile.mkdtemp(prefix="kp-pch-"))
            self.tmpdir = None if self.cache.root is not None else tmpdir
        return self.pool

    def start(self, to_parse: list) -> None:
        registry, units = self.units.registry, self.units
        self._pool()
        # largest first: with a few workers, a long parse started last would run alone at the end
        to_parse = sorted(to_parse, key=lambda job: -units.tu_weight.get(job[0], 0))
        plan_of, counts = prelude.plan_preludes(registry, to_parse, units.cc, units.root)
        pchs = prelude.build_preludes(self.index, self.pool, registry, self.cache, counts, self.pch_dir, self.early,
                                      self.timeout)
        parse_jobs = []
        for rel, conf, key in to_parse:
            pch = pchs.get(plan_of.get(tuple(clang.build_args(registry, conf, rel)))) if rel not in units.cc else None
            job = _parse_job(units, self.hashes, rel, conf, pch)
            parse_jobs.append(((rel, conf.name, key), ("parse", job, (rel, key))))
        if self.started is None:
            self.started = time.perf_counter()
        self.pool.submit(parse_jobs)

    def withdraw(self, keys: set) -> None:
        """Give up the jobs of these keys (unit, configuration name, cache key): not started, or stopped."""
        if self.pool is not None and keys:
            self.pool.withdraw(keys)

    def finish(self) -> dict:
        if self.pool is None or self.started is None:
            return {}  # nothing was submitted (workers may be waiting: close ends them)
        out = self.pool.finish(self.timeout)
        self.index.timings["parse"] = time.perf_counter() - self.started
        return out

    def close(self) -> None:
        """End the workers and remove a temporary prelude folder: now, or once a served check has answered
        (``pool.AFTER_ANSWER``)."""
        if parse_pool.AFTER_ANSWER is not None:
            parse_pool.AFTER_ANSWER.append(self._close)
        else:
            self._close()

    def _close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        if self.tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)


def _parse_job(units: UnitJobs, hashes: dict, rel: str, conf, pch: Optional[str]):
    base = tuple(clang.build_args(units.registry, conf, rel, compile_commands=units.cc))
    args = base + (("-include-pch", pch) if pch else ())
    root = units.root
    # each file with bodies to blank, with the hash of the text they were found in (the parse checks it)
    paths = sorted({p for p, _, _ in units.tu_unread[rel] if p in units.hidden and p not in units.withheld})
    hidden = tuple((p, str(units.by_path[p].abspath), hashes[p], units.hidden[p]) for p in paths)
    return clang.ParseJob(
        abspath=str(units.by_path[rel].abspath), relpath=rel, configuration=conf.name, args=args,
        root=str(root), project_files=frozenset(units.known), conventions=units.conv,
        fault=units.fault_map.get(rel), unread_bodies=units.tu_unread[rel], hidden_bodies=hidden,
        withheld=tuple(str(root / p) for p in units.withheld))

"""Device builds on the index: every planned HIP body compiled for every target, the results cached as data and
stored as ``DeviceBuild`` facts (``index.device_builds``; ``index.device`` says what was built with what).

One compile per body per target holds every variant; when some variants fail, the others are built again
without them, for their resource usage and IR. Compiles run concurrently (``jobs``), each a bounded subprocess
(:mod:`kernel_ports.frontend.device.compiler`). A result is keyed by the generated unit's text, the compiler's
path and version, the target, the flags and this front end's code, so it is read again only for the same build.
A check whose plan would read what the last one read takes every build from one entry instead
(:mod:`.device_entry`), importing neither the plan nor the compiler's reports.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from pathlib import Path

from kernel_ports.scope import limits as limits_mod
from kernel_ports.facts import DeviceBuild, Location
from kernel_ports.frontend.device import compiler as driver
from kernel_ports.index import device_entry

# The plan, the unit's text, hipcc's reports and the targets' wave sizes are imported by the builds only: a check
# answered by the device entry does without them.
CACHEABLE = ("built", "failed", "refused")  # outcomes a later run would read again (a refusal: from the plan)


def cache_key(compiler, target: str, unit: str, include_dirs: tuple) -> str:
    from kernel_ports.index.device_reads import code_digest

    parts = ["device-build", code_digest(), compiler.path, compiler.version, target,
             " ".join(driver.JIT_FLAGS + driver.DEVICE_FLAGS), "\0".join(include_dirs), unit]
    return hashlib.sha256("\n".join(parts).encode("utf-8", "replace")).hexdigest()


def _outcomes(build, raw, root_files) -> tuple:
    """(per-variant outcomes, indices that failed) of one compile."""
    from kernel_ports.frontend.device import reports
    from kernel_ports.frontend.device.build_model import VariantOutcome

    if raw.status == "ok":
        usage = reports.resource_usage(raw.stderr)
        lanes = reports.lane_intrinsics(raw.ir)
        return tuple(VariantOutcome(ok=True, usage=usage.get(i), lane_intrinsics=lanes.get(i, ()))
                     for i in range(len(build.variants))), set()
    diags = reports.diagnostics(raw.stderr, root_files, build)
    first: dict = {}
    every = None
    for d in diags:
        if d.variant is None:
            every = every or d
        else:
            first.setdefault(d.variant, d)
    failed = set(range(len(build.variants))) if every is not None or not first else set(first)
    outs = tuple(VariantOutcome(ok=False, diagnostic=first.get(i, every)) if i in failed else None
                 for i in range(len(build.variants)))
    return outs, failed


def compile_body(compiler, planned, target: str, budget) -> CompileOutcome:
    """One body for one target: all variants in one unit; the passing ones again when some fail."""
    from kernel_ports.frontend.device import source
    from kernel_ports.frontend.device.build_model import CompileOutcome, VariantOutcome

    build = planned.build
    if planned.refusal is not None:
        return CompileOutcome(status="refused", detail=planned.refusal[1])
    raw = driver.compile_unit(compiler, target, source.translation_unit(build), budget.parse_timeout_s,
                              budget.parser_memory_mib, planned.include_dirs)
    seconds = raw.seconds
    if raw.status in ("timeout", "memory", "crash"):
        return CompileOutcome(status=raw.status, detail=_why(raw, budget), seconds=seconds)
    outs, failed = _outcomes(build, raw, None)
    if failed and len(failed) < len(build.variants):
        keep = [i for i in range(len(build.variants)) if i not in failed]
        again = dataclasses.replace(build, variants=tuple(build.variants[i] for i in keep))
        raw2 = driver.compile_unit(compiler, target, source.translation_unit(again), budget.parse_timeout_s,
                                   budget.parser_memory_mib, planned.include_dirs)
        seconds += raw2.seconds
        outs2, _ = _outcomes(again, raw2, None)
        merged = list(outs)
        for j, i in enumerate(keep):
            merged[i] = outs2[j] if outs2[j] is not None else VariantOutcome(ok=False, diagnostic=None)
        outs = tuple(merged)
    return CompileOutcome(status="failed" if failed else "built", variants=outs, seconds=seconds)


def _why(raw, budget) -> str:
    if raw.status == "timeout":
        return limits_mod.timeout_detail(budget.parse_timeout_s)
    if raw.status == "memory":
        return limits_mod.memory_detail(budget.parser_memory_mib)
    return limits_mod.crash_detail(raw.stderr, "the HIP compiler")


def _facts(planned, target: str, outcome, compiler) -> list:
    from kernel_ports.infer.device_targets import wavefront_width

    build = planned.build
    out = []
    for i, variant in enumerate(build.variants):
        v = outcome.variants[i] if i < len(outcome.variants) else None
        result = "built" if v is not None and v.ok else ("failed" if outcome.status in ("built", "failed") else outcome.status)
        message, where, guard = outcome.detail, planned.refusal[0] if planned.refusal else None, False
        if v is not None and v.diagnostic is not None:
            d = v.diagnostic
            message, where, guard = d.message, Location(d.path, d.line, d.column), d.at_error_directive
        u = v.usage if v is not None and v.usage is not None else None
        out.append(DeviceBuild(
            loc=planned.body_loc, body=build.body, kernel_name=build.kernel_name, factory_call=planned.factory_call,
            tables=planned.tables, target=target, wavefront=wavefront_width(target), assignment=variant.describe(),
            guessed=variant.guessed, result=result, message=message, message_loc=where, at_guard=guard,
            sgprs=u and u.sgprs, vgprs=u and u.vgprs, sgpr_spill=u and u.sgpr_spill, vgpr_spill=u and u.vgpr_spill,
            scratch_bytes=u and u.scratch_bytes, lds_bytes=u and u.lds_bytes, occupancy=u and u.occupancy,
            lane_intrinsics=v.lane_intrinsics if v is not None else (), compiler=compiler.describe()))
    return out


def build_device(index, registry, by_path: dict, resolve, compiler, targets: tuple, cache, jobs: int = 2,
                 entry_key=None) -> None:
    """Compile every planned body for every target (cached), and store the DeviceBuild facts on the index; with
    ``entry_key`` (:func:`.device_entry.plan_key`), keep them as the device stage's entry when every outcome may be
    read again."""
    from concurrent.futures import ThreadPoolExecutor

    from kernel_ports.frontend.device import source
    from kernel_ports.frontend.device.build_model import CompileOutcome
    from kernel_ports.index.device_plan import TreeReads, plan_bodies

    start = time.monotonic()
    budget = limits_mod.Limits.of(registry)
    reads = TreeReads(by_path, cache)
    planned = plan_bodies(index, registry, by_path, resolve, cache, reads=reads)
    work, outcomes, cached = [], {}, 0
    for p in planned:
        for t in targets:
            key = cache_key(compiler, t, source.translation_unit(p.build), p.include_dirs)
            got = cache.get(key)
            if isinstance(got, CompileOutcome):
                outcomes[(p.build.body, p.factory_call, t)] = got
                cached += 1
            else:
                work.append((p, t, key))
    work.sort(key=lambda w: -len(w[0].build.variants) * sum(len(x.text) for x in w[0].build.source))
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        done = pool.map(lambda w: (w, compile_body(compiler, w[0], w[1], budget)), work)
        for (p, t, key), outcome in done:
            outcomes[(p.build.body, p.factory_call, t)] = outcome
            if outcome.status in ("built", "failed"):
                cache.put(key, outcome)
    facts = []
    for p in planned:
        for t in targets:
            facts.extend(_facts(p, t, outcomes[(p.build.body, p.factory_call, t)], compiler))
    counts = {"bodies": len({p.build.body for p in planned}), "variants": sum(len(p.build.variants) for p in planned),
              "pairs": len(planned) * len(targets)}
    if all(o.status in CACHEABLE for o in outcomes.values()):
        device_entry.store(cache, entry_key, reads, facts, counts)
    _on_index(index, compiler, targets, facts, counts, len(work), cached, start)


def _on_index(index, compiler, targets, facts: list, counts: dict, compiles: int, cached: int, start: float) -> None:
    index.device_builds = facts
    index.device = {"compiler": compiler.path, "version": compiler.version, "targets": list(targets),
                    "bodies": counts["bodies"], "variants": counts["variants"],
                    "compiles": compiles, "cached": cached, "seconds": round(time.monotonic() - start, 2)}


def run_for_check(registry, scope, index, options) -> list:
    """The device builds of one check, and the summary's notes on them (a missing compiler is a note when the
    registry asked for the builds; the command line refuses earlier when its flag did)."""
    from kernel_ports.cache import format as cachefmt
    from kernel_ports.cache.units import FileCache
    from kernel_ports.registry.model import DeviceCompile

    start = time.monotonic()
    spec = registry.compile.device_rocm or DeviceCompile()
    where = Path(options.cache_dir) if options.cache_dir else cachefmt.default_cache_dir()
    cache = FileCache(where if options.use_cache else None)
    try:
        compiler = driver.find_compiler(spec.compiler, cache)
    except driver.CompilerMissing as exc:
        index.device = {"compiler": None, "targets": list(spec.targets), "missing": str(exc)}
        return [f"device builds (compile.device.rocm) did not run: {exc}; KP501/KP502 were not judged"]
    by_path = {f.path: f for f in scope.files}
    known = set(by_path)
    targets = tuple(spec.targets)
    key = device_entry.plan_key(index, registry, known, compiler, targets) if cache.root is not None else None
    kept = device_entry.lookup(cache, key, by_path)
    if kept is not None:  # every build from one entry: each would have been read from its own
        facts, counts = kept
        _on_index(index, compiler, targets, facts, counts, 0, counts["pairs"], start)
        return device_notes(index)
    from kernel_ports.index.plan import resolve_include

    def resolve(name, from_path):
        return resolve_include(name, False, from_path, known, [])

    build_device(index, registry, by_path, resolve, compiler, targets, cache, jobs=options.jobs, entry_key=key)
    return device_notes(index)


def span(values) -> str:
    """The values as `a` or `a-b` (None left out), `?` when there is none."""
    got = sorted({v for v in values if v is not None})
    if not got:
        return "?"
    return str(got[0]) if got[0] == got[-1] else f"{got[0]}-{got[-1]}"


def device_notes(index) -> list:
    """What was built with what, then one line per body and target: results per dtype, resource usage, lanes."""
    d = index.device
    notes = [f"device builds: {d['bodies']} HIP bodies, {d['variants']} variants, for {', '.join(d['targets'])} with "
             f"{d['compiler']} ({d['version']}); {d['compiles']} compiled, {d['cached']} from the cache, {d['seconds']} s"]
    groups: dict = {}
    for b in index.device_builds:
        groups.setdefault((b.body, b.factory_call, b.target), []).append(b)
    for (body, _, target), builds in sorted(groups.items()):
        ok = [b for b in builds if b.result == "built"]
        dtypes = [x for x in ("float32", "float16", "bfloat16") if any(x in b.assignment for b in ok)]
        line = f"  {body} [{target}]: {len(ok)}/{len(builds)} built"
        if dtypes:
            line += f" ({' '.join(dtypes)})"
        if ok:
            line += (f"; SGPRs {span(b.sgprs for b in ok)}, VGPRs {span(b.vgprs for b in ok)}, "
                     f"spills {span((b.sgpr_spill or 0) + (b.vgpr_spill or 0) for b in ok)}, "
                     f"scratch {span(b.scratch_bytes for b in ok)} B/lane, LDS {span(b.lds_bytes for b in ok)} B, "
                     f"occupancy {span(b.occupancy for b in ok)}")
            lanes = sorted({x for b in ok for x in b.lane_intrinsics})
            line += f"; lane ops: {', '.join(lanes)}" if lanes else "; no lane op"
        failed = [b for b in builds if b.result != "built"]
        if failed:
            f = failed[0]
            guard = " (its own #error guard)" if f.at_guard else ""
            line += f"; stops{guard}: {f.message[:120]}"
        notes.append(line)
    return notes

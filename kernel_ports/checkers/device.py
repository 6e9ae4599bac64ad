"""Device builds (KP501, KP502): what the HIP compiler made of each body, read from the ``DeviceBuild`` facts
(``check --device-compile rocm``; the facts come from :mod:`kernel_ports.index.device`, this module never runs
the compiler).

A body is judged per target its table may be selected on: the 32-lane target always, the 64-lane target when the
table is marked ``rocm_any_wave_size``. KP501 only when every variant tried (dtypes and constants the launches
allow, guesses named) fails; a body of an unmarked table stopping at its own wavefront guard on a 64-lane target
is what the guard is for. KP502: a marked body that fails or stops at its guard on the 64-lane target, or whose
device IR holds a cross-lane operation; the message says whether the text scan (KP105) saw one too.
"""

from __future__ import annotations

from kernel_ports.checkers.base import Context, Rule
from kernel_ports.checkers.lane_ops import find_lane_ops, lane_op_patterns
from kernel_ports.findings import Finding

_FIX_501 = "fix the body (the runtime compiles this text on first launch and throws the same error)"
_FIX_502 = ("drop the rocm_any_wave_size mark (the selector then refuses the port on 64-lane devices) or rewrite the "
            "body without lane-level operations")


def _groups(builds) -> dict:
    out: dict = {}
    for b in builds:
        out.setdefault((b.body, b.factory_call), {}).setdefault(b.target, []).append(b)
    return out


def _text_lane_ops(ctx: Context, factory_call: str) -> list:
    """What KP105's text scan sees in everything the call compiles."""
    compiled = ctx.index.compiled_bodies.get(factory_call)
    if compiled is None:
        return []
    patterns = lane_op_patterns(ctx.registry)
    return sorted({u.text for body in compiled.bodies for u in find_lane_ops(body.tokens, body.token_lines, patterns)})


def _first_failure(builds):
    """The first failure when every variant failed, and not only because of guessed constants: when every
    variant rests on a guess, the failures must agree (one message at one place) to be the body's own."""
    failed = [b for b in builds if b.result != "built"]
    if not failed or len(failed) != len(builds):
        return None
    if all(b.guessed for b in builds) and len({(b.message, b.message_loc) for b in failed}) > 1:
        return None
    return failed[0]


class DeviceBuilds(Rule):
    codes = ("KP501", "KP502")
    reads_device_builds = True  # runs only in a check that built the bodies (project.analyze)

    def check(self, ctx: Context):
        for (body, call), by_target in sorted(_groups(ctx.index.device_builds).items()):
            tables = [t for t in (ctx.index.table(n) for n in next(iter(by_target.values()))[0].tables) if t is not None]
            any_wave = any(t.rocm_any_wave_size for t in tables)
            kernel = next((k.name for t in tables for k in [ctx.registry.kernel_for_table(t.name)] if k), None)
            for target, builds in sorted(by_target.items()):
                wave = builds[0].wavefront
                if wave == 32:
                    yield from self._compile_failure(builds, target, kernel, "")
                elif any_wave:
                    yield from self._any_wave(ctx, builds, target, kernel, tables, call, by_target)

    def _compile_failure(self, builds, target: str, kernel, why: str):
        first = _first_failure(builds)
        if first is None:
            return
        where = first.message_loc or first.loc
        tried = f"{len(builds)} variant(s) tried, first {first.assignment}" if len(builds) > 1 else first.assignment
        what = {"refused": "is refused", "timeout": "timed out", "memory": "ran out of memory",
                "crash": "crashed the compiler"}.get(first.result, "does not compile")
        yield Finding("KP501", where.path, where.line, where.column,
                      f"HIP body {first.body.split(':', 1)[1]} (kernel {first.kernel_name}) {what} for {target} "
                      f"({first.wavefront} lanes{why}) in any variant ({tried}): {first.message or 'no message'}; "
                      f"{_FIX_501}", kernel=kernel)

    def _any_wave(self, ctx, builds, target, kernel, tables, call, by_target):
        marked = ", ".join(f"{t.name}()" for t in tables if t.rocm_any_wave_size)
        first = _first_failure(builds)
        if first is not None and first.at_guard:
            where = first.message_loc or first.loc
            yield Finding("KP502", where.path, where.line, where.column,
                          f"HIP body {first.body.split(':', 1)[1]} stops at its own wavefront guard on {target} "
                          f"({first.wavefront} lanes): `{first.message}`, but {marked} marks the port "
                          f"rocm_any_wave_size; {_FIX_502}", kernel=kernel)
            return
        if first is not None:
            narrow = [b for t, bs in by_target.items() if bs[0].wavefront == 32 for b in bs if b.result == "built"]
            if narrow:
                where = first.message_loc or first.loc
                yield Finding("KP502", where.path, where.line, where.column,
                              f"HIP body {first.body.split(':', 1)[1]} builds for 32 lanes but not for {target} "
                              f"({first.wavefront} lanes): {first.message}; {marked} marks the port rocm_any_wave_size; "
                              f"{_FIX_502}", kernel=kernel)
            else:
                yield from self._compile_failure(builds, target, kernel, f"; {marked} marks it rocm_any_wave_size")
            return
        lanes = sorted({x for b in builds for x in b.lane_intrinsics})
        if not lanes:
            return
        b = builds[0]
        seen = _text_lane_ops(ctx, call)
        said = (f"the body's text shows {', '.join(f'`{x}`' for x in seen)} too (KP105)" if seen else
                "the body's text shows none (KP105 is quiet: a macro, a pasted token or a helper hides it)")
        yield Finding("KP502", b.loc.path, b.loc.line, b.loc.column,
                      f"the device IR of HIP body {b.body.split(':', 1)[1]} for {target} holds cross-lane operation(s) "
                      f"{', '.join(lanes)}; {said}; {marked} marks the port rocm_any_wave_size; {_FIX_502}",
                      kernel=kernel)

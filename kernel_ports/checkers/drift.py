"""KP301–KP306: the registry and the code must describe the same port surface.

The registry is the reviewed declaration; the code is the truth it must match.
What the code says is computed once, in `kernel_ports.surface` (shared with
`init` and `sync`, so a registry they write is one these rules accept). Each
finding points at the code (the table, the slot, the selector call, the
launching file) and names the registry line it disagrees with; a registry
entry with nothing left in the code (KP302, and KP306 for a launcher file that
is gone) is reported at the registry line itself.
"""

from __future__ import annotations

from kernel_ports.checkers.base import Context, Rule
from kernel_ports.findings import Finding
from kernel_ports.registry.model import BACKENDS
from kernel_ports.surface import code_surface, diff_dispatch, launcher_drift, match_kernels, same_port

_SYNC = "`kernel-ports sync --write` refreshes it"


def _surface(ctx: Context):
    return ctx.derived("port_surface", lambda: code_surface(ctx.index, ctx.scope))


def _reg(where) -> str:
    return f"{where.path}:{where.line}"


def _at(registry, *keys):
    """The registry place of the first dotted key that exists (the file's first line if none)."""
    for key in keys:
        if key in registry.where:
            return registry.where[key]
    return registry.locate(keys[-1])


def _configs(configurations) -> str:
    names = sorted(configurations)
    return f"configuration{'s' if len(names) != 1 else ''} {', '.join(names)}" if names else "no configuration"


def _quote(value) -> str:
    return "null" if value is None else f"`{value}`"


class TableNotInRegistry(Rule):
    """KP301: a port table in code that no registry kernel declares."""

    codes = ("KP301",)

    def check(self, ctx: Context):
        surface = _surface(ctx)
        _, unmatched = match_kernels(ctx.registry, surface)
        kernels_at = _at(ctx.registry, "kernels")
        for ck in unmatched:
            ports = ", ".join(f"{b}: {_quote(ck.port(b))}" for b in BACKENDS)
            yield Finding(
                "KP301", ck.loc.path, ck.loc.line, ck.loc.column,
                f"port table `{ck.qualified_name}` is not declared in the registry ({_reg(kernels_at)} `kernels`); "
                f"add a kernel entry with `table: {ck.table}` ({ports}) for review; {_SYNC}",
                kernel=None)


class KernelNotInCode(Rule):
    """KP302: a registry kernel whose table is gone (or is defined in another file)."""

    codes = ("KP302",)

    def check(self, ctx: Context):
        registry = ctx.registry
        surface = _surface(ctx)
        matched, _ = match_kernels(registry, surface)
        for i, kernel in enumerate(registry.kernels):
            ck = matched.get(i)
            if ck is None:
                if kernel.file in surface.unanalyzable:
                    continue  # KP901 already fails the run for that file; its tables are unknown, not gone
                note = "" if kernel.file in surface.in_scope else f" ({kernel.file} is not among the checked sources)"
                where = kernel.where
                yield Finding(
                    "KP302", where.path, where.line, where.column,
                    f"{_reg(where)} declares kernel `{kernel.name}` with table `{kernel.table}` in {kernel.file}, "
                    f"but no port table of that name is defined in the code{note}; remove the entry or restore the table; {_SYNC}",
                    kernel=kernel.name)
            elif ck.file != kernel.file:
                where = _at(registry, f"kernels[{i}].file", f"kernels[{i}]")
                yield Finding(
                    "KP302", where.path, where.line, where.column,
                    f"{_reg(where)} declares kernel `{kernel.name}`'s table `{kernel.table}` in {kernel.file}, "
                    f"but the code defines it in {ck.loc}; set `file: {ck.file}`",
                    kernel=kernel.name)


class SlotMismatch(Rule):
    """KP303: a slot null in one of registry and code, or another accessor."""

    codes = ("KP303",)

    def check(self, ctx: Context):
        registry = ctx.registry
        matched, _ = match_kernels(registry, _surface(ctx))
        for i, ck in sorted(matched.items()):
            kernel = registry.kernels[i]
            for backend in BACKENDS:
                declared = kernel.port(backend)
                slot = ck.slots.get(backend)
                code = ck.port(backend)
                if same_port(declared, code):
                    continue
                reg = _reg(_at(registry, f"kernels[{i}].ports.{backend}", f"kernels[{i}].ports", f"kernels[{i}]"))
                if slot is None:
                    yield Finding(
                        "KP303", ck.loc.path, ck.loc.line, ck.loc.column,
                        f"`{ck.short}` has no `.{backend}` slot in the code ({_configs(ck.configurations)} parsed), "
                        f"but {reg} declares the {backend} port `{declared}`; restore the slot, or set `{backend}: null` "
                        f"in the registry (a slot behind a define needs a configuration that defines it)",
                        kernel=kernel.name)
                elif declared is None:
                    yield Finding(
                        "KP303", slot.loc.path, slot.loc.line, slot.loc.column,
                        f"`.{backend}` slot of `{ck.short}` calls `{code}`, but {reg} declares no {backend} port (null); "
                        f"declare `{backend}: {code}` in the registry for review, or remove the slot",
                        kernel=kernel.name)
                else:
                    yield Finding(
                        "KP303", slot.loc.path, slot.loc.line, slot.loc.column,
                        f"`.{backend}` slot of `{ck.short}` calls `{code}`, but {reg} declares `{declared}`; "
                        f"make them agree (`{backend}: {code}` if the code is right)",
                        kernel=kernel.name)


class DispatchMismatch(Rule):
    """KP304: selector call sites differ from the registry, or a table is dispatched nowhere."""

    codes = ("KP304",)

    def check(self, ctx: Context):
        registry = ctx.registry
        surface = _surface(ctx)
        matched, _ = match_kernels(registry, surface)
        declared_pairs = set()
        for kernel in registry.kernels:
            declared_pairs |= {(d.entry_point, d.fallback) for d in kernel.dispatch}
        for i, ck in sorted(matched.items()):
            kernel = registry.kernels[i]
            diff = diff_dispatch(kernel.dispatch, ck.dispatch, surface.unresolved_selectors)
            if not ck.dispatch and not diff.covered:
                listed = f"{_reg(_at(registry, f'kernels[{i}].dispatch', f'kernels[{i}]'))} lists {len(kernel.dispatch)} call site(s)" \
                    if kernel.dispatch else f"{_reg(kernel.where)} lists none"
                unknown = f"; {len(surface.unresolved_selectors)} selector call(s) read a table that could not be resolved" \
                    if surface.unresolved_selectors else ""
                yield Finding(
                    "KP304", ck.loc.path, ck.loc.line, ck.loc.column,
                    f"port table `{ck.short}` is dispatched nowhere: no `select_kernel_port` call reads it ({listed}{unknown}); "
                    "dispatch it through the selector or remove the table",
                    kernel=kernel.name)
                continue
            for entry, site, what in diff.changed:
                yield Finding(
                    "KP304", site.loc.path, site.loc.line, site.loc.column,
                    f"`select_kernel_port(\"{site.entry_point}\", \"{site.fallback}\", ...)` reading `{ck.short}`: the {what} "
                    f"differ{'s' if what != 'entry point and fallback' else ''} from {_reg(entry.where)}, which declares "
                    f"entry_point \"{entry.entry_point}\", fallback \"{entry.fallback}\"; the strings are what a user reads "
                    "when the port is missing, so update the registry or the call",
                    kernel=kernel.name)
            for site in diff.extra:
                yield Finding(
                    "KP304", site.loc.path, site.loc.line, site.loc.column,
                    f"`select_kernel_port(\"{site.entry_point}\", \"{site.fallback}\", ...)` reads `{ck.short}`, but "
                    f"{_reg(_at(registry, f'kernels[{i}].dispatch', f'kernels[{i}]'))} does not list "
                    f"this call site; add `{{entry_point: \"{site.entry_point}\", fallback: \"{site.fallback}\"}}` to "
                    f"`{kernel.name}`'s dispatch",
                    kernel=kernel.name)
            for entry in diff.missing:
                yield Finding(
                    "KP304", ck.loc.path, ck.loc.line, ck.loc.column,
                    f"{_reg(entry.where)} declares a dispatch of `{ck.short}` with entry_point \"{entry.entry_point}\", "
                    f"fallback \"{entry.fallback}\", but no `select_kernel_port` call reading the table passes those "
                    "strings; remove the entry or restore the call",
                    kernel=kernel.name)
        for site in surface.unresolved_selectors:
            if site.pair in declared_pairs:
                continue
            yield Finding(
                "KP304", site.loc.path, site.loc.line, site.loc.column,
                f"`select_kernel_port(\"{site.entry_point}\", \"{site.fallback}\", ...)`: the port table it reads could "
                "not be resolved, and no registry kernel declares this entry point and fallback, so the dispatch "
                "cannot be checked; pass the table function's result directly, or declare the site in its kernel's dispatch")


class WavePinMismatch(Rule):
    """KP305: the any-wave mark or the pinned HIP source differs."""

    codes = ("KP305",)

    def check(self, ctx: Context):
        registry = ctx.registry
        matched, _ = match_kernels(registry, _surface(ctx))
        for i, ck in sorted(matched.items()):
            kernel = registry.kernels[i]
            mark_at = _reg(_at(registry, f"kernels[{i}].rocm_any_wave_size", f"kernels[{i}]"))
            pin_at = _reg(_at(registry, f"kernels[{i}].hip_source", f"kernels[{i}]"))
            if kernel.rocm_any_wave_size != ck.any_wave:
                if ck.any_wave:
                    pin = f" and pin `hip_source: {ck.pinned}`" if ck.pinned else ""
                    message = (f"`{ck.short}` sets `.rocm_any_wave_size = true`, but {mark_at} declares false; marking a "
                               f"ROCm port runnable at any wavefront width is a reviewed decision: set "
                               f"`rocm_any_wave_size: true`{pin} in the registry, or drop the mark")
                else:
                    message = (f"`{ck.short}` is not marked `rocm_any_wave_size` in the code, but {mark_at} declares true; "
                               "set `rocm_any_wave_size: false` (and `hip_source: null`) in the registry, or restore the mark")
                yield Finding("KP305", ck.loc.path, ck.loc.line, ck.loc.column, message, kernel=kernel.name)
                continue
            if not ck.any_wave:
                continue
            rocm = ck.slots.get("rocm")
            at = rocm.loc if rocm is not None and rocm.loc is not None else ck.loc
            if not ck.pin_resolved:
                written = ", ".join(f"`{t}`" for t in ck.hip_source_texts) or "no ROCm factory call was reached"
                yield Finding(
                    "KP305", at.path, at.line, at.column,
                    f"`{ck.short}` is marked any-wave, but the HIP source its `.rocm` slot compiles could not be resolved "
                    f"to a named constant (source argument {written}), so the pin at {pin_at} "
                    f"({_quote(kernel.hip_source)}) cannot be checked; pass the body through a raw-string constant",
                    kernel=kernel.name)
                continue
            if (kernel.hip_source or None) != ck.pinned:
                yield Finding(
                    "KP305", at.path, at.line, at.column,
                    f"`.rocm` slot of `{ck.short}` (marked any-wave) compiles HIP source {_quote(ck.pinned)}, but {pin_at} "
                    f"pins {_quote(kernel.hip_source)}; the mark was reviewed against the pinned body: review the new "
                    f"source and set `hip_source: {ck.pinned}`",
                    kernel=kernel.name)


class LauncherScopeDrift(Rule):
    """KP306: a file starts or stops launching custom kernels without the registry saying so."""

    codes = ("KP306",)

    def check(self, ctx: Context):
        registry = ctx.registry
        surface = _surface(ctx)
        new, gone = launcher_drift(registry, surface)
        listed_at = _reg(_at(registry, "launchers"))
        for path, loc in new:
            kinds = " and ".join(sorted(surface.launch_kinds.get(path, ())))
            yield Finding(
                "KP306", loc.path, loc.line, loc.column,
                f"{path} launches custom kernels ({kinds}), but {listed_at} `launchers` does not list it; "
                f"add \"{path}\" to `launchers` so the new launch surface is reviewed",
            )
        for i, path in gone:
            where = _at(registry, f"launchers[{i}]", "launchers")
            if path in surface.in_scope:
                yield Finding(
                    "KP306", path, 1, 1,
                    f"{path} no longer calls a kernel factory or launches a kernel, but {_reg(where)} lists it in "
                    "`launchers`; remove it from the registry (or restore the launch)",
                )
            else:
                yield Finding(
                    "KP306", where.path, where.line, where.column,
                    f"{_reg(where)} lists {path} in `launchers`, but it is not among the checked sources (gone or "
                    "excluded); remove it from the registry",
                )

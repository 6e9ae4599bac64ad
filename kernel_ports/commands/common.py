"""What the commands' shared arguments mean: the registry a command line names (``--registry``, ``--root``,
``--limit``), the run options (``--jobs``, ``--no-cache``, ``--cache-dir``, ``--compile-commands``), where a
report goes (``--output``); a bad one is a :class:`UsageError`, one line and exit 2."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
DEFAULT_REGISTRY = "registry.yaml"  # what every command reads, and `init` writes, with no flag naming a file


class UsageError(Exception):
    """Bad input to the tool itself: one line, exit 2."""


def registry_of(args):
    """The registry ``--registry`` (else ./registry.yaml) names, under ``--root``, with the ``--limit`` overrides."""
    from kernel_ports.registry.load import load_registry

    registry_path = args.registry or DEFAULT_REGISTRY
    if args.registry is None and not Path(registry_path).exists():
        raise UsageError("kernel-ports: no registry.yaml in the current directory; pass --registry FILE (or run `kernel-ports init`)")
    validated = None
    if not getattr(args, "no_cache", False):
        from kernel_ports.cache.format import CACHE_SUBDIR
        from kernel_ports.cache.check_entry import cache_dir_of

        validated = cache_dir_of(args) / CACHE_SUBDIR / "registry"
    registry = load_registry(registry_path, args.root, validated_dir=validated)
    overrides = limit_overrides(args)
    return dataclasses.replace(registry, limits={**registry.limits, **overrides}) if overrides else registry


def limit_overrides(args) -> dict:
    """``--limit NAME=VALUE`` as {name: number}."""
    from kernel_ports.scope.limits import parse_overrides

    try:
        return parse_overrides(getattr(args, "limit", ()))
    except ValueError as exc:
        raise UsageError(f"kernel-ports: {exc}") from None


def check_run_args(args) -> None:
    """Flag values that need no registry are judged before it is read."""
    if args.jobs < 1:
        raise UsageError("kernel-ports: --jobs must be at least 1")
    limit_overrides(args)
    cc = args.compile_commands
    if cc is not None and not Path(cc).is_file():
        raise UsageError(f"kernel-ports: --compile-commands: no such file: {cc}")


def run_options(args, policy=None):
    """The options of one run (parser processes, the cache, compile_commands.json) and the findings' policy."""
    from kernel_ports.findings import Policy
    from kernel_ports.project import Options

    return Options(policy=policy or Policy(), jobs=args.jobs, use_cache=not args.no_cache, cache_dir=getattr(args, "cache_dir", None),
                   compile_commands=args.compile_commands, device_compile=getattr(args, "device_compile", None))


def device_compiler_present(args, registry) -> None:
    """``--device-compile rocm`` with no HIP compiler: one line naming what to install (exit 2)."""
    if getattr(args, "device_compile", None) is None:
        return
    from kernel_ports.cache.format import default_cache_dir
    from kernel_ports.cache.units import FileCache
    from kernel_ports.frontend.device.compiler import CompilerMissing, find_compiler

    setting = registry.compile.hip_compiler
    where = Path(args.cache_dir) if getattr(args, "cache_dir", None) else default_cache_dir()
    try:
        find_compiler(setting, FileCache(None if getattr(args, "no_cache", False) else where))
    except CompilerMissing as exc:
        raise UsageError(f"kernel-ports: --device-compile rocm: {exc}") from None


def write_output(text: str, output: str | None) -> None:
    """stdout, or a file written atomically (never half a report)."""
    if output is None:
        sys.stdout.write(text)
        return
    try:
        write_atomically(Path(output), text)
    except OSError as exc:
        raise UsageError(f"kernel-ports: --output: cannot write {output}: {exc.strerror}") from None


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``: a reader sees the old file or the new one, never half of it, and a write that
    fails leaves no temporary file behind. The file keeps its mode; a new one gets the mode a plain open gives."""
    import tempfile

    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        try:
            mode = path.stat().st_mode & 0o7777
        except OSError:
            mode = 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    mask = os.umask(0o22)  # read by setting: there is no other way; put back at once
    os.umask(mask)
    return mask
"""The commands that write: `init` (a registry for a tree that has none), `sync` (the registry refreshed from
the code, or today's findings added with ``--baseline``), `port` (a kernel's port for another backend). Without
``--write`` `sync` and `port` print the diff they would write; `init` writes ``./registry.yaml`` unless
``--output`` names another file (``-``: print it)."""

from __future__ import annotations

import sys
from pathlib import Path

from kernel_ports.commands.common import (DEFAULT_REGISTRY, EXIT_CLEAN, EXIT_FINDINGS, UsageError, check_run_args,
                                          registry_of, run_options, write_atomically)


def cmd_port(args) -> int:
    from kernel_ports.commands.port.apply import run_port, write_port
    from kernel_ports.commands.port.generate import PortError

    check_run_args(args)
    registry = registry_of(args)
    try:
        outcome = run_port(registry, args.kernel, args.backend, run_options(args))
        for line in outcome.summary():
            print(f"kernel-ports: port: {line}", file=sys.stderr)
        if not args.write:
            sys.stdout.write(outcome.diff(registry.root, registry.path))
            return EXIT_CLEAN
        for line in write_port(outcome, registry):
            print(f"kernel-ports: port: {line}", file=sys.stderr)
    except PortError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"kernel-ports: port: cannot write: {exc}") from None
    return EXIT_CLEAN


def _check_baseline_args(args) -> None:
    if args.tracking is not None and not args.baseline:
        raise UsageError("kernel-ports: --tracking is the reference of baseline exemptions; it needs --baseline")


def cmd_init(args) -> int:
    from kernel_ports.commands.init import InitOptions, build_init
    from kernel_ports.commands.sync import SyncError

    check_run_args(args)
    _check_baseline_args(args)
    # with no --output the registry goes where `check` looks for it by default; `-` prints it
    output = None if args.output == "-" else (args.output if args.output is not None else DEFAULT_REGISTRY)
    if output is not None:
        target = Path(output)
        if target.is_dir():
            raise UsageError(f"kernel-ports: --output: is a directory: {output}")
        if target.exists() and not args.force:
            raise UsageError(f"kernel-ports: init: {output} exists; pass --force to overwrite it, "
                             "`--output FILE` to write another, or use `kernel-ports sync`")
        if not target.parent.is_dir() and str(target.parent):
            raise UsageError(f"kernel-ports: --output: no such directory: {target.parent}")
    opts = InitOptions(
        root=args.root, output=output, include=tuple(args.include), exclude=tuple(args.exclude),
        defines=tuple(args.define), include_dirs=tuple(args.include_dir), configurations=tuple(args.config), std=args.std,
        compile_commands=args.compile_commands,
        helper_files=tuple(args.helper_file) if args.helper_file is not None else None,
        test_seams=tuple(args.test_seam) if args.test_seam is not None else None,
        table_type=args.table_type, selector=args.selector, has_port=args.has_port,
        backend_queries=tuple(args.backend_query))
    import tempfile

    from kernel_ports.commands.adopt import check_written, default_tracking

    # --no-cache: nothing from an earlier run is read, but the check init runs reuses init's own parses
    with tempfile.TemporaryDirectory(prefix="kernel-ports-init-") as private:
        cache_dir = private if args.no_cache else None
        try:
            text, notes = build_init(opts, jobs=args.jobs, use_cache=True, cache_dir=cache_dir)
        except SyncError as exc:
            raise UsageError(str(exc)) from None
        for note in notes:
            print(f"kernel-ports: init: {note}", file=sys.stderr)
        text, lines = check_written(text, Path(args.root).resolve(), jobs=args.jobs, cache_dir=cache_dir,
                                    baseline=args.baseline, tracking=args.tracking or default_tracking())
    for line in lines:
        print(f"kernel-ports: init: {line}", file=sys.stderr)
    if output is None:
        sys.stdout.write(text)
        return EXIT_CLEAN
    try:
        write_atomically(Path(output), text)
    except OSError as exc:
        raise UsageError(f"kernel-ports: --output: cannot write {output}: {exc.strerror}") from None
    print(f"kernel-ports: init: wrote {output} (root: {Path(args.root).resolve()})", file=sys.stderr)
    return EXIT_CLEAN


def cmd_sync(args) -> int:
    from kernel_ports.project import build_project_index
    from kernel_ports.scope import resolve_scope
    from kernel_ports.commands.sync import SyncError, compute_sync, validate_text

    check_run_args(args)
    _check_baseline_args(args)
    registry = registry_of(args)
    if args.baseline:
        return _sync_baseline(args, registry)
    scope = resolve_scope(registry)
    index = build_project_index(registry, scope, run_options(args))
    try:
        result = compute_sync(registry, index, scope)
        if result.changed:
            validate_text(result.new, registry)
    except SyncError as exc:
        raise UsageError(str(exc)) from None
    for note in result.notes:
        print(f"kernel-ports: sync: {note}", file=sys.stderr)
    name = str(registry.path)
    if args.mode == "write":
        if result.changed:
            try:
                write_atomically(registry.path, result.new)
            except OSError as exc:
                raise UsageError(f"kernel-ports: sync: cannot write {name}: {exc.strerror}") from None
            print(f"kernel-ports: sync: updated {name} ({len(result.changes)} change(s))", file=sys.stderr)
        else:
            print(f"kernel-ports: sync: {name} already matches the code", file=sys.stderr)
        return EXIT_CLEAN
    if not result.changed:
        print(f"kernel-ports: sync: {name} matches the code", file=sys.stderr)
        return EXIT_CLEAN
    sys.stdout.write(result.diff(name))
    print(f"kernel-ports: sync: {name} differs from the code ({len(result.changes)} change(s)); "
          "run `kernel-ports sync --write` and review the diff", file=sys.stderr)
    return EXIT_FINDINGS


def _sync_baseline(args, registry) -> int:
    from kernel_ports.commands.adopt import default_tracking, sync_baseline
    from kernel_ports.findings import Policy
    from kernel_ports.commands.sync import SyncError, validate_text

    old, new, added, unjudged = sync_baseline(registry, run_options(args, Policy(severity=registry.severity)),
                                    args.tracking or default_tracking())
    name = str(registry.path)
    if unjudged:
        print(f"kernel-ports: sync: {unjudged} KP901/KP902 finding(s) not recorded: a file or construct the check "
              "cannot judge is fixed, not exempted", file=sys.stderr)
    if not added:
        print(f"kernel-ports: sync: {name}: no unexempted finding to record", file=sys.stderr)
        return EXIT_CLEAN
    try:
        validate_text(new, registry)
    except SyncError as exc:
        raise UsageError(str(exc)) from None
    if args.mode == "write":
        try:
            write_atomically(registry.path, new)
        except OSError as exc:
            raise UsageError(f"kernel-ports: sync: cannot write {name}: {exc.strerror}") from None
        print(f"kernel-ports: sync: {name}: {added} baseline exemption(s) recorded", file=sys.stderr)
        return EXIT_CLEAN
    import difflib

    sys.stdout.write("".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), fromfile=f"{name} (registry)",
                                                  tofile=f"{name} (with the baseline)")))
    print(f"kernel-ports: sync: {added} finding(s) would be recorded; run `kernel-ports sync --baseline --write`",
          file=sys.stderr)
    return EXIT_FINDINGS

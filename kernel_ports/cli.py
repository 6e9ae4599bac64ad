"""The `kernel-ports` command line.

Exit codes: 0 clean, 1 findings at error severity (or `sync --check` drift),
2 usage, registry or internal error. Every error is one line on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

from kernel_ports import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """Bad input to the tool itself: one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line instead of usage + message
        raise UsageError(f"{self.prog}: {message}")


def _common(p: argparse.ArgumentParser, *, with_run=True):
    p.add_argument("--registry", default=None, help="registry file (default: ./registry.yaml)")
    p.add_argument("--root", default=None, help="source root (overrides the registry's root)")
    if with_run:
        p.add_argument("--jobs", type=int, default=max(1, min(2, os.cpu_count() or 1)), help="parser processes")
        p.add_argument("--no-cache", action="store_true", help="parse everything afresh")
        p.add_argument("--cache-dir", default=None, metavar="DIR",
                       help="cache directory (default: $KERNEL_PORTS_CACHE_DIR, else ~/.cache/kernel-ports)")
        p.add_argument("--compile-commands", default=None, help="compile_commands.json to take flags from")
        p.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE",
                       help="override one of the registry's limits for this run (repeatable), e.g. max_files=50000")


def _baseline_flags(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--baseline", action="store_true", help=what)
    p.add_argument("--tracking", default=None, metavar="REF", help="tracking reference of baseline exemptions "
                   "(an issue or URL; default: 'baseline of <today>')")


def build_parser(only_check: bool = False) -> argparse.ArgumentParser:
    """The command line; with ``only_check`` just the ``check`` command (what a gate runs: building every
    subcommand's options is a tenth of a check answered from its cache entry)."""
    parser = _Parser(prog="kernel-ports", description="Checks GPU-kernel port dispatch in MLX-based engines.")
    parser.add_argument("--version", action="version", version=f"kernel-ports {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    _add_check(sub)
    if not only_check:
        _add_others(sub)
    return parser


def _add_check(sub) -> None:
    check = sub.add_parser("check", help="run every rule")
    _common(check)
    check.add_argument("--select", default=None, help="codes or prefixes to report, e.g. KP1,KP201")
    check.add_argument("--ignore", default=None, help="codes or prefixes not to report")
    check.add_argument("--format", choices=CHECK_FORMATS, default="text")
    check.add_argument("--output", default=None, help="write the report here instead of stdout")
    check.add_argument("--also", action="append", default=[], metavar="FORMAT=FILE",
                       help="also write the same run's report in FORMAT to FILE (repeatable), e.g. --also sarif=out.sarif")


def _add_others(sub) -> None:
    facts = sub.add_parser("facts", help="dump the project index")
    _common(facts)
    facts.add_argument("--format", choices=("json",), default="json")
    facts.add_argument("--output", default=None)

    matrix = sub.add_parser("matrix", help="kernels x backends coverage")
    _common(matrix)
    matrix.add_argument("--format", choices=("markdown", "html", "json"), default="markdown")
    matrix.add_argument("--output", default=None)
    matrix.add_argument("--link-template", default=None, metavar="URL",
                        help="html: link file:line through this URL, e.g. https://github.com/o/r/blob/main/{path}#L{line}")

    status = sub.add_parser("status", help="per-kernel checklist for adding a backend's ports")
    _common(status)
    status.add_argument("backend", choices=("rocm",), help="the backend being ported to")
    status.add_argument("--format", choices=("text", "json"), default="text")
    status.add_argument("--output", default=None)

    port = sub.add_parser("port", help="generate a kernel's port for a backend from its port for another")
    _common(port)
    port.add_argument("backend", choices=("rocm", "cuda"), help="the backend to generate the port for (rocm from cuda, cuda from rocm)")
    port.add_argument("kernel", help="the registry's kernel name")
    port.add_argument("--write", action="store_true", help="write the files and the registry (default: print a unified diff)")

    init = sub.add_parser("init", help="write a registry for a tree that has none")
    init.add_argument("--root", required=True, help="source tree to describe")
    init.add_argument("--output", default=None, help="write the registry here (default: stdout)")
    init.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    init.add_argument("--include", action="append", default=[], metavar="GLOB", help="source glob under the root (repeatable; default **)")
    init.add_argument("--exclude", action="append", default=[], metavar="GLOB", help="glob to leave out (repeatable)")
    init.add_argument("--define", action="append", default=[], metavar="NAME[=VALUE]", help="define for every parse (repeatable; replaces the inferred export-attribute defines)")
    init.add_argument("--include-dir", action="append", default=[], metavar="DIR", help="include directory, relative to the root or absolute (repeatable; init adds the tree folders it still needs)")
    init.add_argument("--config", action="append", default=[], metavar="NAME=DEF,...", help="a build configuration: its defines (repeatable; replaces the configurations inferred from #if guards)")
    init.add_argument("--std", default="c++20", help="C++ standard for the Clang front end (default c++20)")
    init.add_argument("--helper-file", action="append", default=None, metavar="PATH", help="helper file (repeatable; default: inferred from the code)")
    init.add_argument("--test-seam", action="append", default=None, metavar="NAME", help="test seam function (repeatable; default set_rocm_port_warp_size_for_tests)")
    init.add_argument("--table-type", default=None, help="port-table type (default mlxcel::KernelPorts)")
    init.add_argument("--selector", default=None, help="selector function (default mlxcel::select_kernel_port)")
    init.add_argument("--has-port", default=None, help="port test function (default mlxcel::has_kernel_port)")
    init.add_argument("--backend-query", action="append", default=[], metavar="NAME", help="backend query or availability test (repeatable; replaces the defaults)")
    init.add_argument("--jobs", type=int, default=max(1, min(2, os.cpu_count() or 1)), help="parser processes")
    init.add_argument("--no-cache", action="store_true", help="parse everything afresh")
    init.add_argument("--compile-commands", default=None, help="compile_commands.json to take flags from")
    _baseline_flags(init, "record every finding of the first check as an exemption, so the gate starts green")

    sync = sub.add_parser("sync", help="compare the registry with the code (--check) or refresh it (--write)")
    _common(sync)
    mode = sync.add_mutually_exclusive_group()
    mode.add_argument("--check", dest="mode", action="store_const", const="check", help="print the diff; exit 1 if there is one (default)")
    mode.add_argument("--write", dest="mode", action="store_const", const="write", help="rewrite the registry in place, atomically")
    sync.set_defaults(mode="check")
    _baseline_flags(sync, "add today's unexempted findings as exemptions (instead of refreshing from the code)")

    explain = sub.add_parser("explain", help="rationale and examples for a rule")
    explain.add_argument("code", nargs="?", help="a rule code; omit to list them all")


def _load(args):
    from kernel_ports.registry.load import load_registry

    registry_path = args.registry or "registry.yaml"
    if args.registry is None and not Path(registry_path).exists():
        raise UsageError("kernel-ports: no registry.yaml in the current directory; pass --registry FILE (or run `kernel-ports init`)")
    validated = None
    if not getattr(args, "no_cache", False):
        from kernel_ports.cache.format import CACHE_SUBDIR
        from kernel_ports.cache.check_entry import cache_dir_of

        validated = cache_dir_of(args) / CACHE_SUBDIR / "registry"
    registry = load_registry(registry_path, args.root, validated_dir=validated)
    overrides = _limit_overrides(args)
    return dataclasses.replace(registry, limits={**registry.limits, **overrides}) if overrides else registry


def _limit_overrides(args) -> dict:
    from kernel_ports.scope.limits import parse_overrides

    try:
        return parse_overrides(getattr(args, "limit", ()))
    except ValueError as exc:
        raise UsageError(f"kernel-ports: {exc}") from None


def _check_run_args(args) -> None:
    """Flag values that need no registry are judged before it is read."""
    if args.jobs < 1:
        raise UsageError("kernel-ports: --jobs must be at least 1")
    _limit_overrides(args)
    cc = args.compile_commands
    if cc is not None and not Path(cc).is_file():
        raise UsageError(f"kernel-ports: --compile-commands: no such file: {cc}")


def _options(args, policy=None):
    from kernel_ports.findings import Policy
    from kernel_ports.project import Options

    return Options(policy=policy or Policy(), jobs=args.jobs, use_cache=not args.no_cache, cache_dir=getattr(args, "cache_dir", None),
                   compile_commands=args.compile_commands)


def write_output(text: str, output: str | None) -> None:
    """stdout, or a file written atomically (never half a report)."""
    if output is None:
        sys.stdout.write(text)
        return
    import tempfile

    target = Path(output)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".", prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        raise UsageError(f"kernel-ports: --output: cannot write {output}: {exc.strerror}") from None


def cmd_check(args) -> int:
    from kernel_ports.cache import check_entry as checkcache
    from kernel_ports.findings import Policy, SelectionError, parse_selection

    try:
        select, ignore = parse_selection(args.select), parse_selection(args.ignore)
    except SelectionError as exc:
        raise UsageError(f"kernel-ports: {exc}") from None
    _check_run_args(args)
    extra = _also_outputs(args.also, args.output)
    known = checkcache.lookup(args)  # every input unchanged since a check that answered: its answer
    if known is not None:
        findings, summary = known
    else:
        from kernel_ports.project import analyze

        registry = _load(args)
        kernel_severity = {k.name: k.severity for k in registry.kernels if k.severity}
        policy = Policy(select=select, ignore=ignore, severity=registry.severity, kernel_severity=kernel_severity)
        result = analyze(registry, _options(args, policy))
        if checkcache.store(args, registry, result) is False:
            print(f"note: the cache folder {checkcache.cache_dir_of(args)} cannot be written: this check keeps nothing "
                  "for the next one", file=sys.stderr)
        findings, summary = result.findings, result.summary
    from kernel_ports.reporters import FORMATS

    for fmt, path in extra:
        write_output(FORMATS[fmt](findings, summary), path)
    write_output(FORMATS[args.format](findings, summary), args.output)
    return EXIT_FINDINGS if summary["counts"]["error"] else EXIT_CLEAN


CHECK_FORMATS = ("text", "json", "sarif", "github")


def _also_outputs(items: list, output) -> list:
    """``--also FORMAT=FILE`` values as (format, file), judged before anything runs."""
    out = []
    for item in items:
        fmt, sep, path = item.partition("=")
        if not sep or fmt not in CHECK_FORMATS or not path:
            raise UsageError(f"kernel-ports: --also: expected FORMAT=FILE with FORMAT one of {', '.join(CHECK_FORMATS)}, got {item!r}")
        out.append((fmt, path))
    paths = [p for _, p in out] + ([output] if output else [])
    if len(set(paths)) != len(paths):
        raise UsageError("kernel-ports: --also: each report needs its own file")
    return out


def cmd_facts(args) -> int:
    import json

    _, index = _index(args)
    write_output(json.dumps(index.to_json(), indent=2) + "\n", args.output)
    return EXIT_CLEAN


def _index(args):
    from kernel_ports.project import build_project_index
    from kernel_ports.scope import resolve_scope

    _check_run_args(args)
    registry = _load(args)
    return registry, build_project_index(registry, resolve_scope(registry), _options(args))


def cmd_matrix(args) -> int:
    from kernel_ports.commands.coverage import matrix_rows, render_matrix

    if args.link_template is not None and (args.format != "html" or "{path}" not in args.link_template):
        raise UsageError("kernel-ports: --link-template needs --format html and a {path} (and optionally {line}) in the URL")
    if args.format == "html":
        return _dashboard(args)
    registry, index = _index(args)
    write_output(render_matrix(matrix_rows(registry, index), args.format), args.output)
    return EXIT_CLEAN


def _dashboard(args) -> int:
    from kernel_ports.commands.coverage import matrix_rows, rocm_checklist
    from kernel_ports.commands.dashboard import render_dashboard
    from kernel_ports.findings import Policy
    from kernel_ports.project import analyze

    _check_run_args(args)
    registry = _load(args)
    result = analyze(registry, _options(args, Policy(severity=registry.severity)))
    rows = matrix_rows(registry, result.index)
    page = render_dashboard(rows, rocm_checklist(registry, result.index, result.findings), result.findings,
                            result.summary, args.link_template)
    write_output(page, args.output)
    return EXIT_CLEAN


def cmd_status(args) -> int:
    from kernel_ports.commands.coverage import render_checklist, rocm_checklist
    from kernel_ports.findings import Policy
    from kernel_ports.project import analyze

    _check_run_args(args)
    registry = _load(args)
    result = analyze(registry, _options(args, Policy(severity=registry.severity)))
    checklist = rocm_checklist(registry, result.index, result.findings)
    write_output(render_checklist(checklist, args.format), args.output)
    return EXIT_CLEAN


def cmd_port(args) -> int:
    from kernel_ports.commands.port.apply import run_port, write_port
    from kernel_ports.commands.port.generate import PortError

    _check_run_args(args)
    registry = _load(args)
    try:
        outcome = run_port(registry, args.kernel, args.backend, _options(args))
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
    from kernel_ports.commands.sync import SyncError, write_atomically

    _check_run_args(args)
    _check_baseline_args(args)
    if args.output is not None:
        target = Path(args.output)
        if target.is_dir():
            raise UsageError(f"kernel-ports: --output: is a directory: {args.output}")
        if target.exists() and not args.force:
            raise UsageError(f"kernel-ports: --output: {args.output} exists; pass --force to overwrite it, or use `kernel-ports sync`")
        if not target.parent.is_dir() and str(target.parent):
            raise UsageError(f"kernel-ports: --output: no such directory: {target.parent}")
    opts = InitOptions(
        root=args.root, output=args.output, include=tuple(args.include), exclude=tuple(args.exclude),
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
    if args.output is None:
        sys.stdout.write(text)
        return EXIT_CLEAN
    try:
        write_atomically(Path(args.output), text)
    except OSError as exc:
        raise UsageError(f"kernel-ports: --output: cannot write {args.output}: {exc.strerror}") from None
    print(f"kernel-ports: init: wrote {args.output}", file=sys.stderr)
    return EXIT_CLEAN


def cmd_sync(args) -> int:
    from kernel_ports.project import build_project_index
    from kernel_ports.scope import resolve_scope
    from kernel_ports.commands.sync import SyncError, compute_sync, validate_text, write_atomically

    _check_run_args(args)
    _check_baseline_args(args)
    registry = _load(args)
    if args.baseline:
        return _sync_baseline(args, registry)
    scope = resolve_scope(registry)
    index = build_project_index(registry, scope, _options(args))
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
    from kernel_ports.commands.sync import SyncError, validate_text, write_atomically

    old, new, added, unjudged = sync_baseline(registry, _options(args, Policy(severity=registry.severity)),
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


def cmd_explain(args) -> int:
    from kernel_ports.checkers.explain import explain_text
    from kernel_ports.findings import RULES

    if not args.code:
        for info in RULES.values():
            sys.stdout.write(f"{info.code}  {info.name:<28} {info.summary}\n")
        return EXIT_CLEAN
    code = args.code.upper()
    if code not in RULES:
        raise UsageError(f"kernel-ports: unknown rule code: {args.code} (run `kernel-ports explain` for the list)")
    info = RULES[code]
    body = explain_text(code, missing_ok=True) or f"{info.summary}\n"
    sys.stdout.write(f"{code} {info.name} ({info.severity} by default)\n\n{body}")
    return EXIT_CLEAN


COMMANDS = {
    "check": cmd_check,
    "facts": cmd_facts,
    "init": cmd_init,
    "sync": cmd_sync,
    "matrix": cmd_matrix,
    "status": cmd_status,
    "port": cmd_port,
    "explain": cmd_explain,
}


def _registry_error(exc) -> bool:
    # the registry loader is imported only by commands that read a registry (a check answered from its cache
    # entry does not), so its error class is looked up where it may have come from
    load = sys.modules.get("kernel_ports.registry.load")
    return load is not None and isinstance(exc, load.RegistryError)


def main(argv=None) -> int:
    from kernel_ports.scope.limits import InputError

    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        args = build_parser(only_check=argv[:1] == ["check"]).parse_args(argv)
        if args.command is None:
            raise UsageError("kernel-ports: a command is required (check, facts, explain, ...); see --help")
        return COMMANDS[args.command](args)
    except UsageError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_ERROR
    except InputError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("kernel-ports: interrupted", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_ERROR
    except Exception as exc:  # an internal error is still one line and exit 2
        if _registry_error(exc):
            print(f"kernel-ports: registry error: {exc}", file=sys.stderr)
            return EXIT_ERROR
        if os.environ.get("KERNEL_PORTS_DEBUG"):
            raise
        print(f"kernel-ports: internal error: {type(exc).__name__}: {exc} (set KERNEL_PORTS_DEBUG=1 for a traceback)", file=sys.stderr)
        return EXIT_ERROR


def entry() -> None:
    """The ``kernel-ports`` command (and ``python -m kernel_ports``): :func:`main`, then an exit that skips the
    interpreter's teardown.

    Freeing every object of a run one by one at exit (the index's records, the cached results) took 0.05-0.08 s
    of a one-file check. The exit handler is registered before anything else, so it runs after every other
    ``atexit`` handler (multiprocessing's, which ends the parser processes, among them); it flushes the standard
    streams and ends the process with ``os._exit`` and :func:`main`'s code. A ``SystemExit`` out of
    :func:`main` (``--help``, a usage error from the argument parser) exits the ordinary way. Tests call
    :func:`main`, which returns."""
    import atexit

    code: list = []

    def exit_now():
        if code:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code[0])

    atexit.register(exit_now)
    code.append(main())
    raise SystemExit(code[0])


if __name__ == "__main__":
    entry()

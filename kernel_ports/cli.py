"""The `kernel-ports` command line.

Exit codes: 0 clean, 1 findings at error severity (or `sync --check` drift),
2 usage, registry or internal error. Every error is one line on stderr.

This module is the parser and the dispatcher: each command runs in its module under
:mod:`kernel_ports.commands`, which judges what its arguments mean.
"""

from __future__ import annotations

import argparse
import os
import sys

from kernel_ports import __version__
from kernel_ports.commands.check import CHECK_FORMATS, cmd_check
from kernel_ports.commands.common import EXIT_ERROR, UsageError


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
    _device_flag(check)


def _device_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device-compile", choices=("rocm",), default=None,
                   help="also build every HIP body for its targets with hipcc (KP501/KP502, device_builds in facts)")


def _add_others(sub) -> None:
    facts = sub.add_parser("facts", help="dump the project index")
    _common(facts)
    facts.add_argument("--format", choices=("json",), default="json")
    facts.add_argument("--output", default=None)
    _device_flag(facts)

    matrix = sub.add_parser("matrix", help="kernels x backends coverage")
    _common(matrix)
    matrix.add_argument("--format", choices=("markdown", "html", "json"), default="markdown")
    matrix.add_argument("--output", default=None)
    matrix.add_argument("--link-template", default=None, metavar="URL",
                        help="html: link file:line through this URL, e.g. https://github.com/o/r/blob/main/{path}#L{line}")
    _device_flag(matrix)

    status = sub.add_parser("status", help="per-kernel checklist for adding a backend's ports")
    _common(status)
    status.add_argument("backend", choices=("rocm",), help="the backend being ported to")
    status.add_argument("--format", choices=("text", "json"), default="text")
    status.add_argument("--output", default=None)
    _device_flag(status)

    port = sub.add_parser("port", help="generate a kernel's port for a backend from its port for another")
    _common(port)
    port.add_argument("backend", choices=("rocm", "cuda"), help="the backend to generate the port for (rocm from cuda, cuda from rocm)")
    port.add_argument("kernel", help="the registry's kernel name")
    port.add_argument("--write", action="store_true", help="write the files and the registry (default: print a unified diff)")

    init = sub.add_parser("init", help="write a registry for a tree that has none")
    init.add_argument("--root", default=".", help="source tree to describe (default: the current folder)")
    init.add_argument("--output", default=None, help="write the registry here (default: registry.yaml in the current "
                      "folder, which `check` reads by default; `-` prints it)")
    init.add_argument("--force", action="store_true", help="overwrite the output file if it exists")
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

    serve = sub.add_parser("serve", help="keep a process that runs check and facts with their imports done and the "
                           "cache decoded (for the edit loop)")
    serve.add_argument("--idle-minutes", type=int, default=60, help="stop after this long without a command "
                       "(default 60; 0: never)")
    ask = serve.add_mutually_exclusive_group()
    ask.add_argument("--stop", action="store_true", help="stop the server of this installation")
    ask.add_argument("--status", action="store_true", help="say whether a server of this installation listens "
                     "(exit 1 if none)")


def _command(name: str):
    """The function that runs a command; its module is imported only when that command runs."""
    if name == "check":
        return cmd_check
    if name in ("facts", "matrix", "status"):
        from kernel_ports.commands import views

        return {"facts": views.cmd_facts, "matrix": views.cmd_matrix, "status": views.cmd_status}[name]
    if name in ("init", "sync", "port"):
        from kernel_ports.commands import writing

        return {"init": writing.cmd_init, "sync": writing.cmd_sync, "port": writing.cmd_port}[name]
    if name == "serve":
        from kernel_ports.commands.serve import cmd_serve

        return lambda args: cmd_serve(args, run=main)  # (what a served command runs: this module's main)
    from kernel_ports.commands.explain import cmd_explain

    return cmd_explain


def _front_end_error(exc) -> bool:
    # a setup problem of the Clang front end (no built-in headers, a libclang that cannot serve), looked up as the
    # registry's error is
    toolchain = sys.modules.get("kernel_ports.frontend.clang.toolchain")
    return toolchain is not None and isinstance(exc, toolchain.FrontEndError)


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
        return _command(args.command)(args)
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
        if _front_end_error(exc):
            print(f"kernel-ports: {exc}", file=sys.stderr)
            return EXIT_ERROR
        if os.environ.get("KERNEL_PORTS_DEBUG"):
            raise
        print(f"kernel-ports: internal error: {type(exc).__name__}: {exc} (set KERNEL_PORTS_DEBUG=1 for a traceback)", file=sys.stderr)
        return EXIT_ERROR

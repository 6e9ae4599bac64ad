"""The `kernel-ports` command line.

Exit codes: 0 clean, 1 findings at error severity (or `sync --check` drift),
2 usage, registry or internal error. Every error is one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
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
        p.add_argument("--compile-commands", default=None, help="compile_commands.json to take flags from")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kernel-ports", description="Checks GPU-kernel port dispatch in MLX-based engines.")
    parser.add_argument("--version", action="version", version=f"kernel-ports {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    check = sub.add_parser("check", help="run every rule")
    _common(check)
    check.add_argument("--select", default=None, help="codes or prefixes to report, e.g. KP1,KP201")
    check.add_argument("--ignore", default=None, help="codes or prefixes not to report")
    check.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text")
    check.add_argument("--output", default=None, help="write the report here instead of stdout")

    facts = sub.add_parser("facts", help="dump the project index")
    _common(facts)
    facts.add_argument("--format", choices=("json",), default="json")
    facts.add_argument("--output", default=None)

    matrix = sub.add_parser("matrix", help="kernels x backends coverage")
    _common(matrix)
    matrix.add_argument("--format", choices=("markdown", "html", "json"), default="markdown")
    matrix.add_argument("--output", default=None)

    status = sub.add_parser("status", help="per-kernel checklist for adding a backend's ports")
    _common(status)
    status.add_argument("backend", choices=("rocm",), help="the backend being ported to")
    status.add_argument("--format", choices=("text", "json"), default="text")
    status.add_argument("--output", default=None)

    explain = sub.add_parser("explain", help="rationale and examples for a rule")
    explain.add_argument("code", nargs="?", help="a rule code; omit to list them all")
    return parser


def _load(args):
    from kernel_ports.registry.load import load_registry

    registry_path = args.registry or "registry.yaml"
    if args.registry is None and not Path(registry_path).exists():
        raise UsageError("kernel-ports: no registry.yaml in the current directory; pass --registry FILE (or run `kernel-ports init`)")
    return load_registry(registry_path, args.root)


def _check_run_args(args) -> None:
    """Flag values that need no registry are judged before it is read."""
    if args.jobs < 1:
        raise UsageError("kernel-ports: --jobs must be at least 1")
    cc = args.compile_commands
    if cc is not None and not Path(cc).is_file():
        raise UsageError(f"kernel-ports: --compile-commands: no such file: {cc}")


def _options(args, policy=None):
    from kernel_ports.findings import Policy
    from kernel_ports.project import Options

    return Options(policy=policy or Policy(), jobs=args.jobs, use_cache=not args.no_cache, compile_commands=args.compile_commands)


def write_output(text: str, output: str | None) -> None:
    """stdout, or a file written atomically (never half a report)."""
    if output is None:
        sys.stdout.write(text)
        return
    target = Path(output)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".", prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        raise UsageError(f"kernel-ports: --output: cannot write {output}: {exc.strerror}") from None


def cmd_check(args) -> int:
    from kernel_ports.findings import Policy, SelectionError, parse_selection
    from kernel_ports.project import analyze
    from kernel_ports.reporters import FORMATS

    try:
        select, ignore = parse_selection(args.select), parse_selection(args.ignore)
    except SelectionError as exc:
        raise UsageError(f"kernel-ports: {exc}") from None
    _check_run_args(args)
    registry = _load(args)
    kernel_severity = {k.name: k.severity for k in registry.kernels if k.severity}
    policy = Policy(select=select, ignore=ignore, severity=registry.severity, kernel_severity=kernel_severity)
    result = analyze(registry, _options(args, policy))
    write_output(FORMATS[args.format](result.findings, result.summary), args.output)
    return EXIT_FINDINGS if result.summary["counts"]["error"] else EXIT_CLEAN


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
    from kernel_ports.coverage import matrix_rows, render_matrix

    registry, index = _index(args)
    write_output(render_matrix(matrix_rows(registry, index), args.format), args.output)
    return EXIT_CLEAN


def cmd_status(args) -> int:
    from kernel_ports.coverage import render_checklist, rocm_checklist
    from kernel_ports.findings import Policy
    from kernel_ports.project import analyze

    _check_run_args(args)
    registry = _load(args)
    result = analyze(registry, _options(args, Policy(severity=registry.severity)))
    checklist = rocm_checklist(registry, result.index, result.findings)
    write_output(render_checklist(checklist, args.format), args.output)
    return EXIT_CLEAN


def cmd_explain(args) -> int:
    from kernel_ports.explain import explain_text
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


COMMANDS = {"check": cmd_check, "facts": cmd_facts, "matrix": cmd_matrix, "status": cmd_status, "explain": cmd_explain}


def main(argv=None) -> int:
    from kernel_ports.registry.load import RegistryError

    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            raise UsageError("kernel-ports: a command is required (check, facts, explain, ...); see --help")
        return COMMANDS[args.command](args)
    except UsageError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_ERROR
    except RegistryError as exc:
        print(f"kernel-ports: registry error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("kernel-ports: interrupted", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_ERROR
    except Exception as exc:  # an internal error is still one line and exit 2
        if os.environ.get("KERNEL_PORTS_DEBUG"):
            raise
        print(f"kernel-ports: internal error: {type(exc).__name__}: {exc} (set KERNEL_PORTS_DEBUG=1 for a traceback)", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())

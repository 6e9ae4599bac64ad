"""The commands that show what the code holds and change no file: `facts` (the project index as JSON), `matrix`
(kernels × backends, markdown or json; ``--format html`` the dashboard, from a full check), `status rocm` (the
per-kernel checklist, from a full check)."""

from __future__ import annotations

from kernel_ports.commands.common import (EXIT_CLEAN, UsageError, check_run_args, device_compiler_present, registry_of,
                                          run_options, write_output)


def cmd_facts(args) -> int:
    import json

    _, index = _index(args)
    write_output(json.dumps(index.to_json(), indent=2) + "\n", args.output)
    return EXIT_CLEAN


def _index(args):
    from kernel_ports.project import build_project_index, device_builds
    from kernel_ports.scope import resolve_scope

    check_run_args(args)
    registry = registry_of(args)
    device_compiler_present(args, registry)
    scope = resolve_scope(registry)
    options = run_options(args)
    index = build_project_index(registry, scope, options)
    device_builds(registry, scope, index, options)
    return registry, index


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

    check_run_args(args)
    registry = registry_of(args)
    device_compiler_present(args, registry)
    result = analyze(registry, run_options(args, Policy(severity=registry.severity)))
    rows = matrix_rows(registry, result.index)
    page = render_dashboard(rows, rocm_checklist(registry, result.index, result.findings), result.findings,
                            result.summary, args.link_template)
    write_output(page, args.output)
    return EXIT_CLEAN


def device_note(index) -> str:
    """What the checklist says when the HIP bodies were not built."""
    info = index.device
    if info.get("compiler"):
        return ""
    if info.get("missing"):
        return f"HIP bodies not built: {info['missing']}"
    return "HIP bodies not built: add --device-compile rocm (or compile.device.rocm in the registry) for each target's build"


def cmd_status(args) -> int:
    from kernel_ports.commands.coverage import render_checklist, rocm_checklist
    from kernel_ports.findings import Policy
    from kernel_ports.project import analyze

    check_run_args(args)
    registry = registry_of(args)
    device_compiler_present(args, registry)
    result = analyze(registry, run_options(args, Policy(severity=registry.severity)))
    checklist = rocm_checklist(registry, result.index, result.findings)
    write_output(render_checklist(checklist, args.format, device_note(result.index)), args.output)
    return EXIT_CLEAN

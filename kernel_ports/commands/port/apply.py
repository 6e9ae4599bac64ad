"""Run a port plan: build the edited tree in a scratch copy, refresh the registry, show or write.

The scratch copy holds the files the check reads (those in scope and the
project headers they include), with the plan's edits applied. It is indexed
and checked like the real tree, so the registry entry comes from the same
code as `sync --write` (`kernel_ports.commands.sync.compute_sync`) and the new port
is confirmed to be what the rules see: a `.rocm` slot whose holder reaches
`hip_kernel` compiling the new body constant. Nothing is written into the
user's tree unless asked, an existing file is never replaced by a new one
(a new file is linked into place, which fails if the name is taken), edited
files are rewritten atomically after checking they did not change meanwhile.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kernel_ports.commands.port.edits import unified
from kernel_ports.commands.port.generate import LABEL, Plan, PortError, plan_port


@dataclass
class Outcome:
    plan: Plan
    registry_old: str
    registry_new: str
    sync_changes: list = field(default_factory=list)
    new_findings: list = field(default_factory=list)  # Finding on the ported copy, not on the original
    device_lines: list = field(default_factory=list)  # how the generated HIP body built, per target

    def diff(self, root: Path, registry_path: Path) -> str:
        out = [unified(_shown(root / p), old, new) for p, (old, new) in self.plan.texts().items()]
        if self.registry_new != self.registry_old:
            out.append(unified(_shown(registry_path), self.registry_old, self.registry_new))
        return "".join(out)

    def summary(self) -> list:
        p = self.plan
        lines = [f"{p.kernel}: {LABEL[p.target]} port from the {LABEL[p.source]} port: body {p.constant}, "
                 f".{p.target} = {p.accessor}, guarded by the {p.configuration} configuration"]
        lines += [f"rename in {name}: {a.describe()}" for name, a in p.renames] or ["no rename was needed"]
        if p.target == "rocm":
            lines.append("rocm_any_wave_size stays false; lane operations: " + (", ".join(p.lane_ops) or
                         "none (the mark may be set after a run at wavefront width 64)"))
        lines += self.device_lines
        lines += [f"sync: {c}" for c in self.sync_changes]
        lines += [f"check on the ported tree: {f.path}:{f.line}: {f.severity}: {f.message} [{f.rule}]" for f in self.new_findings]
        return lines


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def _copy_tree(registry, index, scope, plan: Plan, dest: Path) -> None:
    root = Path(registry.root)
    wanted = {f.path for f in scope.files} | set(index.include_graph.nodes)
    for rel in sorted(wanted):
        src = root / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest / rel)
    for rel, (_, new) in plan.texts().items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(new, encoding="utf-8")


def _confirm(plan: Plan, index) -> None:
    table = index.table(plan.table)
    slot = table.slots.get(plan.target) if table else None
    calls = [f for f in (slot.factory_calls if slot else ()) if f.backend == plan.target]
    if not calls or plan.constant not in {c for f in calls for c in f.source_constants}:
        raise PortError(f"kernel-ports: port: internal error: after the edits the index does not see a "
                        f".{plan.target} slot of {plan.table} compiling {plan.constant}; nothing was written")


def _device_compile(registry, target: str) -> tuple:
    """("rocm" or None, a line when the generated body cannot be built): a ROCm port's body is built for the
    registry's targets (else gfx1030 and gfx90a) whenever a HIP compiler is installed."""
    if target != "rocm":
        return None, ""
    from kernel_ports.frontend.device.compiler import CompilerMissing, find_compiler

    setting = registry.compile.hip_compiler
    try:
        find_compiler(setting)
    except CompilerMissing as exc:
        return None, f"the generated HIP body was not built: {exc}"
    return "rocm", ""


def _device_lines(plan: Plan, index, missing: str) -> list:
    from kernel_ports.commands.coverage import target_state

    if missing:
        return [missing]
    builds = [b for b in index.device_builds if b.body.rsplit(":", 1)[-1] == plan.constant]
    if not builds:
        return [f"the generated HIP body {plan.constant} was not built: no device build reached it"]
    targets = list(dict.fromkeys(b.target for b in builds))
    return [f"built {plan.constant}: " + "; ".join(target_state(t, [b for b in builds if b.target == t], False)
                                                   for t in targets)]


def run_port(registry, kernel: str, target: str, options) -> Outcome:
    from kernel_ports.findings import Policy
    from kernel_ports.project import Options, analyze
    from kernel_ports.registry.load import load_registry
    from kernel_ports.scope import resolve_scope
    from kernel_ports.commands.sync import compute_sync

    policy = Policy(severity=registry.severity)
    # the tree before the port is judged as the ported one will be, device builds included, so that only what
    # the port brings is reported as new
    device, missing = _device_compile(registry, target)
    opts = Options(policy=policy, jobs=options.jobs, use_cache=options.use_cache, cache_dir=options.cache_dir,
                   compile_commands=options.compile_commands, device_compile=device)
    before = analyze(registry, opts)
    scope = resolve_scope(registry)
    drift = compute_sync(registry, before.index, scope)
    if drift.changed:
        raise PortError(f"kernel-ports: port: {registry.path} already differs from the code ({len(drift.changes)} "
                        "change(s)); run `kernel-ports sync` first so the port's registry change stands alone")
    plan = plan_port(registry, before.index, kernel, target)
    with tempfile.TemporaryDirectory(prefix="kernel-ports-port-") as tmp:
        _copy_tree(registry, before.index, scope, plan, Path(tmp))
        copy = load_registry(registry.path, root_override=tmp)
        after = analyze(copy, opts)
        _confirm(plan, after.index)
        result = compute_sync(copy, after.index, resolve_scope(copy))
        if result.changed:  # the check judges the ported tree against the refreshed registry
            refreshed = Path(tmp) / ".kernel-ports-registry.yaml"
            refreshed.write_text(result.new, encoding="utf-8")
            after = analyze(load_registry(refreshed, root_override=tmp), opts)
    seen = {(f.rule, f.message) for f in before.findings}
    fresh = [f for f in after.findings if (f.rule, f.message) not in seen]
    return Outcome(plan, result.old, result.new, result.changes, fresh, _device_lines(plan, after.index, missing))


def write_port(outcome: Outcome, registry) -> list:
    """Write the plan into the tree; returns what was written, one line each."""
    from kernel_ports.commands.common import write_atomically

    root = Path(registry.root)
    done = []
    texts = outcome.plan.texts()
    for rel, (old, new) in texts.items():
        target = root / rel
        if old is None:
            if target.exists():
                raise PortError(f"kernel-ports: port: {rel} exists; it is never overwritten")
            continue
        if target.read_text(encoding="utf-8") != old:
            raise PortError(f"kernel-ports: port: {rel} changed while the port was planned; nothing was written")
    for rel, (old, new) in texts.items():
        target = root / rel
        if old is None:
            _create(target, new)
            done.append(f"created {_shown(target)}")
        else:
            write_atomically(target, new)
            done.append(f"updated {_shown(target)}")
    if outcome.registry_new != outcome.registry_old:
        write_atomically(Path(registry.path), outcome.registry_new)
        done.append(f"updated {_shown(Path(registry.path))}")
    return done


def _create(target: Path, text: str) -> None:
    """Write a new file atomically; fail if the name is taken (a hard link never replaces)."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise PortError(f"kernel-ports: port: {target} exists; it is never overwritten") from None
        except OSError:  # a file system without hard links: exclusive creation still never replaces
            with open(target, "x", encoding="utf-8") as fh:
                fh.write(text)
    finally:
        os.unlink(tmp)

"""Which AMD GPU targets the HIP bodies are built for, inferred from the tree's build files (`kernel-ports init`).

A build names its targets in CMake (`AMDGPU_TARGETS`, `GPU_TARGETS`, `CMAKE_HIP_ARCHITECTURES`) or on a compiler
line (`--offload-arch=gfx…`). A target the installed device libraries do not support (Debian's HIP 5.2 release has
no gfx11+) is mapped to the nearest one they do support with the same wavefront width, since the width is what
decides which lane operations a body may use; the note says so. With no target named anywhere the default pair
stands: one 32-lane target (gfx1030, RDNA2) and one 64-lane target (gfx90a, CDNA2).

Build files are read as text, never run; each is bounded in size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from kernel_ports.registry.model import DEFAULT_DEVICE_TARGETS as DEFAULT_TARGETS

_MAX_BUILD_FILE = 2 * 1024 * 1024
_BUILD_FILE_NAMES = ("CMakeLists.txt", "Makefile", "makefile", "GNUmakefile", "build.rs", "setup.py", "meson.build")
_BUILD_FILE_SUFFIXES = (".cmake", ".mk")
_SKIP_DIRS = {".git", "node_modules", "target", "third_party", "vendor", "_deps", ".venv"}
_MAX_FILES = 5000

_TARGET = r"gfx[0-9]{1,2}[0-9a-f]{2}"
# a target, possibly with feature suffixes (`gfx90a:xnack-`), after a variable that names targets or an arch flag
_NAMED = re.compile(
    r"(?:\b(?:AMDGPU_TARGETS|GPU_TARGETS|CMAKE_HIP_ARCHITECTURES|HIP_ARCHITECTURES|OFFLOAD_ARCH)\b|--offload-arch\b"
    r"|--amdgpu-target\b)[^\n]{0,400}", re.IGNORECASE)
_TARGET_IN = re.compile(r"\b(" + _TARGET + r")(?::[a-z0-9+\-:]*)?")
_ISA_FILE = re.compile(r"^oclc_isa_version_([0-9]{1,2}[0-9a-f]{2})\.bc$")


@dataclass
class DeviceTargets:
    targets: list = field(default_factory=list)  # gfx names, in the order first named
    reasons: dict = field(default_factory=dict)  # target -> why it was chosen (where named, what it maps)
    notes: list = field(default_factory=list)

    def lines(self) -> list:
        return [f"device target {t}: {self.reasons[t]}" for t in self.targets] + list(self.notes)


def isa_version(target: str) -> tuple:
    """(major, minor, stepping) of a gfx name: gfx90a is 9.0.10, gfx1030 10.3.0."""
    m = re.fullmatch(r"gfx([0-9]{1,2})([0-9a-f])([0-9a-f])", target)
    if m is None:
        raise ValueError(f"not an AMD GPU target: {target!r}")
    return int(m.group(1)), int(m.group(2), 16), int(m.group(3), 16)


def wavefront_width(target: str) -> int:
    """Lanes per wavefront a target runs by default: GCN and CDNA (gfx6-gfx9) 64, RDNA (gfx10+) 32."""
    return 64 if isa_version(target)[0] < 10 else 32


def device_library_dirs(compiler_path: str | None) -> list:
    """Folders that may hold the ROCm device libraries' bitcode, nearest to the compiler first."""
    import os

    out = []
    roots = [os.environ.get("ROCM_PATH"), "/opt/rocm"]
    if compiler_path:
        roots.insert(0, str(Path(compiler_path).resolve().parent.parent))
    for r in roots:
        if r:
            out += [Path(r) / "amdgcn" / "bitcode", Path(r) / "lib" / "amdgcn" / "bitcode"]
    out += sorted(Path("/usr/lib").glob("*/amdgcn/bitcode")) + [Path("/usr/lib/amdgcn/bitcode")]
    return list(dict.fromkeys(out))


def supported_targets(dirs) -> tuple:
    """The gfx targets the device libraries in ``dirs`` have an ISA-version library for (first folder that has any)."""
    for d in dirs:
        try:
            names = [p.name for p in Path(d).iterdir()]
        except OSError:
            continue
        found = sorted({"gfx" + m.group(1) for m in map(_ISA_FILE.match, names) if m})
        if found:
            return tuple(found)
    return ()


def nearest_target(target: str, supported) -> str | None:
    """``target`` itself when supported; else the supported target of the same wavefront width that is closest:
    the newest one of the same or the nearest older generation (gfx1100 -> gfx1036, gfx942 -> gfx940)."""
    if target in supported:
        return target
    width = wavefront_width(target)
    same_width = [t for t in supported if wavefront_width(t) == width]
    if not same_width:
        return None
    want = isa_version(target)
    older = [t for t in same_width if isa_version(t) <= want]
    pool = older or same_width
    return max(pool, key=isa_version) if older else min(pool, key=isa_version)


def _build_files(root: Path):
    count = 0
    stack = [root]
    while stack and count < _MAX_FILES:
        d = stack.pop()
        try:
            entries = sorted(d.iterdir())
        except OSError:
            continue
        for p in entries:
            if p.is_symlink():
                continue
            if p.is_dir():
                if p.name not in _SKIP_DIRS:
                    stack.append(p)
            elif p.name in _BUILD_FILE_NAMES or p.name.endswith(_BUILD_FILE_SUFFIXES):
                count += 1
                yield p


def named_targets(root: Path) -> list:
    """(target, file relative to root, line) for every target a build file of the tree names."""
    out = []
    for p in _build_files(root):
        try:
            if p.stat().st_size > _MAX_BUILD_FILE:
                continue
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for m in _NAMED.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            for t in _TARGET_IN.finditer(m.group(0)):
                out.append((t.group(1).lower(), p.relative_to(root).as_posix(), line))
    return out


def infer_device_targets(root: Path, supported) -> DeviceTargets:
    """The targets to build for: those the build names, each mapped to a supported one; else the default pair."""
    out = DeviceTargets()
    named = named_targets(root)
    for target, rel, line in named:
        got = nearest_target(target, supported) if supported else target
        if got is None:
            out.notes.append(f"{target} (named at {rel}:{line}) has no {wavefront_width(target)}-lane target in the "
                             "installed device libraries; not built")
            continue
        if got in out.reasons:
            continue
        why = f"named at {rel}:{line}"
        if got != target:
            why += f" as {target}, which the installed device libraries do not support; {got} is the nearest " \
                   f"{wavefront_width(target)}-lane target they do"
        out.targets.append(got)
        out.reasons[got] = why
    if not out.targets:
        for t in DEFAULT_TARGETS:
            if supported and t not in supported:
                out.notes.append(f"default target {t} is not supported by the installed device libraries")
                continue
            out.targets.append(t)
            out.reasons[t] = ("the default " + ("32" if wavefront_width(t) == 32 else "64") + "-lane target; "
                              + ("no build file names a target" if not named else "no named target could be built"))
    widths = {wavefront_width(t) for t in out.targets}
    if out.targets and widths != {32, 64}:
        missing = 64 if 32 in widths else 32
        out.notes.append(f"no {missing}-lane target is built: a body marked rocm_any_wave_size is not tried at that "
                         "width (KP502); add one to compile.device.rocm.targets")
    return out


def device_settings(root: Path, cache=None) -> tuple:
    """(DeviceCompile or None, DeviceTargets) for the registry init writes: ``compile.device.rocm`` when a HIP
    compiler is found (targets from the build, mapped to what its device libraries support), else None and a note."""
    from kernel_ports.frontend.device.compiler import CompilerMissing, find_compiler
    from kernel_ports.registry.model import DeviceCompile

    try:
        compiler = find_compiler("auto", cache)
    except CompilerMissing as exc:
        got = DeviceTargets(notes=[f"compile.device not written: {exc}; with one, `kernel-ports check "
                                   "--device-compile rocm` builds the HIP bodies (KP501/KP502)"])
        return None, got
    got = infer_device_targets(root, supported_targets(device_library_dirs(compiler.path)))
    got.notes.insert(0, f"compile.device.rocm: the HIP bodies are built by {compiler.describe()} in every check")
    if not got.targets:
        return None, got
    return DeviceCompile(targets=tuple(got.targets), compiler="auto"), got

"""The HIP compiler: where it is, what version it is, and one bounded compile of a generated unit.

Discovery follows ROCm's own layout: ``$ROCM_PATH/bin/hipcc``, ``/opt/rocm/bin/hipcc``, then ``hipcc`` on
``PATH``. hipcc picks NVIDIA's toolchain when it finds ``nvcc``, so every run sets ``HIP_PLATFORM=amd``. The
flags are fixed here (MLX's ROCm JIT options, the device side only); nothing from the tree, the registry or the
cache is added to the command line, so no plugin or ``-load`` can reach it. A compile runs in a scratch
directory with the parsers' timeout and memory budget (:mod:`kernel_ports.scope.limits`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kernel_ports.scope import limits

DEBIAN_PACKAGES = "hipcc libamdhip64-dev rocm-device-libs"
JIT_FLAGS = ("-std=c++17", "-O3", "-DMLX_USE_ROCM")
# the device side only; remarks give the resource usage; -save-temps keeps the front end's bitcode, whose
# disassembly is the IR the lane intrinsics are read from (one compile yields both)
DEVICE_FLAGS = ("--cuda-device-only", "-c", "-save-temps", "-Rpass-analysis=kernel-resource-usage",
                "-ferror-limit=0", "-fno-caret-diagnostics", "-fno-color-diagnostics", "-w")
# what the compiler process may map beyond the parsers' budget: clang, lld and the device libraries themselves
COMPILER_BASE_MIB = 1024


class CompilerMissing(Exception):
    """No HIP compiler where one was looked for; the message names what to install."""


@dataclass(frozen=True)
class Compiler:
    path: str
    version: str  # "HIP version: 5.2.21153-0; Debian clang version 15.0.6"
    disassembler: str  # llvm-dis beside the clang hipcc runs

    def describe(self) -> str:
        return f"{self.path} ({self.version})"


def environment() -> dict:
    env = dict(os.environ)
    env["HIP_PLATFORM"] = "amd"
    return env


def candidates(setting: str = "auto") -> list:
    if setting != "auto":
        return [setting]
    out = []
    if os.environ.get("ROCM_PATH"):
        out.append(str(Path(os.environ["ROCM_PATH"]) / "bin" / "hipcc"))
    out.append("/opt/rocm/bin/hipcc")
    on_path = shutil.which("hipcc")
    if on_path:
        out.append(on_path)
    return out


_FOUND: dict = {}  # (path, its stat) -> Compiler, for the second look-up of one run


def _signature(path: str) -> tuple:
    st = os.stat(path)
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def find_compiler(setting: str = "auto", cache=None) -> Compiler:
    """The first hipcc that answers ``--version``; CompilerMissing naming the Debian packages otherwise.

    ``hipcc --version`` costs a Perl start and a clang start (0.3 s), so its answer is kept per hipcc file (path,
    size, mtime, inode) in the run and, given a cache (index.cache.FileCache), across runs, as data."""
    tried = []
    for path in candidates(setting):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            tried.append(path)
            continue
        sig = (path, _signature(path))
        key = hashlib.sha256(repr(("hipcc-version", sig)).encode()).hexdigest()
        if sig not in _FOUND and cache is not None:
            got = cache.get(key)
            if isinstance(got, tuple) and len(got) == 2 and all(isinstance(x, str) for x in got) and got[0]:
                _FOUND[sig] = Compiler(path=path, version=got[0], disassembler=got[1])
        if sig not in _FOUND:
            version = _version(path)
            if version:
                _FOUND[sig] = Compiler(path=path, version=version, disassembler=_disassembler(path, version))
                if cache is not None:
                    cache.put(key, (version, _FOUND[sig].disassembler))
        if sig in _FOUND:
            return _FOUND[sig]
        tried.append(path)
    where = ", ".join(tried) if tried else "$ROCM_PATH/bin, /opt/rocm/bin, PATH"
    raise CompilerMissing(f"no HIP compiler found (looked for hipcc at {where}); on Debian: apt install {DEBIAN_PACKAGES}")


def _version(path: str) -> str:
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60, env=environment(),
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ""
    text = proc.stdout
    hip = re.search(r"HIP version:\s*(\S+)", text)
    clang = re.search(r"^(.*clang version \S+)", text, re.M)
    if proc.returncode != 0 or not (hip or clang):
        return ""
    return "; ".join(x for x in (f"HIP version: {hip.group(1)}" if hip else "", clang.group(1) if clang else "") if x)


def _disassembler(hipcc: str, version: str) -> str:
    """llvm-dis of the LLVM that hipcc's clang belongs to (an older one cannot read its bitcode)."""
    major = re.search(r"clang version (\d+)", version)
    places = [Path(os.environ["HIP_CLANG_PATH"]) / "llvm-dis"] if os.environ.get("HIP_CLANG_PATH") else []
    places += [Path(hipcc).resolve().parent.parent / "llvm" / "bin" / "llvm-dis", Path("/opt/rocm/llvm/bin/llvm-dis")]
    if major:
        places += [Path(f"/usr/lib/llvm-{major.group(1)}/bin/llvm-dis")]
        on_path = shutil.which(f"llvm-dis-{major.group(1)}")
        if on_path:
            places.append(Path(on_path))
    for p in places:
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return ""


def command(compiler: Compiler, target: str, unit: str, output: str, include_dirs=()) -> list:
    quoted = [x for d in include_dirs for x in ("-iquote", d)]
    return [compiler.path, *JIT_FLAGS, f"--offload-arch={target}", *DEVICE_FLAGS, *quoted, unit, "-o", output]


def _limit_memory(budget_mib: int):
    def apply():
        if budget_mib:
            import resource

            # never above a hard limit already in force (raising one would fail, and fail the compile)
            _, hard = resource.getrlimit(resource.RLIMIT_AS)
            limit = (budget_mib + COMPILER_BASE_MIB) * limits.MIB
            if hard != resource.RLIM_INFINITY:
                limit = min(limit, hard)
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    return apply


@dataclass(frozen=True)
class RawCompile:
    status: str  # ok | failed | timeout | memory | crash
    stderr: str
    ir: str  # the device IR (text), when it built
    seconds: float


def compile_unit(compiler: Compiler, target: str, text: str, timeout_s: float, memory_mib: int,
                 include_dirs=()) -> RawCompile:
    """One compile of a generated unit in a scratch directory of its own, removed afterwards."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kp-device-") as scratch:
        unit = os.path.join(scratch, "kernel.hip")
        with open(unit, "w", encoding="utf-8") as fh:
            fh.write(text)
        try:
            proc = subprocess.run(command(compiler, target, "kernel.hip", "kernel.o", include_dirs), cwd=scratch, env=environment(),
                                  capture_output=True, text=True, errors="replace", timeout=timeout_s,
                                  stdin=subprocess.DEVNULL, start_new_session=True,
                                  preexec_fn=_limit_memory(memory_mib))
        except subprocess.TimeoutExpired:
            return RawCompile("timeout", "", "", time.monotonic() - start)
        except (OSError, subprocess.SubprocessError) as exc:
            return RawCompile("crash", str(exc), "", time.monotonic() - start)
        stderr = proc.stderr
        if proc.returncode < 0 or "PLEASE submit a bug report" in stderr:
            oom = limits.ran_out_of_memory(stderr)
            return RawCompile("memory" if oom else "crash", stderr, "", time.monotonic() - start)
        if proc.returncode != 0:
            return RawCompile("failed", stderr, "", time.monotonic() - start)
        return RawCompile("ok", stderr, _ir(compiler, scratch, target), time.monotonic() - start)


def _ir(compiler: Compiler, scratch: str, target: str) -> str:
    bitcode = [p for p in Path(scratch).glob(f"*{target}*.bc")]
    if not bitcode or not compiler.disassembler:
        return ""
    proc = subprocess.run([compiler.disassembler, str(bitcode[0]), "-o", "-"], capture_output=True, text=True,
                          errors="replace", timeout=120, stdin=subprocess.DEVNULL)
    return proc.stdout if proc.returncode == 0 else ""

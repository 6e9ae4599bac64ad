"""The registry as frozen dataclasses.

Each entry validates itself in `__post_init__`-free constructors called by the
loader (`kernel_ports.registry.load`), which knows the YAML line of every key;
cross-entry checks live in one function there (`_cross_check`). Everything
here is plain data so rules and reporters can share it freely.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

BACKENDS = ("metal", "cuda", "rocm")


@dataclass(frozen=True)
class Where:
    """A place in the registry file, for findings about the registry itself."""

    path: str  # the registry file as given (absolute or relative to cwd)
    line: int
    column: int = 1


@dataclass(frozen=True)
class Backend:
    name: str  # metal | cuda | rocm
    factory: str  # qualified name, e.g. mlx::core::fast::cuda_kernel
    cache_key_has_dtypes: bool


@dataclass(frozen=True)
class TestSeam:
    name: str  # function name, C++ or Rust
    tests: tuple[str, ...]  # globs of test files (plus #[cfg(test)] modules in Rust)
    allowed: tuple[str, ...]  # files holding its declaration/definition/forwarding wrapper


@dataclass(frozen=True)
class Conventions:
    table_type: str = "mlxcel::KernelPorts"
    selector: str = "mlxcel::select_kernel_port"
    has_port: str = "mlxcel::has_kernel_port"
    backend_queries: tuple[str, ...] = (
        "mlxcel::gpu_kernel_backend",
        "mlx::core::metal::is_available",
        "mlx::core::cu::is_available",
        "mlxcel::custom_kernels_available",
    )
    helper_files: tuple[str, ...] = ()
    rust_backend_gates: tuple[str, ...] = ("metal_is_available", "cuda_is_available")
    rule_scope: str = "launchers"  # launchers | everywhere
    lane_ops: tuple[str, ...] | None = None  # None: the built-in list (KP105)
    test_seams: tuple[TestSeam, ...] = ()


@dataclass(frozen=True)
class Configuration:
    name: str
    defines: tuple[str, ...]  # each "NAME" or "NAME=VALUE"


DEFAULT_DEVICE_TARGETS = ("gfx1030", "gfx90a")  # RDNA2 (32 lanes), CDNA2 (64 lanes)


@dataclass(frozen=True)
class DeviceCompile:
    """``compile.device.rocm``: the targets each HIP body is built for, and which compiler builds them."""

    targets: tuple[str, ...] = DEFAULT_DEVICE_TARGETS
    compiler: str = "auto"  # auto | an absolute hipcc path once loaded


@dataclass(frozen=True)
class Compile:
    compile_commands: Path | None = None  # absolute once loaded
    std: str = "c++20"
    defines: tuple[str, ...] = ()
    include_dirs: tuple[Path, ...] = ()  # absolute once loaded
    configurations: tuple[Configuration, ...] = (Configuration("default", ()),)
    # which MLX / cxx headers judge the tree (kernel_ports.frontend.headers): "auto", "stubs", or an absolute
    # directory once loaded
    mlx_headers: str = "auto"
    cxx_headers: str = "auto"
    device_rocm: DeviceCompile | None = None  # None: the registry has no compile.device.rocm

    @property
    def hip_compiler(self) -> str:
        """The hipcc setting device builds use: the registry's ``compile.device.rocm.compiler``, else ``auto``."""
        return self.device_rocm.compiler if self.device_rocm else "auto"

    @property
    def default_configuration(self) -> Configuration:
        """The configuration named ``default``, else the first: every unit is parsed in it."""
        return next((c for c in self.configurations if c.name == "default"), self.configurations[0])


def define_name(define: str) -> str:
    """The macro a define sets: ``NAME`` of ``NAME`` or ``NAME=VALUE``."""
    return define.split("=", 1)[0].strip()


@dataclass(frozen=True)
class DispatchSite:
    entry_point: str
    fallback: str
    where: Where


@dataclass(frozen=True)
class Kernel:
    name: str
    table: str  # the port-table function's name (unqualified, or qualified)
    file: str  # relative POSIX path under the root
    dispatch: tuple[DispatchSite, ...]
    ports: dict  # backend -> accessor name or None; read-only by convention
    rocm_any_wave_size: bool
    hip_source: str | None
    predicates: tuple[str, ...]
    severity: dict  # code -> "error" | "warning"
    where: Where
    compile_assume: tuple = ()  # ((template constant, int | bool), ...) for device builds

    def port(self, backend: str) -> str | None:
        return self.ports.get(backend)


@dataclass(frozen=True)
class Exemption:
    rule: str
    path: str  # relative POSIX path or glob under the root
    kernel: str | None
    reason: str
    tracking: str
    where: Where
    symbol: str | None = None  # the function or declaration the finding sits in (None: anywhere in the path)


@dataclass(frozen=True)
class Sources:
    include: tuple[str, ...] = ("**",)
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class Registry:
    path: Path  # the registry file
    root: Path  # absolute source root
    sources: Sources
    compile: Compile
    backends: dict  # name -> Backend
    conventions: Conventions
    launchers: tuple[str, ...]
    severity: dict  # code -> "error" | "warning"
    kernels: tuple[Kernel, ...]
    exemptions: tuple[Exemption, ...]
    where: dict = field(default_factory=dict)  # dotted key -> Where, for registry-located findings
    limits: dict = field(default_factory=dict)  # name -> number, over kernel_ports.scope.limits.Limits' defaults

    def kernel_for_table(self, table: str) -> Kernel | None:
        short = table.split("::")[-1]
        for kernel in self.kernels:
            if kernel.table == table or kernel.table.split("::")[-1] == short:
                return kernel
        return None

    def dtype_blind_backends(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.backends.values() if not b.cache_key_has_dtypes)

    def locate(self, key: str) -> Where:
        """The registry place of a dotted key, or the file's first line."""
        return self.where.get(key) or Where(str(self.path), 1)


def root_path_problem(value: str, glob: bool = False) -> str | None:
    """Why a path written for the registry (a file, or a glob when ``glob``) is not one under the source root;
    None when it is. `init` checks its flags with the same words the registry loader uses."""
    if "\\" in value:
        return f"use '/' in paths: {value!r}"
    pure = PurePosixPath(value)
    if pure.is_absolute():
        return f"path must be relative to the root: {value!r}"
    if ".." in pure.parts:
        return f"path escapes the root: {value!r}"
    if not glob and any(ch in value for ch in "*?["):
        return f"a file path, not a glob, is expected: {value!r}"
    return None

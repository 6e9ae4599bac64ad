"""The data a device build is asked and answered with: plain frozen dataclasses, cached as data (cachefmt)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Piece:
    """A span of kernel text as written: the file it sits in and where its first character is."""

    path: str  # relative to the root
    line: int
    column: int
    text: str
    raw: bool  # inside a raw string literal (or a file): its lines are the file's lines


@dataclass(frozen=True)
class Variant:
    """One assignment of a body's template arguments and of its inputs' and outputs' dtypes."""

    template_args: tuple  # ((name, value), ...): a dtype name, an integer as text, true/false
    input_dtypes: tuple  # ((input name, dtype name), ...)
    output_dtypes: tuple
    guessed: tuple = ()  # template constants no launch, guard or registry hint gave a value for

    def describe(self) -> str:
        """The assignment as a reader would write it: ``T=float16, N=128 (guessed)``."""
        parts = [f"{k}={v}" for k, v in self.template_args]
        shown = {k for k, _ in self.template_args}
        parts += [f"{k}:{v}" for k, v in self.input_dtypes + self.output_dtypes if k not in shown]
        text = ", ".join(parts) or "no template arguments"
        return text + (f" ({', '.join(self.guessed)} guessed)" if self.guessed else "")


@dataclass(frozen=True)
class BodyBuild:
    """What one compile builds: a body with every variant of it, for one target."""

    body: str  # the HipSource's "path:name"
    kernel_name: str
    input_names: tuple
    output_names: tuple
    source: tuple  # Piece
    header: tuple  # Piece
    variants: tuple  # Variant


@dataclass(frozen=True)
class Diagnostic:
    """A compiler error mapped back to the tree: the body's (or header's) own file:line:col."""

    path: str
    line: int
    column: int
    message: str
    variant: Optional[int]  # None: every variant (the header, a system header, a fatal error)
    at_error_directive: bool = False  # the line is the body's own ``#error``


@dataclass(frozen=True)
class KernelUsage:
    """What ``-Rpass-analysis=kernel-resource-usage`` reports for one kernel."""

    sgprs: Optional[int] = None
    vgprs: Optional[int] = None
    sgpr_spill: Optional[int] = None
    vgpr_spill: Optional[int] = None
    scratch_bytes: Optional[int] = None  # per lane
    lds_bytes: Optional[int] = None  # per block
    occupancy: Optional[int] = None  # waves per SIMD


@dataclass(frozen=True)
class VariantOutcome:
    ok: bool
    diagnostic: Optional[Diagnostic] = None  # the first error, when it failed
    usage: Optional[KernelUsage] = None
    lane_intrinsics: tuple = ()  # llvm.amdgcn.* cross-lane intrinsics the kernel (and what it calls) holds


@dataclass(frozen=True)
class CompileOutcome:
    """One body for one target: how the compile ended and, per variant, what it built."""

    status: str  # built | failed | refused | timeout | memory | crash
    detail: str = ""  # why, for refused/timeout/memory/crash
    variants: tuple = ()  # VariantOutcome, in the BodyBuild's order
    seconds: float = 0.0

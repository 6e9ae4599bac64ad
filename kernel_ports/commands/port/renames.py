"""The device-code rename tables between CUDA and HIP kernel bodies.

A kernel body moves between CUDA and HIP mostly unchanged: both have
`threadIdx`, `blockIdx`, `blockDim`, `__syncthreads`, the math functions and
`warpSize` (32 on NVIDIA, 32 or 64 on AMD). What differs is the lane-level
API: CUDA's shuffles and votes take a leading participation mask
(`__shfl_xor_sync(mask, v, lane)`), HIP's do not (`__shfl_xor(v, lane)`,
every lane of the wavefront takes part), and `__syncwarp` has no HIP
counterpart (a wavefront runs in lockstep; `__builtin_amdgcn_wave_barrier`
keeps the compiler from moving memory operations across the point).

The table is deliberately small and exact: one entry per name, applied only
to code tokens of the body (comments and string literals inside the body are
left alone, the body is tokenised by `frontend.hip.scan_body`). Literal
widths (`for (int o = 16; ...)`, `threadIdx.x % 32`) are *not* renamed: a
number is not known to be a warp width, so it is reported as a lane
operation instead, and the port stays unmarked.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernel_ports.frontend.hip import scan_body


@dataclass(frozen=True)
class Rename:
    old: str  # the identifier in the source body
    new: str  # what replaces it ("" removes the call, arguments included)
    drop_first_argument: bool = False  # CUDA -> HIP: the `_sync` mask
    add_first_argument: str = ""  # HIP -> CUDA: the full mask
    why: str = ""


_FULL = "0xffffffff"

# CUDA device code -> HIP device code.
CUDA_TO_HIP: tuple[Rename, ...] = (
    Rename("__shfl_sync", "__shfl", drop_first_argument=True, why="HIP shuffles take no mask"),
    Rename("__shfl_xor_sync", "__shfl_xor", drop_first_argument=True, why="HIP shuffles take no mask"),
    Rename("__shfl_up_sync", "__shfl_up", drop_first_argument=True, why="HIP shuffles take no mask"),
    Rename("__shfl_down_sync", "__shfl_down", drop_first_argument=True, why="HIP shuffles take no mask"),
    Rename("__ballot_sync", "__ballot", drop_first_argument=True, why="HIP votes take no mask; the result is 64-bit"),
    Rename("__any_sync", "__any", drop_first_argument=True, why="HIP votes take no mask"),
    Rename("__all_sync", "__all", drop_first_argument=True, why="HIP votes take no mask"),
    Rename("__syncwarp", "__builtin_amdgcn_wave_barrier", drop_first_argument=True,
           why="a wavefront runs in lockstep; the barrier only orders memory operations"),
    Rename("__nv_bfloat16", "__hip_bfloat16", why="HIP's bfloat16 type"),
)



def _reverse(r: Rename) -> Rename:
    """The HIP -> CUDA entry of a CUDA -> HIP one: a dropped mask comes back as the full 32-lane mask."""
    return Rename(r.new, r.old, add_first_argument=_FULL if r.drop_first_argument else "",
                  why="CUDA takes the participation mask; all 32 lanes" if r.drop_first_argument else "CUDA's spelling")


# HIP device code -> CUDA device code (`port cuda`).
HIP_TO_CUDA: tuple[Rename, ...] = tuple(_reverse(r) for r in CUDA_TO_HIP)

# Names with no counterpart on the other side: a body using one is refused.
HIP_ONLY_PREFIXES = ("__builtin_amdgcn_", "__lane_id", "__lanemask")


@dataclass(frozen=True)
class Applied:
    old: str
    new: str
    line: int  # 1-based line in the body
    why: str

    def describe(self) -> str:
        return f"{self.old} -> {self.new} (body line {self.line}: {self.why})"


class RenameError(Exception):
    """A body the table cannot translate (one line for the user)."""


def _call_span(tokens, offsets, i):
    """(offset after '(', offset after the first argument's ',' or of ')' , has_more) for the call at token i."""
    if i + 1 >= len(tokens) or tokens[i + 1] != "(":
        return None
    depth = 0
    for j in range(i + 1, len(tokens)):
        t = tokens[j]
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
            if depth == 0:
                return offsets[i + 1] + 1, offsets[j], False
        elif t == "," and depth == 1:
            return offsets[i + 1] + 1, offsets[j] + 1, True
    return None


def apply_renames(body: str, table: tuple[Rename, ...]) -> tuple[str, list]:
    """The body with the table applied to its code tokens, and the renames applied in body order."""
    data = body.encode("utf-8")
    scan = scan_body(body)
    by_name = {r.old: r for r in table}
    edits = []  # (start, end, replacement) in bytes
    applied = []
    for i, tok in enumerate(scan.tokens):
        rename = by_name.get(tok)
        if rename is None or i >= len(scan.token_offsets):
            continue
        start = scan.token_offsets[i]
        prev = scan.tokens[i - 1] if i else ""
        if prev in (".", "->", "::"):
            continue  # a member or a qualified name, not the intrinsic
        edits.append((start, start + len(tok.encode("utf-8")), rename.new))
        if rename.drop_first_argument or rename.add_first_argument:
            span = _call_span(scan.tokens, scan.token_offsets, i)
            if span is not None:
                open_at, first_end, more = span
                if rename.drop_first_argument:
                    # `f(mask, a)` -> `f(a)`; `f(mask)` -> `f()`
                    end = first_end
                    while more and end < len(data) and data[end:end + 1] in (b" ", b"\t"):
                        end += 1
                    edits.append((open_at, end, ""))
                else:
                    args_empty = not more and not data[open_at:first_end].strip()
                    edits.append((open_at, open_at, rename.add_first_argument + ("" if args_empty else ", ")))
        line = data.count(b"\n", 0, start) + 1
        applied.append(Applied(rename.old, rename.new, line, rename.why))
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        data = data[:start] + new.encode("utf-8") + data[end:]
    return data.decode("utf-8"), applied


def hip_only_names(body: str) -> list:
    """Identifiers of a HIP body that have no CUDA counterpart."""
    return [t for t in scan_body(body).identifiers if t.startswith(HIP_ONLY_PREFIXES)
            and t not in {r.old for r in HIP_TO_CUDA}]


def table_for(source: str, target: str) -> tuple[Rename, ...]:
    if (source, target) == ("cuda", "rocm"):
        return CUDA_TO_HIP
    if (source, target) == ("rocm", "cuda"):
        return HIP_TO_CUDA
    raise RenameError(f"no rename table from {source} to {target}")

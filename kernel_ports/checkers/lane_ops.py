"""Lane-level operations in HIP kernel bodies (KP105), as data.

A pattern is a whitespace-separated sequence of shell-style globs, each
matched (case-sensitively) against one code token of a body, consecutive
tokens for consecutive globs. Bodies are tokenised by the front end with
comments and string literals removed, so ``threadIdx.x % 32`` is the tokens
``threadIdx . x % 32``. The registry's ``conventions.lane_ops`` replaces the
whole list (model field ``lane_ops``; ``None`` keeps this one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import translate
from functools import lru_cache

# Each entry is one pattern; the comment says what it stands for.
LANE_OPS: tuple[str, ...] = (
    # shuffles: __shfl, __shfl_xor, __shfl_up, __shfl_down and their _sync forms
    "__shfl*",
    # ballots and votes
    "__ballot*",
    "__any",
    "__any_sync",
    "__all",
    "__all_sync",
    "__uni_sync",
    "__activemask",
    "__match_any*",
    "__match_all*",
    "__reduce_*_sync",
    "__syncwarp*",
    # lane ids and lane masks
    "__lane_id",
    "__lanemask*",
    "__builtin_amdgcn_mbcnt*",
    # cross-lane builtins: DPP, permlane, swizzle, permute, read/write lane
    "__builtin_amdgcn_*dpp*",
    "__builtin_amdgcn_*permlane*",
    "__builtin_amdgcn_ds_swizzle",
    "__builtin_amdgcn_ds_bpermute",
    "__builtin_amdgcn_ds_permute",
    "__builtin_amdgcn_readlane",
    "__builtin_amdgcn_readfirstlane",
    "__builtin_amdgcn_writelane",
    "__builtin_amdgcn_wavefrontsize",
    # the wavefront width as a value
    "warpSize",
    "__AMDGCN_WAVEFRONT_SIZE*",
    "*WAVEFRONT_SIZE*",
    "*WAVE_SIZE*",
    "*WARP_SIZE*",
    "*WaveSize*",
    "*WarpSize*",
    "*wave_size*",
    "*warp_size*",
    # lane arithmetic on the thread index, assuming a width
    "threadIdx . x % 32",
    "threadIdx . x & 31",
    "threadIdx . x / 32",
    "threadIdx . x >> 5",
    "threadIdx . x % 64",
    "threadIdx . x & 63",
    "threadIdx . x / 64",
    "threadIdx . x >> 6",
    "hipThreadIdx_x % 32",
    "hipThreadIdx_x & 31",
    "hipThreadIdx_x % 64",
    "hipThreadIdx_x & 63",
)


@dataclass(frozen=True)
class LaneOpUse:
    pattern: str
    text: str  # the matched tokens joined as written, e.g. `threadIdx.x % 32`
    line: int  # file line of the first matched token (0 when unknown)


def lane_op_patterns(registry) -> tuple[str, ...]:
    configured = registry.conventions.lane_ops
    return LANE_OPS if configured is None else tuple(configured)


def _join(tokens) -> str:
    out, prev = "", None
    for tok in tokens:
        if prev is not None and tok not in (".", "->") and prev not in (".", "->"):
            out += " "
        out += tok
        prev = tok
    return out


@lru_cache(maxsize=16)
def _matchers(patterns: tuple):
    """Per pattern its globs as compiled matchers (fnmatchcase semantics), and one matcher for any first glob."""
    items = []
    for pattern in patterns:
        parts = pattern.split()
        if parts:
            items.append((pattern, tuple(re.compile(translate(g)).match for g in parts)))
    first = re.compile("|".join(f"(?:{translate(p.split()[0])})" for p, _ in items)).match if items else None
    return tuple(items), first


# the default patterns, compiled as the module is imported (~0.01 s): a check a server runs
# (`kernel-ports serve`) finds them compiled, the server having imported this module
_matchers(LANE_OPS)


def find_lane_ops(tokens, token_lines, patterns) -> list[LaneOpUse]:
    """Every place a pattern matches, in token order (one per pattern and start token)."""
    items, any_first = _matchers(tuple(patterns))
    lines = list(token_lines) if len(token_lines) == len(tokens) else [0] * len(tokens)
    out = []
    n = len(tokens)
    for i in range(n):
        if any_first is None or any_first(tokens[i]) is None:
            continue  # no pattern starts here (most tokens)
        for pattern, globs in items:
            k = len(globs)
            if i + k > n:
                continue
            if all(globs[j](tokens[i + j]) is not None for j in range(k)):
                out.append(LaneOpUse(pattern=pattern, text=_join(tokens[i : i + k]), line=lines[i]))
                break  # one finding per place, the first pattern that matches
    return out

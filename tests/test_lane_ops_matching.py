"""find_lane_ops matches exactly as fnmatchcase over consecutive tokens would, first pattern first."""

import random
from fnmatch import fnmatchcase

from kernel_ports.checkers.lane_ops import LANE_OPS, find_lane_ops


def _reference(tokens, patterns):
    out = []
    for i in range(len(tokens)):
        for p in patterns:
            parts = p.split()
            if parts and i + len(parts) <= len(tokens) and all(fnmatchcase(tokens[i + j], parts[j]) for j in range(len(parts))):
                out.append((p, i))
                break
    return out


def test_same_matches_as_fnmatchcase():
    vocab = ["threadIdx", ".", "x", "%", "32", "64", "&", "31", "__shfl_xor", "__shfl", "warpSize", "kWarpSize",
             "WARP_SIZE_HINT", "__any", "__any_sync", "__anything", "lane", "__builtin_amdgcn_mov_dpp", "(", ")", ";",
             "hipThreadIdx_x", "a[b]", "?", "*", "__ballot", "wave_size", "Wave_Size", "int", "__syncwarp"]
    custom = ("my_op?", "[ab]x*", "threadIdx . x % *", "", "a[[]b]", "lane", "*")
    rng = random.Random(7)
    for patterns in (LANE_OPS, custom, custom[:-1] + LANE_OPS):
        for _ in range(30):
            tokens = [rng.choice(vocab + ["my_opz", "ax1", "bx", "cx"]) for _ in range(rng.randint(0, 60))]
            got = [(u.pattern, u.line) for u in find_lane_ops(tokens, list(range(len(tokens))), patterns)]
            assert got == _reference(tokens, patterns)

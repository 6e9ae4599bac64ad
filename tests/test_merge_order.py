"""The function records of a tree merge the same whichever of its units came from the cache.

The build adds the cached units' results first and the parsed ones after them, so the order the results reach
the function table depends on what changed. A function two configurations record differently (a call only one
of them makes) must merge to one record regardless: its first configuration's calls, then the calls only a
later one makes, and the functions in the order the units first name them."""

from __future__ import annotations

import copy

from kernel_ports.facts import Location
from kernel_ports.frontend.clang import FunctionInfo, TUResult
from kernel_ports.frontend.clang.model import CallEdge
from kernel_ports.index.join import FunctionTable

UNIT = "src/turbo/launch.cpp"


def _edge(callee: str, line: int) -> CallEdge:
    return CallEdge(f"c:@F@{callee}", callee, callee, Location(UNIT, line, 3), (), ())


def _results() -> list:
    """default and rocm results of one unit, and a second unit; `pick` calls one more function under rocm."""
    def pick(*calls):
        return FunctionInfo(usr="c:@F@pick", name="pick", qualified_name="pick", loc=Location(UNIT, 10, 1),
                            calls=list(calls))

    helper = FunctionInfo(usr="c:@F@helper", name="helper", qualified_name="helper", loc=Location(UNIT, 4, 1))
    other = FunctionInfo(usr="c:@F@other", name="other", qualified_name="other",
                         loc=Location("src/turbo/other.cpp", 2, 1))
    return [
        TUResult(UNIT, "default", functions=[helper, pick(_edge("metal_path", 11))]),
        TUResult(UNIT, "rocm", functions=[copy.deepcopy(helper), pick(_edge("rocm_path", 12), _edge("metal_path", 11))]),
        TUResult("src/turbo/other.cpp", "default", functions=[other]),
    ]


def _merged(results: list, split: int) -> list:
    table = FunctionTable()
    table.add(results[:split])  # as the build adds the cached results while the rest parse
    table.add(results[split:])
    return [(usr, [e.callee for e in f.calls]) for usr, f in table.functions.items()]


def test_the_merge_does_not_depend_on_which_results_came_from_the_cache():
    cold = _merged(_results(), 0)
    # the cold order: the unit's default configuration first, its calls first in the merged record
    assert cold == [("c:@F@helper", []), ("c:@F@pick", ["metal_path", "rocm_path"]), ("c:@F@other", [])]
    for order in ((1, 0, 2), (2, 1, 0), (1, 2, 0), (0, 2, 1)):  # e.g. only the default result parsed again
        for split in range(4):
            results = _results()
            assert _merged([results[i] for i in order], split) == cold, (order, split)
    # fn_configs names every configuration that recorded a function
    table = FunctionTable()
    table.add(_results()[::-1])
    assert table.fn_configs["c:@F@pick"] == {"default", "rocm"}

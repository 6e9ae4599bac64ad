"""Fact lists sort by location, then by content; the content is compared only to break a tie."""

import random

from kernel_ports.facts import FactoryCall, Location, sort_key, to_jsonable


def _fc(path, line, col, name, configs=("default",)):
    return FactoryCall(loc=Location(path, line, col), configurations=frozenset(configs), backend="metal",
                       factory="mlx::core::fast::metal_kernel", kernel_name=name, name_text=f'"{name}"',
                       source_constants=(), source_literal="x", source_text='"x"', header_constants=(),
                       header_literal=None, header_text="", enclosing_function="f", enclosing_usr="c:@F@f#",
                       in_table_slot=False, in_macro=False)


def test_order_is_location_then_content():
    facts = [_fc("b.cpp", 3, 1, "k"), _fc("a.cpp", 9, 2, "z"), _fc("a.cpp", 9, 2, "a"), _fc("a.cpp", 9, 1, "m"),
             _fc("a.cpp", 9, 2, "a", ("rocm",)), _fc("a.cpp", 10, 1, "a")]
    expected = sorted(facts, key=lambda f: (f.loc.path, f.loc.line, f.loc.column, repr(to_jsonable(f))))
    for seed in range(5):
        shuffled = list(facts)
        random.Random(seed).shuffle(shuffled)
        assert sorted(shuffled, key=sort_key) == expected
    assert expected[0].kernel_name == "m" and expected[-1].loc == Location("b.cpp", 3, 1)

"""``NameSet``: how the walk matches the registry's predicate names (qualified: exact; plain: the last segment)."""

from kernel_ports.frontend.clang.model import NameSet


def test_a_qualified_name_matches_only_itself():
    names = NameSet(["eng::rope_available"])
    assert "eng::rope_available" in names
    assert "other::rope_available" not in names
    assert "rope_available" not in names


def test_a_plain_name_matches_the_last_segment_in_any_namespace():
    names = NameSet(["rope_available"])
    assert "rope_available" in names
    assert "eng::detail::rope_available" in names
    assert "eng::rope_available_v2" not in names
    assert "eng::my_rope_available" not in names


def test_an_empty_set_matches_nothing():
    assert "eng::rope_available" not in NameSet([])

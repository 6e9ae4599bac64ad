"""Selection, severity and exemptions are decided in one place."""

from __future__ import annotations

import pytest

from kernel_ports.findings import Finding, Policy, SelectionError, apply_policy, parse_selection
from kernel_ports.registry.model import Exemption, Where


class _Registry:
    def __init__(self, exemptions=()):
        self.exemptions = tuple(exemptions)


def _f(rule, path="src/a.cpp", kernel=None):
    return Finding(rule, path, 1, 1, f"{rule} here", kernel=kernel)


def test_select_and_ignore_by_prefix_longest_wins():
    policy = Policy(select=parse_selection("KP1"), ignore=parse_selection("KP105"))
    assert policy.selected("KP101") and not policy.selected("KP105") and not policy.selected("KP201")
    policy = Policy(select=parse_selection("KP105"), ignore=parse_selection("KP1"))
    assert policy.selected("KP105") and not policy.selected("KP101")


def test_unknown_selection_is_an_error():
    with pytest.raises(SelectionError):
        parse_selection("KP9x")
    assert parse_selection(" kp1 , KP201") == ("KP1", "KP201")


def test_severity_defaults_registry_and_kernel_overrides():
    policy = Policy(severity={"KP101": "warning"}, kernel_severity={"norm": {"KP202": "error"}})
    out = apply_policy([_f("KP101"), _f("KP202"), _f("KP202", kernel="norm"), _f("KP201")], _Registry(), policy)
    got = {(f.rule, f.kernel): f.severity for f in out}
    assert got == {("KP101", None): "warning", ("KP202", None): "warning", ("KP202", "norm"): "error", ("KP201", None): "error"}


def test_exemption_suppresses_and_stale_or_invalid_ones_are_reported():
    used = Exemption("KP101", "src/*.cpp", None, "legacy", "#12", Where("registry.yaml", 30))
    stale = Exemption("KP103", "src/a.cpp", None, "legacy", "#13", Where("registry.yaml", 31))
    invalid = Exemption("KP101", "src/a.cpp", None, "", "", Where("registry.yaml", 32))
    out = apply_policy([_f("KP101")], _Registry([used, stale, invalid]), Policy())
    assert [(f.rule, f.line) for f in out] == [("KP401", 31), ("KP402", 32)]
    assert "no reason and tracking reference" in out[1].message
    # A stale exemption for a rule the run did not select is not judged stale.
    out = apply_policy([], _Registry([stale]), Policy(select=("KP2",)))
    assert out == []


def test_duplicates_from_several_units_are_reported_once():
    out = apply_policy([_f("KP101"), _f("KP101")], _Registry(), Policy())
    assert len(out) == 1

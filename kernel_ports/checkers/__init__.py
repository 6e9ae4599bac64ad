"""Rules. Each rule module holds small classes that visit facts and report.

A rule never parses: it reads `Context` (the registry and the project index)
and yields `Finding`s. Every rule is listed once, in `ALL_RULES`; a rule module
imports `Context` and `Rule` from :mod:`.base`, never this list it is in.
"""

from __future__ import annotations

from kernel_ports.checkers.base import Context, Rule

__all__ = ["ALL_RULES", "Context", "Rule", "all_rules"]


# The rules of the port-table convention (SPEC §2). On a tree with no port table (whose registry declares no
# kernel either: a registry with kernels has adopted the convention, and a table gone from the code is drift) they
# wait for the first table: advice to dispatch through tables an engine never had is not a defect of it. What holds
# without the convention is judged as always: dtype keys (KP201/KP202), unanalyzable files and lost constructs
# (KP901/KP902), lane operations in a body a table marks (KP105), launcher scope (KP306), exemptions (KP401/KP402).
CONVENTION_CODES = ("KP101", "KP102", "KP103", "KP104", "KP106", "KP107", "KP301", "KP302", "KP303", "KP304", "KP305")


def convention_waits(registry, index) -> bool:
    """The tree has no port table and the registry declares no kernel: the convention rules wait."""
    return not index.port_tables and not registry.kernels


def convention_note(waiting) -> str:
    """What the check summary and `init` say of a tree whose convention rules wait."""
    return (f"no port table in the tree: the port-table convention rules ({', '.join(waiting)}) wait for the first "
            "one (select_kernel_port over a KernelPorts table) and apply as soon as it exists; judged meanwhile: "
            "dtype keys (KP201/KP202), unanalyzable files and lost constructs (KP901/KP902), launcher scope (KP306)")


def all_rules() -> list[Rule]:
    """Every rule, in a stable order. Rule families register here."""
    return [cls() for cls in ALL_RULES]


def _registered() -> list[type[Rule]]:
    from kernel_ports.checkers.analysis import FrontEndFailures
    from kernel_ports.checkers.dispatch import (
        AnyWaveLaneOp,
        BackendComparison,
        BackendEnumeratingGate,
        DirectHolderAccess,
        HandRolledRefusal,
        PredicateNotFromTable,
        TestSeamOutsideTests,
    )
    from kernel_ports.checkers.drift import (
        DispatchMismatch,
        KernelNotInCode,
        LauncherScopeDrift,
        SlotMismatch,
        TableNotInRegistry,
        WavePinMismatch,
    )
    from kernel_ports.checkers.device import DeviceBuilds
    from kernel_ports.checkers.dtype_keys import DtypeKeys

    return [
        FrontEndFailures,
        BackendComparison,
        HandRolledRefusal,
        DirectHolderAccess,
        BackendEnumeratingGate,
        AnyWaveLaneOp,
        TestSeamOutsideTests,
        PredicateNotFromTable,
        DtypeKeys,
        TableNotInRegistry,
        KernelNotInCode,
        SlotMismatch,
        DispatchMismatch,
        WavePinMismatch,
        LauncherScopeDrift,
        DeviceBuilds,
    ]


class _Rules(list):
    """Filled on first use: importing the package (for `Context`, `all_rules`) imports no rule module."""

    def __iter__(self):
        if not len(self):
            self.extend(_registered())
        return super().__iter__()


ALL_RULES: list[type[Rule]] = _Rules()

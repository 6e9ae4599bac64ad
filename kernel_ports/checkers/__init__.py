"""Rules. Each rule module holds small classes that visit facts and report.

A rule never parses: it reads `Context` (the registry and the project index)
and yields `Finding`s. Every rule is listed once, in `ALL_RULES`; a rule module
imports `Context` and `Rule` from :mod:`.base`, never this list it is in.
"""

from __future__ import annotations

from kernel_ports.checkers.base import Context, Rule

__all__ = ["ALL_RULES", "Context", "Rule", "all_rules"]


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
    ]


class _Rules(list):
    """Filled on first use: importing the package (for `Context`, `all_rules`) imports no rule module."""

    def __iter__(self):
        if not len(self):
            self.extend(_registered())
        return super().__iter__()


ALL_RULES: list[type[Rule]] = _Rules()

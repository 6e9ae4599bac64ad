"""Rules. Each rule module holds small classes that visit facts and report.

A rule never parses: it reads `Context` (the registry and the project index)
and yields `Finding`s. Every rule is listed once, in `ALL_RULES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Context:
    registry: object  # kernel_ports.registry.model.Registry
    index: object  # kernel_ports.index.ProjectIndex
    scope: object  # kernel_ports.scope.Scope
    _derived: dict = field(default_factory=dict, repr=False)

    def derived(self, name: str, build):
        """A value several rules read (the port surface, the rule scope),
        built once per check."""
        if name not in self._derived:
            self._derived[name] = build()
        return self._derived[name]


class Rule:
    """A rule reports one or more codes; `check` yields findings."""

    codes: tuple[str, ...] = ()

    def check(self, ctx: Context):
        raise NotImplementedError


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
    """Filled on first use, so rule modules can import this package freely."""

    def __iter__(self):
        if not len(self):
            self.extend(_registered())
        return super().__iter__()


ALL_RULES: list[type[Rule]] = _Rules()

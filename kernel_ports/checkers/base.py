"""What every rule module builds on: the `Context` a rule reads and the `Rule` contract.

Apart from the package, which lists the rules (and so imports every rule module), so that a rule module
imports this and never the list it is in.
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

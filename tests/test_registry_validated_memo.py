"""A registry text that passed the schema once is not validated again (CLI cache); any other text still is."""

from __future__ import annotations

import pytest

from kernel_ports.registry import load as load_mod
from kernel_ports.registry.load import RegistryError, load_registry
from tests.test_registry import MINIMAL


def _count_validations(monkeypatch):
    calls = []
    real = load_mod._validate

    def spy(*args):
        calls.append(args[0])
        return real(*args)

    monkeypatch.setattr(load_mod, "_validate", spy)
    return calls


def test_validated_once_per_text(write_registry, tmp_path, monkeypatch):
    calls = _count_validations(monkeypatch)
    memo = tmp_path / "memo"
    path = write_registry(MINIMAL)
    first = load_registry(path, validated_dir=memo)
    second = load_registry(path, validated_dir=memo)
    assert first == second and len(calls) == 1
    load_registry(path)  # without the memo directory: always validated
    assert len(calls) == 2
    # an edited registry is validated again, and a schema error is still reported with its line
    path.write_text(MINIMAL.replace("version: 1\n", "version: 1\nbogus: 2\n"))
    with pytest.raises(RegistryError, match=r"registry.yaml:2: bogus: unknown key"):
        load_registry(path, validated_dir=memo)
    with pytest.raises(RegistryError, match="unknown key"):
        load_registry(path, validated_dir=memo)  # a failed validation leaves no marker
    assert len(calls) == 4


def test_cli_no_cache_validates(tmp_path, monkeypatch):
    from kernel_ports import cli
    from kernel_ports.commands.common import registry_of

    calls = _count_validations(monkeypatch)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from tests.conftest import REGISTRY

    args = cli.build_parser().parse_args(["check", "--registry", str(REGISTRY), "--no-cache"])
    registry_of(args)
    registry_of(args)
    assert len(calls) == 2
    args = cli.build_parser().parse_args(["check", "--registry", str(REGISTRY)])
    registry_of(args)
    registry_of(args)
    assert len(calls) == 3
    assert list((tmp_path / "cache" / "kernel-ports" / "data-v2" / "registry").iterdir())

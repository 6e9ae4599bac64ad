"""A registry text that passed the schema once is not validated again (CLI cache); any other text still is."""

from __future__ import annotations

import pytest

from kernel_ports.registry import load as load_mod
from kernel_ports.registry.load import RegistryError, load_registry
from tests.test_registry import MINIMAL


def _count_calls(monkeypatch, name: str) -> list:
    """The first argument of each call of ``load_mod.<name>`` from now on (the calls still run)."""
    calls = []
    real = getattr(load_mod, name)

    def spy(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(load_mod, name, spy)
    return calls


def _count_validations(monkeypatch):
    return _count_calls(monkeypatch, "_validate")


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


# -- PyYAML's reading of a text is kept beside the marker ---------------------------------------------------------

def _count_reads(monkeypatch):
    return _count_calls(monkeypatch, "_read_yaml")


def test_a_text_read_before_is_not_parsed_again(write_registry, tmp_path, monkeypatch):
    reads = _count_reads(monkeypatch)
    memo = tmp_path / "memo"
    path = write_registry(MINIMAL)
    first = load_registry(path, validated_dir=memo)
    again = load_registry(path, validated_dir=memo)
    assert first == again and first.where == again.where and len(reads) == 1
    # negative controls: an edited text is parsed again, and its errors still name the file and line
    path.write_text(MINIMAL.replace("    table: norm_ports\n", "    table: norm_ports\n    table: twice\n"))
    with pytest.raises(RegistryError, match=r"registry.yaml:6: kernels\[0\].table: duplicate key"):
        load_registry(path, validated_dir=memo)
    assert len(reads) == 2
    path.write_text(MINIMAL.replace("lib/norm.cpp", "../outside.cpp"))
    for _ in range(2):  # read from the kept reading the second time: the same error at the same line
        with pytest.raises(RegistryError, match=r"registry.yaml:6: kernels\[0\].file: "):
            load_registry(path, validated_dir=memo)
    assert len(reads) == 3


def test_a_damaged_kept_reading_is_read_again(write_registry, tmp_path, monkeypatch):
    reads = _count_reads(monkeypatch)
    memo = tmp_path / "memo"
    path = write_registry(MINIMAL)
    first = load_registry(path, validated_dir=memo)
    (kept,) = memo.glob("registry-read-*.json")
    kept.write_bytes(kept.read_bytes().replace(b"norm_ports", b"evil_ports"))  # its hash no longer matches
    assert load_registry(path, validated_dir=memo) == first and len(reads) == 2


def test_a_value_the_cache_cannot_hold_is_read_every_time(write_registry, tmp_path, monkeypatch):
    reads = _count_reads(monkeypatch)
    memo = tmp_path / "memo"
    path = write_registry(MINIMAL + "exemptions:\n  - {rule: KP101, path: lib/norm.cpp, reason: 2026-01-01}\n")
    for _ in range(2):  # a YAML date: no kept reading, the schema's error each time
        with pytest.raises(RegistryError, match=r"registry.yaml:12: exemptions\[0\].reason"):
            load_registry(path, validated_dir=memo)
    assert len(reads) == 2 and not list(memo.glob("registry-read-*.json"))


def test_a_kept_reading_imports_no_yaml(write_registry, tmp_path):
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    path = write_registry(MINIMAL)
    code = (f"from kernel_ports.registry.load import load_registry\n"
            f"load_registry({str(path)!r}, validated_dir={str(tmp_path / 'memo')!r})\n"
            "import sys; print('yaml' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    seen = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                           cwd=REPO).stdout.strip() for _ in range(2)]
    assert seen == ["True", "False"]

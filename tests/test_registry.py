"""The registry loader: shape, unknown keys, paths in the root, one-line errors."""

from __future__ import annotations

import dataclasses

import pytest

from kernel_ports.registry.load import RegistryError, load_registry

MINIMAL = """\
version: 1
root: src
kernels:
  - name: norm
    table: norm_ports
    file: lib/norm.cpp
    dispatch:
      - {entry_point: "norm", fallback: "graph fallback"}
    ports: {metal: get_norm_kernel, cuda: get_norm_kernel_cuda, rocm: null}
    predicates: [norm_available]
"""


def test_minimal_registry_builds_frozen_dataclasses(write_registry, tmp_path):
    registry = load_registry(write_registry(MINIMAL))
    assert registry.root == (tmp_path / "src").resolve()
    kernel = registry.kernels[0]
    assert kernel.port("metal") == "get_norm_kernel" and kernel.port("rocm") is None
    assert kernel.dispatch[0].entry_point == "norm"
    assert kernel.where.line == 4
    assert registry.dtype_blind_backends() == ("cuda", "rocm")
    with pytest.raises(dataclasses.FrozenInstanceError):
        kernel.name = "other"


def _error(write_registry, text: str) -> RegistryError:
    with pytest.raises(RegistryError) as info:
        load_registry(write_registry(text))
    message = str(info.value)
    assert "\n" not in message
    return info.value


def test_malformed_yaml_names_file_and_line(write_registry):
    err = _error(write_registry, MINIMAL + "  - name: [unclosed\n")
    assert err.line == 12 and "malformed YAML" in str(err)
    assert str(err).startswith(f"{err.path}:12:")


def test_unknown_key_names_its_line_and_key(write_registry):
    text = MINIMAL.replace("    predicates:", "    predicate_typo: x\n    predicates:")
    err = _error(write_registry, text)
    assert err.line == 10
    assert err.key == "kernels[0].predicate_typo"
    assert "unknown key" in str(err)


def test_unknown_top_level_key(write_registry):
    err = _error(write_registry, "colour: blue\n" + MINIMAL)
    assert (err.line, err.key) == (1, "colour")


def test_kernel_file_escaping_root(write_registry):
    err = _error(write_registry, MINIMAL.replace("file: lib/norm.cpp", "file: ../outside.cpp"))
    assert (err.line, err.key) == (6, "kernels[0].file")
    assert "escapes the root" in str(err)


def test_absolute_kernel_file_refused(write_registry):
    err = _error(write_registry, MINIMAL.replace("file: lib/norm.cpp", "file: /etc/passwd"))
    assert err.key == "kernels[0].file"


def test_helper_files_and_exemption_paths_stay_in_root(write_registry):
    text = MINIMAL + "conventions:\n  helper_files: [ok.cpp, ../../x.h]\n"
    err = _error(write_registry, text)
    assert err.key == "conventions.helper_files[1]" and err.line == 12
    text = MINIMAL + "exemptions:\n  - {rule: KP101, path: ../x.cpp, reason: r, tracking: '#1'}\n"
    assert _error(write_registry, text).key == "exemptions[0].path"


def test_wrong_type_and_missing_required(write_registry):
    err = _error(write_registry, MINIMAL.replace("rocm: null}", "rocm: null}\n    rocm_any_wave_size: maybe"))
    assert err.key == "kernels[0].rocm_any_wave_size"
    err = _error(write_registry, MINIMAL.replace("    table: norm_ports\n", ""))
    assert err.key == "kernels[0]" and "'table' is a required property" in str(err)


def test_duplicate_kernel_names_and_keys(write_registry):
    second = MINIMAL.split("kernels:\n", 1)[1].replace("norm_ports", "other_ports")
    err = _error(write_registry, MINIMAL + second)
    assert err.key == "kernels[1].name" and "already used" in str(err)
    err = _error(write_registry, MINIMAL.replace("version: 1\n", "version: 1\nversion: 1\n"))
    assert err.key == "version" and err.line == 2


def test_unknown_rule_code_in_severity(write_registry):
    err = _error(write_registry, MINIMAL + "severity: {KP999: warning}\n")
    assert err.key == "severity.KP999"


def test_missing_registry_and_missing_root(tmp_path, write_registry):
    with pytest.raises(RegistryError, match="not found"):
        load_registry(tmp_path / "nope.yaml")
    err = _error(write_registry, MINIMAL.replace("root: src", "root: nowhere"))
    assert err.key == "root" and err.line == 2


def test_root_override(write_registry, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    registry = load_registry(write_registry(MINIMAL), root_override=str(other))
    assert registry.root == other.resolve()


def test_not_a_mapping(write_registry):
    assert "mapping" in str(_error(write_registry, "- 1\n- 2\n"))


def test_exemption_without_reason_loads(write_registry):
    # A missing reason is a KP402 finding, reported with the rest, not a load error.
    registry = load_registry(write_registry(MINIMAL + "exemptions:\n  - {rule: KP101, path: lib/x.cpp}\n"))
    assert registry.exemptions[0].reason == "" and registry.exemptions[0].tracking == ""


def test_schema_is_draft7_and_valid():
    import jsonschema

    from kernel_ports.registry.load import schema

    jsonschema.Draft7Validator.check_schema(schema())

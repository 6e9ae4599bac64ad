"""A hostile registry is refused quickly: aliases, anchors, size and nesting limits (exit 2, `file:line`)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from kernel_ports.registry.bounds import MAX_NESTING, MAX_REGISTRY_BYTES
from kernel_ports.registry.load import RegistryError, load_registry

from tests.conftest import REPO

HEAD = "version: 1\nroot: src\nkernels: []\n"


def alias_bomb() -> str:
    """Nine levels, each a list of nine aliases of the one before: 9**9 nodes once expanded."""
    lines = [HEAD.rstrip("\n"), 'a0: &a0 ["x"]']
    for level in range(1, 10):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]")
    lines.append("kernels: *a9")
    return "\n".join(lines) + "\n"


def _refused(write_registry, text: str) -> RegistryError:
    with pytest.raises(RegistryError) as info:
        load_registry(write_registry(text))
    assert "\n" not in str(info.value)
    return info.value


def test_alias_bomb_is_refused_by_the_cli_at_its_first_anchor(write_registry):
    path = write_registry(alias_bomb())
    started = time.monotonic()
    # the bound is generous on purpose (a loaded machine); before the limit the run never ended
    proc = subprocess.run([sys.executable, "-m", "kernel_ports", "check", "--registry", str(path), "--no-cache"],
                          capture_output=True, text=True, cwd=REPO, timeout=30)
    elapsed = time.monotonic() - started
    assert proc.returncode == 2, proc.stderr
    assert f"{path}:4: YAML anchor &a0 is not allowed" in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    print(f"alias bomb refused in {elapsed:.2f} s (interpreter start included)")


def test_an_alias_is_refused_with_its_line(write_registry):
    err = _refused(write_registry, HEAD + "launchers:\n  - a.cpp\n  - *x\n")
    assert err.line == 6 and "alias *x is not allowed" in str(err)


def test_an_anchor_alone_is_refused(write_registry):
    err = _refused(write_registry, HEAD + "launchers: &l [a.cpp]\n")
    assert err.line == 4 and "anchor &l" in str(err)


def test_merge_key_through_an_alias_is_refused(write_registry):
    text = HEAD + "backends:\n  metal: &m {factory: f, cache_key_has_dtypes: true}\n  cuda: {<<: *m}\n"
    err = _refused(write_registry, text)
    assert err.line == 5 and "anchor &m" in str(err)


def test_a_registry_over_one_mib_is_refused_with_the_line_of_the_limit(write_registry):
    filler = "# " + "x" * 1021 + "\n"  # 1 KiB a line
    text = HEAD + filler * 1100
    err = _refused(write_registry, text)
    assert f"{MAX_REGISTRY_BYTES}-byte (1 MiB) limit" in str(err)
    assert err.line == HEAD.count("\n") + (MAX_REGISTRY_BYTES - len(HEAD)) // len(filler) + 1


def test_a_registry_just_under_the_limit_still_loads(write_registry):
    filler = "# " + "x" * 1021 + "\n"
    text = HEAD + filler * ((MAX_REGISTRY_BYTES - len(HEAD)) // len(filler))
    assert len(text.encode()) <= MAX_REGISTRY_BYTES
    assert load_registry(write_registry(text)).kernels == ()


def test_nesting_past_the_limit_is_refused_with_its_line(write_registry):
    deep = "[" * (MAX_NESTING + 5) + "]" * (MAX_NESTING + 5)
    err = _refused(write_registry, HEAD + f"launchers: {deep}\n")
    assert err.line == 4 and f"deeper than {MAX_NESTING} levels" in str(err)


def test_deep_block_nesting_is_refused_too(write_registry):
    text = HEAD + "".join("  " * i + f"k{i}:\n" for i in range(MAX_NESTING + 3))
    err = _refused(write_registry, text)
    assert err.line == HEAD.count("\n") + 1 + MAX_NESTING  # where the mapping of level MAX_NESTING + 1 starts


def test_a_huge_integer_is_one_line_not_a_traceback(write_registry):
    err = _refused(write_registry, "version: " + "9" * 6000 + "\nroot: src\n")
    assert "unreadable value" in str(err)


def test_sync_refuses_a_registry_that_gained_an_alias_after_loading(write_registry):
    from kernel_ports.commands.sync import compute_sync

    path = write_registry(HEAD + "launchers: [a.cpp]\n")
    registry = load_registry(path)
    path.write_text(HEAD + "launchers: &l [a.cpp]\nexemptions: *l\n", encoding="utf-8")
    with pytest.raises(RegistryError, match="anchor &l"):
        compute_sync(registry, None, None)


def test_a_schema_error_quoting_a_huge_value_stays_one_short_line(write_registry):
    err = _refused(write_registry, HEAD + "conventions: " + repr(["a.cpp"] * 40000).replace("'", '"') + "\n")
    assert len(str(err)) < 300 + len(str(err.path)) + 40
    assert " ... " in str(err) and str(err).endswith("'a.cpp'] is not of type 'object'")


def test_more_than_32_configurations_are_refused(write_registry):
    confs = "".join(f"    c{i}: [D{i}]\n" for i in range(33))
    err = _refused(write_registry, HEAD + "compile:\n  configurations:\n" + confs)
    assert err.key == "compile.configurations" and "too many properties" in str(err)


def test_a_python_tag_is_refused_and_nothing_runs(write_registry, tmp_path):
    marker = tmp_path / "ran"
    err = _refused(write_registry, HEAD + f"launchers: !!python/object/apply:os.system ['touch {marker}']\n")
    assert err.line == 4 and "malformed YAML" in str(err) and not marker.exists()

"""A check whose every input is unchanged answers from its one cache entry; any changed input runs the check."""

from __future__ import annotations

import json

import pytest

from kernel_ports import cli, project
from kernel_ports.cache import check_entry as checkcache
from kernel_ports.cache import format as cachefmt
from tests.mutate import engine_copy

KV = "src/lib/mlx-cpp/turbo/kv_cache.cpp"


@pytest.fixture
def run(tmp_path, kp_cache, capsys, monkeypatch):
    copy = engine_copy(tmp_path)
    calls = []
    real = project.analyze

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(project, "analyze", counting)

    def check(*extra, cache=kp_cache):
        code = cli.main(["check", "--registry", str(copy.registry_path), "--root", str(copy.root), "--format", "json",
                         "--cache-dir", str(cache), *extra])
        return code, json.loads(capsys.readouterr().out)

    return copy, check, calls


def _entries(cache):
    return sorted((cache / cachefmt.CACHE_SUBDIR / checkcache.ENTRY_DIR).glob("*.json"))


def test_unchanged_inputs_answer_without_running(run, tmp_path):
    copy, check, calls = run
    cache = tmp_path / "cache"
    first = check(cache=cache)
    assert len(calls) == 1 and len(_entries(cache)) == 1
    assert check(cache=cache) == first and len(calls) == 1  # answered from the entry
    assert check("--no-cache", cache=cache) == first and len(calls) == 2  # --no-cache runs it


def test_each_input_is_part_of_the_key(run, tmp_path):
    copy, check, calls = run
    cache = tmp_path / "cache"
    first = check(cache=cache)
    # a changed file, a new file in scope, a changed registry, another selection: each runs the check
    (copy.root / KV).write_text((copy.root / KV).read_text() + "\n// edited\n")
    check(cache=cache)
    assert len(calls) == 2
    (copy.root / "src/lib/mlx-cpp/turbo/extra.h").write_text("#pragma once\n")
    check(cache=cache)
    assert len(calls) == 3
    copy.registry_path.write_text(copy.registry_path.read_text() + "\n# a comment\n")
    check(cache=cache)
    assert len(calls) == 4
    code, selected = check("--select", "KP1", cache=cache)
    assert len(calls) == 5 and selected["summary"]["rules_run"] != first[1]["summary"]["rules_run"]
    check("--select", "KP1", cache=cache)
    assert len(calls) == 5
    check("--limit", "max_files=500", cache=cache)  # a limit override can change the verdict
    assert len(calls) == 6


def test_a_changed_file_changes_the_answer(run, tmp_path):
    copy, check, calls = run
    cache = tmp_path / "cache"
    assert check(cache=cache)[0] == 0
    text = (copy.root / KV).read_text()
    mutated = text.replace("{\"T\", cache.dtype()}", "{\"N\", 4}", 1)
    assert mutated != text
    (copy.root / KV).write_text(mutated)
    code, report = check(cache=cache)
    assert code == 1 and any(f["rule"] == "KP201" for f in report["findings"])
    (copy.root / KV).write_text(text)
    assert check(cache=cache)[0] == 0


def test_a_damaged_entry_is_a_miss(run, tmp_path):
    copy, check, calls = run
    cache = tmp_path / "cache"
    first = check(cache=cache)
    (entry,) = _entries(cache)
    entry.write_bytes(entry.read_bytes().replace(b'"error"', b'"errxr"', 1))
    assert check(cache=cache) == first and len(calls) == 2


def test_debug_says_why_the_entry_did_not_answer(run, tmp_path, monkeypatch, capsys):
    copy, _, calls = run
    argv = ["check", "--registry", str(copy.registry_path), "--root", str(copy.root), "--format", "json",
            "--cache-dir", str(tmp_path / "cache")]
    monkeypatch.setenv("KERNEL_PORTS_DEBUG", "1")
    cli.main(argv)
    assert "check entry: none for these inputs" in capsys.readouterr().err
    cli.main(argv)
    assert "check entry" not in capsys.readouterr().err and len(calls) == 1  # answered
    (copy.root / KV).write_text((copy.root / KV).read_text() + "\n// edited\n")
    cli.main(argv)
    assert "check entry: a file in scope changed" in capsys.readouterr().err and len(calls) == 2


def test_a_registry_with_limits_of_its_own_answers_from_its_entry(run, tmp_path):
    # the entry keeps the limits the scope was listed with: listed with the defaults, sampling.cpp (5807 bytes)
    # would be read, not refused, and no lookup could ever match
    copy, check, calls = run
    cache = tmp_path / "cache"
    copy.registry_path.write_text(copy.registry_path.read_text() + "\nlimits:\n  max_file_bytes: 5700\n")
    first = check(cache=cache)
    assert any(f["rule"] == "KP901" and f["path"].endswith("turbo/sampling.cpp") for f in first[1]["findings"])
    assert check(cache=cache) == first and len(calls) == 1


def test_a_tree_grown_past_a_limit_since_its_entry_says_so_as_a_check(run, tmp_path, capsys):
    copy, check, calls = run
    cache = tmp_path / "cache"
    sources = sum(1 for p in copy.root.rglob("*") if p.suffix in (".cpp", ".h", ".rs"))
    copy.registry_path.write_text(copy.registry_path.read_text() + f"\nlimits:\n  max_files: {sources}\n")
    assert check(cache=cache)[0] in (0, 1)
    (copy.root / "src/lib/mlx-cpp/turbo/extra.h").write_text("#pragma once\n")
    code = cli.main(["check", "--registry", str(copy.registry_path), "--root", str(copy.root), "--format", "json",
                     "--cache-dir", str(cache)])
    assert code == 2 and "limits.max_files" in capsys.readouterr().err and len(calls) == 2


def test_after_a_miss_the_check_judges_the_scope_the_lookup_listed(run, tmp_path, monkeypatch):
    import kernel_ports.scope as scope_module

    copy, check, calls = run
    cache = tmp_path / "cache"
    check(cache=cache)
    listings = []
    real = scope_module.resolve_scope

    def listing(*a, **k):
        listings.append(1)
        return real(*a, **k)

    monkeypatch.setattr(scope_module, "resolve_scope", listing)
    monkeypatch.setattr(project, "resolve_scope", listing)
    (copy.root / KV).write_text((copy.root / KV).read_text() + "\n// edited\n")
    edited = check(cache=cache)
    assert len(calls) == 2 and len(listings) == 1  # the tree is listed and read once
    assert edited == check("--no-cache", cache=cache)  # and judged as a check without an entry judges it

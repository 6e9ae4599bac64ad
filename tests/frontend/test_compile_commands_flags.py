"""compile_commands.json is the pull request's: only include, define and standard flags are taken from it, so
no entry can load a Clang plugin or expand a response file."""

from __future__ import annotations

import json

import pytest

from helpers import files_under, make_registry, write_tree

from kernel_ports.index import build_index, load_compile_commands

HOSTILE = ["c++", "-Xclang", "-load", "-Xclang", "/nonexistent/evil.so", "-fplugin=/nonexistent/evil.so",
           "-fpass-plugin=/nonexistent/pass.so", "-Xclang", "-plugin", "-Xclang", "evil", "@resp.rsp",
           "--config=/nonexistent/evil.cfg", "-DKEPT=1", "-Iinc", "-std=c++17", "-c", "src/a.cpp"]


def test_plugin_loads_and_response_files_are_dropped(tmp_path):
    (tmp_path / "resp.rsp").write_text("-DFROM_RESPONSE_FILE\n-Xclang -load -Xclang /nonexistent/evil.so\n")
    cc = tmp_path / "compile_commands.json"
    cc.write_text(json.dumps([{"directory": str(tmp_path), "file": "src/a.cpp", "arguments": HOSTILE},
                              {"directory": str(tmp_path), "file": "src/b.cpp", "command": " ".join(HOSTILE[:-1] + ["src/b.cpp"])}]))
    flags = load_compile_commands(cc, tmp_path.resolve())
    expected = ["-DKEPT=1", f"-I{(tmp_path / 'inc').resolve()}", "-std=c++17"]
    assert flags == {"src/a.cpp": expected, "src/b.cpp": expected}


def test_a_hostile_entry_still_parses_the_file_with_the_flags_it_kept(tmp_path):
    write_tree(tmp_path, {"src/a.cpp": '#include "mlx/mlx.h"\n#ifndef KEPT\n#error KEPT not defined\n#endif\n'
                                       'auto k = mlx::core::fast::metal_kernel("k", {}, {}, "");\n'})
    cc = tmp_path / "compile_commands.json"
    cc.write_text(json.dumps([{"directory": str(tmp_path), "file": "src/a.cpp", "arguments": HOSTILE}]))
    idx = build_index(make_registry(tmp_path), files_under(tmp_path), jobs=1, use_cache=False, compile_commands=str(cc))
    assert idx.unanalyzable == []
    assert [f.loc.path for f in idx.factory_calls] == ["src/a.cpp"]
    assert [(q.errors, q.parsed) for q in idx.parse_quality] == [(0, True)]  # KEPT defined, nothing else


@pytest.mark.parametrize("text, message", [
    ('{"file": "a.cpp"}', "expected a list of entries"),
    ('["a.cpp"]', "entry 0: expected an object"),
    ('[{"file": "src/a.cpp", "arguments": ["c++", 7]}]', "entry 0: `arguments` must be a list of strings"),
    ('[{"file": ["src/a.cpp"], "command": "c++"}]', "entry 0: `file` must be a string"),
    ('[{"file": "src/a.cpp", "command": "c++ \\"-DX"}]', "entry 0: `command` cannot be split into arguments"),
    ("[" * 100000 + "]" * 100000, "nested too deeply"),
    ("[{", "not JSON"),
])
def test_a_malformed_database_is_one_line_exit_2(tmp_path, capsys, text, message):
    from kernel_ports.cli import main

    write_tree(tmp_path, {"src/a.cpp": '#include "mlx/mlx.h"\nauto k = mlx::core::fast::metal_kernel("k", {}, {}, "");\n'})
    (tmp_path / "registry.yaml").write_text("version: 1\nroot: src\nkernels: []\n")
    cc = tmp_path / "compile_commands.json"
    cc.write_text(text)
    code = main(["check", "--registry", str(tmp_path / "registry.yaml"), "--compile-commands", str(cc), "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "internal error" not in err
    assert err.startswith(f"kernel-ports: {cc}: compile_commands.json: ") and message in err

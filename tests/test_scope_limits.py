"""Limits on the files in scope: past one the run stops with exit 2 and says which limit and how to raise it."""

from __future__ import annotations

from kernel_ports.cli import main
from tests.mutate import REGISTRY_KEY, Mutation, engine_copy

LIMITS = Mutation(REGISTRY_KEY, "severity: {KP202: warning}\n", "severity: {KP202: warning}\nlimits: {max_files: 5}\n")


def run(capsys, copy, *argv):
    code = main(["check", "--registry", str(copy.registry_path), "--root", str(copy.root), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_more_files_than_the_registry_allows_is_exit_2_naming_the_limit(tmp_path, capsys):
    code, out, err = run(capsys, engine_copy(tmp_path, LIMITS))
    assert (code, out) == (2, "")
    assert err == ("kernel-ports: the scope has 21 source files, over the limit of 5 (limits.max_files); narrow `sources` "
                   "or raise it with `limits: {max_files: N}` in the registry or `--limit max_files=N`\n")


def test_the_flag_raises_the_registry_limit(tmp_path, capsys):
    code, out, err = run(capsys, engine_copy(tmp_path, LIMITS), "--limit", "max_files=21")
    assert (code, err) == (0, "") and "21 files scanned" in out.splitlines()[-1]


def test_total_size_over_the_limit_names_the_file_where_it_was_reached(tmp_path, capsys):
    code, out, err = run(capsys, engine_copy(tmp_path), "--limit", "max_total_bytes=10000")
    assert code == 2 and out == ""
    assert err.startswith("kernel-ports: the source files in scope exceed 10000 bytes in total (limits.max_total_bytes; "
                          "reached at src/lib/")
    assert err.rstrip().endswith("`--limit max_total_bytes=N`") and err.count("\n") == 1


def test_a_file_over_the_size_limit_is_kp901_and_the_rest_is_judged(tmp_path, capsys):
    copy = engine_copy(tmp_path)
    (copy.root / "src/lib/mlx-cpp/turbo/huge.cpp").write_text("int x;\n" * 400_000)  # 2.8 MB
    code, out, _ = run(capsys, copy)
    assert code == 1
    lost = [l for l in out.splitlines() if "[KP901]" in l]
    assert lost == ["src/lib/mlx-cpp/turbo/huge.cpp:1:1: error: not analyzed (size): file is 2800000 bytes, over the "
                    "2097152-byte limit (limits.max_file_bytes; raise it with `limits: {max_file_bytes: N}` in the "
                    "registry or `--limit max_file_bytes=N`); no rule could judge it, so the check fails closed until "
                    "it can be analyzed [KP901]"]
    assert "8 tables, 8 launches" in out.splitlines()[-1]


def test_a_bad_limit_flag_is_one_line_exit_2(tmp_path, capsys):
    copy = engine_copy(tmp_path)
    for flag, message in (("max_files=0", "--limit max_files: must be positive, got '0'"),
                          ("colour=1", "--limit: expected NAME=VALUE with NAME one of max_files"),
                          ("parse_timeout_s=soon", "--limit parse_timeout_s: not a number: 'soon'")):
        code, out, err = run(capsys, copy, "--limit", flag)
        assert code == 2 and out == "" and message in err and err.count("\n") == 1


def test_a_limit_of_the_wrong_type_in_the_registry_is_a_registry_error(tmp_path, capsys):
    copy = engine_copy(tmp_path, Mutation(REGISTRY_KEY, "severity: {KP202: warning}\n",
                                          "severity: {KP202: warning}\nlimits: {max_files: many}\n"))
    code, _, err = run(capsys, copy)
    assert code == 2 and "limits.max_files: 'many' is not of type 'integer'" in err


def _registry(tmp_path, root, extra=""):
    path = tmp_path / "registry.yaml"
    path.write_text(f"version: 1\nroot: {root}\nkernels: []\n{extra}", encoding="utf-8")
    return path


def test_a_root_with_too_many_entries_stops_the_listing(tmp_path, capsys):
    # outside a git work tree the tree is walked; a root such as `/` must not be walked to its end
    tree = tmp_path / "tree"
    for i in range(50):
        (tree / f"d{i}").mkdir(parents=True)
    registry = _registry(tmp_path, tree, "limits: {max_files: 2}\n")
    code = main(["check", "--registry", str(registry), "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2 and f"the tree under the root {tree} has more than 40 entries (20 x limits.max_files)" in err


def test_a_tree_nested_deeper_than_the_recursion_limit_is_walked(tmp_path, capsys):
    import os

    tree = tmp_path / "tree"
    deep = str(tree)
    os.mkdir(deep)
    for _ in range(1200):  # one level at a time: makedirs itself recurses per level
        deep += "/d"
        os.mkdir(deep)
    with open(deep + "/x.cpp", "w") as fh:
        fh.write("int x;\n")
    try:
        code = main(["check", "--registry", str(_registry(tmp_path, tree)), "--no-cache", "--format", "json"])
        out, err = capsys.readouterr()
        assert (code, err) == (0, "") and '"files_scanned": 1' in out
    finally:  # bottom up: pytest's own clean-up of its temporary folders recurses per level
        os.unlink(deep + "/x.cpp")
        while deep != str(tree):
            os.rmdir(deep)
            deep = os.path.dirname(deep)


def test_a_launcher_over_the_size_limit_is_lost_not_gone(tmp_path, capsys):
    copy = engine_copy(tmp_path)
    launcher = copy.root / "src/lib/mlx-cpp/turbo/fused_norm.cpp"
    launcher.write_text(launcher.read_text(encoding="utf-8") + "/*" + "x" * 2_200_000 + "*/\n")
    code, out, _ = run(capsys, copy)
    rules = sorted({line.rsplit("[", 1)[-1].rstrip("]") for line in out.splitlines() if line.endswith("]")})
    # KP901 says why; its kernel is unknown, not "not in code" (KP302), and it still launches (no KP306);
    # KP107 remains: the predicate defined in that file cannot be found
    assert code == 1 and "KP302" not in rules and "KP306" not in rules and "KP901" in rules, out

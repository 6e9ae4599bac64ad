"""A copy of the tree elsewhere reuses the cached parses of its unchanged files.

Rule tests check many mutated copies of the sample engine; each copy lives
under its own directory, so the parse cache must not be keyed by where the
root is, only by what the files hold.
"""

from tests.mutate import Mutation, check, engine_copy


def test_copies_at_other_paths_reuse_parses_of_unchanged_files(tmp_path):
    cache = tmp_path / "cache"
    first = check(engine_copy(tmp_path / "a"), cache_dir=cache)
    assert first.findings == [] and not any(q.cached for q in first.index.parse_quality)
    second = check(engine_copy(tmp_path / "b"), cache_dir=cache)
    assert second.index.parse_quality and all(q.cached for q in second.index.parse_quality)
    changed = "src/lib/mlx-cpp/turbo/sampling.cpp"
    third = check(engine_copy(tmp_path / "c", Mutation(changed, "  const int vocab = logits.shape(-1);\n",
                                                       "  const int vocab = logits.shape(-1) + 0;\n", count=2)),
                  cache_dir=cache)
    fresh = {q.path for q in third.index.parse_quality if not q.cached}
    assert fresh == {changed}


def test_a_unit_parsed_with_two_versions_of_a_header_keeps_both(tmp_path):
    cache = tmp_path / "cache"
    header = "src/lib/mlx-cpp/turbo/rope_hip.h"
    changed = Mutation(header, "  const float c = cosf(theta);\n", "  const float c = cosf(theta) * 1.0f;\n")
    check(engine_copy(tmp_path / "a"), cache_dir=cache)
    mutated = check(engine_copy(tmp_path / "b", changed), cache_dir=cache)
    assert {q.path for q in mutated.index.parse_quality if not q.cached} == {"src/lib/mlx-cpp/turbo/rope.cpp"}
    # back to the original header, then to the changed one: both parses are still cached
    again = check(engine_copy(tmp_path / "c"), cache_dir=cache)
    assert all(q.cached for q in again.index.parse_quality)
    again = check(engine_copy(tmp_path / "d", changed), cache_dir=cache)
    assert all(q.cached for q in again.index.parse_quality)

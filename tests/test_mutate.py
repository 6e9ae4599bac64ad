"""The mutation helper refuses to pass vacuously."""

from __future__ import annotations

import pytest

from tests.mutate import REGISTRY_KEY, Mutation, MutationTargetMissing, engine_copy


def test_missing_target_text_raises(tmp_path):
    with pytest.raises(MutationTargetMissing):
        engine_copy(tmp_path, Mutation("src/lib/mlx-cpp/turbo/kernel_port.h", "text that is not there", "x"))


def test_missing_file_raises(tmp_path):
    with pytest.raises(MutationTargetMissing):
        engine_copy(tmp_path, Mutation("src/no/such/file.cpp", "x", "y"))


def test_wrong_occurrence_count_raises(tmp_path):
    with pytest.raises(MutationTargetMissing):
        engine_copy(tmp_path, Mutation(REGISTRY_KEY, "kernels:", "kernels:", count=2))


def test_applied_mutation_changes_the_copy_only(tmp_path):
    copy = engine_copy(tmp_path, Mutation(REGISTRY_KEY, "version: 1", "version: 1  # mutated"))
    assert "# mutated" in copy.registry_path.read_text()
    assert copy.line_of(REGISTRY_KEY, "# mutated") >= 1

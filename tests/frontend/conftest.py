"""Shared, module-scoped parses: Clang is the slow part, so each tree is indexed once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers import files_under, make_registry, write_tree  # noqa: E402
import snippets  # noqa: E402

from kernel_ports.index import build_index  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def engine_registry():
    from kernel_ports.registry.load import load_registry

    return load_registry(REPO / "registry.yaml")


@pytest.fixture(scope="session")
def engine_index(engine_registry, tmp_path_factory):
    cache = tmp_path_factory.mktemp("kp-cache")
    idx = build_index(engine_registry, files_under(engine_registry.root), jobs=2, use_cache=True, cache_dir=cache)
    idx._test_cache_dir = cache
    return idx


@pytest.fixture(scope="session")
def snippet_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("snippets")
    write_tree(root, snippets.TREE)
    reg = make_registry(root, configurations=(("default", ()), ("rocm", ("WITH_ROCM",))),
                        kernels=snippets.KERNELS, include_dirs=("src",))
    return reg


@pytest.fixture(scope="session")
def snippet_index(snippet_tree):
    return build_index(snippet_tree, files_under(snippet_tree.root), jobs=2, use_cache=False)

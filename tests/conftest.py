"""Shared fixtures: the repository, its registry and sample engine."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
REGISTRY = REPO / "registry.yaml"
ENGINE = REPO / "cpp_fixtures" / "engine"


@pytest.fixture
def write_registry(tmp_path):
    """Write a registry file (text) under tmp_path with a source root beside it."""

    def write(text: str, name: str = "registry.yaml") -> Path:
        (tmp_path / "src").mkdir(exist_ok=True)
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture(scope="session")
def kp_cache(tmp_path_factory):
    """One parse cache for the whole session: entries are keyed by content, so
    mutated copies of the engine re-parse only the files they change."""
    path = tmp_path_factory.getbasetemp() / "kp-shared-cache" / "kernel-ports"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session", autouse=True)
def cli_cache_home(kp_cache):
    """Runs through the CLI find the same cache via XDG_CACHE_HOME."""
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_CACHE_HOME", str(kp_cache.parent))
    yield
    patch.undo()

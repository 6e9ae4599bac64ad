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

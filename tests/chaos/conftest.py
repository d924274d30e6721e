"""Fixtures of the real-cluster tests that run the CLI in a subprocess."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def iso_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """An environment with its own state folder (the cache of artifacts and images is shared), so a
    test's clusters are not confused with the session cluster's records."""
    monkeypatch.setenv("EOS_CHAOS_STATE", str(tmp_path / "state"))
    return dict(os.environ, EOS_CHAOS_STATE=str(tmp_path / "state"))

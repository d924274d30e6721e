"""The scenario library as tests, one per scenario, each expecting its scenario's verdict (valid,
or invalid with its check firing for negative controls; incident replays must show their errors).
Collected by ``pytest -m chaos --eos-library`` (the eos-chaos pytest plugin adds this folder), and by
this repository's ``tests/chaos/test_library.py``. About 45 minutes per backend."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.run import scenario

pytestmark = [pytest.mark.chaos, pytest.mark.library]


@pytest.mark.parametrize("name", scenario.names())
def test_scenario(run_scenario: Callable[..., object], name: str) -> None:
    verdict = run_scenario(name)
    verdict.check_expected()  # type: ignore[attr-defined]

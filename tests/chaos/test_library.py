"""The whole scenario library, each with the verdict it expects, once per backend on the session
cluster. The test itself ships with eos-chaos (``harness/pytest_plugin/library/``, what users get with
``pytest -m chaos --eos-library``); here it runs under this suite's backends. About 45 minutes per
backend, so behind the `library` marker: `make library` (or `pytest -m library`); `make test`
leaves it out."""

from __future__ import annotations

import pytest

from harness.pytest_plugin.library.test_eos_chaos_library import test_scenario  # noqa: F401 - collected here, per backend

pytestmark = [pytest.mark.chaos, pytest.mark.library]

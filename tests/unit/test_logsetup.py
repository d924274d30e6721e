"""The pytest plugin's log lines follow ``sys.stdout`` as pytest swaps it per test: a stream taken
once is closed after its test, and every later record was a "Logging error" in CI's log."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from harness.base import logsetup


def test_records_go_to_the_stdout_of_the_moment_even_after_the_first_one_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", first)
    logsetup.to_stdout()
    log = logging.getLogger("harness.test_logsetup")
    try:
        log.info("one")
        first.close()
        monkeypatch.setattr(sys, "stdout", second)
        errors = io.StringIO()
        monkeypatch.setattr(sys, "stderr", errors)
        log.info("two")
        assert second.getvalue() == "two\n" and "Logging error" not in errors.getvalue()
    finally:
        for name in logsetup.ROOTS:
            lg = logging.getLogger(name)
            for h in [h for h in lg.handlers if isinstance(h, logsetup._Stdout)]:
                lg.removeHandler(h)

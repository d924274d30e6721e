"""``EOS_CHAOS_PORT_BASE``: the port base of every cluster a process starts without one asked (a
second cluster beside one that is up, as the Go matrix test starts its own beside the session's);
a bad value is a ConfigError naming the variable and what is allowed."""

from __future__ import annotations

import pytest

from clusters.backends import backends
from clusters.backends.backends import Backend
from clusters.kafka.topology import DEFAULT_PORT_BASE, PORT_BASE_ENV
from harness.base.errors import ConfigError


def test_unset_is_the_backends_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PORT_BASE_ENV, raising=False)
    assert backends.default_port_base(Backend.local) == DEFAULT_PORT_BASE


def test_set_moves_every_backends_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PORT_BASE_ENV, "19592")
    assert backends.default_port_base(Backend.local) == backends.default_port_base(Backend.compose) == 19592


@pytest.mark.parametrize("value", ["abc", "-5", "80", "65000"])
def test_a_bad_value_names_the_variable_and_the_range(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(PORT_BASE_ENV, value)
    with pytest.raises(ConfigError, match=rf"EOS_CHAOS_PORT_BASE='{value}': a port base is a whole number between 2000 and 60000"):
        backends.default_port_base(Backend.local)

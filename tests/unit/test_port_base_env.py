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


@pytest.mark.parametrize("command", [["run", "smoke", "--dry-run"], ["matrix", "--scenarios", "smoke", "--dry-run"],
                                     ["hunt", "--seeds", "1", "--dry-run"]])
def test_a_bad_value_is_refused_by_a_dry_run(monkeypatch: pytest.MonkeyPatch, command: list[str]) -> None:
    """It passed the dry runs and failed only once a cluster was up (the commands that start
    clusters check it first the same way: ``options.check_port_base_env``)."""
    from tests.unit.test_cli import cli

    monkeypatch.setenv(PORT_BASE_ENV, "abc")
    r = cli(*command)
    assert r.exit_code == 2, r.output
    assert "EOS_CHAOS_PORT_BASE='abc': a port base is a whole number" in " ".join(r.output.replace("│", " ").split())
    assert "internal error" not in r.output

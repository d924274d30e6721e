"""The scripts that fault links between brokers, run for real with iptables and tc inside throwaway
network namespaces (never the host's own): a cut, a reset and a blackhole act on one link only and
their clear takes them away; bandwidth caps what the source sends; a latency without netem in the
kernel is refused naming it; a root qdisc not ours is left alone; the sweep removes every chain and
root of ours, and nothing else, and a second sweep finds nothing."""

from __future__ import annotations

import subprocess

import pytest

from clusters.backends.external import netfaults as nf
from tests.netns import connect, echo_listener, netns, sh

PEER = nf.Peer("127.0.0.2", 19093)
LINK = "n1-to-n2-internal"


def _chains(ns: str) -> list[str]:
    return [line for line in sh(ns, "iptables -S").stdout.splitlines() if "EOSC-" in line]


def _root(ns: str) -> str:
    return sh(ns, "tc qdisc show dev lo root").stdout.split("\n")[0]


def test_a_cut_drops_one_link_both_ways_until_its_chain_is_cleared() -> None:
    with netns() as ns, echo_listener(ns, PEER.host, PEER.port), echo_listener(ns, PEER.host, PEER.port + 1):
        assert connect(ns, PEER.host, PEER.port)[0] == "ok"
        chain = nf.chain_name("t1", 1)
        r = sh(ns, nf.cut_script(LINK, PEER, chain))
        assert r.returncode == 0, r.stderr
        rules = _chains(ns)
        assert "-N EOSC-t1-1" in rules and "-A OUTPUT -j EOSC-t1-1" in rules and "-A INPUT -j EOSC-t1-1" in rules
        assert any("--dport 19093" in x and "n1-to-n2-internal" in x and x.endswith("-j DROP") for x in rules)
        assert any("--sport 19093" in x and x.endswith("-j DROP") for x in rules)
        assert connect(ns, PEER.host, PEER.port)[0] == "timeout"
        assert connect(ns, PEER.host, PEER.port + 1)[0] == "ok"  # the other listener: another link
        for _ in range(2):  # idempotent
            r = sh(ns, nf.clear_script(chain))
            assert r.returncode == 0, r.stderr
            assert _chains(ns) == []
        assert connect(ns, PEER.host, PEER.port)[0] == "ok"


def test_reset_peer_answers_with_a_reset_and_blackhole_drops_what_the_source_sends() -> None:
    with netns() as ns, echo_listener(ns, PEER.host, PEER.port):
        assert sh(ns, nf.reset_script(LINK, PEER, "EOSC-t1-2")).returncode == 0
        word, seconds = connect(ns, PEER.host, PEER.port, timeout=3)
        assert word in ("refused", "reset") and seconds < 1, (word, seconds)
        assert sh(ns, nf.clear_script("EOSC-t1-2")).returncode == 0
        assert sh(ns, nf.blackhole_script(LINK, PEER, "EOSC-t1-3")).returncode == 0
        assert [x for x in _chains(ns) if x.startswith("-A EOSC")] == [
            "-A EOSC-t1-3 -d 127.0.0.2/32 -p tcp -m tcp --dport 19093 -m comment --comment n1-to-n2-internal -j DROP"]
        assert connect(ns, PEER.host, PEER.port)[0] == "timeout"


#: an uncapped transfer of SIZE takes less than this: half what the cap makes it take (2 s), so a
#: capped link cannot pass for an uncapped one; loopback does it in milliseconds, and a starved unit
#: part beside the real-cluster tests took 0.52 and 0.56 s (a 0.5 s bound failed there twice)
UNCAPPED_S = 1.0


def test_bandwidth_caps_what_the_source_sends_to_that_peer_only() -> None:
    size = 250_000  # bytes: 2 s at 1000 kbit/s
    with netns() as ns, echo_listener(ns, PEER.host, PEER.port), echo_listener(ns, PEER.host, PEER.port + 1):
        assert connect(ns, PEER.host, PEER.port, timeout=10, size=size)[1] < UNCAPPED_S
        r = sh(ns, nf.toxic_script(LINK, PEER, "lo", 4, rate_kbps=1000))
        assert r.returncode == 0, r.stderr
        assert _root(ns).startswith("qdisc htb eec1: root")
        assert "rate 1Mbit" in sh(ns, "tc class show dev lo").stdout
        word, seconds = connect(ns, PEER.host, PEER.port, timeout=20, size=size)
        assert word == "ok" and seconds > 1.5, seconds
        assert connect(ns, PEER.host, PEER.port + 1, timeout=10, size=size)[1] < UNCAPPED_S  # not this link
        for _ in range(2):
            assert sh(ns, nf.band_clear_script("lo", 4)).returncode == 0
            assert sh(ns, nf.root_clear_script("lo")).returncode == 0
            assert _root(ns).startswith("qdisc noqueue 0: root")
        assert connect(ns, PEER.host, PEER.port, timeout=10, size=size)[1] < UNCAPPED_S


def _has_netem() -> bool:
    with netns() as ns:
        return sh(ns, "tc qdisc add dev lo root netem delay 1ms").returncode == 0


def test_latency_delays_what_the_source_sends_or_is_refused_without_netem() -> None:
    netem = _has_netem()
    with netns() as ns, echo_listener(ns, PEER.host, PEER.port):
        r = sh(ns, nf.toxic_script(LINK, PEER, "lo", 5, latency_ms=300))
        if not netem:
            assert r.returncode == nf.REFUSED_RC and "netem (sch_netem) is not in the kernel" in r.stderr, r
        else:
            assert r.returncode == 0, r.stderr
            assert connect(ns, PEER.host, PEER.port, timeout=5)[1] > 0.3
        assert sh(ns, nf.root_clear_script("lo")).returncode == 0
        assert _root(ns).startswith("qdisc noqueue 0: root")


def test_a_root_qdisc_that_is_not_a_kernel_default_is_refused_and_left_alone() -> None:
    with netns() as ns:
        assert sh(ns, "tc qdisc add dev lo root handle 1: tbf rate 1mbit burst 10k latency 10ms").returncode == 0
        r = sh(ns, nf.toxic_script(LINK, PEER, "lo", 4, rate_kbps=100))
        assert r.returncode == nf.REFUSED_RC and "is not a kernel default (qdisc tbf 1: root" in r.stderr, r.stderr
        assert sh(ns, nf.root_clear_script("lo")).returncode == 0
        assert sh(ns, nf.sweep_script()).stdout == ""
        assert _root(ns).startswith("qdisc tbf 1: root")


def test_the_sweep_removes_every_chain_and_root_of_ours_and_nothing_else() -> None:
    with netns() as ns:
        assert sh(ns, "iptables -N KEEP && iptables -A OUTPUT -j KEEP").returncode == 0
        for script in (nf.cut_script(LINK, PEER, "EOSC-a1-1"), nf.blackhole_script("n1-to-n3-controller", PEER, "EOSC-b2-7"),
                       nf.toxic_script(LINK, PEER, "lo", 4, rate_kbps=64)):
            assert sh(ns, script).returncode == 0
        listed = sh(ns, nf.sweep_script(remove=False))
        assert listed.stdout.splitlines() == ["left: iptables chain EOSC-a1-1 (n1-to-n2-internal )",
                                              "left: iptables chain EOSC-b2-7 (n1-to-n3-controller )",
                                              "left: tc root qdisc eec1: on lo"]
        assert len(_chains(ns)) == 9  # listing removed nothing: 2 chains, 4 jumps, 3 rules
        r = sh(ns, nf.sweep_script())
        assert r.returncode == 0 and r.stdout.splitlines() == [x.replace("left:", "removed") for x in
                                                                listed.stdout.splitlines()], r
        assert _chains(ns) == [] and _root(ns).startswith("qdisc noqueue 0: root")
        assert "-A OUTPUT -j KEEP" in sh(ns, "iptables -S").stdout  # not ours: kept
        again = sh(ns, nf.sweep_script())
        assert again.returncode == 0 and again.stdout == ""


def test_a_script_for_a_container_that_is_not_running_clears_nothing_and_applies_nothing() -> None:
    name = "eosc-test-no-such-container"
    ok = subprocess.run(["sh", "-c", nf.in_container(name, "echo ran", gone_ok=True)], capture_output=True, text=True)
    assert ok.returncode == 0 and "is not running: its network namespace, with any rule in it, is gone" in ok.stdout
    refused = subprocess.run(["sh", "-c", nf.in_container(name, "echo ran", gone_ok=False)], capture_output=True, text=True)
    assert refused.returncode == 1 and "ran" not in refused.stdout and f"container {name} is not running" in refused.stderr


@pytest.mark.parametrize("tag", ["", "a-b", "x" * 13])
def test_a_chain_tag_is_short_letters_and_digits(tag: str) -> None:
    with pytest.raises(ValueError, match="chain tag"):
        nf.chain_name(tag, 1)

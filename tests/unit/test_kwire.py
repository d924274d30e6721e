"""The wire proxy's own tests (framing, header versions, rule matching, synthesized responses
byte for byte, hold / drop / error against a fake broker) are Go tests: run them here, so that
``make test`` covers them, and build the binary the way the set-up does."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from clusters.builds import golang
from clusters.wire import kwire_build


def test_go_tests_of_the_wire_proxy_pass() -> None:
    go = shutil.which("go")
    assert go, "Go is needed (the set-up builds Toxiproxy and the wire proxy with it)"
    env = dict(golang.go_env(), GOTOOLCHAIN="local")
    proc = subprocess.run([go, "test", "-count=1", "./..."], cwd=kwire_build.KWIRE_SOURCE, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_go_source_is_formatted_and_vetted() -> None:
    go = shutil.which("go")
    assert go
    env = dict(golang.go_env(), GOTOOLCHAIN="local")
    gofmt = shutil.which("gofmt") or str(Path(go).resolve().with_name("gofmt"))
    fmt = subprocess.run([gofmt, "-l", "."], cwd=kwire_build.KWIRE_SOURCE,
                         capture_output=True, text=True, timeout=120)
    assert fmt.returncode == 0 and fmt.stdout == "", f"gofmt -w these: {fmt.stdout}{fmt.stderr}"
    vet = subprocess.run([go, "vet", "./..."], cwd=kwire_build.KWIRE_SOURCE, env=env, capture_output=True, text=True,
                         timeout=600)
    assert vet.returncode == 0, vet.stdout + vet.stderr


def test_the_set_up_builds_it_into_the_cache_keyed_by_its_source() -> None:
    built = kwire_build.build_kwire()
    assert built == kwire_build.kwire_bin() and built.is_file()
    assert built.parent.name in str(kwire_build.kwire_bin())  # the digest of the sources names the folder


def test_the_rewrite_fixtures_are_what_the_pinned_kafka_writes(tmp_path: Path) -> None:
    """The Go rewrite tests compare with Kafka's own bytes (kwire/testdata/responses): they must be what
    the pinned release's message classes write today. A new Kafka release with a new version of a
    response that carries a broker's address shows up here, as a fixture to commit."""
    written = kwire_build.generate_fixtures(tmp_path)
    committed = sorted(kwire_build.FIXTURES.iterdir())
    assert [p.name for p in written] == [p.name for p in committed], \
        "run GenResponses into clusters/wire/kwire/testdata/responses (kwire_build.generate_fixtures)"
    differ = [p.name for p, q in zip(written, committed, strict=True) if p.read_bytes() != q.read_bytes()]
    assert not differ, f"fixtures differ from what Kafka writes: {differ}"

import pytest

from clusters.builds import maven, pins
from clusters.kafka import kafka_release
from harness.base.errors import ConfigError


@pytest.mark.parametrize("bad", ["4.x", "latest", "4.4", ""])
def test_malformed_kafka_version_is_a_config_error(bad):
    with pytest.raises(ConfigError, match="MAJOR.MINOR.PATCH"):
        kafka_release.parse_kafka_version(bad)


def test_too_old_kafka_version_names_the_minimum():
    with pytest.raises(ConfigError, match="3.9.0"):
        kafka_release.parse_kafka_version("3.6.1")


def test_pinned_version_is_accepted():
    assert kafka_release.parse_kafka_version(pins.KAFKA_VERSION) >= pins.MIN_KAFKA_VERSION


def test_kafka_pom_adds_a_log4j2_backend_and_slf4j2_and_excludes_tools_api():
    pom = kafka_release._kafka_pom("4.4.0")
    assert "<artifactId>kafka_2.13</artifactId><version>4.4.0</version>" in pom
    assert "log4j-slf4j2-impl" in pom and "log4j-core" in pom
    assert f"<artifactId>slf4j-api</artifactId><version>{pins.SLF4J_VERSION}" in pom
    assert "<artifactId>kafka-tools-api</artifactId>" in pom


def test_cache_marker_depends_on_pins(tmp_path, monkeypatch):
    monkeypatch.setenv("EOS_CHAOS_CACHE", str(tmp_path))
    assert kafka_release.kafka_ready("4.4.0") is None
    d = kafka_release.kafka_dir("4.4.0")
    d.mkdir(parents=True)
    (d / ".complete").write_text("stale\n")
    assert kafka_release.kafka_ready("4.4.0") is None  # pins changed since: fetch again
    (d / ".complete").write_text(maven.fingerprint(kafka_release._kafka_pom("4.4.0")))
    assert kafka_release.kafka_ready("4.4.0") == d / "libs"

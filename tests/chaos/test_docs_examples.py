"""The docs' examples that need a real cluster (``<!-- example: chaos -->`` on the line before the
fence; today the README's pytest-plugin example) run as written: each becomes the only test file of
a fresh pytest session (pytester, in this process, with the installed plugin), whose
``kafka_cluster`` is this session's cluster, and every test in it must pass. The unit test
(tests/unit/test_docs_examples.py) only compiles these blocks; this is where they run. Keep such
examples small: the README's costs one 30 s scenario and one transaction."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from clusters.backends.protocol import Cluster
from tests import docs_examples as de

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.chaos

EXAMPLES = [b for b in de.all_blocks() if b.marker == "chaos"]
#: The name the outer cluster is handed over by (pluggy names a plugin object by its ``__name__``).
HANDOVER = "eos_docs_cluster"
# The inner session's conftest: its kafka_cluster is the outer session's (one cluster at a time on
# the machine; a conftest's fixture overrides the plugin's, as tests/conftest.py does here).
CONFTEST = f"""
import pytest

@pytest.fixture(scope="session")
def kafka_cluster(pytestconfig):
    return pytestconfig.pluginmanager.get_plugin({HANDOVER!r}).cluster
"""


class Handover:
    """A plugin object that carries the outer cluster into the inner session."""

    def __init__(self, cluster: Cluster) -> None:
        self.__name__ = HANDOVER
        self.cluster = cluster


def _tests_in(code: str) -> list[str]:
    return [n.name for n in ast.parse(code).body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_a_docs_example_that_needs_a_cluster_passes_as_written(
        example: de.Block, kafka_cluster: Cluster, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    if kafka_cluster.backend != "local":
        pytest.skip("the plugin's fixtures are backend-independent (kafka_cluster is this suite's session cluster); once is enough")
    # the inner plugin points EOS_CHAOS_RESULTS at its results folder; monkeypatch puts ours back after
    results = pytester.path / "results"
    monkeypatch.setenv("EOS_CHAOS_RESULTS", str(results))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_docs_example=example.code)
    done = pytester.runpytest_inprocess("-m", "chaos", "-p", "no:cacheprovider", f"--eos-results={results}",
                                        plugins=[Handover(kafka_cluster)])
    tests = _tests_in(example.code)
    assert tests, f"{example} defines no test function: there would be nothing to pass"
    assert done.ret == pytest.ExitCode.OK, f"{example}: {done.stdout.str()[-4000:]}"
    done.assert_outcomes(passed=len(tests))
    assert any(Path(results).glob("*/report.html")), "the example's runs left no report"

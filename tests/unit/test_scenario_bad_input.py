"""Bad scenario input is refused before anything starts, and quickly: a mix that cannot be planned,
duplicate YAML keys, alias bombs and deep nesting, names Kafka or the checker would refuse only once
a cluster is up, a --duration that cuts faults off, and files that cannot be read. Each names the
file and line (or the flag); at the command line each is exit 2 with no traceback."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import typer

from chaos import schedule
from harness.base.errors import ConfigError
from harness.campaigns import matrix
from harness.run import runner, scenario
from tests.unit.test_cli import _restore_logging, cli  # noqa: F401 - the logging fixture applies to every test
from tests.unit.test_scenario import _load_error

#: The start of every file here (4 lines: what a test adds begins on line 5).
HEAD = "name: s\ndescription: x\nworkloads:\n  - kind: txn-producer\n"


def _file(tmp_path: Path, body: str, head: str = HEAD) -> Path:
    f = tmp_path / "sc.yaml"
    f.write_text(head + body)
    return f


def _refused(r: Any, *said: str) -> None:
    """A command line refusal: exit 2, what it said, and neither a traceback nor an internal error."""
    assert r.exit_code == 2, r.output
    assert "internal error" not in r.output and "Traceback" not in r.output, r.output
    for words in said:
        assert words in r.output, r.output


@pytest.fixture
def no_planning(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Scenarios a plan was drawn for: validation must refuse these before the planner sees them
    (the planner looped for ever on a mix that cannot move on)."""
    planned: list[Any] = []
    monkeypatch.setattr(schedule, "plan", lambda sc, seed: planned.append(sc) or [])
    return planned


@pytest.fixture
def no_real_run(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Runs that would have started (none may)."""
    started: list[Any] = []
    monkeypatch.setattr(runner, "run", lambda *a, **kw: started.append(a))
    return started


@pytest.fixture
def no_matrix_run(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Matrices that would have started running (none may)."""
    started: list[Any] = []

    def run_matrix(*args: Any) -> None:
        started.append(args)
        raise typer.Exit(0)

    monkeypatch.setattr(matrix, "run_matrix", run_matrix)
    return started


# ---- 1, 2: a mix that cannot be planned ----

@pytest.mark.parametrize("mix", [
    "{kinds: [[kill, 1]], duration: [0, 0], gap: [0, 0]}",
    "{kinds: [[kill, 1]], duration: [0.04, 0.04], gap: [0, 0]}",  # planned to 0.1 s: 0 s each
])
def test_a_mix_whose_faults_and_gaps_take_no_time_is_refused(tmp_path: Path, mix: str) -> None:
    msg = _load_error(tmp_path, f"mix: {mix}\n")
    assert "FILE:5: mix: duration [" in msg and "the plan would never reach the run's end" in msg, msg


def test_a_mix_that_would_plan_more_faults_than_a_run_holds_is_refused(tmp_path: Path) -> None:
    msg = _load_error(tmp_path, "duration: 86400\nmix: {kinds: [[kill, 1]], duration: [0, 0.2], gap: [0, 0.2]}\n")
    assert "FILE:6: mix: duration [0, 0.2] and gap [0, 0.2]: about " in msg and "a mix plans at most 20,000" in msg, msg


def test_a_longer_run_that_makes_the_mix_plan_too_many_is_refused_naming_the_flag(tmp_path: Path) -> None:
    sc = scenario.load(str(_file(tmp_path, "duration: 60\nmix: {kinds: [[kill, 1]], duration: [0, 0.2], gap: [0, 0.2]}\n")))
    assert schedule.plan(sc, 1), "a minute of it is fine"
    with pytest.raises(ConfigError, match=r"^--duration 86400: the scenario's mix: .*a mix plans at most 20,000") as info:
        sc.with_duration(86400)
    assert info.value.exit_code == 2


def test_the_planner_stops_at_its_cap_whatever_it_is_given() -> None:
    sc = scenario.load("mixed")
    # about 55,000 faults of 0 s, 1 ms apart (the cap is 40,000): a mix validation refuses, handed to the planner directly
    unchecked = sc.model_copy(update={"mix": sc.mix.model_copy(update={"duration": (0.0, 0.0), "gap": (0.001, 0.001)})})
    started = time.process_time()  # CPU time: a loaded machine's wait is not the loader's work
    with pytest.raises(ConfigError, match=r"^scenario mixed: its mix planned 40,000 faults and had not reached the run's end"):
        schedule.plan(unchecked, 1)
    assert time.process_time() - started < 5


def test_every_library_mix_plans_within_the_bound_even_for_a_day() -> None:
    for name in scenario.names():
        sc = scenario.load(name)
        assert sc.mix is None or schedule.mix_problem(sc.mix, scenario.MAX_DURATION_S) is None, name


@pytest.mark.parametrize("mix, expected", [
    ("{kinds: [[kill, 0], [pause, 0]]}", "FILE:5: mix.kinds: every weight is 0: at least one kind needs a weight above 0"),
    ("{kinds: []}", "FILE:5: mix.kinds: empty: a mix draws from at least one [kind, weight] pair"),
])
def test_a_mix_with_nothing_to_draw_is_refused(tmp_path: Path, mix: str, expected: str) -> None:
    assert expected in _load_error(tmp_path, f"mix: {mix}\n")


@pytest.mark.parametrize("mix", ["{kinds: [[kill, 1]], duration: [0, 0], gap: [0, 0]}", "{kinds: [[kill, 0]]}", "{kinds: []}"])
def test_run_dry_run_and_matrix_refuse_a_mix_that_cannot_be_planned(tmp_path: Path, mix: str, no_planning: list[Any],
                                                                     no_real_run: list[Any], no_matrix_run: list[Any]) -> None:
    f = _file(tmp_path, f"mix: {mix}\n")
    for args in (["run", str(f), "--dry-run"], ["run", str(f)],
                 ["matrix", "--scenarios", str(f), "--out", str(tmp_path / "m")]):
        _refused(cli(*args), f"{f}:5: mix")
    assert no_planning == [] and no_real_run == [] and no_matrix_run == []


# ---- 3, 4: YAML that is not what it reads, or that never loads ----

@pytest.mark.parametrize("body, expected", [
    ("duration: 30\nduration: 9000\n", "FILE:6: duplicate key 'duration' (first on line 5)"),
    ("faults:\n  - {at: 5, kind: kill, at: 9}\n", "FILE:6: duplicate key 'at' (first on line 6)"),
    ("expect:\n  valid: true\n  min_ok_txns: 5\n  valid: false\n", "FILE:8: duplicate key 'valid' (first on line 6)"),
])
def test_a_key_given_twice_is_refused_at_its_second_line(tmp_path: Path, body: str, expected: str) -> None:
    f = _file(tmp_path, body)
    with pytest.raises(ConfigError) as info:
        scenario.load(str(f))
    assert info.value.exit_code == 2
    assert str(info.value).replace(str(f), "FILE").startswith(expected), info.value


def test_a_merge_key_may_still_be_overridden_and_a_problem_is_on_the_overriding_line(tmp_path: Path) -> None:
    head = "name: s\ndescription: x\nworkloads:\n  - &w {kind: txn-producer, count: 2}\n"
    f = _file(tmp_path, "", head=head + "  - {<<: *w, count: 3}\n")
    assert [w.count for w in scenario.load(str(f)).workloads] == [2, 3]
    f = _file(tmp_path, "", head=head + "  - <<: *w\n    count: 99\n")
    with pytest.raises(ConfigError, match=f"{f}:6: workloads\\[1\\].count: "):
        scenario.load(str(f))


def _bomb(levels: int = 9) -> str:
    """Billion laughs under workloads[0].client: each level repeats the one before 9 times."""
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels + 1)]
    return "    client:\n" + "".join(f"      {line}\n" for line in lines)


def test_an_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    started = time.process_time()  # CPU time: a loaded machine's wait is not the loader's work
    msg = _load_error(tmp_path, _bomb())
    assert time.process_time() - started < 2
    assert msg.startswith("FILE:10: alias *l3: aliases repeat more than 10,000 values in all"), msg


def test_a_few_aliases_are_fine_and_a_recursive_one_is_not(tmp_path: Path) -> None:
    f = _file(tmp_path, "", head="name: s\ndescription: x\ntopics: &t [a, b]\nworkloads:\n  - kind: copier\n"
                                  "    settings: {input: a, output: b}\n    client: &c {linger.ms: 5}\n"
                                  "  - {kind: reader, client: *c}\n")
    assert scenario.load(str(f)).workloads[1].client == {"linger.ms": 5}
    msg = _load_error(tmp_path, "    client: &c {a: [*c]}\n")
    assert msg.startswith("FILE:5: alias *c is inside the value it names"), msg


@pytest.mark.parametrize("nested", ["[" * 20_000 + "]" * 20_000, "{a: " * 20_000 + "1" + "}" * 20_000])
def test_deep_nesting_is_refused_without_a_recursion_error(tmp_path: Path, nested: str) -> None:
    started = time.process_time()  # CPU time: a loaded machine's wait is not the loader's work
    msg = _load_error(tmp_path, f"    client: {{x: {nested}}}\n")
    assert time.process_time() - started < 2
    assert msg.startswith(f"FILE:5: values nested more than {scenario.MAX_YAML_DEPTH} deep"), msg


def test_run_refuses_an_alias_bomb_before_anything_is_written(tmp_path: Path, no_real_run: list[Any]) -> None:
    f = _file(tmp_path, _bomb())
    _refused(cli("run", str(f), "--out", str(tmp_path / "run")), f"{f}:10: alias *l3")
    assert no_real_run == [] and not (tmp_path / "run").exists()


# ---- 5: what a cluster would refuse only once it is up ----

@pytest.mark.parametrize("body, expected", [
    ('topics: ["my topic", b]\n', "FILE:5: topics[0]: 'my topic' is not a Kafka topic name; allowed: 1 to 249 of a-z"),
    ("topics: [a, a/b]\n", "FILE:5: topics[1]: 'a/b' is not a Kafka topic name"),
    ("topics: [a, '..']\n", "FILE:5: topics[1]: '..' is not a Kafka topic name"),
    (f"topics: [{'x' * 250}]\n", "is not a Kafka topic name"),
    (f"topics: [a, {'x' * 249}]\n", "FILE:5: topics[1]: 249 characters, 'xxxxxxxxxxxxxxxxxxxx'...; allowed: at most 240 "
                                   "(Kafka's 249, less 9 for the run's tag: the run names it NAME.<tag>; keep_name: true keeps it as written, up to 249)"),
    ("topics:\n  - a\n  - b\n  - a\n", "FILE:8: topics[2]: 'a' is listed twice"),
    ("topics: [a.b, a_b]\n", "FILE:5: topics[1]: 'a_b' collides with 'a.b': Kafka refuses topic names that differ only in"),
    ("topics: []\n", "FILE:5: topics: empty: a scenario needs at least one topic"),
    ("faults:\n  - {at: 5, kind: kill, target: leader, of: nope/0}\n",
     "FILE:6: faults[0] (kill at 5s) of: 'nope/0': 'nope' is not one of the scenario's topics (eos-a, eos-b)"),
    ("faults:\n  - {at: 5, kind: kill, target: leader, of: eos-c/0}\n", "of: 'eos-c/0': 'eos-c' is not one of the scenario's "
     "topics (eos-a, eos-b); did you mean 'eos-b'?"),
    ("faults:\n  - {at: 5, kind: kill-leader, of: eos-z/1}\n", "FILE:6: faults[0] (kill-leader at 5s) of: 'eos-z/1': 'eos-z'"),
    ("faults:\n  - {at: 5, kind: kill, target: leader, of: eos-a}\n", "of: 'eos-a': a leader is of TOPIC/PARTITION, e.g. eos-a/0"),
    ("faults:\n  - {at: 5, kind: kill, target: leader, of: eos-a/3}\n", "of: 'eos-a/3': topic eos-a has partitions 0 to 2"),
    ("faults:\n  - {at: 5, kind: partition, partition: directed, target: 1, peer: leader, of: x/0}\n",
     "FILE:6: faults[0] (partition at 5s) of: 'x/0': 'x' is not one of the scenario's topics"),
    ("expect:\n  valid: false\n  fires: [duplicate, lost-writes]\n",
     "FILE:7: expect.fires[1]: 'lost-writes' is not a check; allowed: duplicate, lost-write, "),
])
def test_what_the_cluster_or_checker_would_refuse_is_refused_first(tmp_path: Path, body: str, expected: str) -> None:
    msg = _load_error(tmp_path, body)
    assert expected in msg, msg
    assert "did you mean 'lost-write'?" in msg if "lost-writes" in body else True


def test_a_scenario_without_workloads_is_refused(tmp_path: Path) -> None:
    f = _file(tmp_path, "", head="name: s\ndescription: x\nworkloads: []\n")
    with pytest.raises(ConfigError, match=f"{f}:3: workloads: empty: a scenario runs at least one workload; kinds: txn-producer"):
        scenario.load(str(f))


def test_a_coordinator_s_of_is_its_transactional_id_not_a_topic(tmp_path: Path) -> None:
    f = _file(tmp_path, "faults:\n  - {at: 5, kind: kill, target: coordinator, of: my-txn-id}\n"
                        "  - {at: 9, kind: kill, target: leader, of: eos-b/2}\n")
    assert [getattr(x, "of", None) for x in scenario.load(str(f)).faults] == ["my-txn-id", "eos-b/2"]


def test_a_duration_override_that_cuts_faults_off_is_refused_naming_the_flag() -> None:
    sc = scenario.load("leader-kill")  # kills at 8, 20 and 32 s of 45
    with pytest.raises(ConfigError, match=r"^--duration 20: the run would end before these faults start: kill at 20s and "
                                          r"kill at 32s; give --duration more than 32 \(the scenario's is 45\)") as info:
        sc.with_duration(20)
    assert info.value.exit_code == 2
    assert sc.with_duration(33).duration == 33 and sc.with_duration(60).duration == 60


def test_a_fault_at_the_scenario_s_own_end_stays_its_choice(tmp_path: Path) -> None:
    sc = scenario.load(str(_file(tmp_path, "duration: 30\nfaults:\n  - {at: 30, kind: kill}\n")))
    assert sc.with_duration(30).duration == 30 and sc.with_duration(40).duration == 40
    with pytest.raises(ConfigError, match="^--duration 29: the run would end before this fault starts: kill at 30s"):
        sc.with_duration(29)


def test_run_and_matrix_refuse_a_duration_that_cuts_faults_off(tmp_path: Path, no_real_run: list[Any],
                                                                 no_matrix_run: list[Any]) -> None:
    _refused(cli("run", "leader-kill", "--dry-run", "--duration", "20"), "--duration 20: the run would end before")
    _refused(cli("run", "leader-kill", "--duration", "20"), "--duration 20: the run would end before")
    _refused(cli("matrix", "--scenarios", "baseline,leader-kill", "--duration", "10", "--out", str(tmp_path / "m")),
             "--duration 10: the run would end before these faults start: kill at 20s and kill at 32s")
    assert no_real_run == [] and no_matrix_run == []


# ---- 6: a file that cannot be read ----

def test_a_folder_named_without_suffix_is_called_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    with pytest.raises(ConfigError, match=f"^scenario file {folder} is a folder, not a YAML file"):
        scenario.load(str(folder))
    _refused(cli("run", f"{folder}/", "--dry-run"), f"{folder} is a folder")


@pytest.mark.timeout(10)  # the old loader blocked for ever opening a pipe no one writes to
def test_a_pipe_or_device_is_not_read(tmp_path: Path) -> None:
    pipe = tmp_path / "sc.yaml"
    os.mkfifo(pipe)
    for path in (pipe, Path(os.devnull)):
        with pytest.raises(ConfigError, match=f"^scenario file {path} is not a regular file, not a YAML file"):
            scenario.load(str(path))


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="Linux only: a file that exists but gives an I/O error")
def test_a_file_that_cannot_be_read_is_named_not_a_bug() -> None:
    with pytest.raises(ConfigError, match="^scenario file /proc/self/mem cannot be read: Input/output error"):
        scenario.load("/proc/self/mem")
    _refused(cli("run", "/proc/self/mem", "--dry-run"), "scenario file /proc/self/mem cannot be read")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode (the /proc/self/mem test covers the path)")
def test_a_file_without_read_permission_is_named(tmp_path: Path) -> None:
    f = _file(tmp_path, "")
    f.chmod(0)
    with pytest.raises(ConfigError, match=f"^scenario file {f} cannot be read: Permission denied"):
        scenario.load(str(f))


def test_a_file_too_large_to_be_a_scenario_is_not_read(tmp_path: Path) -> None:
    f = tmp_path / "history.jsonl"
    with f.open("wb") as out:
        out.truncate(scenario.MAX_FILE_BYTES + 1)  # sparse: nothing written
    with pytest.raises(ConfigError, match=f"^scenario file {f} is 1,048,577 bytes; a scenario file is at most 1,048,576"):
        scenario.load(str(f))


def test_bytes_that_are_not_utf_8_are_refused_naming_the_line(tmp_path: Path) -> None:
    f = tmp_path / "sc.yaml"
    f.write_bytes(HEAD.encode() + b"# caf\xe9\n")  # Latin-1, not UTF-8
    with pytest.raises(ConfigError, match=f"^{f}: not valid YAML: line 5 is not UTF-8 text \\(byte 0xe9\\)"):
        scenario.load(str(f))

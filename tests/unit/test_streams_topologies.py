"""The shipped Streams topologies' Python halves (docs/APPS.md, "The shipped apps"): the word count's
contract function splits a line exactly as the Java app does (cases checked once against
``String.toLowerCase().split("\\W+")`` on a JDK 17), the join's function builds the app's value, and
the generators the scenarios feed them with return well-formed, seeded records. No cluster, no JVM."""

from __future__ import annotations

import random
import time

import pytest

from harness.apps import functions, generators


@pytest.mark.parametrize(("line", "words"), [
    ("The quick, brown-fox.", ["the", "quick", "brown", "fox"]),  # trailing empty word dropped
    (", a", ["", "a"]),  # a leading one kept, as Java's split keeps it
    ("", [""]),  # nothing matched: the line itself
    (" ", []),  # only separators: nothing
    ("a  b", ["a", "b"]),
    ("Stream's", ["stream", "s"]),
    ("\u00e9 a", ["", "a"]),  # \W is ASCII in Java: a letter outside it separates
    ("x_y9 z!", ["x_y9", "z"]),
])
def test_words_split_a_line_as_javas_split_on_non_word_characters(line: str, words: list[str]) -> None:
    assert functions.java_words(line) == words


def test_words_contributes_one_count_per_occurrence_to_the_fixed_output_topic() -> None:
    record = {"topic": "streams-plaintext-input", "partition": 0, "offset": 3, "key": None,
              "value": "Kafka kafka, log", "timestamp": 0, "headers": {}}
    assert functions.words(record) == [["streams-wordcount-output", "kafka", 1], ["streams-wordcount-output", "kafka", 1],
                                       ["streams-wordcount-output", "log", 1]]
    assert functions.words({**record, "value": None}) == []


def test_a_joined_order_carries_its_region_or_a_dash() -> None:
    order = {"topic": "app-orders", "partition": 1, "key": "c3", "value": "o17-40"}
    customer = {"topic": "app-customers", "partition": 1, "key": "c3", "value": "eu-5"}
    assert functions.joined_order(order, customer) == [{"topic": "app-joined", "key": "c3", "value": "o17-40@eu-5"}]
    assert functions.joined_order(order, None) == [{"topic": "app-joined", "key": "c3", "value": "o17-40@-"}]
    assert functions.joined_order(order, {**customer, "value": None})[0]["value"] == "o17-40@-"  # a deleted region


@pytest.mark.parametrize("generator", [generators.lines, generators.events, generators.orders, generators.regions])
def test_each_generator_returns_a_record_and_the_same_one_for_the_same_seed(generator: object) -> None:
    made = [generator(random.Random(5), n) for n in range(50)]  # type: ignore[operator]
    for r in made:
        assert set(r) == {"key", "value", "headers", "timestamp"}
        assert isinstance(r["value"], str) and (r["key"] is None or isinstance(r["key"], str))
    again = [generator(random.Random(5), n) for n in range(50)]  # type: ignore[operator]
    if generator is not generators.events:  # stamped with the wall clock
        assert made == again


def test_lines_never_start_with_a_separator_so_no_empty_word_is_counted() -> None:
    rnd = random.Random(1)
    for n in range(500):
        line = generators.lines(rnd, n)["value"]
        assert "" not in functions.java_words(line), line


def test_events_are_now_mostly_some_late_within_grace_and_some_past_it() -> None:
    rnd = random.Random(2)
    lags = []
    for n in range(2000):
        now = int(time.time() * 1000)
        lags.append(now - generators.events(rnd, n)["timestamp"])
    assert sum(1 for x in lags if x <= 50) > 1400
    assert any(100 < x <= 1500 for x in lags) and any(x >= generators.LATE_MS[0] for x in lags)


def test_regions_give_every_regioned_customer_a_region_first_and_unique_values() -> None:
    rnd = random.Random(3)
    made = [generators.regions(rnd, n) for n in range(100)]
    assert [r["key"] for r in made[:generators.REGIONED]] == [f"c{i}" for i in range(generators.REGIONED)]
    assert len({r["value"] for r in made}) == len(made)

"""The recall generators: answers recoverable, none leaked, seeded, and distributed as their sources."""

from __future__ import annotations

import numpy as np
import pytest

from data_prep.recall import IGNORE, MAD_LEVELS, TASKS, build, mad_levels
from data_prep.recall.mad_fuzzy import Segments
from data_prep.recall.mqar import gap_weights
from data_prep.recall.sampling import draw_distinct

SMALL = {
    "mqar": dict(vocab_size=128, input_seq_len=64, num_kv_pairs=8),
    "in_context_recall": dict(seq_len=64),
    "fuzzy_in_context_recall": dict(seq_len=64),
    "noisy_in_context_recall": dict(seq_len=64),
    "selective_copying": dict(seq_len=64, num_tokens_to_copy=8),
    "compression": dict(),
    "memorization": dict(),
    "induction": dict(induction_len=3, num_triggers=3),
}


def labelled(batch, row: int) -> np.ndarray:
    return np.nonzero(batch.targets[row] != IGNORE)[0]


@pytest.mark.parametrize("name", list(TASKS))
def test_form_ranges_and_seeds(name):
    task = build(name, **SMALL[name])
    batch = task.fixed(3, 40)
    assert batch.inputs.shape == batch.targets.shape == (40, task.seq_len)
    assert batch.inputs.dtype == batch.targets.dtype == np.int64
    assert batch.inputs.min() >= 0 and batch.inputs.max() < task.vocab_size
    answers = batch.targets[batch.targets != IGNORE]
    assert answers.min() >= 0 and answers.max() < task.num_classes
    assert ((batch.targets != IGNORE).sum(axis=1) >= 1).all()
    again = task.fixed(3, 40)
    assert np.array_equal(again.inputs, batch.inputs) and np.array_equal(again.targets, batch.targets)
    other = task.fixed(4, 40)
    assert not np.array_equal(other.inputs, batch.inputs)
    drawn = task.sample(np.random.default_rng(3), 40)
    assert np.array_equal(drawn.inputs, batch.inputs)


@pytest.mark.parametrize("name", list(TASKS))
def test_no_label_sits_on_its_own_answer(name):
    batch = build(name, **SMALL[name]).fixed(0, 40)
    where = batch.targets != IGNORE
    assert not np.any(batch.inputs[where] == batch.targets[where])


# MQAR ------------------------------------------------------------------------------------------


def test_mqar_answers_come_from_the_pairs_and_nowhere_after_the_query():
    task = build("mqar", vocab_size=128, input_seq_len=64, num_kv_pairs=8, random_non_queries=False)
    batch = task.fixed(0, 50)
    for row in range(50):
        tokens = batch.inputs[row].tolist()
        for p in labelled(batch, row):
            pair = [j for j in range(0, 16, 2) if tokens[j] == tokens[p]]
            assert len(pair) == 1 and tokens[pair[0] + 1] == batch.targets[row, p]
            assert tokens.count(batch.targets[row, p]) == 1  # only in its pair, never after the query
        assert set(tokens[16:]) <= {0} | set(tokens[0:16:2])  # after the pairs: blanks and queries


def test_mqar_statistics_match_zoology():
    vocab, length, pairs = 128, 64, 8
    batch = build("mqar", vocab_size=vocab, input_seq_len=length, num_kv_pairs=pairs).fixed(1, 4000)
    keys, values = batch.inputs[:, 0 : 2 * pairs : 2], batch.inputs[:, 1 : 2 * pairs : 2]
    assert keys.min() >= 1 and keys.max() < vocab // 2
    assert values.min() >= vocab // 2 and values.max() < vocab
    assert all(len(set(row)) == pairs for row in keys[:200].tolist())
    assert all(len(set(row)) == pairs for row in values[:200].tolist())
    assert ((batch.targets != IGNORE).sum(axis=1) == pairs).all()
    space = (length - 2 * pairs) // 2
    slots = (np.nonzero(batch.targets != IGNORE)[1] - 2 * pairs) // 2
    ours = np.bincount(slots, minlength=space) / slots.size
    rng, weights = np.random.default_rng(2), gap_weights(space, 0.01)
    reference = np.concatenate([rng.choice(space, pairs, replace=False, p=weights) for _ in range(4000)])
    theirs = np.bincount(reference, minlength=space) / reference.size
    assert 0.5 * np.abs(ours - theirs).sum() < 0.02
    noise = batch.inputs[:, 2 * pairs :][batch.targets[:, 2 * pairs :] == IGNORE]
    assert abs(noise.mean() - (vocab - 1) / 2) < 1.5 and noise.min() == 0 and noise.max() == vocab - 1


@pytest.mark.parametrize(("low", "high", "k"), [(1, 64, 8), (5, 4101, 8)])  # both ways of drawing
def test_distinct_draws_are_distinct_uniform_and_in_random_order(low, high, k):
    drawn = draw_distinct(np.random.default_rng(0), 20000, low, high, k)
    assert drawn.min() >= low and drawn.max() < high
    assert (np.diff(np.sort(drawn, axis=1), axis=1) > 0).all()
    for column in (drawn[:, 0], drawn[:, -1]):
        counts = np.bincount(column - low, minlength=high - low)
        expected = len(column) / (high - low)
        assert np.abs(counts - expected).max() < 6 * np.sqrt(expected) + 2


# MAD's recall ----------------------------------------------------------------------------------


def recall_answer(tokens: list[int], p: int, mask: int) -> set[int]:
    """Values shown after earlier key slots that hold the token at p."""
    return {tokens[j + 1] for j in range(0, p, 2) if tokens[j] == tokens[p] and tokens[j + 1] != mask}


@pytest.mark.parametrize("name", ["in_context_recall", "noisy_in_context_recall"])
@pytest.mark.parametrize("mask_answers", [True, False])
def test_recall_answers_recoverable_and_hidden(name, mask_answers):
    task = build(name, seq_len=64, mask_answers=mask_answers)
    mask = task.options.vocab_size
    batch = task.fixed(0, 60)
    for row in range(60):
        tokens = batch.inputs[row].tolist()
        for p in labelled(batch, row):
            assert recall_answer(tokens, p, mask) == {batch.targets[row, p]}
            if mask_answers and p + 1 < task.seq_len:
                assert tokens[p + 1] == mask
    if mask_answers:
        plain = build(name, seq_len=64, mask_answers=False).fixed(0, 60)
        changed = batch.inputs != plain.inputs
        assert np.array_equal(changed[:, 1:], plain.targets[:, :-1] != IGNORE) and not changed[:, 0].any()
        assert np.array_equal(batch.targets, plain.targets)


def test_recall_statistics_match_mad():
    task = build("in_context_recall", seq_len=64)
    batch = task.fixed(5, 2000)
    data, slots = task.options.vocab_size, 31
    plain = build("in_context_recall", seq_len=64, mask_answers=False).fixed(5, 2000).inputs
    assert (
        batch.inputs[:, 0 : 2 * slots : 2].max() < data // 2
        and (plain[:, 1 : 2 * slots : 2] >= data // 2).all()
    )
    expected_distinct = (data // 2) * (1 - (1 - 2 / data) ** slots)
    labels = (batch.targets != IGNORE).sum(axis=1)
    assert abs(labels.mean() - (slots - expected_distinct + 1)) < 0.1
    noisy = build("noisy_in_context_recall", seq_len=64).fixed(5, 2000)
    first = noisy.inputs[:, 0 : 2 * slots : 2]
    assert abs((first >= 16).mean() - 0.2 * (slots - 1) / slots) < 0.01
    assert noisy.inputs[:, 0 : 2 * slots][np.repeat(first >= 16, 2, axis=1)].min() >= 16


def fuzzy_runs(targets: np.ndarray) -> list[tuple[int, list[int]]]:
    """(start, answers) of each run of consecutive labelled positions."""
    runs, p = [], 0
    while p < len(targets):
        if targets[p] == IGNORE:
            p += 1
            continue
        start = p
        while p < len(targets) and targets[p] != IGNORE:
            p += 1
        runs.append((start, targets[start:p].tolist()))
    return runs


def shown_before(tokens: list[int], pattern: list[int], before: int) -> bool:
    return any(tokens[j : j + len(pattern)] == pattern for j in range(before - len(pattern) + 1))


@pytest.mark.parametrize("mask_answers", [True, False])
@pytest.mark.parametrize("split", ["train", "test"])
def test_fuzzy_answers_follow_an_earlier_showing_of_the_key(mask_answers, split):
    task = build("fuzzy_in_context_recall", seq_len=64, mask_answers=mask_answers)
    mask = task.options.vocab_size
    batch = task.fixed(1, 60, split)
    for row in range(60):
        tokens = batch.inputs[row].tolist()
        for start, answers in fuzzy_runs(batch.targets[row]):
            sizes = (
                range(task.options.k_motif_size, 0, -1) if split == "train" else [task.options.k_motif_size]
            )
            assert any(
                shown_before(tokens, tokens[start - s + 1 : start + 1] + answers, start - s + 1)
                for s in sizes
            )
            if mask_answers:
                assert all(
                    tokens[q] == mask for q in range(start + 1, min(start + 1 + len(answers), len(tokens)))
                )


@pytest.mark.parametrize("split", ["train", "test"])
@pytest.mark.parametrize(
    "options",
    [
        dict(seq_len=64),
        dict(seq_len=48, multi_query=False, noise_vocab_size=3, frac_noise=0.3, vocab_size=20),
    ],
)
def test_fuzzy_segments_past_the_length_change_nothing(split, options):
    """The draw stops adding segments once every row's last one starts at or past both the source
    loop's end and the probe's index: the batch equals the one from the source's bound (S // 2 + 1
    segments, each of 2 tokens at least)."""
    task = build("fuzzy_in_context_recall", **options)
    rng, n, seq = np.random.default_rng(3), 200, task.options.seq_len
    probe = task.draw_probe(rng, n, split)
    whole = task.natural(task.draw_segments(rng, n, seq // 2 + 1, split), probe)
    reach = np.maximum(task.loop_end(probe), probe.index)[:, None]  # (n, 1)
    need = int((whole.starts < reach).sum(axis=1).max()) + 1  # the fewest that pass every row
    assert need < seq // 2 + 1

    def first(count: int):
        return task.natural(Segments(**{k: v[:, :count] for k, v in vars(whole.segments).items()}), probe)

    short = first(need)
    assert (short.starts[:, -1] >= reach[:, 0]).all() and (short.starts[:, -2] < reach[:, 0]).any()
    expected, got, halved = task.assemble(whole), task.assemble(short), task.assemble(first(need // 2))
    assert np.array_equal(got.inputs, expected.inputs) and np.array_equal(got.targets, expected.targets)
    assert not np.array_equal(halved.inputs, expected.inputs)  # the comparison sees a missing segment


def test_fuzzy_statistics_match_mad():
    task = build("fuzzy_in_context_recall", seq_len=64, mask_answers=False)
    data, pad = task.options.data_tokens, task.options.vocab_size - 1
    for split, key_sizes in (("train", {1, 2, 3}), ("test", {3})):
        batch = task.fixed(2, 1500, split)
        value_sizes, seen_sizes = [], []
        for row in range(1500):
            tokens = batch.inputs[row].tolist()
            start, answers = fuzzy_runs(batch.targets[row])[-1]
            key = []
            for q in range(start, -1, -1):
                if tokens[q] >= data // 2:
                    break
                key.insert(0, tokens[q])
            assert len(set(key)) == len(key) and len(set(answers)) == len(answers)
            assert all(data // 2 <= a < data for a in answers)
            seen_sizes.append(len(key))
            value_sizes.append(len(answers))
            pads = [t == pad for t in tokens]
            assert pads == sorted(pads, reverse=True)  # padding only on the left
        counts = np.bincount(value_sizes, minlength=4)[1:] / len(value_sizes)
        assert np.abs(counts - 1 / 3).max() < 0.05
        if split == "test":
            assert set(seen_sizes) == key_sizes
        else:
            assert key_sizes <= set(seen_sizes)


# MAD's copying, compression, memorization -------------------------------------------------------


def test_selective_copying_recovers_the_tokens_in_order():
    task = build("selective_copying", seq_len=64, num_tokens_to_copy=8)
    blank, copy = task.options.vocab_size - 2, task.options.vocab_size - 1
    batch = task.fixed(0, 2000)
    for row in range(100):
        tokens = batch.inputs[row].tolist()
        cut = tokens.index(copy)
        assert cut == 64 - 8 - 1 and tokens[cut + 1 :] == [blank] * 8  # the answers are never shown twice
        assert [t for t in tokens[:cut] if t != blank] == batch.targets[row, cut + 1 :].tolist()
        assert tokens[cut - 1] != blank  # the source never puts a blank after the last token
    first = np.argmax(batch.inputs != blank, axis=1)
    assert abs(first.mean() - (64 - 2 * 8 - 1) / 8) < 0.3  # each blank before token j, j uniform


def test_compression_rebuilds_its_input_after_the_compression_token():
    task = build("compression", vocab_size=16, seq_len=32)
    batch = task.fixed(0, 500)
    assert np.array_equal(batch.targets[:, 32:], batch.inputs[:, :32])
    assert (batch.inputs[:, 31] == 15).all() and (batch.inputs[:, 32:] == 16).all()
    assert (batch.targets[:, :32] == IGNORE).all() and batch.inputs[:, :31].max() < 15
    assert abs(batch.inputs[:, :31].mean() - 7) < 0.15


def test_memorization_map_is_fixed_one_to_one_and_never_shown():
    task = build("memorization")
    data = task.options.vocab_size - 1
    seen: dict[int, int] = {}
    for batch in (task.fixed(0, 256), task.sample(np.random.default_rng(9), 256)):
        assert batch.inputs.max() <= data and (batch.inputs[:, 1::2] == data).all()
        assert not np.isin(batch.inputs, np.arange(data // 2, data)).any()  # no value in any input
        for row in range(256):
            for p in labelled(batch, row):
                key = int(batch.inputs[row, p - 1])
                assert seen.setdefault(key, int(batch.targets[row, p])) == batch.targets[row, p]
    assert len(set(seen.values())) == len(seen) > 120
    assert all(data // 2 <= v < data for v in seen.values()) and max(seen) < data // 2
    other = build("memorization", kv_map_seed=1)
    assert not np.array_equal(other.value_of, task.value_of)


# induction ---------------------------------------------------------------------------------------


def test_induction_copies_what_followed_the_first_trigger():
    task = build("induction", input_seq_len=30, induction_len=3, num_triggers=3)
    prefix, noop = task.options.vocab_size - 2, task.options.vocab_size - 1
    batch = task.fixed(0, 400)
    singles = 0
    for row in range(400):
        tokens = batch.inputs[row].tolist()
        triggers = [j for j in range(30) if tokens[j] == prefix]
        assert tokens[30] == prefix and tokens[31:] == [noop, noop]  # the answers stay hidden
        assert tokens[triggers[0] + 1 : triggers[0] + 4] == batch.targets[row, 30:].tolist()
        assert (np.diff(triggers) > 3).all()
        singles += len(triggers) == 1
    assert 0.45 < singles / 400 < 0.75  # one trigger in half the examples, and where others collide
    plain = build("induction").fixed(0, 3000)
    position = np.argmax(plain.inputs[:, :30] == 18, axis=1)
    assert ((plain.inputs[:, :30] == 18).sum(axis=1) == 1).all()
    assert abs(position.mean() - 27 / 2 + 0.5) < 0.4  # uniform over 0..27


# registry, levels, errors ------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MAD_LEVELS))
def test_every_mad_level_builds(name):
    levels = mad_levels(name)
    changes = MAD_LEVELS[name]["changes"]
    assert len(levels) == 1 + sum(len(v) for v in changes.values())
    for level in levels:
        options = {k: v for k, v in level.items() if k != "num_train_examples"}
        build(name, **options)


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("mqar", dict(num_kv_pairs=17), "does not fit input_seq_len=64: valid range 1..16"),
        ("mqar", dict(vocab_size=16), "too small for 8 distinct keys and values: valid range >= 18"),
        ("mqar", dict(frac_noise=0.1), "has no option 'frac_noise': valid options are vocab_size"),
        ("mqar", dict(num_kv_pairs=2.5), "is not int"),
        ("selective_copying", dict(num_tokens_to_copy=128), "does not fit seq_len=256: valid range 1..127"),
        ("in_context_recall", dict(vocab_size=2, noise_vocab_size=1), "too small"),
        ("fuzzy_in_context_recall", dict(vocab_size=6), "valid range >= 7"),
        ("memorization", dict(num_tokens_to_copy=4), "valid options are vocab_size, seq_len"),
        ("induction", dict(induction_len=40), "valid range 1..28"),
        ("recall", dict(), "valid tasks are mqar"),
    ],
)
def test_bad_input_stops_with_one_line(name, options, message):
    with pytest.raises(ValueError, match=message) as caught:
        build(name, **options)
    assert "\n" not in str(caught.value)

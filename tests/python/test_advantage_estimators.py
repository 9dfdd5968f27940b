"""compute_advantages with the CPU-only estimators (REINFORCE++-baseline, GRPO pass@k, GDPO) and
the keep band, in process (docs/DESIGN.md §4)."""

import math

import numpy
import pytest

import rlscore


def test_gdpo_takes_a_components_matrix_and_a_constant_component_counts_zero(engine):
    # Two groups of four: accuracy varies in both; format is constant in group 0 only.
    accuracy = [1, 0, 1, 0, 1, 0, 0, 0]
    fmt = [0.1, 0.1, 0.1, 0.1, 0.1, 0.0, 0.0, 0.0]
    both = numpy.column_stack([accuracy, fmt])
    adv = engine.compute_advantages(None, [4, 4], estimator="gdpo", components=both,
                                    component_weights=[1.0, 0.5])
    assert adv.advantages.shape == (8,)
    # The rewards the statistics describe are the weighted sums.
    assert adv.mean[0] == pytest.approx((1.05 + 0.05 + 1.05 + 0.05) / 4)
    # Group 0's format is constant: any other constant gives the very same advantages.
    moved = both.copy()
    moved[:4, 1] = 7.0
    again = engine.compute_advantages(None, [4, 4], estimator="gdpo", components=moved,
                                      component_weights=[1.0, 0.5])
    assert again.advantages.tobytes() == adv.advantages.tobytes()
    assert list(adv.keep) == [True, True]

    # One group alone: accuracy z = ±√3/2, whitened over the batch to the same.
    one = engine.compute_advantages([0.0] * 4, [4], estimator="gdpo",
                                    components=[[1, 0.1], [0, 0.1], [1, 0.1], [0, 0.1]])
    assert list(one.advantages) == pytest.approx([math.sqrt(3) / 2, -math.sqrt(3) / 2] * 2)


def test_gdpo_errors_name_what_is_wrong(engine):
    with pytest.raises(rlscore.Error) as e:
        engine.compute_advantages([0.0, 1.0], [2], estimator="gdpo",
                                  components=[[1, 2], [3, 4], [5, 6]])
    assert e.value.code == "INVALID_ARGUMENT"
    assert "components has 6 values; expected rewards (2) x num_components (2)" in e.value.message
    with pytest.raises(rlscore.Error) as e:
        engine.compute_advantages(None, [2], estimator="gdpo", components=[[1, 2], [3, 4]],
                                  component_weights=[1.0])
    assert "component_weights has 1 values" in e.value.message
    with pytest.raises(rlscore.Error) as e:
        engine.compute_advantages(None, [2], estimator="gdpo",
                                  components=[[1, 2], [3, float("nan")]])
    assert "component 1 at group 0, position 1" in e.value.message
    with pytest.raises(rlscore.Error) as e:
        engine.compute_advantages([0.0, 1.0], [2], estimator="grpo", components=[[1], [2]])
    assert "GDPO estimator only" in e.value.message
    with pytest.raises(ValueError):
        engine.compute_advantages(None, [2], estimator="gdpo", components=[1.0, 2.0])


def test_reinforce_pp_baseline_and_pass_at_k_by_name(engine):
    rewards = numpy.array([1.0, 0.0, 3.0, 3.0, 3.0, 5.0])
    rpp = engine.compute_advantages(rewards, [2, 4], estimator="reinforce_pp_baseline")
    sd = math.sqrt(3.5 / 5)  # the centred values' sample deviation
    assert list(rpp.advantages) == pytest.approx(
        [0.5 / sd, -0.5 / sd, -0.5 / sd, -0.5 / sd, -0.5 / sd, 1.5 / sd])
    passk = engine.compute_advantages([0.2, 0.9, 0.5, 0.1, 1, 1, 0, 0], [4, 4],
                                      estimator="grpo_passk")
    assert passk.advantages[1] == pytest.approx(0.4 / passk.std[0])
    assert [a for i, a in enumerate(passk.advantages) if i != 1] == [0.0] * 7  # a tie for the max


def test_keep_band_changes_keep_and_no_advantage(engine):
    rewards = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.5]
    sizes = [4, 4, 4]
    outcomes = ["correct", "wrong", "wrong", "wrong", "correct", "correct", "wrong", "wrong",
                "correct", "correct", "correct", "correct"]
    plain = engine.compute_advantages(rewards, sizes, outcomes=outcomes)
    banded = engine.compute_advantages(rewards, sizes, outcomes=outcomes, keep_band=(0.25, 0.5))
    assert banded.advantages.tobytes() == plain.advantages.tobytes()
    assert list(plain.keep) == [True, True, True]
    assert list(banded.keep) == [True, True, False]  # mean accuracy 0.25, 0.5, 1
    by_accuracy = engine.compute_advantages(rewards, sizes, keep_band=(0.9, 1.0),
                                            accuracy=[1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0.6])
    assert list(by_accuracy.keep) == [True, False, True]
    with pytest.raises(rlscore.Error) as e:
        engine.compute_advantages(rewards, sizes, keep_band=(0.6, 0.4))
    assert "keep_band" in e.value.message


def test_equal_bit_for_bit_to_the_server(engine, client):
    rng = numpy.random.default_rng(11)
    sizes = numpy.full(64, 8)
    components = rng.choice([0.0, 0.1, 1.0], size=(512, 3))
    rewards = components.sum(axis=1)
    accuracy = components[:, 0]
    for estimator in ("reinforce_pp_baseline", "grpo_passk", "gdpo"):
        extra = {"components": components} if estimator == "gdpo" else {}
        local = engine.compute_advantages(rewards, sizes, estimator=estimator, accuracy=accuracy,
                                          keep_band=(0.25, 0.75), **extra)
        remote = client.compute_advantages(rewards, sizes, estimator=estimator,
                                           accuracy=accuracy, keep_band=(0.25, 0.75), **extra)
        assert local.advantages.tobytes() == numpy.array(remote.advantages).tobytes(), estimator
        assert list(local.keep) == list(remote.groups.keep), estimator
        assert list(local.zero_variance_cause) == list(remote.groups.cause), estimator
    # GDPO score_groups with a keep band, dicts as the Client takes them.
    advantage = {"estimator": "gdpo", "keep_band": (0.0, 0.5)}
    local_groups = engine.score_groups([{"reference": "42", "completions": [
        "<think>6*7</think> \\boxed{42}", "<think>6*7</think> \\boxed{41}"]}],
        advantage=advantage)
    remote_groups = client.score_groups([{"reference": "42", "completions": [
        "<think>6*7</think> \\boxed{42}", "<think>6*7</think> \\boxed{41}"]}],
        advantage=advantage)
    remote_groups.backend = local_groups.backend = ""
    assert local_groups.SerializeToString(deterministic=True) == \
        remote_groups.SerializeToString(deterministic=True)
    assert list(local_groups.groups.keep) == [True]

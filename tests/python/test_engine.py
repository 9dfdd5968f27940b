"""rlscore.Engine in process: the server's answers, bit for bit, without a server."""

import math
import os
import subprocess
import sys
import threading

import numpy
import pytest

import rlscore
from rlscore.v1 import scoring_pb2

LOOP = "<think>Let me check. " + "Wait, let me double check the previous step. " * 60 + "</think>"


def groups():
    return [
        {"prompt_id": "p1", "reference": "42", "completions": [
            "<think>6 times 7</think> The answer is \\boxed{42}.",
            "<think>6 times 7</think> The answer is \\boxed{41}.",
            {"text": "<think>6*7 is 42</think> so $\\frac{84}{2}$", "num_tokens": 900,
             "finished": True},
            {"text": LOOP, "num_tokens": 2000, "finished": False}]},
        {"prompt_id": "p2", "references": ["\\frac{1}{2}", "0.5"], "task": "math",
         "completions": ["<think>half</think> \\boxed{0.5}", "<think>half</think> \\boxed{1/2}"]},
        {"prompt_id": "p3", "reference": "C", "task": "multiple_choice",
         "completions": ["<think>hmm</think> The answer is (C).", "<think>hmm</think> B"]},
    ]


def test_score_groups_rewards_verdicts_and_advantages(engine):
    reply = engine.score_groups(groups())
    assert isinstance(reply, scoring_pb2.ScoreGroupsResponse)
    assert len(reply.rewards) == len(reply.advantages) == len(reply.results) == 8
    verdicts = [rlscore.Verdict(r.verdict) for r in reply.results]
    assert verdicts[:3] == [rlscore.Verdict.CORRECT, rlscore.Verdict.WRONG,
                            rlscore.Verdict.CORRECT]
    assert reply.rewards[0] == pytest.approx(1.1)   # accuracy + the gated format reward
    assert reply.rewards[1] == 0.0                  # wrong: no format reward either
    assert reply.results[3].components.repetition < 0  # the loop pays the penalty
    assert reply.groups.cause[1] != 0                  # both halves right: clamped
    assert list(reply.advantages[4:6]) == [0.0, 0.0]
    assert reply.profile_hash == engine.profile_hash("")


def test_equal_bit_for_bit_to_the_server(engine, client):
    local = engine.score_groups(groups(), advantage={"estimator": "rloo"})
    remote = client.score_groups(groups(), advantage={"estimator": "rloo"})
    remote.backend = local.backend = ""
    assert local.SerializeToString(deterministic=True) == \
        remote.SerializeToString(deterministic=True)

    items = [{"prompt_id": g["prompt_id"], "completion": c,
              "references": g.get("references", [g.get("reference")])}
             for g in groups() for c in g["completions"]]
    local_score = engine.score(items, pass_at_k=[1, 2])
    remote_score = client.score(items, pass_at_k=[1, 2])
    assert local_score.SerializeToString(deterministic=True) == \
        remote_score.SerializeToString(deterministic=True)

    rng = numpy.random.default_rng(7)
    rewards = rng.choice([0.0, 0.1, 1.0, 1.1], size=4096) + rng.normal(0, 1e-3, size=4096)
    sizes = numpy.full(256, 16)
    local_adv = engine.compute_advantages(rewards, sizes)
    remote_adv = client.compute_advantages(rewards, sizes)
    assert local_adv.advantages.tobytes() == numpy.array(remote_adv.advantages).tobytes()
    assert local_adv.mean.tobytes() == numpy.array(remote_adv.groups.mean).tobytes()


def test_the_same_request_gives_the_same_answer_on_any_thread_count():
    one, four = rlscore.Engine(threads=1), rlscore.Engine(threads=4)
    a = one.score_groups(groups() * 8)
    b = four.score_groups(groups() * 8)
    assert a.SerializeToString(deterministic=True) == b.SerializeToString(deterministic=True)
    assert (one.threads, four.threads) == (1, 4)


def test_compute_advantages_numpy_in_and_out(engine):
    rewards = numpy.array([0.1, 0.1, 1.1, 0.1, 0.5, 0.5], dtype=numpy.float64)
    adv = engine.compute_advantages(rewards, [2, 2, 2])
    assert adv.advantages.dtype == numpy.float64 and adv.advantages.shape == (6,)
    assert list(adv.advantages[:2]) == [0.0, 0.0]  # identical rewards: clamped, exactly +0.0
    assert adv.advantages[2] == pytest.approx(math.sqrt(0.5))
    assert list(adv.keep) == [False, True, False]
    assert rlscore.ZeroVarianceCause(adv.zero_variance_cause[0]) == \
        rlscore.ZeroVarianceCause.IDENTICAL_REWARDS
    assert adv.summary.groups == 3
    outcomes = ["correct", "correct", "wrong", "unscorable", "wrong", "wrong"]
    adv = engine.compute_advantages(rewards, numpy.array([2, 2, 2]), outcomes=outcomes,
                                    estimator="dr_grpo")
    assert rlscore.ZeroVarianceCause(adv.zero_variance_cause[0]) == \
        rlscore.ZeroVarianceCause.ALL_CORRECT
    assert adv.advantages[3] == 0.0  # unscorable: left out, advantage +0.0


@pytest.mark.parametrize("rewards,sizes,code,words", [
    ([0.1, float("nan")], [2], "INVALID_ARGUMENT", "group 0, position 1"),
    ([0.1, float("inf"), 0.2], [1, 2], "INVALID_ARGUMENT", "group 1"),
    ([0.1, 0.2, 0.3], [2, 2], "INVALID_ARGUMENT", "sum"),
    ([0.1, 0.2], [2, 0], "INVALID_ARGUMENT", "group"),
])
def test_compute_advantages_errors_name_where(engine, rewards, sizes, code, words):
    with pytest.raises(rlscore.Error) as e:
        engine.compute_advantages(rewards, sizes)
    assert e.value.code == code
    assert words in e.value.message


def test_bad_requests_raise_typed_errors_and_the_engine_keeps_working(engine):
    with pytest.raises(rlscore.Error) as e:
        engine.score_groups(groups(), profile="no-such-profile")
    assert e.value.code == "NOT_FOUND" and "no-such-profile" in e.value.message
    with pytest.raises(ValueError, match="groups\\[0\\].*unknown key"):
        engine.score_groups([{"refrence": "1", "completions": ["x"]}])
    with pytest.raises(TypeError, match="groups\\[0\\].completions\\[0\\]"):
        engine.score_groups([{"reference": "1", "completions": [3.5]}])
    assert len(engine.score_groups(groups()).rewards) == 8


def test_model_output_never_raises(engine):
    nasty = ["", "\\boxed{", "$" * 10000, "\\frac{" * 5000, "\x00\xff" * 100, "9" * 100000,
             "<think>" * 1000, "\\boxed{" + "(" * 20000 + "}"]
    reply = engine.score_groups([{"reference": "1", "completions": nasty}])
    assert len(reply.rewards) == len(nasty)
    assert all(math.isfinite(r) for r in reply.rewards)


def test_profiles_from_a_dict_and_from_text():
    config = {"profiles": [{"name": "strict", "format": {"reward": 0.0}}]}
    engine = rlscore.Engine(config)
    assert "strict" in engine.profiles and "default" in engine.profiles
    reply = engine.score_groups(groups()[:1], profile="strict")
    assert reply.rewards[0] == pytest.approx(1.0)  # no format reward in this profile
    assert reply.profile_hash == engine.profile_hash("strict") != engine.profile_hash("")
    text = rlscore.Engine('profiles { name: "strict" format { reward: 0 } }')
    assert text.profile_hash("strict") == engine.profile_hash("strict")
    with pytest.raises(rlscore.Error) as e:
        rlscore.Engine('profiles { name: "bad" format { reward: -1 } }')
    assert e.value.code == "INVALID_ARGUMENT" and "bad" in e.value.message


def test_module_functions_share_a_default_engine():
    reply = rlscore.score_groups(groups()[:1])
    assert len(reply.rewards) == 4
    assert rlscore.default_engine() is rlscore.default_engine()
    scored = rlscore.score([{"completion": "<think>1+1</think> \\boxed{2}", "reference": "2"}])
    assert rlscore.Verdict(scored.results[0].verdict) == rlscore.Verdict.CORRECT
    assert list(rlscore.compute_advantages([1.0, 0.0], [2]).advantages) == \
        pytest.approx([math.sqrt(0.5), -math.sqrt(0.5)])


def test_threads_share_one_engine(engine):
    expected = engine.score_groups(groups()).SerializeToString(deterministic=True)
    errors = []

    def work():
        try:
            for _ in range(5):
                got = engine.score_groups(groups()).SerializeToString(deterministic=True)
                assert got == expected
        except Exception as e:  # noqa: BLE001 - collected for the assertion below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and not any(t.is_alive() for t in threads)


def test_an_integer_prompt_id_is_its_decimal_text(engine):
    # As `rlscore score` reads one: 7, numpy's 7 and "7" are one prompt for pass@k.
    import numpy
    items = [{"prompt_id": 7, "completion": "<think>a</think> \\boxed{1}", "reference": "1"},
             {"prompt_id": numpy.int64(7), "completion": "<think>a</think> \\boxed{2}",
              "reference": "1"},
             {"prompt_id": "7", "completion": "<think>a</think> \\boxed{3}", "reference": "1"}]
    reply = engine.score(items, pass_at_k=[3])
    assert [(p.k, p.prompts, p.value) for p in reply.aggregate.pass_at_k] == [(3, 1, 1.0)]
    groups = engine.score_groups([{"prompt_id": 3, "reference": "1", "completions": ["1"]}])
    assert len(groups.results) == 1
    for bad in (1.5, True, ["7"]):
        with pytest.raises(TypeError, match=r"items\[0\]\.prompt_id: expected a str or an int"):
            engine.score([{"prompt_id": bad, "completion": "x"}])


IF_ROW = {"key": 1, "prompt": "Describe autumn without commas in under 20 words.",
          "instruction_id_list": ["punctuation:no_comma", "length_constraints:number_words"],
          "kwargs": [{}, {"relation": "less than", "num_words": 20}]}


def test_instruction_following_from_an_ifeval_row(engine, client):
    rows = [{"prompt_id": "a", "completion": "<think>short</think>Leaves fall and the air turns cold."},
            {"prompt_id": "a", "completion": "<think>short</think>Leaves fall, the air turns cold."},
            {"prompt_id": "a", "completion": "<think>short</think>"}]
    # IFEval's keys beside the completion: task IF without naming it.
    items = [dict(r, instruction_id_list=IF_ROW["instruction_id_list"], kwargs=IF_ROW["kwargs"])
             for r in rows]
    reply = engine.score(items)
    verdicts = [rlscore.Verdict(r.verdict) for r in reply.results]
    assert verdicts == [rlscore.Verdict.CORRECT, rlscore.Verdict.WRONG, rlscore.Verdict.NO_ANSWER]
    assert reply.rewards[0] == pytest.approx(1.1)
    assert [(i.id, i.strict) for i in reply.results[1].instructions] == [
        ("punctuation:no_comma", False), ("length_constraints:number_words", True)]
    # The same as a dict reference with the task named, and the same from a server.
    named = [{"completion": r["completion"], "task": "if", "reference": IF_ROW} for r in rows]
    assert engine.score(named).rewards == reply.rewards
    remote = client.score(items)
    assert remote.SerializeToString(deterministic=True) == reply.SerializeToString(
        deterministic=True)


def test_instruction_following_bad_reference_is_unscorable_and_named(engine):
    reply = engine.score([{"completion": "<think>x</think>y", "task": "if",
                           "reference": {"instruction_id_list": ["keywords:frequency"],
                                         "kwargs": [{"keyword": "cat", "frequency": 2}]}}])
    assert rlscore.Verdict(reply.results[0].verdict) == rlscore.Verdict.UNPARSEABLE_REFERENCE
    assert 'instruction 1 (keywords:frequency): argument "relation" is required' in \
        reply.results[0].detail


# Scores groups() in a fresh interpreter with RLSCORE_MAX_CPU_ISA set to `ceiling`; prints the
# reply's bytes as hex.
CAPPED_RUN = """
import rlscore, test_engine
reply = rlscore.Engine(threads=2).score_groups(test_engine.groups())
print(reply.SerializeToString(deterministic=True).hex())
"""


def run_capped(ceiling):
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, RLSCORE_MAX_CPU_ISA=ceiling,
               PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", CAPPED_RUN], env=env, capture_output=True,
                          text=True, timeout=300)


def test_every_instruction_set_gives_the_same_reply(engine):
    expected = engine.score_groups(groups()).SerializeToString(deterministic=True).hex()
    for ceiling in ["avx2", "sse2"]:
        done = run_capped(ceiling)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == expected, ceiling


def test_an_unknown_instruction_set_is_refused_by_name():
    done = run_capped("avx-512")
    assert done.returncode != 0
    assert 'ValueError: RLSCORE_MAX_CPU_ISA="avx-512" names no instruction set' in done.stderr

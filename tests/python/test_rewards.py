"""The trainer adapters of rlscore.rewards, called as each trainer calls them."""

import asyncio
import json
import types
import urllib.request

import pytest

from rlscore.rewards import open_r1, openrlhf, slime, trl, verl

RIGHT = "<think>\n6 times 7\n</think>\n<answer>\n\\boxed{42}\n</answer>"
WRONG = "<think>\n6 times 7\n</think>\n<answer>\n\\boxed{41}\n</answer>"
LOOP = "<think>Let me check. " + "Wait, let me double check the previous step. " * 80


def test_trl_reward_function_returns_floats_and_none():
    reward = trl.RlscoreReward(max_completion_length=4096)
    prompts = ["What is 6*7?"] * 3 + ["Name the set."] * 2
    completions = [RIGHT, WRONG, [{"role": "assistant", "content": RIGHT}],
                   "\\boxed{1}", "\\boxed{2}"]
    # The last prompt's reference does not parse: those completions are unscorable.
    solution = ["42"] * 3 + ["\\frac{"] * 2
    out = reward(prompts=prompts, completions=completions, solution=solution,
                 completion_ids=[[1, 2, 3]] * 5, trainer_state=types.SimpleNamespace(
                     global_step=3))
    assert len(out) == 5
    assert out[0] == pytest.approx(1.1) and out[1] == 0.0 and out[2] == pytest.approx(1.1)
    assert out[3] is None and out[4] is None
    assert reward.__name__ == "rlscore"


def test_open_r1_names_and_signatures():
    completions = [[{"role": "assistant", "content": c}] for c in (RIGHT, WRONG, "no tags 42")]
    # The default profile grades only what follows </think>: untagged text earns nothing.
    assert open_r1.accuracy_reward(completions, ["42", "42", "42"]) == [1.0, 0.0, 0.0]
    assert open_r1.accuracy_reward(completions[:1], ["\\frac{"]) == [None]
    # Gated with the solution column: a well-formed wrong answer earns no format reward.
    assert open_r1.format_reward(completions, solution=["42", "42", "42"]) == [1.0, 0.0, 0.0]
    assert open_r1.format_reward(completions[:2]) == [1.0, 1.0]
    assert open_r1.tag_count_reward(completions) == [1.0, 1.0, 0.0]
    penalty = open_r1.get_repetition_penalty_reward(ngram_size=3, max_penalty=-1.0)
    assert penalty([RIGHT, LOOP]) == [0.0, -1.0]
    with pytest.raises(ValueError):
        open_r1.get_repetition_penalty_reward(3, 0.5)


def test_verl_compute_score_and_batch(monkeypatch):
    monkeypatch.delenv("RLSCORE_TARGET", raising=False)
    one = verl.compute_score("openai/gsm8k", RIGHT, "42", extra_info={"index": 0})
    assert one["score"] == pytest.approx(1.1) and one["accuracy"] == 1.0
    assert set(one) == {"score", "accuracy", "format", "repetition", "length", "num_tokens",
                        "truncated", "format_gated", "unscorable"}
    batch = verl.compute_score_batch(["a", "b"], [RIGHT, WRONG], [["42", "42.0"], "42"],
                                     [None, None])
    assert [b["accuracy"] for b in batch] == [1.0, 0.0]
    assert batch[1]["format_gated"] == 1.0


def test_openrlhf_reward_func():
    prompts = ["Q: 6*7?\n", "Q: 6*7?\n"]
    queries = [prompts[0] + RIGHT + "<|im_end|>", "not the prompt " + WRONG]
    out = openrlhf.reward_func(queries, prompts, ["42", "42"])
    rewards = [float(x) for x in out["rewards"]]
    assert rewards[0] == pytest.approx(1.1) and rewards[1] == 0.0
    assert [float(x) for x in out["scores"]] == [1.0, 0.0]
    assert set(out["extra_logs"]) == {"rlscore_accuracy", "rlscore_format", "rlscore_repetition",
                                      "rlscore_length", "rlscore_truncated",
                                      "rlscore_num_tokens"}
    with pytest.raises(ValueError):
        openrlhf.reward_func(queries, prompts[:1], ["42", "42"])


def test_openrlhf_reward_func_answers_as_the_servers_endpoint(http_server):
    prompts = ["<|im_start|>user\n6*7?<|im_end|>\n"] * 3 + ["Name it: "] * 2 + ["x"]
    queries = [prompts[0] + RIGHT + "<|im_end|>", prompts[1] + WRONG + " </s>\n",
               prompts[2] + "<think>" + "Wait, let me check again. " * 60,
               "Name it: \\boxed{C}", "garbled " + RIGHT, "x" + RIGHT]
    labels = ["42", "42", "42", "C", "C", "42"]
    body = json.dumps({"query": queries, "prompts": prompts, "labels": labels}).encode()
    request = urllib.request.Request(
        "http://127.0.0.1:%d/get_reward" % http_server.http_port, data=body,
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        remote = json.loads(r.read())
    local = openrlhf.reward_func(queries, prompts, labels)
    assert [float(x) for x in local["rewards"]] == remote["rewards"]
    assert [float(x) for x in local["scores"]] == remote["scores"]
    for key, values in remote["extra_logs"].items():
        assert [float(x) for x in local["extra_logs"][key]] == values, key


def test_slime_rm_and_batched_rm():
    args = types.SimpleNamespace()
    sample = types.SimpleNamespace(prompt="6*7?", response=RIGHT, label="42")
    wrong = types.SimpleNamespace(prompt="6*7?", response=WRONG, label="42")
    assert asyncio.run(slime.rm(args, sample)) == pytest.approx(1.1)
    assert asyncio.run(slime.batched_rm(args, [sample, wrong])) == pytest.approx([1.1, 0.0])


def test_verl_scores_instruction_following_ground_truth(monkeypatch):
    monkeypatch.delenv("RLSCORE_TARGET", raising=False)
    truth = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    right = "<think>ok</think>No commas at all."
    wrong = "<think>ok</think>Commas, everywhere."
    assert verl.compute_score("ifeval", right, truth)["accuracy"] == 1.0
    assert verl.compute_score("ifeval", wrong, truth)["accuracy"] == 0.0
    # Its JSON text, as parquet columns often store it.
    import json
    assert verl.compute_score("ifeval", right, json.dumps(truth))["accuracy"] == 1.0
    # An answer that merely looks like JSON stays a math answer.
    assert verl.compute_score("m", "<think>x</think>\\boxed{3}", "{3}")["unscorable"] == 0.0

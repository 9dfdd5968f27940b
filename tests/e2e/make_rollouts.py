#!/usr/bin/env python3
"""Writes a deterministic JSONL file of realistic rollouts for `rlscore score`.

Each line is one completion in the CLI's input schema (cli/rollouts.h), eight samples per prompt,
drawn from kinds that exercise every scorer: correct and wrong boxed answers, equivalent forms
(fractions, decimals, sets), multiple choice, a missing answer, truncation, n-gram loops, code
fences, chat-message completions and token ids. Every line carries "expect": the verdict it must
get, so a test can check each line's result.

  python3 tests/e2e/make_rollouts.py --lines 10000 --seed 1 > rollouts.jsonl

Used by tests/e2e/score_cli_test.py and bench/cli_throughput.sh. Standard library only.
"""

import argparse
import json
import random
import sys

WORDS = ("we need the value of so let us compute first then note that each term is "
         "positive because squares are never negative hence sum gives total and dividing by "
         "two yields half this matches check again carefully for errors consider other case "
         "where variable equals zero substitute back into equation simplify both sides factor "
         "out common part expand bracket collect like terms area of triangle base height "
         "probability count outcomes favourable over all modulo remainder prime divisor "
         "integer rational root polynomial degree coefficient sequence arithmetic geometric "
         "ratio difference limit converge angle circle radius chord tangent").split()


def sentence(rng):
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 20))]
    if rng.random() < 0.4:
        words.insert(rng.randint(0, len(words)), str(rng.randint(2, 999)))
    return " ".join(words).capitalize() + "."


def reasoning(rng, sentences):
    paragraphs, current = [], []
    for _ in range(sentences):
        current.append(sentence(rng))
        if len(current) >= rng.randint(3, 6):
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(paragraphs)


CODE = ("```python\ndef solve(n):\n    total = 0\n    for k in range(1, n + 1):\n"
        "        total += k * k\n    return total\n```")


def rollout(rng, index, prompt):
    """One line: (fields, expected verdict)."""
    answer = prompt["answer"]
    think = reasoning(rng, rng.randint(4, 40))
    kind = rng.choices(
        ["correct", "wrong", "equivalent", "no_answer", "truncated", "loop", "code", "chat",
         "token_ids"],
        weights=[30, 25, 8, 4, 4, 5, 8, 8, 8])[0]
    line = {"id": index, "prompt_id": prompt["id"], "reference": answer}
    expect = "CORRECT"
    if kind == "correct":
        text = "<think>\n%s\n</think>\nThe answer is $\\boxed{%s}$." % (think, answer)
    elif kind == "wrong":
        text = "<think>\n%s\n</think>\nSo the result is $\\boxed{%d}$." % (think, int(answer) + 1)
        expect = "WRONG"
    elif kind == "equivalent":
        text = "<think>\n%s\n</think>\n**Final answer:** $\\boxed{\\frac{%d}{2}}$" % (
            think, 2 * int(answer))
    elif kind == "no_answer":
        text = "<think>\n%s\n</think>\n" % think
        expect = "NO_ANSWER"
    elif kind == "truncated":
        text = "<think>\n%s" % think
        line["finished"] = False
        expect = "NO_ANSWER"
    elif kind == "loop":
        loop = " ".join(["Wait, let me recheck the sum of the first terms once more."] * 12)
        text = "<think>\n%s\n\n%s\n</think>\nThe answer is $\\boxed{%s}$." % (think, loop, answer)
    elif kind == "code":
        text = "<think>\n%s\n\n%s\n</think>\nRunning it gives $\\boxed{%s}$." % (think, CODE, answer)
    elif kind == "chat":
        line["completion"] = [
            {"role": "user", "content": prompt["question"]},
            {"role": "assistant",
             "content": "<think>\n%s\n</think>\nAnswer: %s" % (think, answer)}]
    else:  # token ids: the n-gram rule and the length use them
        text = "<think>\n%s\n</think>\n$\\boxed{%s}$" % (think, answer)
        line["token_ids"] = [rng.randint(0, 150000) for _ in range(len(text) // 4)]
    if kind != "chat":
        line["completion"] = text
        if kind not in ("token_ids", "truncated") and rng.random() < 0.5:
            line["num_tokens"] = len(text) // 4
            line["finished"] = True
    line["expect"] = expect
    line["kind"] = kind
    return line


def generate(lines, seed, samples_per_prompt=8):
    rng = random.Random(seed)
    prompt = None
    for i in range(lines):
        if i % samples_per_prompt == 0:
            a = rng.randint(1, 5000)
            prompt = {"id": "prompt-%d" % (i // samples_per_prompt), "answer": str(a),
                      "question": "What is %d + %d?" % (a - 1, 1)}
        yield rollout(rng, i, prompt)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    out = sys.stdout
    for line in generate(args.lines, args.seed):
        out.write(json.dumps(line, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()

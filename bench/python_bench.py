"""The rlscore Python package on one core (docs/PERFORMANCE.md, "Python"): verifications per
second through rlscore.math_verify, the native verify alone, the cost of one call into the
native module, and in-process scoring throughput, over the verifier's corpus. Two patterns:
a trainer's (each gold verified against 16 different answers, as a group of rollouts is) and
distinct pairs (every gold new, as in a one-pass evaluation).

    PYTHONPATH=build-release/python taskset -c 0 /usr/bin/python3 bench/python_bench.py

Goal: >= 100,000 verifications/s from Python on one core (Math-Verify: 50-120/s here).
"""

import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def corpus():
    """(references, completion) pairs of tests/scorers/math/corpus.txt."""
    cases, refs, lines, inside = [], [], [], False
    path = os.path.join(ROOT, "tests", "scorers", "math", "corpus.txt")
    for line in open(path, encoding="utf-8").read().split("\n") + ["### end"]:
        if line.startswith("###"):
            if inside and refs:
                cases.append((refs, "\n".join(lines).strip()))
            refs, lines, inside = [], [], True
        elif not inside or (line.startswith("#") and not line.startswith("###")):
            continue
        elif line.startswith("ref:") and not lines:
            refs.append(line[4:].strip())
        else:
            lines.append(line)
    return cases


def rate(fn, n, repeats=5):
    """Median calls per second of fn() over `repeats` runs of n calls."""
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(n)
        rates.append(n / (time.perf_counter() - start))
    return statistics.median(rates)


def main():
    import rlscore
    from rlscore.math_verify import parse, verify

    cases = corpus()
    answers = [c.split("</think>")[-1] for _, c in cases]  # what Math-Verify would be given
    golds = [refs[0] for refs, _ in cases]
    parsed_golds = [parse(g) for g in golds]
    parsed_answers = [parse(a) for a in answers]
    k = len(cases)
    native = rlscore._native_loader.native()

    def grpo_pattern(n):
        # Each gold against 16 answers of other cases: rollouts of one prompt mostly differ.
        for g in range(n // 16):
            gold = parse(golds[g % k])
            for j in range(16):
                verify(gold, parse(answers[(g * 16 + j * 7) % k]))

    def mv_verify_parsed(n):
        for i in range(n):
            verify(parsed_golds[i % k], parsed_answers[i % k])

    def mv_parse_and_verify(n):
        for i in range(n):
            verify(parse(golds[i % k]), parse(answers[i % k]))

    def native_verify(n):
        for i in range(n):
            native.verify(golds[i % k], answers[i % k], "math")

    def crossing(n):
        extract = native.extract
        for _ in range(n):
            extract("", False, "math")

    engine = rlscore.Engine(threads=1)
    items = [{"completion": c, "references": refs} for refs, c in cases]

    def score(n):
        for _ in range(n // len(items)):
            engine.score(items)

    rows = [
        ("verify(parse(gold), parse(answer)), 16 answers per gold", rate(grpo_pattern, 20000)),
        ("verify(parse(gold), parse(answer)), distinct pairs", rate(mv_parse_and_verify, 20000)),
        ("verify(gold, answer), distinct pairs parsed beforehand",
         rate(mv_verify_parsed, 20000)),
        ("native verify alone (no Python wrapper)", rate(native_verify, 20000)),
        ("one call into the native module (empty)", rate(crossing, 200000)),
        ("Engine.score, completions per second", rate(score, 20 * len(items), 3)),
    ]
    print("rlscore Python package, one thread, %d corpus cases (%s)" % (
        k, sys.version.split()[0]))
    print("| measurement | per second | per call |")
    print("|---|---:|---:|")
    for name, r in rows:
        print("| %s | %s | %.2f µs |" % (name, format(int(r), ","), 1e6 / r))
    for label, (_, r) in zip(("16 answers per gold", "distinct pairs"), rows[:2]):
        print("goal >= 100,000 verifications/s from Python, %s: %s (%s/s)" % (
            label, "met" if r >= 100000 else "missed", format(int(r), ",")))


if __name__ == "__main__":
    main()

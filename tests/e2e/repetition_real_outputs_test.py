#!/usr/bin/python3
"""The repetition rules against real model outputs: 210 completions of DeepScaleR-1.5B-Preview for
AIME 2024 at token budgets of 128 to 8,192 (a public evaluation dump), scored by `rlscore score`.

LABELS holds, by id, every output that the literal n-gram rule (any 8-gram more than 3 times, the
first version's default) or the default fires on, labelled by reading it: a LOOP repeats one
passage until the text ends (or for a long run); REUSE is honest text that comes back to a phrase
among new text. The default must fire on every loop, on at most 2 % of the rest, and on nothing
unlabelled; the literal rule, kept as a profile setting, must fire on exactly the labelled ids
that it fired on when they were read. Firings per 1,000 completions by detector are printed
(docs/REPETITION.md records them).

The outputs are not in this repository: --outputs names the JSONL file (or the environment's
RLSCORE_PEERS_DIR its folder); without it the test says it skipped. Standalone:

  /usr/bin/python3 tests/e2e/repetition_real_outputs_test.py --binary build/cli/rlscore \\
      --outputs PATH/deepscaler-aime24-outputs.jsonl -v
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import unittest

ARGS = None
LOOP, REUSE = "loop", "reuse"
PREFIX = "tegra/deepscaler1.5b/aime24/budget"
FILE = "deepscaler-aime24-outputs.jsonl"

FORMULA = "restates a formula"
QUOTE = "quotes the problem's wording"
CIRCLES = "circles back to one quantity, new text between"
PHRASE = "reuses a phrase of its own argument"
CASES = "steps through cases with one template"


def reuse(kind, phrase, count, span):
    """A REUSE label: what the text does, its most frequent 8-gram of normalised words, how often
    that occurs, and the words from its first occurrence to its last."""
    return REUSE, '%s: "%s" %d times over %d words' % (kind, phrase, count, span)


# id (less PREFIX) -> (label, why).
LABELS = {
    "512/77": reuse(FORMULA, "a 2b a 2c b 2a b 2c", 5, 213),
    "512/83": reuse(QUOTE, "the sum of the two numbers formed by", 4, 227),
    "1024/62": reuse(QUOTE, "a rotation of the set of red vertices", 4, 363),
    "1024/75": reuse(QUOTE, "set of golf clubs garden spade and candy", 7, 486),
    "1024/77": reuse(FORMULA, "a 2b a 2c b 2a b 2c", 4, 163),
    "1024/83": reuse(QUOTE, "the three numbers formed by reading top to", 6, 472),
    "1024/88": reuse(QUOTE, "externally tangent along a circle with radius r", 4, 431),
    "1024/89": reuse(QUOTE, "column is either all white or all black", 4, 529),
    "2048/62": reuse(CIRCLES, "colorings where the set of blue vertices is", 12, 1334),
    "2048/64": reuse(QUOTE, "an n such that n\u2074 1 is divisible", 4, 357),
    "2048/65": reuse(FORMULA, "a 2 b 2 c 2 a 2", 9, 586),
    "2048/69": reuse(QUOTE, "of her numbers are in the lottery s", 6, 690),
    "2048/70": reuse(PHRASE, "0 then since it s a rectangle point", 4, 259),
    "2048/73": reuse(QUOTE, "8 circles of radius 34 and then 2024", 6, 1176),
    "2048/75": reuse(QUOTE, "the number of people who own exactly two", 5, 419),
    "2048/76": reuse(FORMULA, "cos a 1 2 sin 2 a 2", 4, 70),
    "2048/78": reuse(FORMULA, "x sqrt 3 2 we need to find", 4, 661),
    "2048/81": reuse(PHRASE, "the number of ways to choose two pairs", 5, 798),
    "2048/82": reuse(QUOTE, "the list has an odd number of elements", 5, 304),
    "2048/83": reuse(QUOTE, "the sum of the three numbers formed by", 8, 1200),
    "2048/85": reuse(QUOTE, "each side of the triangle is equal to", 7, 854),
    "2048/86": reuse(QUOTE, "in a the number of such sets b", 4, 559),
    "2048/88": reuse(PHRASE, "the center of the generating circle is at", 9, 966),
    "2048/89": reuse(QUOTE, "is either all white or all black and", 8, 1527),
    "4096/61": reuse(QUOTE, "the intersection of tangents at b and c", 6, 1610),
    "4096/62": reuse(CIRCLES, "the number of such colorings is equal to", 15, 2888),
    "4096/63": reuse(FORMULA, "g f sin 2\u03c0x f sin 2\u03c0x 1", 11, 742),
    "4096/65": reuse(FORMULA, "given that ab cd ac bd bc ad", 5, 1810),
    "4096/66": reuse(QUOTE, "boxes with surface area 54 and volume 23", 4, 1736),
    "4096/68": reuse(CASES, "moves lead to opponent being able to win", 5, 1256),
    "4096/69": reuse(QUOTE, "the probability that she wins the grand prize", 5, 2571),
    "4096/70": reuse(QUOTE, "a d h g lie on a circle", 7, 2317),
    "4096/71": reuse(QUOTE, "starting with r then direction changes four times", 8, 1543),
    "4096/72": reuse(FORMULA, "real part 4 75 cos theta 117 sin", 4, 774),
    "4096/73": reuse(CIRCLES, "alternatively perhaps think that the number of circles", 11, 1433),
    "4096/74": reuse(FORMULA, "c 2 2 a c a 2 d", 5, 161),
    "4096/75": reuse(QUOTE, "each resident owns a bag of candy hearts", 8, 1717),
    "4096/76": reuse(PHRASE, "ia is perpendicular to oi perhaps we can", 4, 1583),
    "4096/77": reuse(FORMULA, "a 2b a 2c b 2a b 2c", 5, 477),
    "4096/78": reuse(FORMULA, "sin theta cos theta sqrt 3 2 sin", 8, 1041),
    "4096/79": reuse(FORMULA, "y 13 1 of y 2 2y 2", 11, 704),
    "4096/80": reuse(FORMULA, "s 2 s is divisible by b 1", 6, 1435),
    # The AST block rule fires here: five "If one diameter is at N degrees, the other ..."
    # paragraphs in a row, a five-case enumeration, honest.
    "4096/81": reuse(CIRCLES, "the number of rectangles is equal to the", 12, 2601),
    "4096/82": reuse(PHRASE, "the list is a b c d e", 6, 1350),
    "4096/83": reuse(QUOTE, "the two numbers formed by reading left to", 7, 1123),
    "4096/84": reuse(FORMULA, "equation 3a z x y 2 1 4", 4, 986),
    "4096/85": reuse(CIRCLES, "each side of the triangle is equal to", 7, 1507),
    "4096/86": reuse(FORMULA, "sum a in a 2 a 1 1", 4, 1629),
    "4096/88": reuse(QUOTE, "the torus is externally tangent to the sphere", 8, 2415),
    "4096/89": reuse(QUOTE, "all rows are white or all are black", 9, 2074),
    "8192/61": reuse(QUOTE, "the intersection of tangents at b and c", 4, 2364),
    "8192/62": reuse(CIRCLES, "is equal to the number of colorings where", 18, 3289),
    "8192/63": reuse(FORMULA, "if u 1 4 g u u 1", 8, 2606),
    "8192/64": reuse(QUOTE, "m such that m 4 1 is divisible", 4, 2282),
    "8192/65": reuse(FORMULA, "2 a 2 c 2 b 2 b", 9, 3501),
    "8192/66": reuse(FORMULA, "is sqrt x 2 y 2 z 2", 4, 2345),
    "8192/67": reuse(PHRASE, "take both sides to the power of 1", 4, 2308),
    "8192/68": reuse(CASES, "true or remove 4 tokens leading to n", 11, 484),
    "8192/69": reuse(CIRCLES, "of jen s numbers are in the lottery", 14, 2040),
    "8192/70": reuse(QUOTE, "a d h g lie on a circle", 7, 1713),
    "8192/71": reuse(CASES, "right then up then right then up then", 6, 581),
    "8192/73": (LOOP, "\"Therefore, perhaps.\" over and over for its last 1,200 words"),
    "8192/74": reuse(FORMULA, "frac x 2 20 frac y 2 24", 6, 3355),
    "8192/75": reuse(CIRCLES, "sum i j a i \u2229 a j", 31, 3603),
    "8192/76": reuse(PHRASE, "ia is perpendicular to oi perhaps we can", 7, 3282),
    "8192/77": reuse(FORMULA, "a 2b a 2c b 2a b 2c", 9, 3086),
    "8192/78": reuse(FORMULA, "is frac x a frac y b 1", 10, 3917),
    "8192/79": reuse(FORMULA, "the product over all z 13 1 of", 8, 1847),
    "8192/80": reuse(FORMULA, "s 2 s b 1 since a must", 6, 1369),
    "8192/81": reuse(CIRCLES, "the number of rectangles is equal to the", 28, 3899),
    "8192/82": reuse(CIRCLES, "perhaps let s think that the list is", 8, 1528),
    "8192/83": reuse(QUOTE, "two numbers formed by reading left to right", 9, 2918),
    "8192/84": reuse(FORMULA, "a b c a b c a b", 4, 127),
    # The AST block rule fires here: a 68-character paragraph four times over 13 KB.
    "8192/85": reuse(CIRCLES, "each side of the triangle is equal to", 32, 4079),
    "8192/86": reuse(PHRASE, "writing the remainders from last to first 1", 5, 937),
    "8192/87": reuse(FORMULA, "a 9 b 4 c 3 d 0", 6, 1507),
    "8192/88": reuse(CIRCLES, "distance from the sphere s center to the", 43, 4532),
    "8192/89": (LOOP, "one 45-word paragraph (\"Therefore, perhaps the number of ways is "
                      "equal to ...\") verbatim, over and over for its last 590 words"),
}

LITERAL_CONFIG = """profiles {
  name: "literal"
  repetition { ngram_rule: NGRAM_RULE_LITERAL }
}
"""


def score(path, *flags):
    """`rlscore score` over `path`: {id: result line}."""
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "out.jsonl")
        extra = []
        for flag in flags:
            if flag.startswith("--config="):
                config = os.path.join(scratch, "config.textproto")
                with open(config, "w") as f:
                    f.write(flag[len("--config="):])
                flag = "--config=" + config
            extra.append(flag)
        subprocess.run([ARGS.binary, "score", path, "--output=" + out, "--progress=never"] + extra,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        with open(out) as f:
            return {json.loads(line)["id"]: json.loads(line) for line in f}


def fired(result):
    return result["components"]["repetition"] < 0


def per_thousand(results, label):
    by = collections.Counter(r["repetition"]["detector"] for r in results.values() if fired(r))
    rates = ", ".join("%s %.1f" % (d, 1000.0 * n / len(results)) for d, n in sorted(by.items()))
    print("%s: %d of %d fire; per 1,000: %s" % (label, sum(by.values()), len(results),
                                                rates or "none"), file=sys.stderr)


class RealOutputsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not ARGS.outputs or not os.path.exists(ARGS.outputs):
            raise unittest.SkipTest("skipped: the real outputs (%s) are not on this machine; "
                                    "pass --outputs or set RLSCORE_PEERS_DIR" % FILE)
        cls.default = score(ARGS.outputs)
        cls.literal = score(ARGS.outputs, "--config=" + LITERAL_CONFIG, "--profile=literal")
        per_thousand(cls.default, "default (loop rule)")
        per_thousand(cls.literal, "literal rule")

    def key(self, id_):
        self.assertTrue(id_.startswith(PREFIX), id_)
        return id_[len(PREFIX):]

    def test_the_file_is_the_one_labelled(self):
        self.assertEqual(len(self.default), 210)
        self.assertLessEqual(set(LABELS), {self.key(i) for i in self.default})

    def test_the_default_fires_on_every_loop_and_little_else(self):
        loops = [k for k, (label, _) in LABELS.items() if label == LOOP]
        self.assertGreaterEqual(len(loops), 2)
        for id_, result in self.default.items():
            k = self.key(id_)
            if k in LABELS and LABELS[k][0] == LOOP:
                self.assertTrue(fired(result), "loop %s did not fire: %s" % (k, LABELS[k][1]))
            elif fired(result):
                self.assertIn(k, LABELS, "fires on %s, which nobody has read: label it (%s)"
                              % (k, result["repetition"]["detail"]))
        rest = [r for i, r in self.default.items()
                if LABELS.get(self.key(i), (REUSE,))[0] != LOOP]
        false_fires = sum(fired(r) for r in rest)
        print("default: %d of %d non-loops fire (%.1f %%)" % (
            false_fires, len(rest), 100.0 * false_fires / len(rest)), file=sys.stderr)
        self.assertLessEqual(false_fires, 0.02 * len(rest))

    def test_the_literal_rule_fires_where_it_did_when_read(self):
        literal = {self.key(i) for i, r in self.literal.items() if fired(r)}
        self.assertEqual(literal, set(LABELS))
        self.assertTrue(all(r["repetition"]["detector"] == "NGRAM"
                            for r in self.literal.values() if fired(r)))


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--outputs", default=None)
    ARGS, rest = parser.parse_known_args()
    if ARGS.outputs is None and os.environ.get("RLSCORE_PEERS_DIR"):
        ARGS.outputs = os.path.join(os.environ["RLSCORE_PEERS_DIR"], FILE)
    unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora, drawn from the test cases, under OUT/<target>/.

  make_seeds.py OUT --protoc PROTOC --proto-dir DIR [--config FILE ...]

Sources: the string literals of the unit tests (C++ "..." and R"d(...)d"), the math verdict
corpus (tests/scorers/math/corpus.txt: completions, and reference/answer pairs), the AST corpus
(tests/scorers/ast/corpus/), configuration files given with --config, and ScoreGroups, Score and
ComputeAdvantages requests built from the math corpus and encoded with protoc. Deterministic: the
same sources give the same files (named by content hash).
"""
import argparse
import hashlib
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"

ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}
LITERAL = re.compile(r'R"([^(\s]*)\((.*?)\)\1"|"((?:[^"\\\n]|\\.)*)"', re.S)


def literals(path):
    """The string literals of a C++ file, decoded (adjacent literals stay separate)."""
    out = []
    for m in LITERAL.finditer(path.read_text(encoding="utf-8", errors="replace")):
        if m.group(2) is not None:
            out.append(m.group(2))
            continue
        body = re.sub(r"\\(.)", lambda e: ESCAPES.get(e.group(1), e.group(1)), m.group(3))
        out.append(body)
    return [s for s in out if s and not s.startswith("#include")]


def corpus_blocks():
    """(references, completion) of every block of the math verdict corpus."""
    blocks, refs, lines = [], None, []
    for line in (TESTS / "scorers/math/corpus.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("###"):
            if refs is not None:
                blocks.append((refs, "\n".join(lines).strip()))
            refs, lines = [], []
        elif refs is None or (line.startswith("#") and not line.startswith("###")):
            continue
        elif line.startswith("ref:") and not lines:
            refs.append(line[4:].strip())
        else:
            lines.append(line)
    if refs is not None:
        blocks.append((refs, "\n".join(lines).strip()))
    return blocks


def boxed(text):
    """The content of the last \\boxed{...} with balanced braces, or None."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, i = 0, start + len("\\boxed")
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i + 1:j]
    return None


def write(out, target, data):
    if isinstance(data, str):
        data = data.encode("utf-8", errors="surrogateescape")
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def quote(s):
    """A text-format string literal (octal escapes for anything but printable ASCII)."""
    out = []
    for b in s.encode("utf-8"):
        c = chr(b)
        out.append(c if 32 <= b < 127 and c not in '"\\' else "\\%03o" % b)
    return '"' + "".join(out) + '"'


def encode(protoc, proto_dir, message, text):
    files = ["rlscore/v1/scoring.proto", "rlscore/v1/advantage.proto"]
    r = subprocess.run([protoc, f"--encode={message}", f"-I{proto_dir}", *files],
                       input=text.encode(), capture_output=True, check=False)
    if r.returncode != 0:
        sys.exit(f"make_seeds.py: protoc --encode={message} failed: {r.stderr.decode()}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=pathlib.Path)
    ap.add_argument("--protoc", required=True)
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--config", action="append", default=[], type=pathlib.Path)
    args = ap.parse_args()
    out = args.out

    scorer_literals = [s for p in sorted((TESTS / "scorers").glob("*_test.cc")) for s in literals(p)]
    math_literals = [s for p in sorted((TESTS / "scorers/math").glob("*_test.cc")) for s in literals(p)]
    ast_texts = [p.read_text(encoding="utf-8", errors="replace")
                 for p in sorted((TESTS / "scorers/ast/corpus").rglob("*")) if p.is_file()]
    ast_literals = [s for p in sorted((TESTS / "scorers/ast").glob("*_test.cc")) for s in literals(p)]
    blocks = corpus_blocks()
    completions = [c for _, c in blocks]

    for text in scorer_literals + completions[::4]:
        write(out, "anatomy_fuzz", text)
    for text in math_literals + completions[::2]:
        write(out, "math_answer_fuzz", text)
    for refs, completion in blocks:
        answer = boxed(completion)
        if answer is not None and refs:
            write(out, "math_equivalence_fuzz", answer + "\0" + refs[0])
    for path in sorted((TESTS / "scorers/math").glob("*_test.cc")):
        for line in path.read_text(encoding="utf-8").splitlines():
            pair = [m.group(3) for m in LITERAL.finditer(line) if m.group(3) is not None]
            if len(pair) >= 2:
                write(out, "math_equivalence_fuzz", pair[0] + "\0" + pair[1])
    ngram = ["scorers/ngram_repetition_test.cc", "scorers/generation_monitor_test.cc"]
    for flags, text in enumerate(s for p in ngram for s in literals(TESTS / p)):
        write(out, "ngram_repetition_fuzz", bytes([8, 3, 16]) + text.encode())
        write(out, "generation_monitor_fuzz", bytes([flags % 256]) + text.encode())
    for text in completions[::8]:
        write(out, "generation_monitor_fuzz", b"\x1b" + text.encode())
    for flags, text in enumerate(ast_texts + ast_literals):
        write(out, "ast_repetition_fuzz", bytes([flags % 128]) + text.encode())

    # Task IF: every case of the instruction tables, as its reference, NUL, its response.
    for path in sorted((TESTS / "scorers/instructions").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            if "id" in case and "response" in case:
                reference = {"instruction_id_list": [case["id"]], "kwargs": [case.get("kwargs", {})]}
                write(out, "instructions_fuzz",
                      json.dumps(reference).encode() + b"\0" + case["response"].encode())
            elif "reference" in case:
                reference = case["reference"]
                text = reference if isinstance(reference, str) else json.dumps(reference)
                write(out, "instructions_fuzz", text.encode() + b"\0")

    for s in literals(TESTS / "engine/config_test.cc"):
        write(out, "config_fuzz", s)
    for path in args.config:
        write(out, "config_fuzz", path.read_bytes())

    for s in literals(TESTS / "http/rewards_test.cc") + literals(TESTS / "cli/rollouts_test.cc"):
        if "{" in s:
            write(out, "json_requests_fuzz", s)

    # Requests: a few groups of corpus completions, as each of the three calls.
    for i in range(0, min(len(blocks), 96), 8):
        group = blocks[i:i + 8]
        groups = "".join(
            "groups { prompt_id: %s references: %s completions { text: %s num_tokens: %d finished: %s } }\n"
            % (quote(f"p{i + j}"), quote(refs[0] if refs else ""), quote(text[:2000]),
               len(text) // 4, "true" if j % 3 else "false")
            for j, (refs, text) in enumerate(group))
        write(out, "requests_fuzz", b"\0" + encode(args.protoc, args.proto_dir,
                                                  "rlscore.v1.ScoreGroupsRequest",
                                                  'run_id: "fuzz" step: %d\n' % i + groups))
        items = "".join(
            "items { prompt_id: %s references: %s completion { text: %s } }\n"
            % (quote(f"p{i // 2}"), quote(refs[0] if refs else ""), quote(text[:2000]))
            for refs, text in group)
        write(out, "requests_fuzz", b"\1" + encode(args.protoc, args.proto_dir,
                                                  "rlscore.v1.ScoreRequest",
                                                  items + "pass_at_k: 1 pass_at_k: 4\n"))
    for sizes in ([4, 4], [8], [2, 3, 1], [16, 16, 16]):
        rewards = " ".join("rewards: %g" % ((k * 37 % 11) / 10.0) for k in range(sum(sizes)))
        groups = " ".join("group_sizes: %d" % s for s in sizes)
        write(out, "requests_fuzz", b"\2" + encode(args.protoc, args.proto_dir,
                                                  "rlscore.v1.ComputeAdvantagesRequest",
                                                  rewards + " " + groups))
    for target in sorted(p.name for p in out.iterdir()):
        print(f"make_seeds.py: {target}: {sum(1 for _ in (out / target).iterdir())} seeds")


if __name__ == "__main__":
    main()

#!/bin/bash
# The README's install, as a new user runs it: a fresh virtual environment, `pip install` of the
# repository, then the package used from outside the source tree. Usage:
#   install_test.sh REPO BUILD_DIR
# BUILD_DIR is a configured build tree with -DRLSCORE_PYTHON=ON (the test command's), reused so
# that the wheel's native module is not compiled a second time.
set -euo pipefail
repo=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 -m venv --system-site-packages "$work/venv"
RLSCORE_CMAKE_BUILD_DIR="$build" "$work/venv/bin/pip" install --quiet --no-index \
  --no-build-isolation "$repo"

cd "$work"  # outside the source tree: only the installed package can be imported
"$work/venv/bin/python" - <<'PY'
import os
import threading

import rlscore
from rlscore.math_verify import parse, verify
from rlscore.rewards.trl import RlscoreReward

assert "site-packages" in rlscore.__file__, rlscore.__file__
assert not os.path.exists(os.path.join(os.getcwd(), "rlscore"))

assert verify(parse("$\\frac12$"), parse("The answer is $0.5$")) is True

reward = RlscoreReward()
out = reward(prompts=["p", "p", "q"],
             completions=["<think>x</think> \\boxed{42}", "<think>x</think> \\boxed{41}",
                          "<think>x</think> \\boxed{1}"],
             solution=["42", "42", "\\frac{"])
assert isinstance(out[0], float) and isinstance(out[1], float) and out[2] is None, out

errors = []
def work():
    try:
        for _ in range(20):
            assert verify(parse("$\\frac12$"), parse("so $0.5$")) is True
    except Exception as e:
        errors.append(e)
threads = [threading.Thread(target=work) for _ in range(64)]
for t in threads:
    t.start()
for t in threads:
    t.join(120)
assert not errors and not any(t.is_alive() for t in threads), errors
print("installed rlscore", rlscore.__version__, "from", os.path.dirname(rlscore.__file__),
      "works outside the source tree")
PY

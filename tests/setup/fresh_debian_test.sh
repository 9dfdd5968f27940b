#!/usr/bin/env bash
# The README's run command on a fresh Debian 12: builds a minbase root with mmdebstrap (nothing in
# it but Debian's required packages and apt: no compiler, no curl, no CA certificates, no Node),
# clones this repository into it, runs `scripts/run.sh` there as a new user would, and waits until
# the server it built answers gRPC health SERVING; then SIGTERM must end it with exit 0.
#
# The root shares this machine's network (apt and the npm registry are reached as set-up reaches
# them) in its own mount and PID namespaces, so nothing it mounts or starts outlives the test.
# The host's CA bundle goes in as NODE_EXTRA_CA_CERTS, as a user behind a TLS-inspecting proxy
# would pass it: the set-up must trust it. What is tested is the checkout's HEAD plus its
# uncommitted changes to tracked files (git stash create), cloned with git.
#
# Usage: tests/setup/fresh_debian_test.sh RLSCORE   (this build's binary asks for health)
# Needs root (mmdebstrap, chroot); exits 77 (ctest: skipped) without it or without mmdebstrap.
set -euo pipefail
client=$(realpath "$1")
repo=$(cd "$(dirname "$0")/../.." && pwd)

if [ "$(id -u)" -ne 0 ]; then
  echo "fresh_debian_test: needs root for mmdebstrap and chroot; skipped"
  exit 77
fi
for tool in mmdebstrap unshare chroot git; do
  if ! command -v "$tool" >/dev/null; then
    echo "fresh_debian_test: $tool is not installed (scripts/setup.sh --test-tools); skipped"
    exit 77
  fi
done

work=$(mktemp -d)
root=$work/root
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

# The mirror apt uses here (deb822 or classic sources), else Debian's.
mirror=$(awk '/^URIs:/ {print $2; exit} /^deb / {print $2; exit}' \
  /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
echo "fresh_debian_test: a minbase Debian 12 root from $mirror"
mmdebstrap --quiet --variant=minbase bookworm "$root" "$mirror"
for absent in curl c++ cmake node npm git; do
  if chroot "$root" /bin/sh -c "command -v $absent" >/dev/null; then
    echo "fresh_debian_test: the minbase root already has $absent: it would hide a missing install" >&2
    exit 1
  fi
done

revision=$(git -C "$repo" stash create)
revision=${revision:-HEAD}
git clone --quiet --no-checkout "$repo" "$root/src"
git -C "$root/src" checkout --quiet --detach "$(git -C "$repo" rev-parse "$revision")"
cp /etc/resolv.conf "$root/etc/resolv.conf"
extra_ca=()
if [ -r /etc/ssl/certs/ca-certificates.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt "$root/host-ca.crt"
  extra_ca=(NODE_EXTRA_CA_CERTS=/host-ca.crt)
fi

log=$work/run.log
start=$(date +%s)
# The new user's session: a login shell in the root, with only the proxy settings of this one.
env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  TERM=dumb CI=true LANG=C.UTF-8 "${extra_ca[@]}" \
  $(env | grep -i -E '^(https?|no)_proxy=' || true) \
  unshare --mount --pid --fork --kill-child /bin/bash -c '
    set -e
    root=$1; shift
    mount --rbind /dev "$root/dev"
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    exec chroot "$root" /bin/bash -c "cd /src && exec scripts/run.sh \"\$@\"" run "$@"
  ' fresh "$root" --listen-address=127.0.0.1:0 --metrics-address=127.0.0.1:0 \
  </dev/null >"$log" 2>&1 &
server_pid=$!

# Set-up and the build take minutes; the server is up when it answers SERVING. It binds free ports
# itself (port 0) and logs them: a port picked here and released could be taken by a server of a
# test running beside this one during those minutes, and answer in place of this one.
health() {
  local port
  port=$(sed -n 's/.*serving rlscore\.v1 on [^ ]* (port \([0-9]*\)).*/\1/p' "$log" 2>/dev/null | head -n 1)
  [ -n "$port" ] && "$client" health "--address=127.0.0.1:$port" --timeout-secs=5 2>/dev/null
}
deadline=$((start + 1500))
until served=$(health); do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "fresh_debian_test: scripts/run.sh exited before the server answered SERVING:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  if [ "$(date +%s)" -gt "$deadline" ]; then
    echo "fresh_debian_test: no SERVING within $((deadline - start)) s:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  sleep 2
done
echo "fresh_debian_test: scripts/run.sh set up, built and served in $(( $(date +%s) - start )) s"
echo "$served"
grep -E '^setup: installing|^fetch_sources: ' "$log" | cut -c1-200

# SIGTERM to the server: unshare's child, the PID namespace's first process, which run.sh's
# exec made `rlscore serve` (read from /proc: minbase has no procps).
rlscore_pid=$(cat "/proc/$server_pid/task/$server_pid/children" 2>/dev/null | awk '{print $1}')
if [ -z "$rlscore_pid" ] || ! grep -q "rlscore" "/proc/$rlscore_pid/cmdline" 2>/dev/null; then
  echo "fresh_debian_test: cannot find the server process under $server_pid" >&2
  exit 1
fi
kill -TERM "$rlscore_pid"
code=0
wait "$server_pid" || code=$?
server_pid=
if [ "$code" != 0 ]; then
  echo "fresh_debian_test: the server exited $code after SIGTERM, expected 0" >&2
  tail -n 20 "$log" >&2
  exit 1
fi
echo "fresh_debian_test: SIGTERM -> exit 0"

# The README's Python install in the same root, reusing the tree run.sh configured (its module is
# all that is left to build), then the package used from outside the source tree.
cat >"$root/check_package.py" <<'PY'
import rlscore
from rlscore.math_verify import parse, verify

assert verify(parse("$\\frac12$"), parse("The answer is $0.5$")), "verify"
reply = rlscore.score_groups([{"reference": "42", "completions": ["<think>x</think> 42"]}])
assert reply.rewards[0] > 1, reply
print("pip install: rlscore", rlscore.__version__, "in", rlscore.__file__)
PY
start=$(date +%s)
unshare --mount --pid --fork --kill-child /bin/bash -c '
    set -e
    root=$1
    mount --rbind /dev "$root/dev"
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    exec chroot "$root" /bin/bash -c "set -e
      cd /src
      python3 -m venv --system-site-packages /opt/venv
      RLSCORE_CMAKE_BUILD_DIR=build /opt/venv/bin/pip install --quiet --no-index \
        --no-build-isolation .
      cd /
      /opt/venv/bin/python /check_package.py"
  ' fresh "$root" </dev/null >"$work/pip.log" 2>&1 || {
  echo "fresh_debian_test: the README's pip install failed:" >&2
  tail -n 40 "$work/pip.log" >&2
  exit 1
}
grep '^pip install:' "$work/pip.log"
echo "fresh_debian_test: pip install and use in $(( $(date +%s) - start )) s"

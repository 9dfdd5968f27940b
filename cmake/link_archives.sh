#!/usr/bin/env bash
# The link launcher of the `rlscore` binary (cli/CMakeLists.txt, RULE_LAUNCH_LINK): runs the link
# command it is given with abseil, protobuf, utf8proc and tree-sitter taken from their static
# archives (Debian's -dev packages ship both) instead of their shared objects. Each shared
# library costs the dynamic loader time at every start; `rlscore score` is a command that starts
# often. The archives go last, as one group, so every reference before them resolves to them and
# none to a shared copy. A library without an archive stays shared.
set -euo pipefail
command=()
archives=()
for arg in "$@"; do
  if [[ $arg =~ ^(.*/lib(absl_[a-z0-9_]+|protobuf|utf8proc|tree-sitter))\.so(\.[0-9.]+)?$ ]] &&
    [ -f "${BASH_REMATCH[1]}.a" ]; then
    archives+=("${BASH_REMATCH[1]}.a")
  else
    command+=("$arg")
  fi
done
if [ ${#archives[@]} -gt 0 ]; then
  command+=(-Wl,--start-group "${archives[@]}" -Wl,--end-group)
fi
exec "${command[@]}"

#!/usr/bin/env bash
# Fetches the tree-sitter grammars of the AST repetition detector (SPEC §3) from the npm registry at
# pinned versions, checks each tarball against its pinned sha512 integrity and unpacks only its
# LICENSE and generated C sources into third_party/grammars/<name>/ (ignored by git; nothing
# third-party is committed). Idempotent: a grammar whose stamp matches its pin is not fetched again.
# Usage: scripts/fetch_grammars.sh [DEST]   (DEST defaults to third_party/grammars)
#
# Every pin is ABI 14: Debian 12's tree-sitter runtime (0.20.7) loads ABI 13-14 only. Check
# `#define LANGUAGE_VERSION` in src/parser.c before moving a pin.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-third_party/grammars}

# name | npm package@version | dist.integrity | source folders inside the package
pins=(
  "markdown|@tree-sitter-grammars/tree-sitter-markdown@0.3.2|sha512-hQXCcDVvg2t4E8cn7zz6jjIBerzk9E9ZlHxJp5IrUOpY4s1YVpXJbMeWZks2/V7lmkPRnnkM8IrTbQ5ltwEOnA==|tree-sitter-markdown/src tree-sitter-markdown-inline/src"
  "python|tree-sitter-python@0.23.6|sha512-yIM9z0oxKIxT7bAtPOhgoVl6gTXlmlIhue7liFT4oBPF/lha7Ha4dQBS82Av6hMMRZoVnFJI8M6mL+SwWoLD3A==|src"
  "cpp|tree-sitter-cpp@0.23.4|sha512-qR5qUDyhZ5jJ6V8/umiBxokRbe89bCGmcq/dk94wI4kN86qfdV8k0GHIUEKaqWgcu42wKal5E97LKpLeVW8sKw==|src"
  "javascript|tree-sitter-javascript@0.23.1|sha512-/bnhbrTD9frUYHQTiYnPcxyHORIw157ERBa6dqzaKxvR/x3PC4Yzd+D1pZIMS6zNg2v3a8BZ0oK7jHqsQo9fWA==|src"
  "c|tree-sitter-c@0.23.6|sha512-0dxXKznVyUA0s6PjNolJNs2yF87O5aL538A/eR6njA5oqX3C3vH4vnx3QdOKwuUdpKEcFdHuiDpRKLLCA/tjvQ==|src"
)

if ! command -v npm >/dev/null 2>&1; then
  echo "fetch_grammars: npm is not on PATH; it fetches the pinned tree-sitter grammars" >&2
  exit 1
fi

mkdir -p "$dest"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for pin in "${pins[@]}"; do
  IFS='|' read -r name spec integrity folders <<<"$pin"
  stamp="$dest/$name/.pin"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$spec $integrity" ]; then
    continue
  fi
  tgz=""
  for attempt in 1 2 3 4 5; do
    if tgz=$(cd "$work" && npm pack --silent "$spec" </dev/null 2>"$work/npm.err" | tail -n 1) &&
       [ -n "$tgz" ] && [ -f "$work/$tgz" ]; then
      break
    fi
    tgz=""
    echo "fetch_grammars: npm pack $spec failed (attempt $attempt of 5): $(tail -n 3 "$work/npm.err")" >&2
    sleep $((attempt * 3))
  done
  if [ -z "$tgz" ]; then
    echo "fetch_grammars: could not fetch $spec from the npm registry" >&2
    exit 1
  fi
  got="sha512-$(openssl dgst -sha512 -binary "$work/$tgz" | base64 -w0)"
  if [ "$got" != "$integrity" ]; then
    echo "fetch_grammars: $spec: integrity $got does not match the pin $integrity" >&2
    exit 1
  fi
  rm -rf "${dest:?}/$name"
  mkdir -p "$dest/$name"
  members=(package/LICENSE)
  for f in $folders; do members+=("package/$f"); done
  # --touch: the tarballs carry 1985 timestamps, which would confuse build tools' staleness checks.
  tar --touch -xzf "$work/$tgz" -C "$dest/$name" --strip-components=1 "${members[@]}"
  echo "$spec $integrity" >"$stamp"
  rm -f "$work/$tgz"
  echo "fetch_grammars: $name <- $spec"
done

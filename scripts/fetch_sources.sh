#!/usr/bin/env bash
# Fetches the third-party sources the build compiles from the npm registry at pinned versions,
# checks each tarball against its pinned sha512 integrity and unpacks only its LICENSE and the
# folders named below into third_party/<name>/ (ignored by git; nothing third-party is committed):
# - grammars/*: the tree-sitter grammars of the AST repetition detector (docs/REPETITION.md),
#   generated C;
# - simdjson: simdjson's single-file release (simdjson.h and simdjson.cpp), compiled into a static
#   library. Debian's libsimdjson-dev ships only a shared one, and loading it loads the shared C++
#   runtime too, about 2 ms of every `rlscore score` run (docs/PERFORMANCE.md). The npm package
#   is a mirror (WatermelonDB's); its two files are upstream's singleheader/ at tag v3.9.4 byte
#   for byte (their git hash-object equals the tag's blobs), which the sha512 pin then holds.
# Idempotent: a package whose stamp matches its pin is not fetched again.
# Usage: scripts/fetch_sources.sh [DEST]   (DEST defaults to third_party)
#
# Needs curl and openssl, not npm: Debian 12 ships no Node by default. The registry is
# $npm_config_registry (npm's own variable), else npm's configured one when npm is installed,
# else https://registry.npmjs.org/. TLS trusts the system store plus $NODE_EXTRA_CA_CERTS, the
# variable npm users already set for a TLS-inspecting proxy; curl honours https_proxy.
#
# Every grammar pin is ABI 14: Debian 12's tree-sitter runtime (0.20.7) loads ABI 13-14 only.
# Check `#define LANGUAGE_VERSION` in src/parser.c before moving a pin.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-third_party}

# folder under DEST | npm package@version | dist.integrity | source folders inside the package
pins=(
  "grammars/markdown|@tree-sitter-grammars/tree-sitter-markdown@0.3.2|sha512-hQXCcDVvg2t4E8cn7zz6jjIBerzk9E9ZlHxJp5IrUOpY4s1YVpXJbMeWZks2/V7lmkPRnnkM8IrTbQ5ltwEOnA==|tree-sitter-markdown/src tree-sitter-markdown-inline/src"
  "grammars/python|tree-sitter-python@0.23.6|sha512-yIM9z0oxKIxT7bAtPOhgoVl6gTXlmlIhue7liFT4oBPF/lha7Ha4dQBS82Av6hMMRZoVnFJI8M6mL+SwWoLD3A==|src"
  "grammars/cpp|tree-sitter-cpp@0.23.4|sha512-qR5qUDyhZ5jJ6V8/umiBxokRbe89bCGmcq/dk94wI4kN86qfdV8k0GHIUEKaqWgcu42wKal5E97LKpLeVW8sKw==|src"
  "grammars/javascript|tree-sitter-javascript@0.23.1|sha512-/bnhbrTD9frUYHQTiYnPcxyHORIw157ERBa6dqzaKxvR/x3PC4Yzd+D1pZIMS6zNg2v3a8BZ0oK7jHqsQo9fWA==|src"
  "grammars/c|tree-sitter-c@0.23.6|sha512-0dxXKznVyUA0s6PjNolJNs2yF87O5aL538A/eR6njA5oqX3C3vH4vnx3QdOKwuUdpKEcFdHuiDpRKLLCA/tjvQ==|src"
  "simdjson|@nozbe/simdjson@3.9.4|sha512-/3oCP8GBpdyeiBMEnuI6S0yl0yekD6Qxfed67hZqU1GIVn3o/vZgE8qANm69THfw7JgHLS9zjx56F/dO3q+koA==|src"
)

for tool in curl openssl; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "fetch_sources: $tool is not on PATH (scripts/setup.sh installs it)" >&2
    exit 1
  fi
done
registry=${npm_config_registry:-${NPM_CONFIG_REGISTRY:-}}
if [ -z "$registry" ] && command -v npm >/dev/null 2>&1; then
  registry=$(npm config get registry 2>/dev/null </dev/null || true)
fi
registry=${registry:-https://registry.npmjs.org/}
registry=${registry%/}

mkdir -p "$dest"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# curl's --cacert replaces its default store, so the extra CA is added to a copy of the system's.
ca_args=()
if [ -n "${NODE_EXTRA_CA_CERTS:-}" ]; then
  # Unreadable, it is skipped with a warning, as Node does.
  if ! cat "$NODE_EXTRA_CA_CERTS" >"$work/ca.pem" 2>/dev/null; then
    echo "fetch_sources: warning: NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS cannot be read" >&2
  fi
  if [ -r /etc/ssl/certs/ca-certificates.crt ]; then
    cat /etc/ssl/certs/ca-certificates.crt >>"$work/ca.pem"
  fi
  ca_args=(--cacert "$work/ca.pem")
fi

for pin in "${pins[@]}"; do
  IFS='|' read -r name spec integrity folders <<<"$pin"
  stamp="$dest/$name/.pin"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$spec $integrity" ]; then
    continue
  fi
  # npm's tarball address: @scope/name@1.2.3 -> REGISTRY/@scope/name/-/name-1.2.3.tgz
  package=${spec%@*}
  version=${spec##*@}
  url="$registry/$package/-/${package##*/}-$version.tgz"
  tgz="$work/${name//\//_}.tgz"
  fetched=0
  for attempt in 1 2 3 4 5; do
    if curl --fail --silent --show-error --location --max-time 120 "${ca_args[@]}" \
         --output "$tgz" "$url" 2>"$work/curl.err"; then
      fetched=1
      break
    fi
    echo "fetch_sources: $url failed (attempt $attempt of 5): $(tail -n 3 "$work/curl.err")" >&2
    sleep $((attempt * 3))
  done
  if [ "$fetched" != 1 ]; then
    echo "fetch_sources: could not fetch $spec from $registry" >&2
    exit 1
  fi
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [ "$got" != "$integrity" ]; then
    echo "fetch_sources: $spec: integrity $got does not match the pin $integrity" >&2
    exit 1
  fi
  rm -rf "${dest:?}/$name"
  mkdir -p "$dest/$name"
  members=(package/LICENSE)
  for f in $folders; do members+=("package/$f"); done
  # --touch: the tarballs carry 1985 timestamps, which would confuse build tools' staleness checks.
  tar --touch -xzf "$tgz" -C "$dest/$name" --strip-components=1 "${members[@]}"
  echo "$spec $integrity" >"$stamp"
  rm -f "$tgz"
  echo "fetch_sources: $name <- $spec"
done

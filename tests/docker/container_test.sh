#!/usr/bin/env bash
# Builds docker/Dockerfile with podman and checks the containers: each starts as the non-root
# user 10001 on a read-only root filesystem, answers gRPC health checks on the API port and on the
# probe port (and to `rlscore health` inside), serves a ComputeAdvantages call and /metrics, and
# exits 0 on SIGTERM. Two images: the `runtime-prebuilt` target (the runtime stage with the binary
# this build produced) and the default target, whose builder stage compiles rlscore inside.
#
# No image registry is reachable here, so the Debian 12 base is built locally with mmdebstrap
# (cached as localhost/rlscore-test-base:bookworm).
#
# Usage: tests/docker/container_test.sh BINARY STUBS_DIR
# Exits 77 (ctest: skipped) when podman cannot run any container on this machine.
set -euo pipefail
binary=$(realpath "$1")
stubs=$(realpath "$2")
repo=$(cd "$(dirname "$0")/../.." && pwd)
export CONTAINERS_CONF=$repo/tests/docker/containers.conf
base=localhost/rlscore-test-base:bookworm
image=localhost/rlscore-test:latest
work=$(mktemp -d)
containers=()
cleanup() {
  for c in "${containers[@]}"; do podman rm -f "$c" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

for tool in podman mmdebstrap; do
  if ! command -v "$tool" >/dev/null; then
    echo "container_test: $tool is not installed (scripts/setup.sh --test-tools installs it)"
    exit 77
  fi
done

if ! podman image exists "$base"; then
  # The mirror apt uses here (deb822 or classic sources), else Debian's.
  mirror=$(awk '/^URIs:/ {print $2; exit} /^deb / {print $2; exit}' \
             /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list 2>/dev/null || true)
  mirror=${mirror:-http://deb.debian.org/debian}
  echo "container_test: building the Debian 12 base from $mirror"
  mmdebstrap --quiet --variant=minbase --include=ca-certificates bookworm "$work/base.tar" "$mirror"
  podman import --quiet --change 'CMD ["/bin/bash"]' "$work/base.tar" "$base" >/dev/null
  rm -f "$work/base.tar"
fi
if ! podman run --rm "$base" true; then
  echo "container_test: podman cannot run a container on this machine (see above)"
  exit 77
fi

# Runs IMAGE read-only and checks it; a failure exits the script.
check_image() {
  local image=$1 name=rlscore-test-$$-$2
  # --no-healthcheck: podman schedules HEALTHCHECK with systemd timers, and there is no systemd
  # here; the same check (`rlscore health`) is run below with podman exec.
  # --read-only-tmpfs=false: no writable /tmp or /run either, like readOnlyRootFilesystem.
  podman run -d --name "$name" --read-only --read-only-tmpfs=false --no-healthcheck \
    -p 127.0.0.1::50051 -p 127.0.0.1::8081 -p 127.0.0.1::9464 "$image" >/dev/null
  containers+=("$name")
  port_of() { podman port "$name" "$1" | head -n 1 | sed 's/.*://'; }
  /usr/bin/python3 - "$stubs" "$repo/tests/e2e" "$(port_of 50051)" "$(port_of 8081)" \
    "$(port_of 9464)" "$name" <<'PY'
import subprocess, sys, time, urllib.request
stubs, e2e, api, probe, metrics, name = sys.argv[1:]
sys.path[:0] = [stubs, e2e]
import grpc
from harness import health_status
from rlscore.v1 import advantage_pb2, scoring_service_pb2_grpc

def channel(port):
    return grpc.insecure_channel("127.0.0.1:" + port)

def wait_serving(port):
    deadline = time.monotonic() + 60
    while True:
        try:
            return health_status(channel(port))
        except grpc.RpcError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)

assert wait_serving(api) == 1, "API port not SERVING"
assert wait_serving(probe) == 1, "probe port not SERVING"
stub = scoring_service_pb2_grpc.ScoringServiceStub(channel(api))
reply = stub.ComputeAdvantages(advantage_pb2.ComputeAdvantagesRequest(
    rewards=[1.0, 0.0, 1.0, 1.0], group_sizes=[2, 2]), timeout=10)
assert list(reply.advantages)[2:] == [0.0, 0.0], reply
text = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % metrics, timeout=10).read()
assert b"rlscore_build_info" in text
uid = subprocess.run(["podman", "exec", name, "/bin/sh", "-c", "id -u; id -g"],
                     capture_output=True, text=True, check=True).stdout.split()
assert uid == ["10001", "10001"], uid
# The image's own HEALTHCHECK command, as the image declares it, run inside.
import json
inspect = subprocess.run(["podman", "image", "inspect", "--format", "{{json .HealthCheck}}",
                          subprocess.run(["podman", "inspect", "--format", "{{.Image}}", name],
                                         capture_output=True, text=True, check=True).stdout.strip()],
                         capture_output=True, text=True, check=True).stdout
test = json.loads(inspect)["Test"]
assert test[0] == "CMD", test
check = subprocess.run(["podman", "exec", name, *test[1:]], capture_output=True, text=True)
assert check.returncode == 0 and "SERVING" in check.stdout, (test, check.stdout, check.stderr)
print("container_test: SERVING on the API and probe ports (and to the image's HEALTHCHECK), "
      "a call answered, /metrics served, "
      "running as uid/gid %s/%s on a read-only root" % tuple(uid))
PY
  podman stop --time 30 "$name" >/dev/null
  local code
  code=$(podman inspect --format '{{.State.ExitCode}}' "$name")
  if [ "$code" != 0 ]; then
    echo "container_test: $image exited $code after SIGTERM, expected 0"
    podman logs "$name" | tail -n 20
    exit 1
  fi
  echo "container_test: $image: SIGTERM -> exit 0"
}

# 1. The runtime stage with the binary under test.
mkdir "$work/prebuilt"
cp "$binary" "$work/prebuilt/rlscore"
cp "$(dirname "$binary")/rlscore-service" "$work/prebuilt/rlscore-service"
podman build --quiet --format docker -f "$repo/docker/Dockerfile" --target runtime-prebuilt \
  --build-arg BASE="$base" --build-context prebuilt="$work/prebuilt" -t "$image" "$repo" >/dev/null
check_image "$image" prebuilt

# 2. The whole Dockerfile: the builder stage runs scripts/build.sh inside the image (a few
#    minutes). The host's CA bundle is passed for fetching the grammars, for machines behind a
#    TLS-intercepting proxy. RLSCORE_CONTAINER_FULL=0 skips it.
if [ "${RLSCORE_CONTAINER_FULL:-1}" != 0 ]; then
  ca_args=()
  if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    ca_args=(-v /etc/ssl/certs/ca-certificates.crt:/run/host-ca.crt:ro
             --build-arg NODE_EXTRA_CA_CERTS=/run/host-ca.crt)
  fi
  start=$(date +%s)
  podman build --quiet --format docker -f "$repo/docker/Dockerfile" --build-arg BASE="$base" \
    "${ca_args[@]}" -t "$image-full" "$repo" >/dev/null
  echo "container_test: the full image built in $(( $(date +%s) - start )) s"
  check_image "$image-full" full
fi

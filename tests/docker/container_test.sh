#!/usr/bin/env bash
# Builds the runtime image of docker/Dockerfile with podman and checks the container: it starts as
# the non-root user 10001 on a read-only root filesystem, answers gRPC health checks on the API
# port and on the probe port, serves a ComputeAdvantages call and /metrics, and exits 0 on
# SIGTERM.
#
# No image registry is reachable here, so the Debian 12 base is built locally with mmdebstrap
# (cached as localhost/rlscore-test-base:bookworm), and the image is the Dockerfile's
# `runtime-prebuilt` target: the runtime stage with the binary this build produced. (The full
# image, `runtime`, compiles inside the builder stage: docker/README.md.)
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
name=rlscore-test-$$
work=$(mktemp -d)
cleanup() {
  podman rm -f "$name" >/dev/null 2>&1 || true
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

mkdir "$work/prebuilt"
cp "$binary" "$work/prebuilt/rlscore"
podman build --quiet --format docker -f "$repo/docker/Dockerfile" --target runtime-prebuilt \
  --build-arg BASE="$base" --build-context prebuilt="$work/prebuilt" -t "$image" "$repo"

# --no-healthcheck: podman schedules HEALTHCHECK with systemd timers, and there is no systemd
# here; the same check (`rlscore health`) is run below with podman exec.
podman run -d --name "$name" --read-only --no-healthcheck \
  -p 127.0.0.1::50051 -p 127.0.0.1::8081 -p 127.0.0.1::9464 "$image" >/dev/null
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
# The image's own health command (its HEALTHCHECK, and the chart's test hook), from inside.
check = subprocess.run(["podman", "exec", name, "/usr/local/bin/rlscore", "health",
                        "--address=127.0.0.1:8081"], capture_output=True, text=True)
assert check.returncode == 0 and "SERVING" in check.stdout, (check.stdout, check.stderr)
print("container_test: SERVING on the API and probe ports (also to `rlscore health` inside), "
      "a call answered, /metrics served, "
      "running as uid/gid %s/%s on a read-only root" % tuple(uid))
PY

podman stop --time 30 "$name" >/dev/null
code=$(podman inspect --format '{{.State.ExitCode}}' "$name")
if [ "$code" != 0 ]; then
  echo "container_test: exit code $code after SIGTERM, expected 0"
  podman logs "$name" | tail -n 20
  exit 1
fi
echo "container_test: SIGTERM -> exit 0"
podman logs "$name" 2>&1 | tail -n 3

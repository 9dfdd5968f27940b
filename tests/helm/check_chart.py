#!/usr/bin/python3
"""What the chart must render, scenario by scenario (tests/helm/chart_test.sh renders them).

  /usr/bin/python3 tests/helm/check_chart.py RENDERED_DIR

RENDERED_DIR holds one `helm template` output per scenario (standalone.yaml, full.yaml,
sidecar-native.yaml, sidecar-classic.yaml). The Kubernetes object schemas are checked separately
(validate_manifests.mjs); this checks the chart's design: probes on the health-only port, the API
address per mode, non-root and a read-only root, the native sidecar, the GPU resource, the
monitoring objects and the test hook.
"""

import json
import os
import re
import sys
import unittest

import yaml

RENDERED = None
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(scenario):
    with open(os.path.join(RENDERED, scenario + ".yaml")) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def by_kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def named(objects, kind, suffix=""):
    """The one object of `kind` whose name ends with `suffix` (and no other chart suffix)."""
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"].endswith(suffix)
             and (suffix or not o["metadata"]["name"].endswith(("-headless", "-dashboard")))]
    (one,) = found
    return one


def rlscore_container(pod_spec):
    containers = pod_spec.get("initContainers", []) + pod_spec["containers"]
    (found,) = [c for c in containers if c["name"] == "rlscore"]
    return found


class Standalone(unittest.TestCase):
    def setUp(self):
        self.objects = load("standalone")
        (self.deployment,) = by_kind(self.objects, "Deployment")
        self.pod = self.deployment["spec"]["template"]["spec"]
        self.container = rlscore_container(self.pod)

    def test_api_on_all_interfaces_probes_on_the_health_port(self):
        args = self.container["args"]
        self.assertIn("--listen-address=0.0.0.0:50051", args)
        self.assertIn("--health-address=0.0.0.0:8081", args)
        self.assertIn("--metrics-address=0.0.0.0:9464", args)
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            self.assertEqual(self.container[probe]["grpc"], {"port": 8081}, probe)
        ports = {p["name"]: p["containerPort"] for p in self.container["ports"]}
        self.assertEqual(ports,
                         {"rlscore-grpc": 50051, "rlscore-health": 8081, "rlscore-metrics": 9464})

    def test_non_root_read_only_no_privilege(self):
        self.assertTrue(self.pod["securityContext"]["runAsNonRoot"])
        self.assertEqual(self.pod["securityContext"]["runAsUser"], 10001)
        sc = self.container["securityContext"]
        self.assertTrue(sc["readOnlyRootFilesystem"])
        self.assertFalse(sc["allowPrivilegeEscalation"])
        self.assertEqual(sc["capabilities"]["drop"], ["ALL"])

    def test_drain_fits_the_grace_period(self):
        self.assertIn("--drain-timeout-secs=30", self.container["args"])
        self.assertEqual(self.container["lifecycle"]["preStop"]["exec"]["command"],
                         ["/bin/sleep", "5"])
        self.assertGreater(self.pod["terminationGracePeriodSeconds"], 30 + 5)

    def test_no_gpu_no_config_no_monitoring_by_default(self):
        self.assertNotIn("nvidia.com/gpu", self.container["resources"].get("limits", {}))
        self.assertFalse(any(a.startswith("--config") for a in self.container["args"]))
        kinds = sorted(o["kind"] for o in self.objects)
        # One replica: no PodDisruptionBudget; no autoscaler unless asked for.
        self.assertEqual(kinds, ["Deployment", "Pod", "Service", "Service"])
        self.assertEqual(self.deployment["spec"]["replicas"], 1)

    def test_headless_service_for_client_side_balancing(self):
        service = named(self.objects, "Service")
        headless = named(self.objects, "Service", "-headless")
        self.assertEqual(headless["metadata"]["name"], service["metadata"]["name"] + "-headless")
        self.assertEqual(headless["spec"]["clusterIP"], "None")
        self.assertFalse(headless["spec"]["publishNotReadyAddresses"])
        self.assertEqual(headless["spec"]["selector"], service["spec"]["selector"])
        self.assertEqual(headless["spec"]["ports"], [{"name": "grpc", "port": 50051,
                                                      "targetPort": "rlscore-grpc",
                                                      "appProtocol": "grpc"}])

    def test_replicas_spread_over_nodes(self):
        (spread,) = self.pod["topologySpreadConstraints"]
        self.assertEqual(spread["topologyKey"], "kubernetes.io/hostname")
        self.assertEqual(spread["maxSkew"], 1)
        self.assertEqual(spread["labelSelector"]["matchLabels"],
                         self.deployment["spec"]["selector"]["matchLabels"])

    def test_service_and_test_hook(self):
        service = named(self.objects, "Service")
        self.assertEqual({p["name"]: p["port"] for p in service["spec"]["ports"]},
                         {"grpc": 50051, "metrics": 9464})
        self.assertEqual(service["spec"]["selector"],
                         self.deployment["spec"]["selector"]["matchLabels"])
        self.assertEqual([p["targetPort"] for p in service["spec"]["ports"]],
                         ["rlscore-grpc", "rlscore-metrics"])
        (hook,) = by_kind(self.objects, "Pod")
        self.assertEqual(hook["metadata"]["annotations"]["helm.sh/hook"], "test")
        test = hook["spec"]["containers"][0]
        self.assertEqual(test["command"], ["/usr/local/bin/rlscore", "health"])
        self.assertIn("--address=%s:50051" % service["metadata"]["name"], test["args"])


class Full(unittest.TestCase):
    """GPU, a config file, the HTTP listener, ServiceMonitor and PrometheusRule."""

    def setUp(self):
        self.objects = load("full")
        (deployment,) = by_kind(self.objects, "Deployment")
        self.pod = deployment["spec"]["template"]["spec"]
        self.container = rlscore_container(self.pod)

    def test_gpu_limit_and_the_requests_kept(self):
        resources = self.container["resources"]
        self.assertEqual(resources["limits"]["nvidia.com/gpu"], 1)
        self.assertEqual(resources["limits"]["memory"], "4Gi")
        self.assertEqual(resources["requests"]["cpu"], "2")

    def test_config_from_a_configmap(self):
        configmap = named(self.objects, "ConfigMap")
        # Verbatim, leading indentation included.
        self.assertEqual(configmap["data"]["server.textproto"],
                         '  profiles { name: "dapo" }\n')
        self.assertIn("--config=/etc/rlscore/server.textproto", self.container["args"])
        (volume,) = self.pod["volumes"]
        self.assertEqual(volume["configMap"]["name"], configmap["metadata"]["name"])
        self.assertEqual(self.container["volumeMounts"][0]["mountPath"], "/etc/rlscore")

    def test_http_listener_and_quoted_args(self):
        self.assertIn("--http-address=0.0.0.0:5000", self.container["args"])
        for service in by_kind(self.objects, "Service"):
            self.assertIn({"name": "http", "port": 5000, "targetPort": "rlscore-http"},
                          service["spec"]["ports"])
        # An extra flag with YAML-special characters arrives as the string it was.
        self.assertEqual(self.container["args"][-1], "--log-prefix=a: b #c")

    def test_service_monitor(self):
        (monitor,) = by_kind(self.objects, "ServiceMonitor")
        self.assertEqual(monitor["spec"]["endpoints"][0]["port"], "metrics")
        self.assertEqual(monitor["metadata"]["labels"]["release"], "prometheus")

    def test_alerts_are_the_run_health_signals(self):
        (rule,) = by_kind(self.objects, "PrometheusRule")
        alerts = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}
        for name, signal, warn, critical in [
                ("ZeroVarianceFraction", "zero_variance_fraction", "0.5", "0.75"),
                ("LengthGrowth", "mean_length_growth", "1.5", "2"),
                ("TruncationRate", "truncation_rate", "0.1", "0.3"),
                ("RepetitionRate", "repetition_rate", "0.1", "0.3")]:
            expr = 'max by (run) (rlscore_run_signal{signal="%s"}) >= ' % signal
            self.assertEqual(alerts["Rlscore" + name]["expr"], expr + warn)
            self.assertEqual(alerts["Rlscore" + name]["labels"]["severity"], "warning")
            self.assertEqual(alerts["Rlscore%sCritical" % name]["expr"], expr + critical)
            self.assertIn("{{ $labels.run }}", alerts["Rlscore" + name]["annotations"]["summary"])
        self.assertIn("rlscore_run_health_level", alerts["RlscoreRunCritical"]["expr"])
        self.assertIn("RlscoreGpuFallback", alerts)


    def test_grafana_dashboard_configmap(self):
        configmap = named(self.objects, "ConfigMap", "-dashboard")
        self.assertEqual(configmap["metadata"]["labels"]["grafana_dashboard"], "1")
        dashboard = json.loads(configmap["data"]["rlscore.json"])
        with open(os.path.join(REPO, "helm/rlscore/dashboards/rlscore.json")) as f:
            self.assertEqual(dashboard, json.load(f))


class Replicas(unittest.TestCase):
    """Several replicas: a PodDisruptionBudget; with autoscaling, an HPA owns the replica count."""

    def test_fixed_replicas_get_a_disruption_budget(self):
        objects = load("replicas")
        (deployment,) = by_kind(objects, "Deployment")
        self.assertEqual(deployment["spec"]["replicas"], 3)
        (pdb,) = by_kind(objects, "PodDisruptionBudget")
        self.assertEqual(pdb["spec"]["maxUnavailable"], 1)
        self.assertEqual(pdb["spec"]["selector"]["matchLabels"],
                         deployment["spec"]["selector"]["matchLabels"])
        self.assertEqual(by_kind(objects, "HorizontalPodAutoscaler"), [])

    def test_autoscaling_on_cpu_and_calls_in_flight(self):
        objects = load("autoscaled")
        (deployment,) = by_kind(objects, "Deployment")
        self.assertNotIn("replicas", deployment["spec"])
        (hpa,) = by_kind(objects, "HorizontalPodAutoscaler")
        self.assertEqual(hpa["spec"]["scaleTargetRef"],
                         {"apiVersion": "apps/v1", "kind": "Deployment",
                          "name": deployment["metadata"]["name"]})
        self.assertEqual((hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]), (2, 8))
        metrics = {m["type"]: m for m in hpa["spec"]["metrics"]}
        self.assertEqual(metrics["Resource"]["resource"]["target"]["averageUtilization"], 70)
        self.assertEqual(metrics["Pods"]["pods"]["metric"]["name"], "rlscore_requests_in_flight")
        self.assertEqual(metrics["Pods"]["pods"]["target"]["averageValue"], "4")
        (pdb,) = by_kind(objects, "PodDisruptionBudget")  # minReplicas 2
        self.assertEqual(pdb["spec"]["maxUnavailable"], 1)


class Dashboard(unittest.TestCase):
    """Every metric and run signal the dashboard queries is one the server exports."""

    def exported(self):
        with open(os.path.join(REPO, "service/prometheus_metrics.cc")) as f:
            families = re.findall(r'\{"(rlscore_[a-z_]+)", (kCounter|kGauge|kHistogram)', f.read())
        names = set()
        for name, kind in families:
            names.add(name)
            if kind == "kHistogram":
                names.update(name + suffix for suffix in ("_bucket", "_sum", "_count"))
        return names

    def signals(self):
        with open(os.path.join(REPO, "engine/run_health.cc")) as f:
            return set(re.findall(r'(?:Judged|Reported)\(\s*"([a-z_]+)"', f.read()))

    def test_queries_name_exported_metrics(self):
        with open(os.path.join(REPO, "helm/rlscore/dashboards/rlscore.json")) as f:
            dashboard = json.load(f)
        exported, signals = self.exported(), self.signals()
        self.assertGreater(len(exported), 30)
        self.assertIn("zero_variance_fraction", signals)
        exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
        exprs += [v["query"]["query"] for v in dashboard["templating"]["list"] if "query" in v
                  and isinstance(v["query"], dict)]
        self.assertGreaterEqual(len(exprs), 15)
        seen = set()
        for expr in exprs:
            for metric in re.findall(r"\brlscore_[a-z_]+", expr):
                self.assertIn(metric, exported, expr)
                seen.add(metric)
            for signal in re.findall(r'signal="([a-z_]+)"', expr):
                self.assertIn(signal, signals, expr)
        # What the dashboard is for: run signals, verdicts, repetition, truncation, latency,
        # calls in flight, admission refusals, GPU fallbacks.
        for metric in ("rlscore_run_signal", "rlscore_verdicts_total",
                       "rlscore_repetition_fired_total", "rlscore_truncated_total",
                       "rlscore_request_duration_seconds_bucket", "rlscore_requests_in_flight",
                       "rlscore_admission_refusals_total", "rlscore_gpu_fallbacks_total"):
            self.assertIn(metric, seen)


class Sidecar(unittest.TestCase):
    def test_native_sidecar_on_a_unix_socket(self):
        objects = load("sidecar-native")
        self.assertEqual(by_kind(objects, "Service"), [])
        (deployment,) = by_kind(objects, "Deployment")
        self.assertTrue(deployment["metadata"]["name"].endswith("-example-trainer"))
        pod = deployment["spec"]["template"]["spec"]
        (sidecar,) = pod["initContainers"]
        self.assertEqual(sidecar["name"], "rlscore")
        self.assertEqual(sidecar["restartPolicy"], "Always")
        self.assertIn("--listen-address=unix:/run/rlscore/rlscore.sock", sidecar["args"])
        # The API is not on a port; the probes still have the health listener on the Pod IP.
        self.assertNotIn("rlscore-grpc", [p["name"] for p in sidecar["ports"]])
        self.assertNotIn("lifecycle", sidecar)  # the trainer's pod decides when it stops
        self.assertEqual(sidecar["readinessProbe"]["grpc"], {"port": 8081})
        (trainer,) = pod["containers"]
        self.assertEqual(trainer["env"][0]["value"], "unix:/run/rlscore/rlscore.sock")
        mounts = {c["name"]: c["volumeMounts"][0]["mountPath"] for c in (sidecar, trainer)}
        self.assertEqual(mounts, {"rlscore": "/run/rlscore", "trainer": "/run/rlscore"})
        self.assertEqual(pod["volumes"], [{"name": "rlscore-socket", "emptyDir": {}}])
        (monitor,) = by_kind(objects, "PodMonitor")
        self.assertEqual(monitor["spec"]["podMetricsEndpoints"][0]["port"], "rlscore-metrics")
        self.assertEqual(monitor["spec"]["namespaceSelector"], {"matchNames": ["rl"]})
        self.assertEqual(monitor["spec"]["selector"]["matchLabels"],
                         {"rlscore.io/sidecar": deployment["spec"]["template"]["metadata"]
                          ["labels"]["rlscore.io/sidecar"]})

    def test_classic_sidecar_on_loopback(self):
        objects = load("sidecar-classic")
        (deployment,) = by_kind(objects, "Deployment")
        pod = deployment["spec"]["template"]["spec"]
        self.assertNotIn("initContainers", pod)
        self.assertEqual([c["name"] for c in pod["containers"]], ["trainer", "rlscore"])
        sidecar = rlscore_container(pod)
        self.assertIn("--listen-address=127.0.0.1:50051", sidecar["args"])
        # A sidecar's HTTP listener stays in the pod too.
        self.assertIn("--http-address=127.0.0.1:5000", sidecar["args"])
        self.assertNotIn("rlscore-http", [p["name"] for p in sidecar["ports"]])
        self.assertNotIn("restartPolicy", sidecar)
        self.assertEqual(by_kind(objects, "Pod"), [])  # the test hook is standalone only


if __name__ == "__main__":
    RENDERED = sys.argv.pop(1)
    unittest.main(verbosity=2)

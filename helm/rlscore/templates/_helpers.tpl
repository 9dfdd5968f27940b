{{/* Names and labels. */}}
{{- define "rlscore.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "rlscore.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "rlscore.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rlscore.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "rlscore.labels" -}}
{{ include "rlscore.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "rlscore.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The API address: all interfaces for a standalone service; loopback or a unix socket for a
     sidecar, which only its pod's trainer calls. */}}
{{- define "rlscore.listenAddress" -}}
{{- if eq .Values.mode "standalone" -}}
0.0.0.0:{{ .Values.ports.grpc }}
{{- else if .Values.listen.unixSocket -}}
unix:{{ .Values.listen.unixSocket }}
{{- else -}}
127.0.0.1:{{ .Values.ports.grpc }}
{{- end -}}
{{- end -}}

{{/* The rlscore container. Probes use the health-only listener: Kubernetes gRPC probes dial the
     Pod IP, where a sidecar's API does not listen. */}}
{{- define "rlscore.container" -}}
name: rlscore
image: {{ include "rlscore.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
args:
  - {{ printf "--listen-address=%s" (include "rlscore.listenAddress" .) | quote }}
  - "--health-address=0.0.0.0:{{ .Values.ports.health }}"
  - "--metrics-address=0.0.0.0:{{ .Values.ports.metrics }}"
  - "--drain-timeout-secs={{ .Values.server.drainTimeoutSecs }}"
  - "--scoring-threads={{ .Values.server.scoringThreads }}"
  - "--gpu={{ .Values.server.gpu }}"
  - "--max-message-bytes={{ .Values.server.maxMessageBytes | int64 }}"
  {{- if .Values.config }}
  - "--config=/etc/rlscore/server.textproto"
  {{- end }}
  {{- if .Values.ports.http }}
  {{- /* A sidecar's HTTP listener, like its API, is for its own pod only. */}}
  - "--http-address={{ ternary "0.0.0.0" "127.0.0.1" (eq .Values.mode "standalone") }}:{{ .Values.ports.http }}"
  {{- end }}
  {{- range .Values.server.extraArgs }}
  - {{ . | quote }}
  {{- end }}
{{- /* Port names carry the prefix so they cannot clash with a trainer's in a shared pod. */}}
ports:
  {{- if eq .Values.mode "standalone" }}
  - name: rlscore-grpc
    containerPort: {{ .Values.ports.grpc }}
  {{- end }}
  - name: rlscore-health
    containerPort: {{ .Values.ports.health }}
  - name: rlscore-metrics
    containerPort: {{ .Values.ports.metrics }}
  {{- if and .Values.ports.http (eq .Values.mode "standalone") }}
  - name: rlscore-http
    containerPort: {{ .Values.ports.http }}
  {{- end }}
startupProbe:
  grpc:
    port: {{ .Values.ports.health }}
  periodSeconds: {{ .Values.probes.startup.periodSeconds }}
  failureThreshold: {{ .Values.probes.startup.failureThreshold }}
readinessProbe:
  grpc:
    port: {{ .Values.ports.health }}
  periodSeconds: {{ .Values.probes.readiness.periodSeconds }}
  failureThreshold: {{ .Values.probes.readiness.failureThreshold }}
livenessProbe:
  grpc:
    port: {{ .Values.ports.health }}
  periodSeconds: {{ .Values.probes.liveness.periodSeconds }}
  failureThreshold: {{ .Values.probes.liveness.failureThreshold }}
resources:
  {{- $resources := deepCopy .Values.resources }}
  {{- if .Values.gpu.enabled }}
  {{- $limits := $resources.limits | default dict }}
  {{- $_ := set $limits "nvidia.com/gpu" .Values.gpu.count }}
  {{- $_ := set $resources "limits" $limits }}
  {{- end }}
  {{- toYaml $resources | nindent 2 }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
{{- if and (eq .Values.mode "standalone") .Values.preStopSleepSeconds }}
lifecycle:
  # Endpoint removal takes a moment to reach every client; keep serving until it has, then drain.
  preStop:
    exec:
      command: ["/bin/sleep", "{{ .Values.preStopSleepSeconds }}"]
{{- end }}
{{- if or .Values.config (and (eq .Values.mode "sidecar") .Values.listen.unixSocket) }}
volumeMounts:
  {{- if .Values.config }}
  - name: rlscore-config
    mountPath: /etc/rlscore
    readOnly: true
  {{- end }}
  {{- if and (eq .Values.mode "sidecar") .Values.listen.unixSocket }}
  - name: rlscore-socket
    mountPath: {{ dir .Values.listen.unixSocket }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* The pod volumes the container mounts. */}}
{{- define "rlscore.volumes" -}}
{{- if .Values.config }}
- name: rlscore-config
  configMap:
    name: {{ include "rlscore.fullname" . }}
{{- end }}
{{- if and (eq .Values.mode "sidecar") .Values.listen.unixSocket }}
- name: rlscore-socket
  emptyDir: {}
{{- end }}
{{- end -}}

{{/* Checks the schema cannot express; rendered by every workload template. */}}
{{- define "rlscore.validate" -}}
{{- $drain := int .Values.server.drainTimeoutSecs -}}
{{- $stop := int (.Values.preStopSleepSeconds | default 0) -}}
{{- if le (int .Values.terminationGracePeriodSeconds) (add $drain $stop) -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed server.drainTimeoutSecs + preStopSleepSeconds (%d): the drain would be cut short" (int .Values.terminationGracePeriodSeconds) (add $drain $stop)) -}}
{{- end -}}
{{- /* int: values from a file are float64, from --set int64, and uniq compares types too. */ -}}
{{- $ports := list (int .Values.ports.grpc) (int .Values.ports.health) (int .Values.ports.metrics) -}}
{{- if .Values.ports.http }}{{ $ports = append $ports (int .Values.ports.http) }}{{ end -}}
{{- if ne (len $ports) (len (uniq $ports)) -}}
{{- fail (printf "ports must differ, got %v" $ports) -}}
{{- end -}}
{{- if .Values.autoscaling.enabled -}}
{{- if gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas) -}}
{{- fail (printf "autoscaling.minReplicas (%d) must not exceed autoscaling.maxReplicas (%d)" (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) -}}
{{- end -}}
{{- if not (or .Values.autoscaling.targetCPUUtilizationPercentage .Values.autoscaling.targetInFlightPerPod) -}}
{{- fail "autoscaling needs a metric: targetCPUUtilizationPercentage or targetInFlightPerPod" -}}
{{- end -}}
{{- end -}}
{{- range $name, $t := dict "zeroVarianceFraction" .Values.prometheusRule.zeroVarianceFraction "meanLengthGrowth" .Values.prometheusRule.meanLengthGrowth "truncationRate" .Values.prometheusRule.truncationRate "repetitionRate" .Values.prometheusRule.repetitionRate -}}
{{- if gt (float64 $t.warn) (float64 $t.critical) -}}
{{- fail (printf "prometheusRule.%s: warn (%v) must not exceed critical (%v)" $name $t.warn $t.critical) -}}
{{- end -}}
{{- end -}}
{{- end -}}

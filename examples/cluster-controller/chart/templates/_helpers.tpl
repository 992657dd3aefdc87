{{/*
The helpers of the three example charts, the same in each: `make generate`
copies this file into each chart's templates/ (a chart copied elsewhere is
whole), and `make verify-generate` fails on a copy that differs. They hold names, labels, the image, the API server's
address, the PromQL selector, and the flags every podsweeper program has
(podsweeper.sharedArgs), extraArgs after the chart's own
(podsweeper.extraArgs), the scrape of the metrics (podsweeper.scrape), and the RBAC of kubectl
podsweeper (podsweeper.explain). A flag added to program.Flags is added
to podsweeper.sharedArgs, and to each chart's values.yaml and values.schema.json.
*/}}
{{/* The name of every object: the release's, with the chart's unless it has it. */}}
{{- define "podsweeper.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "podsweeper.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "podsweeper.labels" -}}
{{ include "podsweeper.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The image: repository@digest, or repository:tag (the appVersion by default). */}}
{{- define "podsweeper.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* The port of a "host:port" address. */}}
{{- define "podsweeper.port" -}}
{{- splitList ":" . | last -}}
{{- end -}}

{{/* KUBERNETES_SERVICE_HOST and _PORT from kubeAPI.host and .port, both or neither. */}}
{{- define "podsweeper.kubeAPIEnv" -}}
{{- if or .Values.kubeAPI.host .Values.kubeAPI.port -}}
{{- if not (and .Values.kubeAPI.host .Values.kubeAPI.port) -}}
{{- fail "kubeAPI.host and kubeAPI.port go together: set both, or neither for the kubernetes Service" -}}
{{- end -}}
- name: KUBERNETES_SERVICE_HOST
  value: {{ .Values.kubeAPI.host | quote }}
- name: KUBERNETES_SERVICE_PORT
  value: {{ .Values.kubeAPI.port | quote }}
{{- end -}}
{{- end -}}

{{/* The PromQL label matchers of this release's series (monitoring.selector). */}}
{{- define "podsweeper.selector" -}}
{{- .Values.monitoring.selector | default (printf "job=%q,namespace=%q" (include "podsweeper.fullname" .) .Release.Namespace) -}}
{{- end -}}

{{/* The flags every podsweeper program has (program.Flags), from the values every chart has. */}}
{{- define "podsweeper.sharedArgs" -}}
- --metrics-bind-address={{ .Values.metrics.bindAddress }}
- --metrics-secure={{ .Values.metrics.secure }}
- --health-probe-bind-address=:{{ .Values.probes.port }}
{{- with .Values.pprof }}
- --pprof-bind-address={{ .bindAddress }}
{{- end }}
{{- with .Values.status }}
- --status-bind-address={{ .bindAddress }}
{{- end }}
- --sweep-interval={{ .Values.sweepInterval }}
- --workers={{ int64 .Values.workers }}
- --dry-run={{ .Values.dryRun }}
- --max-destroys-per-second={{ .Values.destroyRate.perSecond }}
- --destroy-burst={{ int64 .Values.destroyRate.burst }}
- --kube-api-qps={{ .Values.kubeAPI.qps }}
- --kube-api-burst={{ int64 .Values.kubeAPI.burst }}
- --zap-log-level={{ .Values.log.level }}
{{- end -}}


{{/* extraArgs, appended after every flag the chart sets: a flag given again there wins. */}}
{{- define "podsweeper.extraArgs" -}}
{{- with .Values.extraArgs -}}
{{- toYaml . -}}
{{- end -}}
{{- end -}}

{{/*
"true" when the host (a name or an IP literal, without its brackets and port) is loopback as the
program's listener takes it, "" otherwise: localhost (in any case, with a trailing dot, or a name
under .localhost), IPv4's 127.0.0.0/8, and IPv6's ::1 however it is written (its zeros left out or
written, "::" anywhere, a zone, a dotted tail: ::0.0.0.1), or IPv4's loopback mapped into IPv6
(::ffff:127.0.0.1, ::ffff:7f00:1, 0:0:0:0:0:ffff:127.0.0.1). The IPv6 literal is expanded to its
eight groups, each without its leading zeros, and compared group by group.
*/}}
{{- define "podsweeper.loopback" -}}
{{- $h := regexReplaceAll "%.*$" (lower (toString .)) "" | trimSuffix "." -}}
{{- if or (eq $h "localhost") (hasSuffix ".localhost" $h) -}}
true
{{- else if not (contains ":" $h) -}}
{{- if hasPrefix "127." $h }}true{{ end -}}
{{- else -}}
{{- $parts := splitList ":" $h -}}
{{- $tail := last $parts -}}
{{- if contains "." $tail -}}
{{- $o := splitList "." $tail -}}
{{- if eq (len $o) 4 -}}
{{- $hi := add (mul (atoi (index $o 0)) 256) (atoi (index $o 1)) -}}
{{- $lo := add (mul (atoi (index $o 2)) 256) (atoi (index $o 3)) -}}
{{- $h = printf "%s:%x:%x" (initial $parts | join ":") $hi $lo -}}
{{- end -}}
{{- end -}}
{{- $groups := list -}}
{{- if contains "::" $h -}}
{{- $lr := splitList "::" $h -}}
{{- $l := list -}}
{{- if ne (first $lr) "" }}{{ $l = splitList ":" (first $lr) }}{{ end -}}
{{- $r := list -}}
{{- if ne (last $lr) "" }}{{ $r = splitList ":" (last $lr) }}{{ end -}}
{{- $groups = $l -}}
{{- range until (max 0 (sub 8 (add (len $l) (len $r))) | int) }}{{ $groups = append $groups "0" }}{{ end -}}
{{- $groups = concat $groups $r -}}
{{- else -}}
{{- $groups = splitList ":" $h -}}
{{- end -}}
{{- $g := list -}}
{{- range $groups }}{{ $g = append $g (regexReplaceAll "^0+" . "") }}{{ end -}}
{{- if and (eq (len $g) 8) (eq (slice $g 0 5 | join "") "") -}}
{{- if or (and (eq (index $g 5) "") (eq (index $g 6) "") (eq (index $g 7) "1")) (and (eq (index $g 5) "ffff") (eq (len (index $g 6)) 4) (hasPrefix "7f" (index $g 6))) }}true{{ end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The scrape of the metrics (serviceMonitor.enabled): a Service in front of the pods' metrics port,
named as the release so that its series' job is the release's fullname (monitoring.selector's
default), and a ServiceMonitor (monitoring.coreos.com/v1, prometheus-operator's) that scrapes it
with its Prometheus's ServiceAccount token over HTTPS, as --metrics-secure wants (its certificate is
the program's own: not verified); and, with serviceMonitor.prometheusServiceAccount, the binding
of the metrics-reader ClusterRole to that ServiceAccount.
*/}}
{{- define "podsweeper.scrape" -}}
{{- if .Values.serviceMonitor.enabled }}
{{- $host := splitList ":" (toString .Values.metrics.bindAddress) | initial | join ":" | trimAll "[]" }}
{{- if eq (toString .Values.metrics.bindAddress) "0" }}
{{- fail "serviceMonitor.enabled needs the metrics: metrics.bindAddress is \"0\"" }}
{{- else if include "podsweeper.loopback" $host }}
{{- fail (printf "serviceMonitor.enabled needs the metrics on the pod's address: metrics.bindAddress %q is loopback" (toString .Values.metrics.bindAddress)) }}
{{- end }}
{{- $name := include "podsweeper.fullname" . }}
apiVersion: v1
kind: Service
metadata:
  name: {{ $name }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "podsweeper.labels" . | nindent 4 }}
spec:
  clusterIP: None
  selector:
    {{- include "podsweeper.selectorLabels" . | nindent 4 }}
  ports:
    - name: metrics
      port: {{ include "podsweeper.port" .Values.metrics.bindAddress }}
      targetPort: metrics
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ $name }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "podsweeper.labels" . | nindent 4 }}
    {{- with .Values.serviceMonitor.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  selector:
    matchLabels:
      {{- include "podsweeper.selectorLabels" . | nindent 6 }}
  namespaceSelector:
    matchNames:
      - {{ .Release.Namespace }}
  endpoints:
    - port: metrics
      path: /metrics
      interval: {{ .Values.serviceMonitor.interval }}
      {{- if .Values.metrics.secure }}
      scheme: https
      bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
      tlsConfig:
        insecureSkipVerify: true
      {{- else }}
      scheme: http
      {{- end }}
{{- with .Values.serviceMonitor.prometheusServiceAccount }}
{{- if .name }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $name }}-metrics-reader
  labels:
    {{- include "podsweeper.labels" $ | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $name }}-metrics-reader
subjects:
  - kind: ServiceAccount
    name: {{ .name }}
    namespace: {{ .namespace | default $.Release.Namespace }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
What kubectl podsweeper needs of a user (docs/operating/explain.md), as the user: a ClusterRole
<fullname>-explain that reads pods (the pod asked about, and the programs' pods) and Events (the
destroys' PUDestroyed and PUAbandoned, of pods and of nodes) everywhere, and a Role <fullname>-explain
in the release's namespace that lists its pods and opens a port-forward to them (pods/portforward,
create), through which it reads each program's status listener (--status-bind-address, loopback
only). A port-forward reaches any port of those pods: grant the Role to whom may read the programs'
state. With explain.subjects, a ClusterRoleBinding and a RoleBinding of each to them.
*/}}
{{- define "podsweeper.explain" -}}
{{- $name := printf "%s-explain" (include "podsweeper.fullname" .) -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $name }}
  labels:
    {{- include "podsweeper.labels" . | nindent 4 }}
rules:
  - apiGroups: [""]
    resources: ["pods"]
    verbs: ["get", "list"]
  - apiGroups: ["", "events.k8s.io"]
    resources: ["events"]
    verbs: ["get", "list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $name }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "podsweeper.labels" . | nindent 4 }}
rules:
  - apiGroups: [""]
    resources: ["pods"]
    verbs: ["get", "list"]
  - apiGroups: [""]
    resources: ["pods/portforward"]
    verbs: ["create", "get"]
{{- with .Values.explain.subjects }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $name }}
  labels:
    {{- include "podsweeper.labels" $ | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $name }}
subjects:
  {{- toYaml . | nindent 2 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name }}
  namespace: {{ $.Release.Namespace }}
  labels:
    {{- include "podsweeper.labels" $ | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $name }}
subjects:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

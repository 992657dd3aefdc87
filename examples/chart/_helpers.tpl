{{/*
The helpers of the three example charts (the _helpers.tpl of each chart
link here), the same in each: names, labels, the image, the API server's
address, the PromQL selector, and the flags every podsweeper program has
(podsweeper.sharedArgs), and extraArgs after the chart's own
(podsweeper.extraArgs). A flag added to program.Flags is added
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

{{/* The name of every object: the release's, with the chart's unless it has it. */}}
{{- define "cni-gc.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "cni-gc.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "cni-gc.labels" -}}
{{ include "cni-gc.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The image: repository@digest, or repository:tag (the appVersion by default). */}}
{{- define "cni-gc.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* The port of a "host:port" address. */}}
{{- define "cni-gc.port" -}}
{{- splitList ":" . | last -}}
{{- end -}}

{{/* KUBERNETES_SERVICE_HOST and _PORT from kubeAPI.host and .port, both or neither. */}}
{{- define "cni-gc.kubeAPIEnv" -}}
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
{{- define "cni-gc.selector" -}}
{{- .Values.monitoring.selector | default (printf "job=%q,namespace=%q" (include "cni-gc.fullname" .) .Release.Namespace) -}}
{{- end -}}

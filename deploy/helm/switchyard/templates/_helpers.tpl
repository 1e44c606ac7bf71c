{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "switchyard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: the release name, with the chart name unless the release already contains it. */}}
{{- define "switchyard.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "switchyard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "switchyard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "switchyard.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "switchyard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "switchyard.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "switchyard.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The gateway config as written to the ConfigMap: the user's `config` value with the addresses the pod's probes and
Service rely on, and the drain deadline that terminationGracePeriodSeconds is computed from.
*/}}
{{- define "switchyard.gatewayConfig" -}}
{{- $cfg := deepCopy .Values.config }}
{{- $static := dict
  "adminAddr" (printf "127.0.0.1:%d" (int .Values.ports.admin))
  "statsAddr" (printf "0.0.0.0:%d" (int .Values.ports.metrics))
  "readinessAddr" (printf "0.0.0.0:%d" (int .Values.ports.readiness))
  "drainTimeout" (printf "%ds" (int .Values.drainSeconds)) }}
{{- $_ := set $cfg "config" (mustMergeOverwrite (default (dict) (get $cfg "config")) $static) }}
{{- toYaml $cfg }}
{{- end }}

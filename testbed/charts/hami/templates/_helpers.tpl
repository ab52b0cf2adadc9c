{{/* Names and labels as HAMi's chart defines them (charts/hami/templates/_helpers.tpl, v2.9.0). */}}

{{- define "hami-vgpu.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hami-vgpu.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "hami-vgpu.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{- define "hami-vgpu.scheduler" -}}
{{- printf "%s-scheduler" (include "hami-vgpu.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hami-vgpu.device-plugin" -}}
{{- printf "%s-device-plugin" (include "hami-vgpu.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hami-vgpu.mock-device-plugin" -}}
{{- printf "%s-mock-device-plugin" (include "hami-vgpu.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hami-vgpu.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "hami-vgpu.labels" -}}
helm.sh/chart: {{ include "hami-vgpu.chart" . }}
{{ include "hami-vgpu.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "hami-vgpu.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hami-vgpu.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* registry/repository:tag, the tag defaulting to global.imageTag (HAMi's hami.image). */}}
{{- define "hami.image" -}}
{{- $registry := .global.imageRegistry | default .image.registry -}}
{{- printf "%s/%s:%s" $registry .image.repository (.image.tag | default .global.imageTag) -}}
{{- end -}}

{{/* The kube-scheduler image's tag: the cluster's version without its suffix (HAMi's resolvedKubeSchedulerTag). */}}
{{- define "hami.kubeScheduler.image" -}}
{{- $tag := regexReplaceAll "^(v[0-9]+\\.[0-9]+\\.[0-9]+)(.*)$" .Capabilities.KubeVersion.Version "$1" -}}
{{- $image := merge (dict "tag" (.Values.scheduler.kubeScheduler.image.tag | default $tag)) .Values.scheduler.kubeScheduler.image -}}
{{- include "hami.image" (dict "image" $image "global" .Values.global) -}}
{{- end -}}

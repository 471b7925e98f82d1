{{/* Chart name, truncated to 63 characters (DNS label). */}}
{{- define "pushworker.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release-chart unless the release name already holds the chart name. */}}
{{- define "pushworker.fullname" -}}
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

{{- define "pushworker.eventsName" -}}
{{- printf "%s-events" (include "pushworker.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "pushworker.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "pushworker.labels" -}}
helm.sh/chart: {{ include "pushworker.chart" . }}
{{ include "pushworker.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of the worker pods. */}}
{{- define "pushworker.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pushworker.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: worker
{{- end }}

{{/* Selector labels of the events pods. */}}
{{- define "pushworker.eventsSelectorLabels" -}}
app.kubernetes.io/name: {{ include "pushworker.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: events
{{- end }}

{{- define "pushworker.eventsLabels" -}}
helm.sh/chart: {{ include "pushworker.chart" . }}
{{ include "pushworker.eventsSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "pushworker.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "pushworker.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "pushworker.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion (toString .Values.image.tag)) }}
{{- end }}

{{/* terminationGracePeriodSeconds: explicit, or shutdownGraceSeconds + 15. */}}
{{- define "pushworker.terminationGrace" -}}
{{- if .Values.terminationGracePeriodSeconds }}
{{- .Values.terminationGracePeriodSeconds | int }}
{{- else }}
{{- add (.Values.shutdownGraceSeconds | int) 15 }}
{{- end }}
{{- end }}

{{/*
Render-time checks of values that JSON Schema cannot relate to each other. Included by the
worker Deployment so every render runs them.
*/}}
{{- define "pushworker.validate" -}}
{{- if not .Values.kafka.brokers }}
{{- fail "kafka.brokers is required (PUSHWORKER_KAFKA_BROKERS)" }}
{{- end }}
{{- if and (not .Values.redis.url) (not .Values.redis.existingSecret) }}
{{- fail "redis.url or redis.existingSecret is required (PUSHWORKER_REDIS_URL)" }}
{{- end }}
{{- if not .Values.msgIdKeys.existingSecret }}
{{- fail "msgIdKeys.existingSecret is required (PUSHWORKER_MSGID_KEYS comes from a Secret)" }}
{{- end }}
{{- if and .Values.credentials.existingSecret (not .Values.credentials.items) }}
{{- fail "credentials.items is required with credentials.existingSecret: Secret keys are flat, map each key to <appId>/<file> (e.g. {key: app_demo.apns.json, path: app_demo/apns.json})" }}
{{- end }}
{{- $partitions := .Values.kafka.partitions | int }}
{{- $grace := include "pushworker.terminationGrace" . | int }}
{{- if le $grace (.Values.shutdownGraceSeconds | int) }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed shutdownGraceSeconds (%d), or the kubelet kills the worker mid-drain" $grace (.Values.shutdownGraceSeconds | int)) }}
{{- end }}
{{- if and .Values.autoscaling.keda.enabled .Values.autoscaling.hpa.enabled }}
{{- fail "autoscaling.keda.enabled and autoscaling.hpa.enabled are exclusive (KEDA creates its own HPA)" }}
{{- end }}
{{- if .Values.autoscaling.keda.enabled }}
{{- if gt (.Values.autoscaling.keda.maxReplicaCount | int) $partitions }}
{{- fail (printf "autoscaling.keda.maxReplicaCount (%d) must not exceed kafka.partitions (%d): consumers beyond the partition count stay idle" (.Values.autoscaling.keda.maxReplicaCount | int) $partitions) }}
{{- end }}
{{- if gt (.Values.autoscaling.keda.minReplicaCount | int) (.Values.autoscaling.keda.maxReplicaCount | int) }}
{{- fail "autoscaling.keda.minReplicaCount must not exceed maxReplicaCount" }}
{{- end }}
{{- else if .Values.autoscaling.hpa.enabled }}
{{- if gt (.Values.autoscaling.hpa.maxReplicas | int) $partitions }}
{{- fail (printf "autoscaling.hpa.maxReplicas (%d) must not exceed kafka.partitions (%d)" (.Values.autoscaling.hpa.maxReplicas | int) $partitions) }}
{{- end }}
{{- if gt (.Values.autoscaling.hpa.minReplicas | int) (.Values.autoscaling.hpa.maxReplicas | int) }}
{{- fail "autoscaling.hpa.minReplicas must not exceed maxReplicas" }}
{{- end }}
{{- else if gt (.Values.replicaCount | int) $partitions }}
{{- fail (printf "replicaCount (%d) must not exceed kafka.partitions (%d)" (.Values.replicaCount | int) $partitions) }}
{{- end }}
{{- end }}

{{/* Environment shared by the worker and events containers. */}}
{{- define "pushworker.env" -}}
envFrom:
  - configMapRef:
      name: {{ include "pushworker.fullname" . }}
env:
  - name: PUSHWORKER_MSGID_KEYS
    valueFrom:
      secretKeyRef:
        name: {{ .Values.msgIdKeys.existingSecret }}
        key: {{ .Values.msgIdKeys.key }}
  {{- if .Values.redis.existingSecret }}
  - name: PUSHWORKER_REDIS_URL
    valueFrom:
      secretKeyRef:
        name: {{ .Values.redis.existingSecret }}
        key: {{ .Values.redis.existingSecretKey }}
  {{- end }}
  {{- range .Values.kafka.secretProperties }}
  - name: {{ printf "PUSHWORKER_RDKAFKA_%s" (.property | upper | replace "." "_" | replace "-" "_") }}
    valueFrom:
      secretKeyRef:
        name: {{ .secretName }}
        key: {{ .secretKey }}
  {{- end }}
  {{- with .Values.extraEnv }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

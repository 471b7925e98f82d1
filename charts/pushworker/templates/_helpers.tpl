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

{{- define "pushworker.apiName" -}}
{{- printf "%s-api" (include "pushworker.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Secret holding the API's tokens file: api.tokens.existingSecret, or the chart's own. */}}
{{- define "pushworker.apiTokensSecret" -}}
{{- .Values.api.tokens.existingSecret | default (printf "%s-tokens" (include "pushworker.apiName" .) | trunc 63 | trimSuffix "-") }}
{{- end }}

{{- define "pushworker.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "pushworker.labels" -}}
helm.sh/chart: {{ include "pushworker.chart" . }}
{{ include "pushworker.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- include "pushworker.commonLabels" . }}
{{- end }}

{{/* commonLabels, on every object and pod (never in a selector): a newline, then the labels. */}}
{{- define "pushworker.commonLabels" -}}
{{- with .Values.commonLabels }}{{ toYaml . | nindent 0 }}{{ end }}
{{- end }}

{{/* Selector labels of the worker pods. */}}
{{- define "pushworker.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pushworker.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: worker
{{- end }}

{{/* Selector labels of one lane's worker pods: (list root lane); lane "" is the main Deployment. */}}
{{- define "pushworker.laneSelectorLabels" -}}
{{- $root := index . 0 }}{{ $lane := index . 1 }}
{{- if $lane }}
app.kubernetes.io/name: {{ include "pushworker.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: worker-{{ $lane }}
{{- else }}
{{- include "pushworker.selectorLabels" $root }}
{{- end }}
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
{{- include "pushworker.commonLabels" . }}
{{- end }}

{{/* Selector labels of the API pods. */}}
{{- define "pushworker.apiSelectorLabels" -}}
app.kubernetes.io/name: {{ include "pushworker.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: api
{{- end }}

{{- define "pushworker.apiLabels" -}}
helm.sh/chart: {{ include "pushworker.chart" . }}
{{ include "pushworker.apiSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- include "pushworker.commonLabels" . }}
{{- end }}

{{- define "pushworker.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "pushworker.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
An image reference from {registry, repository, tag, digest}: global.imageRegistry wins over the
image's registry, a digest wins over the tag (<registry>/<repository>@sha256:…), an empty tag
is `default`. Call with (dict "image" <values> "global" .Values.global "default" <tag>).
*/}}
{{- define "pushworker.imageRef" -}}
{{- $image := .image }}
{{- $global := .global | default dict }}
{{- $registry := $global.imageRegistry | default $image.registry | default "" }}
{{- $ref := $image.repository }}
{{- if $registry }}
{{- $ref = printf "%s/%s" (trimSuffix "/" $registry) $image.repository }}
{{- end }}
{{- if $image.digest }}
{{- printf "%s@%s" $ref $image.digest }}
{{- else }}
{{- printf "%s:%s" $ref (default .default (toString ($image.tag | default ""))) }}
{{- end }}
{{- end }}

{{- define "pushworker.image" -}}
{{- include "pushworker.imageRef" (dict "image" .Values.image "global" .Values.global "default" .Chart.AppVersion) }}
{{- end }}

{{/*
imagePullSecrets of every pod: global.imagePullSecrets then imagePullSecrets, each a name or
{name: …}, duplicates dropped. Renders nothing when there are none.
*/}}
{{- define "pushworker.imagePullSecrets" -}}
{{- $names := list }}
{{- $global := .Values.global | default dict }}
{{- range concat ($global.imagePullSecrets | default list) (.Values.imagePullSecrets | default list) }}
{{- if kindIs "string" . }}
{{- $names = append $names . }}
{{- else if and (kindIs "map" .) .name }}
{{- $names = append $names .name }}
{{- end }}
{{- end }}
{{- with uniq $names }}
imagePullSecrets:
{{- range . }}
  - name: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* Lowest replica count the fleet can have (0 when it may scale to zero). */}}
{{- define "pushworker.minReplicas" -}}
{{- if .Values.autoscaling.keda.enabled }}
{{- .Values.autoscaling.keda.minReplicaCount | int }}
{{- else if .Values.autoscaling.hpa.enabled }}
{{- .Values.autoscaling.hpa.minReplicas | int }}
{{- else }}
{{- .Values.replicaCount | int }}
{{- end }}
{{- end }}

{{/* Selector labels of the `helm test` pods (not matched by the NetworkPolicy's podSelector). */}}
{{- define "pushworker.testSelectorLabels" -}}
app.kubernetes.io/name: {{ include "pushworker.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: helm-test
{{- end }}

{{/*
The KEDA TriggerAuthentication generated from the Kafka properties, as JSON:
{"name": <TriggerAuthentication>, "secret": <generated Secret>, "values": {param: value} (into
the generated Secret), "refs": [{parameter, name, key}]}; "{}" when none is generated (KEDA off,
an own authenticationRef, generation off, or no SASL/TLS). Fails on what KEDA cannot be given.
*/}}
{{- define "pushworker.kedaKafkaAuth" -}}
{{- $keda := .Values.autoscaling.keda }}
{{- $props := .Values.kafka.properties | default dict }}
{{- $protocol := index $props "security.protocol" | default "" | toString | upper }}
{{- $ta := $keda.triggerAuthentication | default dict }}
{{- if and $keda.enabled (not $keda.authenticationRef) (ne (toString $ta.create) "false") (has $protocol (list "SASL_PLAINTEXT" "SASL_SSL" "SSL")) }}
{{- $fullname := include "pushworker.fullname" . }}
{{- $secretName := printf "%s-keda-kafka" $fullname | trunc 63 | trimSuffix "-" }}
{{- $values := dict }}
{{- $refs := list }}
{{- $explicit := $ta.secretRefs | default dict }}
{{- $fromSecret := dict }}
{{- range .Values.kafka.secretProperties }}
{{- $_ := set $fromSecret .property (dict "name" .secretName "key" .secretKey) }}
{{- end }}
{{- if hasPrefix "SASL_" $protocol }}
{{- $mechanism := index $props "sasl.mechanisms" | default (index $props "sasl.mechanism") | default "GSSAPI" | toString | upper }}
{{- $modes := dict "PLAIN" "plaintext" "SCRAM-SHA-256" "scram_sha256" "SCRAM-SHA-512" "scram_sha512" }}
{{- if not (hasKey $modes $mechanism) }}
{{- fail (printf "autoscaling.keda: sasl.mechanism %s cannot be mapped to a KEDA TriggerAuthentication (PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 can): create your own and set autoscaling.keda.authenticationRef" $mechanism) }}
{{- end }}
{{- $_ := set $values "sasl" (index $modes $mechanism) }}
{{- end }}
{{- $_ := set $values "tls" (ternary "enable" "disable" (hasSuffix "SSL" $protocol)) }}
{{- $params := list (list "username" "sasl.username") (list "password" "sasl.password") }}
{{- if hasSuffix "SSL" $protocol }}
{{- $params = concat $params (list (list "ca" "ssl.ca.pem") (list "cert" "ssl.certificate.pem") (list "key" "ssl.key.pem") (list "keyPassword" "ssl.key.password")) }}
{{- end }}
{{- range $params }}
{{- $param := index . 0 }}
{{- $property := index . 1 }}
{{- if hasKey $explicit $param }}
{{- $ref := index $explicit $param }}
{{- $refs = append $refs (dict "parameter" $param "name" $ref.name "key" $ref.key) }}
{{- else if hasKey $fromSecret $property }}
{{- $ref := index $fromSecret $property }}
{{- $refs = append $refs (dict "parameter" $param "name" $ref.name "key" $ref.key) }}
{{- else if hasKey $props $property }}
{{- $_ := set $values $param (index $props $property | toString) }}
{{- end }}
{{- end }}
{{- $given := dict }}
{{- range $refs }}{{ $_ := set $given .parameter true }}{{ end }}
{{- range $k, $v := $values }}{{ $_ := set $given $k true }}{{ end }}
{{- if hasKey $values "sasl" }}
{{- if not (and (hasKey $given "username") (hasKey $given "password")) }}
{{- fail "autoscaling.keda: SASL needs sasl.username and sasl.password for the TriggerAuthentication (kafka.properties / kafka.secretProperties, or autoscaling.keda.triggerAuthentication.secretRefs)" }}
{{- end }}
{{- end }}
{{- range list (list "ca" "ssl.ca.location") (list "cert" "ssl.certificate.location") (list "key" "ssl.key.location") }}
{{- if and (hasKey $props (index . 1)) (not (hasKey $given (index . 0))) }}
{{- fail (printf "autoscaling.keda: kafka.properties sets %s, a file KEDA cannot read: give autoscaling.keda.triggerAuthentication.secretRefs.%s {name, key} (the Secret holding the PEM) or your own autoscaling.keda.authenticationRef" (index . 1) (index . 0)) }}
{{- end }}
{{- end }}
{{- if ne (hasKey $given "cert") (hasKey $given "key") }}
{{- fail "autoscaling.keda: a TLS client certificate needs both cert and key (ssl.certificate.pem and ssl.key.pem, or secretRefs.cert and secretRefs.key)" }}
{{- end }}
{{- range $k, $v := $values }}
{{- $refs = append $refs (dict "parameter" $k "name" $secretName "key" $k) }}
{{- end }}
{{- dict "name" (printf "%s-kafka" $fullname | trunc 63 | trimSuffix "-") "secret" $secretName "values" $values "refs" $refs | toJson }}
{{- else }}
{{- "{}" }}
{{- end }}
{{- end }}

{{/* Label matchers of the worker's / events pods' series in the PrometheusRule. */}}
{{- define "pushworker.workerSelector" -}}
{{- .Values.prometheusRule.workerSelector | default (printf "namespace=%q,job=%q" .Release.Namespace (include "pushworker.fullname" .)) }}
{{- end }}
{{- define "pushworker.eventsSelector" -}}
{{- .Values.prometheusRule.eventsSelector | default (printf "namespace=%q,job=%q" .Release.Namespace (include "pushworker.eventsName" .)) }}
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
{{- $errors := list }}
{{- if not .Values.kafka.brokers }}
{{- $errors = append $errors "kafka.brokers is required (PUSHWORKER_KAFKA_BROKERS)" }}
{{- end }}
{{- $redis := .Values.redis }}
{{- if and $redis.existingSecretPasswordKey (not $redis.existingSecret) }}
{{- $errors = append $errors "redis.existingSecretPasswordKey needs redis.existingSecret (the Secret holding the password)" }}
{{- end }}
{{- if and (not $redis.url) (or (not $redis.existingSecret) $redis.existingSecretPasswordKey) }}
{{- $errors = append $errors "redis.url or redis.existingSecret is required (PUSHWORKER_REDIS_URL; with redis.existingSecretPasswordKey the URL still comes from redis.url)" }}
{{- end }}
{{- if and $redis.existingSecretSentinelPasswordKey (not $redis.existingSecret) }}
{{- $errors = append $errors "redis.existingSecretSentinelPasswordKey needs redis.existingSecret (the Secret holding the Sentinels' password)" }}
{{- end }}
{{- if and $redis.existingSecretSentinelPasswordKey $redis.url (not (regexMatch "^rediss?\\+sentinel://" $redis.url)) }}
{{- $errors = append $errors "redis.existingSecretSentinelPasswordKey is for Sentinel: redis.url must be redis+sentinel:// or rediss+sentinel://" }}
{{- end }}
{{- if and (or $redis.tls.caSecret $redis.tls.clientSecret) $redis.url (not (hasPrefix "rediss" $redis.url)) }}
{{- $errors = append $errors "redis.tls.caSecret / clientSecret need TLS: redis.url must be rediss://, rediss+cluster:// or rediss+sentinel://" }}
{{- end }}
{{- if regexMatch "^[a-z+]+://[^/@]*:[^/@]+@" ($redis.url | default "") }}
{{- $errors = append $errors "redis.url carries a password, and it would land in a ConfigMap: put the password in a Secret (redis.existingSecret + redis.existingSecretPasswordKey) or the whole URL (redis.existingSecret + redis.existingSecretKey)" }}
{{- end }}
{{- if and .Values.events.ingress.enabled (not .Values.events.enabled) }}
{{- $errors = append $errors "events.ingress.enabled needs events.enabled (the Ingress routes to the events Service)" }}
{{- end }}
{{- if and .Values.api.ingress.enabled (not .Values.api.enabled) }}
{{- $errors = append $errors "api.ingress.enabled needs api.enabled (the Ingress routes to the API Service)" }}
{{- end }}
{{- if and .Values.api.enabled (not .Values.api.tokens.existingSecret) (not .Values.api.tokens.values) }}
{{- $errors = append $errors "api.enabled needs api.tokens.existingSecret or api.tokens.values (PUSHWORKER_API_TOKENS_FILE: pushworker api refuses to start without a token)" }}
{{- end }}
{{- if not .Values.msgIdKeys.existingSecret }}
{{- $errors = append $errors "msgIdKeys.existingSecret is required (PUSHWORKER_MSGID_KEYS comes from a Secret)" }}
{{- end }}
{{- if and .Values.credentials.existingSecret (not .Values.credentials.items) }}
{{- $errors = append $errors "credentials.items is required with credentials.existingSecret: Secret keys are flat, map each key to <appId>/<file> (e.g. {key: app_demo.apns.json, path: app_demo/apns.json})" }}
{{- end }}
{{- $partitions := .Values.kafka.partitions | int }}
{{- $grace := include "pushworker.terminationGrace" . | int }}
{{- if le $grace (.Values.shutdownGraceSeconds | int) }}
{{- $errors = append $errors (printf "terminationGracePeriodSeconds (%d) must exceed shutdownGraceSeconds (%d), or the kubelet kills the worker mid-drain" $grace (.Values.shutdownGraceSeconds | int)) }}
{{- end }}
{{- if and .Values.autoscaling.keda.enabled .Values.autoscaling.hpa.enabled }}
{{- $errors = append $errors "autoscaling.keda.enabled and autoscaling.hpa.enabled are exclusive (KEDA creates its own HPA)" }}
{{- end }}
{{- if .Values.autoscaling.keda.enabled }}
{{- if gt (.Values.autoscaling.keda.maxReplicaCount | int) $partitions }}
{{- $errors = append $errors (printf "autoscaling.keda.maxReplicaCount (%d) must not exceed kafka.partitions (%d): consumers beyond the partition count stay idle" (.Values.autoscaling.keda.maxReplicaCount | int) $partitions) }}
{{- end }}
{{- if gt (.Values.autoscaling.keda.minReplicaCount | int) (.Values.autoscaling.keda.maxReplicaCount | int) }}
{{- $errors = append $errors "autoscaling.keda.minReplicaCount must not exceed maxReplicaCount" }}
{{- end }}
{{- else if .Values.autoscaling.hpa.enabled }}
{{- if gt (.Values.autoscaling.hpa.maxReplicas | int) $partitions }}
{{- $errors = append $errors (printf "autoscaling.hpa.maxReplicas (%d) must not exceed kafka.partitions (%d)" (.Values.autoscaling.hpa.maxReplicas | int) $partitions) }}
{{- end }}
{{- if gt (.Values.autoscaling.hpa.minReplicas | int) (.Values.autoscaling.hpa.maxReplicas | int) }}
{{- $errors = append $errors "autoscaling.hpa.minReplicas must not exceed maxReplicas" }}
{{- end }}
{{- else if gt (.Values.replicaCount | int) $partitions }}
{{- $errors = append $errors (printf "replicaCount (%d) must not exceed kafka.partitions (%d)" (.Values.replicaCount | int) $partitions) }}
{{- end }}
{{- if $errors }}
{{- fail (printf "\n%d problem(s) with the values:\n- %s" (len $errors) (join "\n- " $errors)) }}
{{- end }}
{{- end }}

{{/* The Redis TLS Secrets' mounts (redis.tls), for the worker and events containers. */}}
{{- define "pushworker.redisTLSVolumeMounts" -}}
{{- if .Values.redis.tls.caSecret }}
- name: redis-tls-ca
  mountPath: {{ printf "%s/ca" .Values.redis.tls.mountPath }}
  readOnly: true
{{- end }}
{{- if .Values.redis.tls.clientSecret }}
- name: redis-tls-client
  mountPath: {{ printf "%s/client" .Values.redis.tls.mountPath }}
  readOnly: true
{{- end }}
{{- end }}

{{/* The Redis TLS Secrets' volumes: only the keys named, read by the owner only. */}}
{{- define "pushworker.redisTLSVolumes" -}}
{{- with .Values.redis.tls }}
{{- if .caSecret }}
- name: redis-tls-ca
  secret:
    secretName: {{ .caSecret }}
    defaultMode: 0440
    items:
      - key: {{ .caKey }}
        path: {{ .caKey }}
{{- end }}
{{- if .clientSecret }}
- name: redis-tls-client
  secret:
    secretName: {{ .clientSecret }}
    defaultMode: 0440
    items:
      - key: {{ .clientCertKey }}
        path: {{ .clientCertKey }}
      - key: {{ .clientKeyKey }}
        path: {{ .clientKeyKey }}
{{- end }}
{{- end }}
{{- end }}

{{/* "true" when PUSHWORKER_REDIS_URL comes whole from redis.existingSecret. */}}
{{- define "pushworker.redisUrlFromSecret" -}}
{{- if and .Values.redis.existingSecret (not .Values.redis.existingSecretPasswordKey) }}true{{ end }}
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
  {{- include "pushworker.connectionEnv" . }}
{{- end }}

{{/*
The env entries every container of the chart's processes takes besides the ConfigMap (the
worker's, the events' and the API's): Redis and Kafka secrets, then extraEnv. Each entry on
its own line, indented 2, after a newline.
*/}}
{{- define "pushworker.connectionEnv" -}}
  {{- if include "pushworker.redisUrlFromSecret" . }}
  - name: PUSHWORKER_REDIS_URL
    valueFrom:
      secretKeyRef:
        name: {{ .Values.redis.existingSecret }}
        key: {{ .Values.redis.existingSecretKey }}
  {{- end }}
  {{- if .Values.redis.existingSecretPasswordKey }}
  # Overrides the password of PUSHWORKER_REDIS_URL.
  - name: PUSHWORKER_REDIS_PASSWORD
    valueFrom:
      secretKeyRef:
        name: {{ .Values.redis.existingSecret }}
        key: {{ .Values.redis.existingSecretPasswordKey }}
  {{- end }}
  {{- if .Values.redis.existingSecretSentinelPasswordKey }}
  - name: PUSHWORKER_REDIS_SENTINEL_PASSWORD
    valueFrom:
      secretKeyRef:
        name: {{ .Values.redis.existingSecret }}
        key: {{ .Values.redis.existingSecretSentinelPasswordKey }}
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

{{/*
The Kafka settings of `pushworker topics apply` as inline env entries: a pre-install hook runs
before the chart's ConfigMap exists, so it cannot use envFrom. Secrets it names must exist
already (kafka.secretProperties).
*/}}
{{- define "pushworker.kafkaEnv" -}}
- name: PUSHWORKER_KAFKA_BROKERS
  value: {{ .Values.kafka.brokers | quote }}
- name: PUSHWORKER_KAFKA_GROUP
  value: {{ .Values.kafka.group | quote }}
{{- range $key, $name := dict "JOBS" .Values.kafka.topics.jobs "JOBS_TRANSACTIONAL" .Values.kafka.topics.jobsTransactional "RETRY" .Values.kafka.topics.retry "RESULTS" .Values.kafka.topics.results "TOKENS" .Values.kafka.topics.tokens "DLQ" .Values.kafka.topics.dlq "EVENTS" .Values.kafka.topics.events }}
- name: PUSHWORKER_TOPIC_{{ $key }}
  value: {{ $name | quote }}
{{- end }}
- name: PUSHWORKER_LOG_LEVEL
  value: {{ .Values.log.level | quote }}
- name: PUSHWORKER_LOG_FORMAT
  value: {{ .Values.log.format | quote }}
{{- range $name, $value := .Values.kafka.properties }}
- name: {{ printf "PUSHWORKER_RDKAFKA_%s" ($name | upper | replace "." "_" | replace "-" "_") }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- range .Values.kafka.secretProperties }}
- name: {{ printf "PUSHWORKER_RDKAFKA_%s" (.property | upper | replace "." "_" | replace "-" "_") }}
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ .secretKey }}
{{- end }}
{{- end }}

{{/*
A Deployment strategy from values: as given, but without rollingUpdate for Recreate (the
default rollingUpdate stays merged in when only the type is overridden). Empty: none.
*/}}
{{- define "pushworker.strategy" -}}
{{- with . }}
{{- if eq (.type | default "RollingUpdate") "Recreate" }}
strategy:
  type: Recreate
{{- else }}
strategy:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
{{- end }}

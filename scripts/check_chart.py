#!/usr/bin/env python3
"""Render charts/pushworker with several value sets and validate every manifest.

Rendering: the Helm v4 Go SDK through `helm-python-sdk` (import `helm_python`; its wheel
bundles libhelm_c.so, so no `helm` binary is needed and nothing is fetched). Rendering also
applies the chart's values.schema.json, exactly like `helm install`.

Validation:
- built-in kinds (Deployment, ConfigMap, Service, HPA, PDB, NetworkPolicy, ...) with
  `kubernetes-validate` in strict mode (unknown fields are errors) against Kubernetes 1.27
  (the chart's kubeVersion floor) and the newest schema the package ships;
- the CRDs (keda.sh/v1alpha1 ScaledObject and TriggerAuthentication, monitoring.coreos.com/v1
  ServiceMonitor and PrometheusRule), which kubernetes-validate has no schema for, against
  small schemas embedded below that cover the fields this chart uses (taken from the KEDA 2.x
  and prometheus-operator CRDs);
- chart-specific expectations (securityContext, probes, grace period, every env var, KEDA
  trigger and its TriggerAuthentication, partition limit, image references, the events
  Service/Ingress, the API (`pushworker api`: Deployment, Service, Ingress, tokens Secret,
  NetworkPolicy), `helm test` pods, alerts, dashboard queries) as named checks, every
  option rendered on and off;
- the alert rules and the dashboard queries with `promtool` (Prometheus 2.42, Debian's
  `prometheus` package; taken from PATH, else unpacked once into .build/promtool with
  `apt-get download`): `check rules` (PromQL and annotation templates) and `test rules`
  (synthetic series: each tested alert fires when it should and not on a healthy fleet; the
  lag query keeps its last value when every worker is gone);
- every runbook_url anchor exists in docs/operations.md, every metric an alert or panel uses
  is listed in docs/reference/metrics.md and is exported by Sources/ (or marked "planned" there);
- the chart rendered as a subchart of a parent chart written to a temp dir (`global`);
- `helm lint --strict` on the chart and on that parent;
- the operator's features, each rendered on and off: commonLabels on every object and pod,
  podAnnotations, extraEnv, extraVolumes/extraVolumeMounts, initContainers, sidecars,
  extraObjects (objects and templated strings), the rollout strategy, the startupProbe, the
  ServiceMonitor's namespace and relabelings, the `topics apply` hook Job;
- values.schema.json refuses unknown keys in every object (`global` and extraObjects' manifests
  excepted), its embedded Kubernetes definitions are current (scripts/chart_schema_k8s.py);
- value sets that must FAIL to render (keda maxReplicaCount > partitions, a typo at any level
  such as `kafka.brokrs`, ...), and every missing required value reported in one error.

Prints one line per failure (all lines with -v), then "N passed, N failed"; exit 1 on any
failure. Usage: python3 scripts/check_chart.py [-v]
"""
from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

try:
    import helm_python as helm
    import jsonschema
    import kubernetes_validate
    import yaml
except ImportError as e:  # pragma: no cover
    print(f"check_chart: {e.name} is missing: pip install -r scripts/requirements-ci.txt", file=sys.stderr)
    sys.exit(2)

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "charts" / "pushworker"
DASHBOARD = CHART / "dashboards" / "pushworker.json"
OPERATIONS = ROOT / "docs" / "operations.md"
METRICS_REFERENCE = ROOT / "docs" / "reference" / "metrics.md"
KUBE_VERSIONS = ("1.27", kubernetes_validate.latest_version())
RELEASE, NAMESPACE = "pw", "push"
FULLNAME = "pw-pushworker"

VERBOSE = "-v" in sys.argv[1:]
passed = 0
failed = 0


def ok(label: str) -> None:
    global passed
    passed += 1
    if VERBOSE:
        print(f"ok   {label}")


def fail(label: str, why: str) -> None:
    global failed
    failed += 1
    print(f"FAIL {label}: {why}")


def check(label: str, condition: bool, why: str = "expectation not met") -> None:
    if condition:
        ok(label)
    else:
        fail(label, why)


# --- embedded CRD schemas -------------------------------------------------------------------
_META = {"type": "object", "required": ["name"],
         "properties": {"name": {"type": "string", "minLength": 1}, "labels": {"type": "object"},
                        "annotations": {"type": "object"}, "namespace": {"type": "string"}}}
_STR_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
SCALED_OBJECT_SCHEMA = {
    "type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "keda.sh/v1alpha1"}, "kind": {"const": "ScaledObject"}, "metadata": _META,
        "spec": {"type": "object", "required": ["scaleTargetRef", "triggers"], "additionalProperties": False,
                 "properties": {
                     "scaleTargetRef": {"type": "object", "required": ["name"], "additionalProperties": False,
                                        "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                                       "name": {"type": "string"}, "envSourceContainerName": {"type": "string"}}},
                     "pollingInterval": {"type": "integer", "minimum": 1},
                     "cooldownPeriod": {"type": "integer", "minimum": 0},
                     "initialCooldownPeriod": {"type": "integer", "minimum": 0},
                     "idleReplicaCount": {"type": "integer", "minimum": 0},
                     "minReplicaCount": {"type": "integer", "minimum": 0},
                     "maxReplicaCount": {"type": "integer", "minimum": 1},
                     "fallback": {"type": "object"},
                     "advanced": {"type": "object", "additionalProperties": False, "properties": {
                         "restoreToOriginalReplicaCount": {"type": "boolean"},
                         "scalingModifiers": {"type": "object"},
                         "horizontalPodAutoscalerConfig": {"type": "object", "additionalProperties": False, "properties": {
                             "name": {"type": "string"}, "behavior": {"type": "object"}}}}},
                     "triggers": {"type": "array", "minItems": 1, "items": {
                         "type": "object", "required": ["type", "metadata"], "additionalProperties": False,
                         "properties": {"type": {"type": "string"}, "name": {"type": "string"},
                                        "useCachedMetrics": {"type": "boolean"}, "metricType": {"enum": ["AverageValue", "Value", "Utilization"]},
                                        "metadata": _STR_MAP,
                                        "authenticationRef": {"type": "object", "required": ["name"],
                                                              "properties": {"name": {"type": "string"}, "kind": {"type": "string"}}}}}}}}}}
KAFKA_TRIGGER_SCHEMA = {  # KEDA kafka scaler metadata (keda.sh/docs/2.x/scalers/apache-kafka)
    "type": "object", "required": ["bootstrapServers", "consumerGroup", "topic", "lagThreshold"],
    "properties": {"bootstrapServers": {"type": "string", "minLength": 1}, "consumerGroup": {"type": "string", "minLength": 1},
                   "topic": {"type": "string", "minLength": 1}, "lagThreshold": {"type": "string", "pattern": "^[0-9]+$"},
                   "activationLagThreshold": {"type": "string", "pattern": "^[0-9]+$"},
                   "offsetResetPolicy": {"enum": ["earliest", "latest"]},
                   "allowIdleConsumers": {"enum": ["true", "false"]},
                   "excludePersistentLag": {"enum": ["true", "false"]},
                   "scaleToZeroOnInvalidOffset": {"enum": ["true", "false"]},
                   "limitToPartitionsWithLag": {"enum": ["true", "false"]}},
    "additionalProperties": False}
SERVICE_MONITOR_SCHEMA = {
    "type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"}, "kind": {"const": "ServiceMonitor"}, "metadata": _META,
        "spec": {"type": "object", "required": ["selector", "endpoints"], "additionalProperties": False, "properties": {
            "selector": {"type": "object", "properties": {"matchLabels": _STR_MAP, "matchExpressions": {"type": "array"}}},
            "namespaceSelector": {"type": "object", "properties": {"any": {"type": "boolean"},
                                                                    "matchNames": {"type": "array", "items": {"type": "string"}}}},
            "jobLabel": {"type": "string"},
            "endpoints": {"type": "array", "minItems": 1, "items": {
                "type": "object", "additionalProperties": False,
                "properties": {"port": {"type": "string"}, "targetPort": {"type": ["string", "integer"]},
                               "path": {"type": "string"}, "scheme": {"enum": ["http", "https"]},
                               "interval": {"type": "string", "pattern": "^(0|(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"},
                               "scrapeTimeout": {"type": "string", "pattern": "^(0|(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"},
                               "honorLabels": {"type": "boolean"}, "relabelings": {"type": "array"},
                               "metricRelabelings": {"type": "array"}}}}}}}}
_DURATION = {"type": "string", "pattern": "^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"}
PROMETHEUS_RULE_SCHEMA = {  # prometheus-operator monitoring.coreos.com/v1 PrometheusRule
    "type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"}, "kind": {"const": "PrometheusRule"}, "metadata": _META,
        "spec": {"type": "object", "required": ["groups"], "additionalProperties": False, "properties": {
            "groups": {"type": "array", "minItems": 1, "items": {
                "type": "object", "required": ["name", "rules"], "additionalProperties": False,
                "properties": {"name": {"type": "string", "minLength": 1}, "interval": _DURATION,
                               "query_offset": _DURATION, "limit": {"type": "integer"},
                               "partial_response_strategy": {"type": "string"}, "labels": _STR_MAP,
                               "rules": {"type": "array", "minItems": 1, "items": {
                                   "type": "object", "required": ["expr"], "additionalProperties": False,
                                   "oneOf": [{"required": ["alert"]}, {"required": ["record"]}],
                                   "properties": {"alert": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
                                                  "record": {"type": "string"},
                                                  "expr": {"type": ["string", "integer"], "minLength": 1},
                                                  "for": _DURATION, "keep_firing_for": _DURATION,
                                                  "labels": _STR_MAP, "annotations": _STR_MAP}}}}}}}}}}
TRIGGER_AUTHENTICATION_SCHEMA = {  # keda.sh/v1alpha1 TriggerAuthentication (the parts this chart uses)
    "type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "keda.sh/v1alpha1"}, "kind": {"const": "TriggerAuthentication"}, "metadata": _META,
        "spec": {"type": "object", "additionalProperties": False, "minProperties": 1, "properties": {
            "secretTargetRef": {"type": "array", "minItems": 1, "items": {
                "type": "object", "required": ["parameter", "name", "key"], "additionalProperties": False,
                "properties": {"parameter": {"type": "string", "minLength": 1}, "name": {"type": "string", "minLength": 1},
                               "key": {"type": "string", "minLength": 1}}}},
            "env": {"type": "array"}, "configMapTargetRef": {"type": "array"}, "podIdentity": {"type": "object"}}}}}
CRD_SCHEMAS = {("keda.sh/v1alpha1", "ScaledObject"): SCALED_OBJECT_SCHEMA,
               ("keda.sh/v1alpha1", "TriggerAuthentication"): TRIGGER_AUTHENTICATION_SCHEMA,
               ("monitoring.coreos.com/v1", "ServiceMonitor"): SERVICE_MONITOR_SCHEMA,
               ("monitoring.coreos.com/v1", "PrometheusRule"): PROMETHEUS_RULE_SCHEMA}
# Parameters the KEDA kafka scaler reads from a TriggerAuthentication (keda.sh/docs/2.x/scalers/apache-kafka).
KEDA_KAFKA_AUTH_PARAMS = {"sasl", "username", "password", "tls", "ca", "cert", "key", "keyPassword"}

# --- value sets -----------------------------------------------------------------------------
REQUIRED = {"kafka": {"brokers": "kafka-0.kafka:9092,kafka-1.kafka:9092"},
            "redis": {"url": "redis://redis-master.redis:6379/0"},
            "msgIdKeys": {"existingSecret": "pushworker-msgid"}}


def merged(*parts: dict) -> dict:
    out: dict = {}
    for part in parts:
        _merge(out, copy.deepcopy(part))
    return out


def _merge(into: dict, new: dict) -> None:
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = v


CREDENTIALS = {"credentials": {"existingSecret": "pushworker-credentials", "items": [
    {"key": "app_demo.apns.json", "path": "app_demo/apns.json"},
    {"key": "app_demo.apns.p8", "path": "app_demo/AuthKey_ABC123DEFG.p8"},
    {"key": "app_demo.fcm.json", "path": "app_demo/fcm.json"},
    {"key": "app_demo.webpush.json", "path": "app_demo/webpush.json"},
    {"key": "app_demo.app.json", "path": "app_demo/app.json"}],
    "extraSecrets": [{"name": "pushworker-app-shop", "items": [{"key": "apns.json", "path": "app_shop/apns.json"}]}]}}
SETS: dict[str, dict] = {
    "required-only": REQUIRED,
    "full-config": merged(REQUIRED, CREDENTIALS, {
        "kafka": {"properties": {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                 "sasl.username": "pushworker", "enable.idempotence": True},
                  "secretProperties": [{"property": "sasl.password", "secretName": "kafka-auth", "secretKey": "password"}]},
        "redis": {"url": "", "existingSecret": "redis-auth"},
        "caFile": "/etc/pushworker/ca/ca.crt", "webpush": {"allowedHosts": "push.internal.example,.corp.example"},
        "extraVolumes": [{"name": "ca", "configMap": {"name": "corp-ca"}}],
        "extraVolumeMounts": [{"name": "ca", "mountPath": "/etc/pushworker/ca", "readOnly": True}],
        "image": {"tag": "1.2.3"}, "replicaCount": 24, "terminationGracePeriodSeconds": 60,
        "worker": {"resendUnanswered": "never", "maxInFlightPerApp": 500},
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                       "whenUnsatisfiable": "ScheduleAnyway",
                                       "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "pushworker"}}}]}),
    "keda": merged(REQUIRED, {"autoscaling": {"keda": {"enabled": True, "maxReplicaCount": 24, "includeRetryTopic": True,
                                                        "authenticationRef": "kafka-trigger-auth"}}}),
    "hpa": merged(REQUIRED, {"autoscaling": {"hpa": {"enabled": True}}}),
    "lanes-dedicated": merged(REQUIRED, {"lanes": {"transactional": {"dedicated": True}}, "serviceMonitor": {"enabled": True},
                                         "networkPolicy": {"enabled": True}, "events": {"enabled": True}}),
    "events-netpol-monitor": merged(REQUIRED, CREDENTIALS, {
        "events": {"enabled": True}, "serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
        "networkPolicy": {"enabled": True, "kafka": {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kafka"}}}]},
                          "redis": {"to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}]}},
        "dashboard": {"configMap": {"enabled": True}}}),
    # The alerts, with every knob turned: object labels, labels on every alert, one alert
    # overridden, one disabled, extra rules.
    "prometheus-rule": merged(REQUIRED, {
        "events": {"enabled": True},
        "prometheusRule": {"enabled": True, "labels": {"release": "kube-prometheus-stack"},
                           "annotations": {"owner": "push-team"}, "additionalAlertLabels": {"team": "push"},
                           "additionalAlertAnnotations": {"dashboard": "https://grafana.example/d/pushworker"},
                           "alerts": {"PushworkerConsumerLagHigh": {"threshold": 50000, "severity": "critical",
                                                                    "labels": {"pager": "yes"}, "annotations": {"note": "paged"}},
                                      "PushworkerAPNsTokenRefreshes": {"enabled": False}},
                           "extraRules": [{"alert": "PushworkerBrokerLag",
                                           "expr": 'sum(kafka_consumergroup_lag{consumergroup="pushworker"}) > 100000',
                                           "for": "15m", "labels": {"severity": "warning"}}]}}),
    # Alerts as rendered by default (used by promtool), workers only.
    "prometheus-rule-defaults": merged(REQUIRED, {"prometheusRule": {"enabled": True}}),
    # Scale-to-zero: no "no ready worker" alert.
    "prometheus-rule-keda-zero": merged(REQUIRED, {"prometheusRule": {"enabled": True},
                                                   "autoscaling": {"keda": {"enabled": True, "minReplicaCount": 0}}}),
    # The tracking endpoint exposed: LoadBalancer Service keeping client IPs, and an Ingress.
    "events-exposed": merged(REQUIRED, {"events": {
        "enabled": True, "trustedProxies": "10.42.0.0/16",
        "service": {"type": "LoadBalancer", "annotations": {"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"},
                    "loadBalancerSourceRanges": ["203.0.113.0/24"], "loadBalancerClass": "service.k8s.aws/nlb"},
        "ingress": {"enabled": True, "className": "nginx",
                    "annotations": {"nginx.ingress.kubernetes.io/limit-rps": "50"}, "labels": {"exposure": "public"},
                    "hosts": ["e.push.example.com", "e2.push.example.com"],
                    "tls": [{"secretName": "events-tls", "hosts": ["e.push.example.com", "e2.push.example.com"]}]}},
        "networkPolicy": {"enabled": True, "ingressFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}]}}),
    # Every tracking-endpoint limit set explicitly.
    "events-limits": merged(REQUIRED, {"events": {
        "enabled": True, "ipv6Prefix": 56, "rateLimitBuckets": 200000, "idleTimeoutSeconds": 10,
        "connectionsPerIP": 0, "httpThreads": 4}}),
    # NodePort with a fixed port and the Cluster policy; an Ingress without hosts and without trustedProxies.
    "events-nodeport": merged(REQUIRED, {"events": {
        "enabled": True, "service": {"type": "NodePort", "nodePort": 30080, "externalTrafficPolicy": "Cluster"},
        "ingress": {"enabled": True, "pathType": "ImplementationSpecific", "path": "/v1/e/*"}}}),
    # Images from a mirror (global), pinned by digest, pull secrets in both forms and merged.
    "image-digest-global": merged(REQUIRED, {
        "global": {"imageRegistry": "mirror.example:5000", "imagePullSecrets": ["mirror-pull", {"name": "shared-pull"}]},
        "imagePullSecrets": [{"name": "regcred"}, {"name": "shared-pull"}],
        "image": {"registry": "registry.example", "repository": "push/pushworker", "tag": "1.2.3", "digest": "sha256:" + "ab" * 32},
        "tests": {"image": {"digest": "sha256:" + "cd" * 32}}, "events": {"enabled": True}}),
    "image-registry-tag": merged(REQUIRED, {"image": {"registry": "registry.example", "repository": "push/pushworker", "tag": 7}}),
    "image-no-registry": merged(REQUIRED, {"image": {"registry": "", "repository": "pushworker"}}),
    # KEDA credentials built from the Kafka properties: SCRAM over TLS, password and CA PEM from
    # the worker's Secrets, the client certificate from explicit secretRefs.
    "keda-sasl-ssl": merged(REQUIRED, {
        "kafka": {"properties": {"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "pushworker"},
                  "secretProperties": [{"property": "sasl.password", "secretName": "kafka-auth", "secretKey": "password"},
                                       {"property": "ssl.ca.pem", "secretName": "kafka-ca", "secretKey": "ca.crt"}]},
        "autoscaling": {"keda": {"enabled": True, "triggerAuthentication": {"secretRefs": {
            "cert": {"name": "kafka-client", "key": "tls.crt"}, "key": {"name": "kafka-client", "key": "tls.key"}}}}}}),
    # mTLS from files for the worker: KEDA gets the same PEMs through secretRefs.
    "keda-ssl-files": merged(REQUIRED, {
        "kafka": {"properties": {"security.protocol": "SSL", "ssl.ca.location": "/etc/kafka/ca.crt"}},
        "autoscaling": {"keda": {"enabled": True, "triggerAuthentication": {"secretRefs": {"ca": {"name": "kafka-ca", "key": "ca.crt"}}}}}}),
    # Own TriggerAuthentication wins; generation off means none at all.
    "keda-own-auth": merged(REQUIRED, {
        "kafka": {"properties": {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}},
        "autoscaling": {"keda": {"enabled": True, "authenticationRef": "my-kafka-auth"}}}),
    "keda-auth-off": merged(REQUIRED, {
        "kafka": {"properties": {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}},
        "autoscaling": {"keda": {"enabled": True, "triggerAuthentication": {"create": False}}}}),
    # Redis: password from a Secret key, URL in the ConfigMap; and Redis Cluster seeds (Bitnami redis-cluster).
    "redis-password": merged(REQUIRED, {"redis": {"existingSecret": "redis", "existingSecretPasswordKey": "redis-password"}}),
    "redis-cluster": merged(REQUIRED, {"redis": {"url": "redis+cluster://redis-cluster-0.redis-cluster-headless.redis:6379,redis-cluster-1.redis-cluster-headless.redis:6379",
                                                 "existingSecret": "redis-cluster", "existingSecretPasswordKey": "redis-password"},
                                       "events": {"enabled": True}}),
    # Redis over TLS with a private CA and a client certificate (both pods mount them); the
    # Sentinel set of the Bitnami redis chart, the Sentinels' password from the same Secret.
    "redis-tls": merged(REQUIRED, {"redis": {"url": "rediss://redis-master.redis:6379/0", "existingSecret": "redis",
                                             "existingSecretPasswordKey": "redis-password",
                                             "tls": {"caSecret": "redis-ca", "clientSecret": "redis-client"}},
                                   "events": {"enabled": True}}),
    "redis-sentinel": merged(REQUIRED, {"redis": {"url": "redis+sentinel://my-redis.redis.svc.cluster.local:26379/mymaster/0",
                                                  "existingSecret": "my-redis", "existingSecretPasswordKey": "redis-password",
                                                  "existingSecretSentinelPasswordKey": "redis-password"},
                                        "networkPolicy": {"enabled": True, "redis": {"ports": [6379, 26379]}}}),
    "tests-off": merged(REQUIRED, {"tests": {"enabled": False}, "events": {"enabled": True},
                                   "networkPolicy": {"enabled": True, "ingressFrom": [{"podSelector": {"matchLabels": {"app": "prometheus"}}}]}}),
    # Every operator feature at once, with the events pods, the NetworkPolicy and the topics hook.
    "operator-features": merged(REQUIRED, CREDENTIALS, {
        "commonLabels": {"team": "push", "cost-center": "cc-42"},
        "podAnnotations": {"example.com/scrape": "true"},
        "extraEnv": [{"name": "PUSHWORKER_RECORD_DELAY_MS", "value": "10"},
                     {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "tok", "key": "t"}}}],
        "extraVolumes": [{"name": "ca", "configMap": {"name": "corp-ca"}}],
        "extraVolumeMounts": [{"name": "ca", "mountPath": "/etc/pushworker/ca", "readOnly": True}],
        "initContainers": [{"name": "wait-for-kafka", "image": "busybox:1.36",
                            "command": ["sh", "-c", "until nc -z kafka 9092; do sleep 1; done"]}],
        "sidecars": [{"name": "log-shipper", "image": "fluent/fluent-bit:3.0",
                      "resources": {"limits": {"memory": "64Mi"}}}],
        "extraObjects": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pushworker-extra"}, "data": {"a": "b"}},
                         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-templated\ndata:\n  release: {{ .Release.Name | quote }}\n"],
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
        "probes": {"startup": {"failureThreshold": 60, "periodSeconds": 5}},
        "events": {"enabled": True, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "50%", "maxUnavailable": 0}}},
        "api": {"enabled": True, "tokens": {"existingSecret": "push-api-tokens"}},
        "serviceMonitor": {"enabled": True, "namespace": "monitoring", "labels": {"release": "kube-prometheus-stack"},
                           "relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}],
                           "metricRelabelings": [{"sourceLabels": ["__name__"], "regex": "process_.*", "action": "drop"}]},
        "networkPolicy": {"enabled": True},
        "kafka": {"properties": {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "pushworker"},
                  "secretProperties": [{"property": "sasl.password", "secretName": "kafka-auth", "secretKey": "password"}]},
        "topicsJob": {"enabled": True, "replicationFactor": 2, "timeoutSeconds": 30}}),
    # The HTTP API with tokens created from values, an Ingress, the NetworkPolicies, a ServiceMonitor.
    "api": merged(REQUIRED, CREDENTIALS, {"api": {
        "enabled": True, "tokens": {"values": ["ops-0123456789abcdef", "bot-ABCDEF0123456789+/=="]},
        "ingress": {"enabled": True, "className": "nginx", "hosts": ["push-api.example.com"], "labels": {"exposure": "internal"},
                    "annotations": {"nginx.ingress.kubernetes.io/proxy-body-size": "8m"},
                    "tls": [{"secretName": "push-api-tls", "hosts": ["push-api.example.com"]}]},
        "networkPolicyFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "campaigns"}}}]},
        "networkPolicy": {"enabled": True}, "serviceMonitor": {"enabled": True}, "events": {"enabled": True}}),
    # The API with its own Secret (another key), a LoadBalancer, every setting changed, Kafka secrets, no tests.
    "api-existing-secret": merged(REQUIRED, {"api": {
        "enabled": True, "replicaCount": 3, "port": 9600, "maxBodyBytes": 1048576, "threads": 8, "idempotencyTTLSeconds": 3600,
        "produceTimeoutSeconds": 10, "tokens": {"existingSecret": "push-api-tokens", "key": "tokens.txt"},
        "service": {"type": "LoadBalancer", "port": 443, "annotations": {"service.beta.kubernetes.io/aws-load-balancer-internal": "true"}},
        "updateStrategy": {"type": "Recreate"}},
        "kafka": {"secretProperties": [{"property": "sasl.password", "secretName": "kafka-auth", "secretKey": "password"}]},
        "redis": {"existingSecret": "redis", "existingSecretPasswordKey": "redis-password"},
        "tests": {"enabled": False}, "networkPolicy": {"enabled": True}}),
    # Recreate rollout, no startupProbe, a dry-run topics hook.
    "recreate-no-startup": merged(REQUIRED, {"updateStrategy": {"type": "Recreate"}, "probes": {"startup": {"enabled": False}},
                                             "topicsJob": {"enabled": True, "dryRun": True, "serviceAccountName": "kafka-admin"}}),
}
MUST_FAIL: dict[str, tuple[dict, str]] = {
    "keda-max-over-partitions": (merged(REQUIRED, {"autoscaling": {"keda": {"enabled": True, "maxReplicaCount": 25}}}),
                                 "must not exceed kafka.partitions"),
    "hpa-max-over-partitions": (merged(REQUIRED, {"kafka": {"partitions": 6}, "autoscaling": {"hpa": {"enabled": True, "maxReplicas": 12}}}),
                                "must not exceed kafka.partitions"),
    "replicas-over-partitions": (merged(REQUIRED, {"replicaCount": 30}), "must not exceed kafka.partitions"),
    "keda-and-hpa": (merged(REQUIRED, {"autoscaling": {"keda": {"enabled": True}, "hpa": {"enabled": True}}}), "exclusive"),
    "no-brokers": ({"redis": REQUIRED["redis"], "msgIdKeys": REQUIRED["msgIdKeys"]}, "kafka.brokers is required"),
    "no-msgid-secret": ({"kafka": REQUIRED["kafka"], "redis": REQUIRED["redis"]}, "msgIdKeys.existingSecret is required"),
    "resend-unanswered-unknown": (merged(REQUIRED, {"worker": {"resendUnanswered": "always"}}), "resendUnanswered"),
    "grace-not-above-drain": (merged(REQUIRED, {"terminationGracePeriodSeconds": 25}), "must exceed shutdownGraceSeconds"),
    "credentials-without-items": (merged(REQUIRED, {"credentials": {"existingSecret": "creds"}}), "credentials.items is required"),
    "schema-typo-key": (merged(REQUIRED, {"replicas": 3}), "additional properties"),
    "schema-bad-rate-limit": (merged(REQUIRED, {"events": {"enabled": True, "rateLimit": "lots"}}), "rateLimit"),
    "schema-bad-ipv6-prefix": (merged(REQUIRED, {"events": {"enabled": True, "ipv6Prefix": 129}}), "ipv6Prefix"),
    "schema-bad-connections-per-ip": (merged(REQUIRED, {"events": {"enabled": True, "connectionsPerIP": "many"}}), "connectionsPerIP"),
    "redis-url-with-password": (merged(REQUIRED, {"redis": {"url": "redis://:s3cret@redis:6379/0"}}), "carries a password"),
    "redis-password-key-without-secret": (merged(REQUIRED, {"redis": {"existingSecretPasswordKey": "redis-password"}}),
                                          "needs redis.existingSecret"),
    "redis-password-key-without-url": (merged(REQUIRED, {"redis": {"url": "", "existingSecret": "redis", "existingSecretPasswordKey": "p"}}),
                                       "redis.url or redis.existingSecret is required"),
    "schema-redis-sentinel-without-master": (merged(REQUIRED, {"redis": {"url": "redis+sentinel://s1:26379,s2:26379"}}), "url"),
    "schema-redis-tls-typo": (merged(REQUIRED, {"redis": {"url": "rediss://r:6379", "tls": {"caSecrets": "ca"}}}),
                              "additional properties 'caSecrets' not allowed"),
    "redis-tls-secret-without-tls-url": (merged(REQUIRED, {"redis": {"tls": {"caSecret": "redis-ca"}}}), "redis.url must be rediss://"),
    "redis-sentinel-key-without-sentinel-url": (merged(REQUIRED, {"redis": {"existingSecret": "r", "existingSecretPasswordKey": "p",
                                                                           "existingSecretSentinelPasswordKey": "p"}}),
                                                "redis.url must be redis+sentinel://"),
    "redis-sentinel-key-without-secret": (merged(REQUIRED, {"redis": {"url": "redis+sentinel://s:26379/m", "existingSecretSentinelPasswordKey": "p"}}),
                                          "needs redis.existingSecret"),
    "ingress-without-events": (merged(REQUIRED, {"events": {"ingress": {"enabled": True}}}), "needs events.enabled"),
    "schema-ingress-other-path": (merged(REQUIRED, {"events": {"enabled": True, "ingress": {"enabled": True, "path": "/"}}}), "path"),
    "schema-traffic-policy": (merged(REQUIRED, {"events": {"enabled": True, "service": {"type": "LoadBalancer", "externalTrafficPolicy": "local"}}}),
                              "externalTrafficPolicy"),
    "schema-bad-digest": (merged(REQUIRED, {"image": {"digest": "sha256:abc"}}), "digest"),
    "schema-image-typo": (merged(REQUIRED, {"image": {"digets": "sha256:" + "ab" * 32}}), "digets"),
    "schema-alert-typo": (merged(REQUIRED, {"prometheusRule": {"enabled": True, "alerts": {"PushworkerDeadLetters": {"treshold": 1}}}}), "treshold"),
    "schema-alert-name-typo": (merged(REQUIRED, {"prometheusRule": {"enabled": True, "alerts": {"PushworkerDeadLetter": {"enabled": False}}}}),
                               "PushworkerDeadLetter"),
    "schema-alert-bad-for": (merged(REQUIRED, {"prometheusRule": {"enabled": True, "alerts": {"PushworkerDeadLetters": {"for": "ten minutes"}}}}), "for"),
    "keda-gssapi": (merged(REQUIRED, {"kafka": {"properties": {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"}},
                                      "autoscaling": {"keda": {"enabled": True}}}), "cannot be mapped"),
    "keda-sasl-without-password": (merged(REQUIRED, {"kafka": {"properties": {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                                                                              "sasl.username": "u"}},
                                                     "autoscaling": {"keda": {"enabled": True}}}), "needs sasl.username and sasl.password"),
    "keda-ca-file-only": (merged(REQUIRED, {"kafka": {"properties": {"security.protocol": "SSL", "ssl.ca.location": "/etc/kafka/ca.crt"}},
                                            "autoscaling": {"keda": {"enabled": True}}}), "a file KEDA cannot read"),
    "keda-cert-without-key": (merged(REQUIRED, {"kafka": {"properties": {"security.protocol": "SSL"},
                                                          "secretProperties": [{"property": "ssl.certificate.pem", "secretName": "c", "secretKey": "tls.crt"}]},
                                                "autoscaling": {"keda": {"enabled": True}}}), "needs both cert and key"),
    # Unknown keys are refused at every level, not only at the top.
    "schema-kafka-brokrs": (merged(REQUIRED, {"kafka": {"brokrs": "kafka:9092"}}), "additional properties 'brokrs' not allowed"),
    "schema-nested-topics-typo": (merged(REQUIRED, {"kafka": {"topics": {"job": "push.jobs.v1"}}}), "additional properties 'job' not allowed"),
    "schema-worker-typo": (merged(REQUIRED, {"worker": {"maxInflight": 10}}), "additional properties 'maxInflight' not allowed"),
    "schema-probe-typo": (merged(REQUIRED, {"probes": {"startup": {"failureTreshold": 3}}}), "additional properties 'failureTreshold' not allowed"),
    "schema-affinity-typo": (merged(REQUIRED, {"affinity": {"nodeAfinity": {}}}), "additional properties 'nodeAfinity' not allowed"),
    "schema-volume-typo": (merged(REQUIRED, {"extraVolumes": [{"name": "ca", "configmap": {"name": "x"}}]}), "additional properties 'configmap' not allowed"),
    "schema-sidecar-typo": (merged(REQUIRED, {"sidecars": [{"name": "s", "image": "busybox", "imagePullPolice": "Always"}]}),
                            "additional properties 'imagePullPolice' not allowed"),
    "schema-resources-typo": (merged(REQUIRED, {"resources": {"limit": {"memory": "1Gi"}}}), "additional properties 'limit' not allowed"),
    "schema-relabeling-typo": (merged(REQUIRED, {"serviceMonitor": {"relabelings": [{"sourcelabels": ["a"]}]}}),
                               "additional properties 'sourcelabels' not allowed"),
    "schema-topics-job-typo": (merged(REQUIRED, {"topicsJob": {"enable": True}}), "additional properties 'enable' not allowed"),
    "schema-strategy-type": (merged(REQUIRED, {"updateStrategy": {"type": "BlueGreen"}}), "updateStrategy"),
    "api-without-tokens": (merged(REQUIRED, {"api": {"enabled": True}}), "api.enabled needs api.tokens.existingSecret or api.tokens.values"),
    "api-ingress-without-api": (merged(REQUIRED, {"api": {"ingress": {"enabled": True}}}), "api.ingress.enabled needs api.enabled"),
    "schema-api-typo": (merged(REQUIRED, {"api": {"enabled": True, "token": {"values": ["ops-0123456789abcdef"]}}}),
                        "additional properties 'token' not allowed"),
    "schema-api-short-token": (merged(REQUIRED, {"api": {"enabled": True, "tokens": {"values": ["short"]}}}), "values"),
    "schema-api-service-typo": (merged(REQUIRED, {"api": {"service": {"typ": "ClusterIP"}}}), "additional properties 'typ' not allowed"),
    "schema-extra-object-without-kind": (merged(REQUIRED, {"extraObjects": [{"apiVersion": "v1", "metadata": {"name": "x"}}]}), "extraObjects"),
}
# Values missing every required value: one error lists them all.
ALL_REQUIRED_MISSING = ({}, ["3 problem(s)", "kafka.brokers is required", "redis.url or redis.existingSecret is required",
                             "msgIdKeys.existingSecret is required"])

ENV_DEFAULTS = {
    "PUSHWORKER_KAFKA_GROUP": "pushworker", "PUSHWORKER_TOPIC_JOBS": "push.jobs.v1",
    "PUSHWORKER_TOPIC_RETRY": "push.retry.v1", "PUSHWORKER_TOPIC_RESULTS": "push.results.v1",
    "PUSHWORKER_TOPIC_TOKENS": "push.tokens.v1", "PUSHWORKER_TOPIC_DLQ": "push.dlq.v1",
    "PUSHWORKER_TOPIC_EVENTS": "push.events.v1", "PUSHWORKER_CREDENTIALS_DIR": "/etc/pushworker/credentials",
    "PUSHWORKER_HTTP_ADDR": "0.0.0.0:9400", "PUSHWORKER_MAX_IN_FLIGHT": "2000", "PUSHWORKER_MAX_ATTEMPTS": "5",
    "PUSHWORKER_DRAIN_SECONDS": "25", "PUSHWORKER_HTTP_CONNECTIONS": "2", "PUSHWORKER_HTTP_STREAMS": "100",
    "PUSHWORKER_REQUEST_TIMEOUT_MS": "10000", "PUSHWORKER_LOG_LEVEL": "info", "PUSHWORKER_LOG_FORMAT": "json",
    "PUSHWORKER_RESEND_UNANSWERED": "replace",
}
DASHBOARD_METRICS = ["pushworker_notifications_total", "pushworker_provider_request_seconds_bucket",
                     "pushworker_kafka_consumer_lag", "pushworker_in_flight", "pushworker_retries_total",
                     "pushworker_dlq_total", "pushworker_redis_errors_total", "pushworker_kafka_errors_total",
                     "pushworker_token_refreshes_total"]
EVENTS_DASHBOARD_METRICS = ["pushworker_events_total", "pushworker_events_rate_limited_total", "pushworker_events_published_total",
                            "pushworker_events_counter_flushes_total", "pushworker_events_counter_dropped_total",
                            "pushworker_webhook_deliveries_total", "pushworker_webhook_events_total",
                            "pushworker_webhook_dropped_total", "pushworker_ready"]
CAMPAIGN_DASHBOARD_METRICS = ["pushworker_campaign_controls", "pushworker_campaign_steered_total", "pushworker_api_requests_total",
                              "pushworker_api_jobs_total"]
# The lag queries of the dashboard (stat and by-partition panels), with $namespace = .*: promtool
# evaluates them against series of workers that disappear.
_DASH_LAG = 'pushworker_kafka_consumer_lag{namespace=~".*"}'
DASHBOARD_LAG_BY_PARTITION = f"max by (topic, partition) ({_DASH_LAG}) or max by (topic, partition) (last_over_time({_DASH_LAG}[15m]))"
DASHBOARD_LAG_TOTAL = f"sum({DASHBOARD_LAG_BY_PARTITION})"


# --- helpers --------------------------------------------------------------------------------
def render(chart: Any, values: dict) -> list[dict]:
    return render_all(chart, values)[0]


def render_all(chart: Any, values: dict) -> tuple[list[dict], str]:
    """The manifests (each with its template path in "__source") and the NOTES.txt text."""
    manifests = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    docs: list[dict] = []
    notes = ""
    for path, text in sorted(manifests.items()):
        if path.endswith("NOTES.txt"):
            notes += text
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                doc["__source"] = path
                docs.append(doc)
    return docs, notes


def find(docs: list[dict], kind: str, name: str | None = None) -> dict | None:
    for d in docs:
        if d.get("kind") == kind and (name is None or d["metadata"]["name"] == name):
            return d
    return None


def validate_docs(set_name: str, docs: list[dict]) -> None:
    for doc in docs:
        doc = {k: v for k, v in doc.items() if k != "__source"}
        label = f"[{set_name}] {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        crd = CRD_SCHEMAS.get((doc.get("apiVersion"), doc.get("kind")))
        if crd is not None:
            errors = list(jsonschema.Draft202012Validator(crd).iter_errors(doc))
            if doc["kind"] == "ScaledObject":
                for trig in doc.get("spec", {}).get("triggers", []):
                    if trig.get("type") == "kafka":
                        errors += list(jsonschema.Draft202012Validator(KAFKA_TRIGGER_SCHEMA).iter_errors(trig.get("metadata")))
            if errors:
                fail(label + " (embedded CRD schema)", errors[0].message)
            else:
                ok(label + " (embedded CRD schema)")
            continue
        for version in KUBE_VERSIONS:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
                ok(f"{label} (k8s {version} strict)")
            except kubernetes_validate.ValidationError as e:
                where = ".".join(str(p) for p in e.path)
                fail(f"{label} (k8s {version} strict)", f"{where}: {e.message[:200]}")
            except kubernetes_validate.SchemaNotFoundError as e:
                fail(label, e.message)


def container(dep: dict, name: str) -> dict:
    for c in dep["spec"]["template"]["spec"]["containers"]:
        if c["name"] == name:
            return c
    return {}


def env_names(c: dict) -> dict[str, dict]:
    return {e["name"]: e for e in c.get("env", [])}


def expect_worker(set_name: str, docs: list[dict], values: dict) -> None:
    L = lambda what: f"[{set_name}] {what}"
    dep = find(docs, "Deployment", FULLNAME)
    cm = find(docs, "ConfigMap", FULLNAME)
    if dep is None or cm is None:
        fail(L("worker Deployment and ConfigMap"), "missing")
        return
    pod = dep["spec"]["template"]["spec"]
    c = container(dep, "worker")
    sc, psc = c.get("securityContext", {}), pod.get("securityContext", {})
    check(L("container securityContext hardened"),
          sc.get("runAsNonRoot") is True and sc.get("runAsUser") == 65532 and sc.get("readOnlyRootFilesystem") is True
          and sc.get("allowPrivilegeEscalation") is False and sc.get("capabilities", {}).get("drop") == ["ALL"]
          and sc.get("seccompProfile", {}).get("type") == "RuntimeDefault", json.dumps(sc))
    check(L("pod securityContext non-root + RuntimeDefault seccomp"),
          psc.get("runAsNonRoot") is True and psc.get("runAsUser") == 65532
          and psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", json.dumps(psc))
    drain = int(cm["data"]["PUSHWORKER_DRAIN_SECONDS"])
    grace = pod.get("terminationGracePeriodSeconds", 30)
    expected_grace = values.get("terminationGracePeriodSeconds") or drain + 15
    check(L(f"terminationGracePeriodSeconds {grace} > drain {drain}"), grace > drain and grace == expected_grace,
          f"grace {grace}, drain {drain}, expected {expected_grace}")
    ports = c.get("ports", [])
    check(L("container port 9400 named http"), any(p["name"] == "http" and p["containerPort"] == 9400 for p in ports), str(ports))
    lp, rp = c.get("livenessProbe", {}).get("httpGet", {}), c.get("readinessProbe", {}).get("httpGet", {})
    check(L("liveness /healthz, readiness /readyz on http"),
          lp.get("path") == "/healthz" and rp.get("path") == "/readyz" and lp.get("port") == "http" and rp.get("port") == "http",
          f"{lp} {rp}")
    check(L("resources set"), bool(c.get("resources", {}).get("requests")) and bool(c.get("resources", {}).get("limits")))
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    tmp = mounts.get("/tmp")
    check(L("emptyDir at /tmp"), tmp is not None and "emptyDir" in vols.get(tmp["name"], {}))
    cred = mounts.get("/etc/pushworker/credentials")
    check(L("credentials mounted read-only"), cred is not None and cred.get("readOnly") is True)
    secret = values.get("credentials", {}).get("existingSecret")
    if secret and cred:
        sources = vols[cred["name"]].get("projected", {}).get("sources", [])
        first = sources[0].get("secret", {}) if sources else {}
        paths = [i["path"] for i in first.get("items", [])]
        check(L("credentials Secret projected with key→<appId>/<file> items"),
              first.get("name") == secret and "app_demo/apns.json" in paths and len(sources) == 2, json.dumps(sources))
    env = env_names(c)
    msgid = env.get("PUSHWORKER_MSGID_KEYS", {}).get("valueFrom", {}).get("secretKeyRef", {})
    check(L("PUSHWORKER_MSGID_KEYS from the existing Secret"), msgid.get("name") == values["msgIdKeys"]["existingSecret"])
    check(L("ConfigMap mounted with envFrom"), c.get("envFrom") == [{"configMapRef": {"name": FULLNAME}}])
    data = cm["data"]
    if not values.get("caFile") and not values.get("kafka", {}).get("properties"):
        missing = {k: v for k, v in ENV_DEFAULTS.items() if data.get(k) != v}
        check(L("ConfigMap holds every variable with its default"), not missing, f"differs: {missing}")
        check(L("no per-app in-flight cap unless set (the worker's default: half of the in-flight bound)"),
              "PUSHWORKER_MAX_IN_FLIGHT_PER_APP" not in data)
    worker = values.get("worker", {})
    if worker.get("resendUnanswered"):
        check(L("PUSHWORKER_RESEND_UNANSWERED from values"), data.get("PUSHWORKER_RESEND_UNANSWERED") == worker["resendUnanswered"])
    if worker.get("maxInFlightPerApp"):
        check(L("PUSHWORKER_MAX_IN_FLIGHT_PER_APP from values"),
              data.get("PUSHWORKER_MAX_IN_FLIGHT_PER_APP") == str(worker["maxInFlightPerApp"]))
    check(L("PUSHWORKER_KAFKA_BROKERS from values"), data.get("PUSHWORKER_KAFKA_BROKERS") == values["kafka"]["brokers"])
    redis = values.get("redis", {})
    redis_secret, password_key = redis.get("existingSecret"), redis.get("existingSecretPasswordKey")
    password = env.get("PUSHWORKER_REDIS_PASSWORD", {}).get("valueFrom", {}).get("secretKeyRef", {})
    if redis_secret and not password_key:
        ref = env.get("PUSHWORKER_REDIS_URL", {}).get("valueFrom", {}).get("secretKeyRef", {})
        check(L("PUSHWORKER_REDIS_URL from Secret, not ConfigMap"),
              ref.get("name") == redis_secret and ref.get("key") == redis.get("existingSecretKey", "url")
              and "PUSHWORKER_REDIS_URL" not in data)
    else:
        check(L("PUSHWORKER_REDIS_URL in ConfigMap, not from a Secret"),
              data.get("PUSHWORKER_REDIS_URL") == redis["url"] and "PUSHWORKER_REDIS_URL" not in env)
    if password_key:
        check(L("PUSHWORKER_REDIS_PASSWORD from redis.existingSecret / existingSecretPasswordKey"),
              password == {"name": redis_secret, "key": password_key} and "PUSHWORKER_REDIS_PASSWORD" not in data, json.dumps(password))
    else:
        check(L("no PUSHWORKER_REDIS_PASSWORD without existingSecretPasswordKey"), "PUSHWORKER_REDIS_PASSWORD" not in env)
    expect_redis_tls_and_sentinel(L, c, pod, data, redis)
    props = values.get("kafka", {}).get("properties", {})
    for prop, value in props.items():
        name = "PUSHWORKER_RDKAFKA_" + prop.upper().replace(".", "_").replace("-", "_")
        want = ("true" if value else "false") if isinstance(value, bool) else str(value)
        check(L(f"librdkafka pass-through {name}"), data.get(name) == want, f"{data.get(name)!r} != {want!r}")
    for sp in values.get("kafka", {}).get("secretProperties", []):
        name = "PUSHWORKER_RDKAFKA_" + sp["property"].upper().replace(".", "_").replace("-", "_")
        ref = env.get(name, {}).get("valueFrom", {}).get("secretKeyRef", {})
        check(L(f"librdkafka secret property {name} from its Secret"),
              ref == {"name": sp["secretName"], "key": sp["secretKey"]} and name not in data, json.dumps(ref))
    if values.get("caFile"):
        check(L("optional CA file and Web Push hosts set"),
              data.get("PUSHWORKER_CA_FILE") == values["caFile"]
              and data.get("PUSHWORKER_WEBPUSH_ALLOWED_HOSTS") == values["webpush"]["allowedHosts"])
    else:
        check(L("optional PUSHWORKER_CA_FILE / WEBPUSH_ALLOWED_HOSTS absent when unset"),
              "PUSHWORKER_CA_FILE" not in data and "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS" not in data)
    check(L("PodDisruptionBudget present"), find(docs, "PodDisruptionBudget", FULLNAME) is not None)
    svc = find(docs, "Service", FULLNAME)
    check(L("Service targets port http"), svc is not None and svc["spec"]["ports"][0]["targetPort"] == "http")
    autoscaled = values.get("autoscaling", {}).get("keda", {}).get("enabled") or values.get("autoscaling", {}).get("hpa", {}).get("enabled")
    check(L("replicas omitted iff autoscaled"), ("replicas" in dep["spec"]) != bool(autoscaled))


def expect_redis_tls_and_sentinel(L: Callable[[str], str], c: dict, pod: dict, data: dict, redis: dict) -> None:
    """The Sentinels' password from its Secret key; the Redis CA and client certificate Secrets
    mounted read-only (only their keys) with the variables pointing into them; none of it unset."""
    env = env_names(c)
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    sentinel_key = redis.get("existingSecretSentinelPasswordKey")
    sentinel = env.get("PUSHWORKER_REDIS_SENTINEL_PASSWORD", {}).get("valueFrom", {}).get("secretKeyRef", {})
    if sentinel_key:
        check(L("PUSHWORKER_REDIS_SENTINEL_PASSWORD from redis.existingSecret / existingSecretSentinelPasswordKey"),
              sentinel == {"name": redis["existingSecret"], "key": sentinel_key} and "PUSHWORKER_REDIS_SENTINEL_PASSWORD" not in data,
              json.dumps(sentinel))
    else:
        check(L("no PUSHWORKER_REDIS_SENTINEL_PASSWORD without existingSecretSentinelPasswordKey"), "PUSHWORKER_REDIS_SENTINEL_PASSWORD" not in env)
    tls = redis.get("tls", {})
    base = tls.get("mountPath", "/etc/pushworker/redis-tls")
    for kind, secret_value, files in [
        ("ca", "caSecret", {"PUSHWORKER_REDIS_CA_FILE": tls.get("caKey", "ca.crt")}),
        ("client", "clientSecret", {"PUSHWORKER_REDIS_CERT_FILE": tls.get("clientCertKey", "tls.crt"),
                                    "PUSHWORKER_REDIS_KEY_FILE": tls.get("clientKeyKey", "tls.key")}),
    ]:
        mount = mounts.get(f"{base}/{kind}")
        if tls.get(secret_value):
            volume = vols.get(mount["name"], {}) if mount else {}
            secret = volume.get("secret", {})
            keys = sorted(item["key"] for item in secret.get("items", []))
            check(L(f"Redis TLS {kind} Secret mounted read-only with only its keys, {', '.join(files)} pointing into it"),
                  mount is not None and mount.get("readOnly") is True and secret.get("secretName") == tls[secret_value]
                  and keys == sorted(files.values())
                  and all(data.get(name) == f"{base}/{kind}/{key}" for name, key in files.items()),
                  json.dumps({"mount": mount, "volume": volume, "data": {n: data.get(n) for n in files}}))
        else:
            check(L(f"no Redis TLS {kind} mount or {', '.join(files)} without redis.tls.{secret_value}"),
                  mount is None and not any(name in data for name in files))


def on(values: dict, *path: str) -> bool:
    node: Any = values
    for key in path:
        if not isinstance(node, dict):
            return False
        node = node.get(key)
    return bool(node)


def presence(set_name: str, docs: list[dict], eff: dict) -> None:
    """Every optional object is rendered exactly when its option is on (checked for every set)."""
    L = lambda what: f"[{set_name}] {what}"
    ev = on(eff, "events", "enabled")
    api = on(eff, "api", "enabled")
    auth = expected_keda_auth(eff)
    want = {
        ("ScaledObject", FULLNAME): on(eff, "autoscaling", "keda", "enabled"),
        ("HorizontalPodAutoscaler", FULLNAME): on(eff, "autoscaling", "hpa", "enabled"),
        ("Deployment", f"{FULLNAME}-events"): ev,
        ("Deployment", f"{FULLNAME}-transactional"): on(eff, "lanes", "transactional", "dedicated"),
        ("Service", f"{FULLNAME}-transactional"): on(eff, "lanes", "transactional", "dedicated"),
        ("PodDisruptionBudget", f"{FULLNAME}-transactional"): on(eff, "lanes", "transactional", "dedicated") and on(eff, "pdb", "enabled"),
        ("Service", f"{FULLNAME}-events"): ev,
        ("PodDisruptionBudget", f"{FULLNAME}-events"): ev and on(eff, "pdb", "enabled"),
        ("Ingress", f"{FULLNAME}-events"): ev and on(eff, "events", "ingress", "enabled"),
        ("NetworkPolicy", FULLNAME): on(eff, "networkPolicy", "enabled"),
        ("ServiceMonitor", FULLNAME): on(eff, "serviceMonitor", "enabled"),
        ("PrometheusRule", FULLNAME): on(eff, "prometheusRule", "enabled"),
        ("ConfigMap", f"{FULLNAME}-dashboard"): on(eff, "dashboard", "configMap", "enabled"),
        ("TriggerAuthentication", f"{FULLNAME}-kafka"): auth is not None,
        ("Secret", f"{FULLNAME}-keda-kafka"): auth is not None,
        ("Pod", f"{FULLNAME}-test-readyz"): on(eff, "tests", "enabled"),
        ("Pod", f"{FULLNAME}-test-events"): on(eff, "tests", "enabled") and ev,
        ("Job", f"{FULLNAME}-topics"): on(eff, "topicsJob", "enabled"),
        ("Deployment", f"{FULLNAME}-api"): api,
        ("Service", f"{FULLNAME}-api"): api,
        ("PodDisruptionBudget", f"{FULLNAME}-api"): api and on(eff, "pdb", "enabled"),
        ("Ingress", f"{FULLNAME}-api"): api and on(eff, "api", "ingress", "enabled"),
        ("NetworkPolicy", f"{FULLNAME}-api"): api and on(eff, "networkPolicy", "enabled"),
        ("Secret", f"{FULLNAME}-api-tokens"): api and not on(eff, "api", "tokens", "existingSecret"),
        ("Pod", f"{FULLNAME}-test-api"): on(eff, "tests", "enabled") and api,
    }
    for (kind, name), expected in want.items():
        got = find(docs, kind, name) is not None
        check(L(f"{kind}/{name} {'rendered' if expected else 'absent'}"), got == expected,
              f"{'missing' if expected else 'rendered although off'}; kinds: {sorted(d['kind'] for d in docs)}")
    check(L("no Secret or TriggerAuthentication other than the generated KEDA ones and the API's tokens"),
          all(d["kind"] not in ("Secret", "TriggerAuthentication")
              or d["metadata"]["name"] in (f"{FULLNAME}-keda-kafka", f"{FULLNAME}-kafka", f"{FULLNAME}-api-tokens")
              for d in docs))


def expect_autoscaler(set_name: str, docs: list[dict], values: dict, eff: dict) -> None:
    L = lambda what: f"[{set_name}] {what}"
    so, hpa = find(docs, "ScaledObject"), find(docs, "HorizontalPodAutoscaler")
    if so:
        trig = so["spec"]["triggers"][0]
        md = trig["metadata"]
        check(L("kafka trigger on the jobs topic lag of the worker group"),
              trig["type"] == "kafka" and md["topic"] == "push.jobs.v1" and md["consumerGroup"] == "pushworker"
              and md["bootstrapServers"] == values["kafka"]["brokers"]
              and md["lagThreshold"] == str(eff["autoscaling"]["keda"]["lagThreshold"]), json.dumps(md))
        check(L("maxReplicaCount <= partitions"), so["spec"]["maxReplicaCount"] <= eff["kafka"]["partitions"])
        check(L("retry topic trigger iff includeRetryTopic"),
              any(t["metadata"]["topic"] == "push.retry.v1" for t in so["spec"]["triggers"]) == on(eff, "autoscaling", "keda", "includeRetryTopic"))
        auth = expected_keda_auth(eff)
        want_ref = eff["autoscaling"]["keda"].get("authenticationRef") or (f"{FULLNAME}-kafka" if auth else None)
        refs = [t.get("authenticationRef", {}).get("name") for t in so["spec"]["triggers"]]
        check(L(f"every kafka trigger's authenticationRef is {want_ref}"), all(r == want_ref for r in refs), str(refs))
    if hpa:
        m = hpa["spec"]["metrics"][0]
        check(L("autoscaling/v2 on CPU"), hpa["apiVersion"] == "autoscaling/v2" and m["resource"]["name"] == "cpu")


def expected_keda_auth(eff: dict) -> dict[str, tuple[str, str]] | None:
    """KEDA parameter → (Secret, key) the generated TriggerAuthentication must carry, or None.
    An independent reading of the mapping documented in values.yaml."""
    keda = eff["autoscaling"]["keda"]
    ta = keda.get("triggerAuthentication") or {}
    props = eff["kafka"].get("properties") or {}
    protocol = str(props.get("security.protocol", "")).upper()
    if not keda.get("enabled") or keda.get("authenticationRef") or ta.get("create") is False \
            or protocol not in ("SASL_PLAINTEXT", "SASL_SSL", "SSL"):
        return None
    own = f"{FULLNAME}-keda-kafka"
    out: dict[str, tuple[str, str]] = {"tls": (own, "tls")}
    if protocol.startswith("SASL_"):
        out["sasl"] = (own, "sasl")
    from_secret = {sp["property"]: (sp["secretName"], sp["secretKey"]) for sp in eff["kafka"].get("secretProperties") or []}
    explicit = {k: (v["name"], v["key"]) for k, v in (ta.get("secretRefs") or {}).items()}
    params = [("username", "sasl.username"), ("password", "sasl.password")]
    if protocol.endswith("SSL"):
        params += [("ca", "ssl.ca.pem"), ("cert", "ssl.certificate.pem"), ("key", "ssl.key.pem"), ("keyPassword", "ssl.key.password")]
    for param, prop in params:
        if param in explicit:
            out[param] = explicit[param]
        elif prop in from_secret:
            out[param] = from_secret[prop]
        elif prop in props:
            out[param] = (own, param)
    return out


def expect_keda_auth(set_name: str, docs: list[dict], eff: dict) -> None:
    L = lambda what: f"[{set_name}] {what}"
    want = expected_keda_auth(eff)
    ta, secret = find(docs, "TriggerAuthentication"), find(docs, "Secret", f"{FULLNAME}-keda-kafka")
    if want is None or ta is None or secret is None:
        return
    got = {r["parameter"]: (r["name"], r["key"]) for r in ta["spec"]["secretTargetRef"]}
    check(L("TriggerAuthentication maps the Kafka properties to KEDA parameters"), got == want, f"{got} != {want}")
    check(L("TriggerAuthentication uses only kafka-scaler parameters"), set(got) <= KEDA_KAFKA_AUTH_PARAMS, str(set(got)))
    props = eff["kafka"].get("properties") or {}
    mech = str(props.get("sasl.mechanisms") or props.get("sasl.mechanism") or "").upper()
    expected_values = {"tls": "enable" if str(props["security.protocol"]).upper().endswith("SSL") else "disable"}
    if "sasl" in want:
        expected_values["sasl"] = {"PLAIN": "plaintext", "SCRAM-SHA-256": "scram_sha256", "SCRAM-SHA-512": "scram_sha512"}[mech]
    for param, (name, key) in want.items():
        if name == f"{FULLNAME}-keda-kafka" and param not in expected_values:
            expected_values[param] = str(props[{"username": "sasl.username", "password": "sasl.password", "ca": "ssl.ca.pem",
                                                "cert": "ssl.certificate.pem", "key": "ssl.key.pem",
                                                "keyPassword": "ssl.key.password"}[param]])
    check(L("generated Secret holds the mode values (and plain properties) only"),
          secret.get("stringData") == expected_values and secret.get("type") == "Opaque", json.dumps(secret.get("stringData")))


def expected_image(image: dict, global_: dict, default_tag: str) -> str:
    registry = (global_ or {}).get("imageRegistry") or image.get("registry") or ""
    ref = f"{registry.rstrip('/')}/{image['repository']}" if registry else image["repository"]
    if image.get("digest"):
        return f"{ref}@{image['digest']}"
    return f"{ref}:{image.get('tag') or default_tag}"


def expected_pull_secrets(eff: dict) -> list[str]:
    out: list[str] = []
    for item in list((eff.get("global") or {}).get("imagePullSecrets") or []) + list(eff.get("imagePullSecrets") or []):
        name = item if isinstance(item, str) else item.get("name")
        if name and name not in out:
            out.append(name)
    return out


def pod_specs(docs: list[dict]) -> list[tuple[str, dict]]:
    out = []
    for d in docs:
        if d["kind"] == "Deployment":
            out.append((d["metadata"]["name"], d["spec"]["template"]["spec"]))
        elif d["kind"] == "Pod":
            out.append((d["metadata"]["name"], d["spec"]))
    return out


def expect_images(set_name: str, docs: list[dict], eff: dict, app_version: str, fullname: str = FULLNAME) -> None:
    L = lambda what: f"[{set_name}] {what}"
    app_image = expected_image(eff["image"], eff.get("global"), app_version)
    test_image = expected_image(eff["tests"]["image"], eff.get("global"), "latest")
    secrets = [{"name": n} for n in expected_pull_secrets(eff)]
    for name, spec in pod_specs(docs):
        want = test_image if name.startswith(f"{fullname}-test-") else app_image
        sidecars = [] if name.startswith(f"{fullname}-test-") else [c["image"] for c in eff.get("sidecars") or []]
        images = [c["image"] for c in spec["containers"]]
        check(L(f"{name} image {want}"), images == [want] + sidecars, str(images))
        check(L(f"{name} imagePullSecrets {[s['name'] for s in secrets]}"), spec.get("imagePullSecrets", []) == secrets,
              json.dumps(spec.get("imagePullSecrets")))


def expect_tests(set_name: str, docs: list[dict], eff: dict, namespace: str = NAMESPACE, fullname: str = FULLNAME) -> None:
    L = lambda what: f"[{set_name}] {what}"
    targets = {f"{fullname}-test-readyz": f"http://{fullname}.{namespace}.svc:{eff['service']['port']}/readyz"}
    if eff["events"]["enabled"]:
        targets[f"{fullname}-test-events"] = f"http://{fullname}-events.{namespace}.svc:{eff['events']['service']['port']}/readyz"
    if eff["api"]["enabled"]:
        targets[f"{fullname}-test-api"] = f"http://{fullname}-api.{namespace}.svc:{eff['api']['service']['port']}/readyz"
    for name, url in targets.items():
        pod = find(docs, "Pod", name)
        if pod is None:
            continue
        ann = pod["metadata"].get("annotations", {})
        check(L(f"{name} is a `helm test` hook, deleted when it passed"),
              ann.get("helm.sh/hook") == "test" and "hook-succeeded" in ann.get("helm.sh/hook-delete-policy", ""), json.dumps(ann))
        spec = pod["spec"]
        c = spec["containers"][0]
        sc, psc = c.get("securityContext", {}), spec.get("securityContext", {})
        check(L(f"{name} non-root, read-only root filesystem, no capabilities, no token"),
              sc.get("runAsNonRoot") is True and sc.get("readOnlyRootFilesystem") is True and sc.get("allowPrivilegeEscalation") is False
              and sc.get("capabilities", {}).get("drop") == ["ALL"] and psc.get("runAsNonRoot") is True
              and spec.get("automountServiceAccountToken") is False and spec.get("restartPolicy") == "Never", json.dumps(sc))
        args = c.get("args", [])
        check(L(f"{name} curls {url} and fails on HTTP errors"),
              c.get("command") == ["curl"] and args[-1:] == [url] and "--fail" in args
              and args[args.index("--retry") + 1] == str(eff["tests"]["retries"]), json.dumps(args))
        check(L(f"{name} has resources"), bool(c.get("resources", {}).get("limits")))
        labels = pod["metadata"]["labels"]
        check(L(f"{name} labelled component helm-test"), labels.get("app.kubernetes.io/component") == "helm-test")
    np_ = find(docs, "NetworkPolicy", FULLNAME)
    if np_ is not None:
        sel = np_["spec"]["podSelector"]
        test_labels = {"app.kubernetes.io/name": "pushworker", "app.kubernetes.io/instance": RELEASE, "app.kubernetes.io/component": "helm-test"}
        check(L("NetworkPolicy selects worker and events pods, not the test pods"),
              selector_matches(sel, {**test_labels, "app.kubernetes.io/component": "worker"})
              and selector_matches(sel, {**test_labels, "app.kubernetes.io/component": "events"})
              and not selector_matches(sel, test_labels), json.dumps(sel))
        froms = np_["spec"]["ingress"][0].get("from")
        if froms is not None and eff["tests"]["enabled"]:
            check(L("NetworkPolicy admits the test pods when ingressFrom restricts"),
                  any(selector_matches(f.get("podSelector", {"matchLabels": {"-": "-"}}), test_labels) and "namespaceSelector" not in f
                      for f in froms), json.dumps(froms))
        elif froms is not None:
            check(L("NetworkPolicy has no test-pod peer with tests off"),
                  not any("podSelector" in f and selector_matches(f["podSelector"], test_labels) for f in froms), json.dumps(froms))


def selector_matches(selector: dict, labels: dict) -> bool:
    for k, v in selector.get("matchLabels", {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions", []):
        val = labels.get(e["key"])
        if e["operator"] == "In" and val not in e["values"]:
            return False
        if e["operator"] == "NotIn" and val in e["values"]:
            return False
        if e["operator"] == "Exists" and val is None:
            return False
        if e["operator"] == "DoesNotExist" and val is not None:
            return False
    return True


def expect_events(set_name: str, docs: list[dict], eff: dict, notes: str) -> None:
    L = lambda what: f"[{set_name}] {what}"
    events = find(docs, "Deployment", f"{FULLNAME}-events")
    if events is None:
        return
    ec = container(events, "events")
    check(L("events Deployment runs `pushworker events`"), ec.get("args") == ["events"])
    check(L("events container hardened + probes"),
          ec["securityContext"].get("readOnlyRootFilesystem") is True
          and ec["readinessProbe"]["httpGet"]["path"] == "/readyz"
          and env_names(ec).get("EVENT_RATE_LIMIT", {}).get("value") == eff["events"]["rateLimit"])
    check(L("EVENT_TRUSTED_PROXIES from events.trustedProxies"),
          env_names(ec).get("EVENT_TRUSTED_PROXIES", {}).get("value") == eff["events"]["trustedProxies"])
    env = env_names(ec)
    for name, key in (("EVENT_IPV6_PREFIX", "ipv6Prefix"), ("EVENT_RATE_LIMIT_BUCKETS", "rateLimitBuckets"),
                      ("EVENT_IDLE_TIMEOUT_SECONDS", "idleTimeoutSeconds"), ("EVENT_CONNECTIONS_PER_IP", "connectionsPerIP"),
                      ("EVENT_HTTP_THREADS", "httpThreads")):
        wanted = eff["events"][key]
        got = env.get(name, {}).get("value")
        # Empty values leave the variable out: the binary's default applies.
        check(L(f"{name} from events.{key}"), got == (None if wanted == "" else str(wanted)), repr(got))
    cm = find(docs, "ConfigMap", FULLNAME)
    if cm is not None:
        # `pushworker events` reaches Redis as the worker does: the same TLS files and passwords.
        expect_redis_tls_and_sentinel(lambda what: L(f"events: {what}"), ec, events["spec"]["template"]["spec"], cm["data"], eff["redis"])
    known = set(re.findall(r'"(EVENT_[A-Z0-9_]+)"', open("Sources/PushEvents/EventsProcess.swift").read()))
    unknown = sorted(n for n in env if n.startswith("EVENT_") and n not in known)
    check(L("every EVENT_* variable rendered is one `pushworker events` reads"), not unknown, ", ".join(unknown))
    svc = find(docs, "Service", f"{FULLNAME}-events")
    want = eff["events"]["service"]
    if svc is not None:
        spec = svc["spec"]
        check(L(f"events Service type {want['type']} on port {want['port']} → http"),
              spec["type"] == want["type"] and spec["ports"][0]["port"] == want["port"] and spec["ports"][0]["targetPort"] == "http")
        check(L("events Service annotations"), svc["metadata"].get("annotations", {}) == want["annotations"],
              json.dumps(svc["metadata"].get("annotations")))
        external = want["type"] in ("NodePort", "LoadBalancer")
        check(L("externalTrafficPolicy only on NodePort/LoadBalancer, from values"),
              spec.get("externalTrafficPolicy") == (want["externalTrafficPolicy"] if external else None), json.dumps(spec))
        lb = want["type"] == "LoadBalancer"
        check(L("loadBalancerSourceRanges / loadBalancerClass only on LoadBalancer"),
              spec.get("loadBalancerSourceRanges") == ((want["loadBalancerSourceRanges"] or None) if lb else None)
              and spec.get("loadBalancerClass") == ((want["loadBalancerClass"] or None) if lb else None), json.dumps(spec))
        check(L("nodePort only when set on NodePort/LoadBalancer"),
              spec["ports"][0].get("nodePort") == (int(want["nodePort"]) if external and want["nodePort"] else None))
        check(L("events Service selects only events pods"),
              spec["selector"].get("app.kubernetes.io/component") == "events")
    ing = find(docs, "Ingress", f"{FULLNAME}-events")
    if ing is not None:
        iw = eff["events"]["ingress"]
        rules = ing["spec"]["rules"]
        paths = [p for r in rules for p in r["http"]["paths"]]
        check(L("Ingress exposes only /v1/e/ paths"), bool(paths) and all(p["path"].startswith("/v1/e/") for p in paths),
              json.dumps(paths))
        check(L("Ingress backends are the events Service port http"),
              all(p["backend"] == {"service": {"name": f"{FULLNAME}-events", "port": {"name": "http"}}} and p["pathType"] == iw["pathType"]
                  for p in paths))
        check(L("Ingress one rule per host (none: a host-less rule)"),
              [r.get("host") for r in rules] == (iw["hosts"] or [None]), json.dumps(rules))
        check(L("Ingress className, annotations, labels, TLS from values"),
              ing["spec"].get("ingressClassName") == (iw["className"] or None)
              and ing["metadata"].get("annotations", {}) == iw["annotations"]
              and all(ing["metadata"]["labels"].get(k) == v for k, v in iw["labels"].items())
              and ing["spec"].get("tls", []) == iw["tls"], json.dumps(ing))
        warned = "events.trustedProxies is empty" in notes
        check(L("NOTES warn iff the Ingress has no trustedProxies"), warned == (not eff["events"]["trustedProxies"]))
    cluster_policy = eff["events"]["service"]["type"] != "ClusterIP" and eff["events"]["service"]["externalTrafficPolicy"] == "Cluster"
    check(L("NOTES warn iff externalTrafficPolicy Cluster"), ("externalTrafficPolicy is Cluster" in notes) == cluster_policy)


API_VARIABLES = {"PUSHWORKER_API_ADDR", "PUSHWORKER_API_TOKENS_FILE", "PUSHWORKER_API_MAX_BODY", "PUSHWORKER_API_THREADS",
                 "PUSHWORKER_API_IDEMPOTENCY_TTL_SECONDS", "PUSHWORKER_API_PRODUCE_TIMEOUT_SECONDS"}


def expect_api(set_name: str, docs: list[dict], eff: dict, notes: str) -> None:
    """The API Deployment runs `pushworker api` with its settings, the tokens file from its Secret
    (mounted whole, so updates reach it), no msgId keys or provider credentials; its Service,
    Ingress (only /v1/ and /openapi.json) and NetworkPolicy (no provider egress)."""
    L = lambda what: f"[{set_name}] {what}"
    dep = find(docs, "Deployment", f"{FULLNAME}-api")
    if dep is None:
        return
    api = eff["api"]
    pod = dep["spec"]["template"]["spec"]
    c = container(dep, "api")
    check(L("API Deployment runs `pushworker api`"), c.get("args") == ["api"])
    check(L("API replicas from api.replicaCount"), dep["spec"].get("replicas") == api["replicaCount"])
    check(L("API pods labelled component api"), dep["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component") == "api")
    sc = c.get("securityContext", {})
    check(L("API container hardened"), sc.get("readOnlyRootFilesystem") is True and sc.get("runAsNonRoot") is True
          and sc.get("capabilities", {}).get("drop") == ["ALL"] and pod.get("automountServiceAccountToken") is False, json.dumps(sc))
    ports = c.get("ports", [])
    check(L(f"API container port {api['port']} named http"), ports == [{"name": "http", "containerPort": api["port"], "protocol": "TCP"}],
          json.dumps(ports))
    check(L("API liveness /healthz, readiness /readyz on http"),
          c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
          and c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"})
    env = env_names(c)
    want = {"PUSHWORKER_API_ADDR": f"0.0.0.0:{api['port']}", "PUSHWORKER_API_TOKENS_FILE": f"/etc/pushworker/api/{api['tokens']['key']}",
            "PUSHWORKER_API_MAX_BODY": str(api["maxBodyBytes"]), "PUSHWORKER_API_THREADS": str(api["threads"]),
            "PUSHWORKER_API_IDEMPOTENCY_TTL_SECONDS": str(api["idempotencyTTLSeconds"]),
            "PUSHWORKER_API_PRODUCE_TIMEOUT_SECONDS": str(api["produceTimeoutSeconds"]), "PUSHWORKER_CREDENTIALS_DIR": ""}
    got = {k: env.get(k, {}).get("value") for k in want}
    check(L("API settings from values (and no credentials folder)"), got == want, f"{got} != {want}")
    code = "".join(path.read_text() for path in (ROOT / "Sources/PushRuntime/Configuration").glob("*.swift"))
    unknown = sorted(n for n in env if n.startswith("PUSHWORKER_API_") and f'"{n}"' not in code)
    check(L("every PUSHWORKER_API_* variable rendered is one the code reads"), not unknown and set(API_VARIABLES) <= set(env), ", ".join(unknown))
    check(L("API container: no msgId keys, no credentials volume"),
          "PUSHWORKER_MSGID_KEYS" not in env and "credentials" not in {v["name"] for v in pod.get("volumes", [])})
    check(L("API container reads the ConfigMap (Kafka, Redis, topics)"), c.get("envFrom") == [{"configMapRef": {"name": FULLNAME}}])
    for sp in eff["kafka"].get("secretProperties") or []:
        name = "PUSHWORKER_RDKAFKA_" + sp["property"].upper().replace(".", "_").replace("-", "_")
        check(L(f"API reads {name} from its Secret"),
              env.get(name, {}).get("valueFrom", {}).get("secretKeyRef") == {"name": sp["secretName"], "key": sp["secretKey"]})
    secret_name = api["tokens"]["existingSecret"] or f"{FULLNAME}-api-tokens"
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = {m["name"]: m for m in c.get("volumeMounts", [])}
    tokens = volumes.get("api-tokens", {}).get("secret", {})
    check(L(f"tokens Secret {secret_name} mounted whole and read-only at /etc/pushworker/api"),
          tokens.get("secretName") == secret_name and tokens.get("items") == [{"key": api["tokens"]["key"], "path": api["tokens"]["key"]}]
          and mounts.get("api-tokens") == {"name": "api-tokens", "mountPath": "/etc/pushworker/api", "readOnly": True}
          and "subPath" not in mounts.get("api-tokens", {}), json.dumps(tokens))
    created = find(docs, "Secret", f"{FULLNAME}-api-tokens")
    if created is not None:
        lines = [line for line in created["stringData"][api["tokens"]["key"]].splitlines() if line and not line.startswith("#")]
        check(L("created tokens Secret holds api.tokens.values, one per line"), lines == api["tokens"]["values"], json.dumps(lines))
        check(L("NOTES warn about tokens in values"), "api.tokens.values" in notes)
    svc = find(docs, "Service", f"{FULLNAME}-api")
    if svc is not None:
        spec = svc["spec"]
        check(L(f"API Service {api['service']['type']} port {api['service']['port']} → http, API pods only"),
              spec["type"] == api["service"]["type"] and spec["ports"] == [{"name": "http", "port": api["service"]["port"], "targetPort": "http", "protocol": "TCP"}]
              and spec["selector"].get("app.kubernetes.io/component") == "api"
              and svc["metadata"].get("annotations", {}) == api["service"]["annotations"], json.dumps(spec))
    ing = find(docs, "Ingress", f"{FULLNAME}-api")
    if ing is not None:
        iw = api["ingress"]
        rules = ing["spec"]["rules"]
        backend = {"service": {"name": f"{FULLNAME}-api", "port": {"name": "http"}}}
        check(L("API Ingress routes only /v1/ (Prefix) and /openapi.json (Exact) to the API Service"),
              all(r["http"]["paths"] == [{"path": "/v1/", "pathType": "Prefix", "backend": backend},
                                         {"path": "/openapi.json", "pathType": "Exact", "backend": backend}] for r in rules), json.dumps(rules))
        check(L("API Ingress one rule per host, className, annotations, labels, TLS from values"),
              [r.get("host") for r in rules] == (iw["hosts"] or [None]) and ing["spec"].get("ingressClassName") == (iw["className"] or None)
              and ing["metadata"].get("annotations", {}) == iw["annotations"]
              and all(ing["metadata"]["labels"].get(k) == v for k, v in iw["labels"].items()) and ing["spec"].get("tls", []) == iw["tls"],
              json.dumps(ing))
    np_ = find(docs, "NetworkPolicy", f"{FULLNAME}-api")
    if np_ is not None:
        ports = sorted({p["port"] for rule in np_["spec"]["egress"] for p in rule["ports"]})
        check(L("API NetworkPolicy egress DNS + Kafka + Redis only (no provider HTTPS)"), ports == [53, 6379, 9092, 9093], str(ports))
        labels = {"app.kubernetes.io/name": "pushworker", "app.kubernetes.io/instance": RELEASE}
        check(L("API NetworkPolicy selects the API pods only"),
              selector_matches(np_["spec"]["podSelector"], {**labels, "app.kubernetes.io/component": "api"})
              and not selector_matches(np_["spec"]["podSelector"], {**labels, "app.kubernetes.io/component": "worker"}))
        froms = np_["spec"]["ingress"][0].get("from")
        check(L("API NetworkPolicy ingress from api.networkPolicyFrom (+ the test pods), any when empty"),
              (froms is None) == (not api["networkPolicyFrom"]) and all(f in (froms or []) for f in api["networkPolicyFrom"]), json.dumps(froms))
        worker_np = find(docs, "NetworkPolicy", FULLNAME)
        if worker_np is not None:
            check(L("the worker NetworkPolicy does not select the API pods"),
                  not selector_matches(worker_np["spec"]["podSelector"], {**labels, "app.kubernetes.io/component": "api"}))


def expect_monitoring(set_name: str, docs: list[dict], eff: dict) -> None:
    L = lambda what: f"[{set_name}] {what}"
    np_ = find(docs, "NetworkPolicy", FULLNAME)
    if np_ is not None:
        ports = sorted({p["port"] for rule in np_["spec"]["egress"] for p in rule["ports"]})
        redis_ports = eff["networkPolicy"]["redis"]["ports"]
        check(L("NetworkPolicy egress DNS + 443 + Kafka + Redis only"), ports == sorted({53, 443, 9092, 9093, *redis_ports}), str(ports))
    sm = find(docs, "ServiceMonitor")
    if sm is not None:
        check(L("ServiceMonitor scrapes /metrics on http"),
              sm["spec"]["endpoints"][0]["port"] == "http" and sm["spec"]["endpoints"][0]["path"] == "/metrics"
              and all(sm["metadata"]["labels"].get(k) == v for k, v in eff["serviceMonitor"]["labels"].items()))
    dash = find(docs, "ConfigMap", f"{FULLNAME}-dashboard")
    if dash is not None:
        check(L("dashboard ConfigMap labelled grafana_dashboard=1"), dash["metadata"]["labels"].get("grafana_dashboard") == "1")
        try:
            check(L("dashboard ConfigMap holds the dashboard JSON"),
                  json.loads(dash["data"]["pushworker.json"]) == json.loads(DASHBOARD.read_text()))
        except ValueError as e:
            fail(L("dashboard ConfigMap JSON"), str(e))


def expect_worker_coverage(set_name: str, docs: list[dict], eff: dict) -> None:
    """Every worker Deployment's pods (the dedicated transactional one's too, docs/lanes.md) are
    behind a Service with the http port that the ServiceMonitor selects, in a PodDisruptionBudget
    and under the NetworkPolicy, and no other worker Deployment's pods share them."""
    L = lambda what: f"[{set_name}] {what}"
    workers = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] in (FULLNAME, f"{FULLNAME}-transactional")]
    services = [d for d in docs if d["kind"] == "Service"]
    budgets = [d for d in docs if d["kind"] == "PodDisruptionBudget"]
    sm, np_ = find(docs, "ServiceMonitor"), find(docs, "NetworkPolicy", FULLNAME)
    for dep in workers:
        name, labels = dep["metadata"]["name"], dep["spec"]["template"]["metadata"]["labels"]
        own = [s for s in services if s["spec"].get("selector") and selector_matches({"matchLabels": s["spec"]["selector"]}, labels)]
        check(L(f"{name}: its pods are behind one Service with the http port"),
              len(own) == 1 and any(p["name"] == "http" for p in own[0]["spec"]["ports"]), str([s["metadata"]["name"] for s in own]))
        others = [d["metadata"]["name"] for d in workers if d is not dep and own
                  and selector_matches({"matchLabels": own[0]["spec"]["selector"]}, d["spec"]["template"]["metadata"]["labels"])]
        check(L(f"{name}: its Service selects no other worker Deployment's pods"), not others, str(others))
        if sm is not None and own:
            check(L(f"{name}: the ServiceMonitor selects its Service"), selector_matches(sm["spec"]["selector"], own[0]["metadata"]["labels"]))
        if on(eff, "pdb", "enabled"):
            check(L(f"{name}: its pods are in one PodDisruptionBudget"),
                  sum(selector_matches(b["spec"]["selector"], labels) for b in budgets) == 1)
        if np_ is not None:
            check(L(f"{name}: its pods are under the NetworkPolicy"), selector_matches(np_["spec"]["podSelector"], labels))


def expected_alerts(eff: dict) -> set[str]:
    alerts = {name for name, a in eff["prometheusRule"]["alerts"].items() if (a or {}).get("enabled", True) is not False}
    if not eff["events"]["enabled"]:
        alerts = {a for a in alerts if not a.startswith(("PushworkerEvents", "PushworkerWebhook"))}
    elif int(eff["events"]["replicaCount"]) == 0:
        alerts.discard("PushworkerEventsNotReady")
    keda, hpa = eff["autoscaling"]["keda"], eff["autoscaling"]["hpa"]
    minimum = keda["minReplicaCount"] if keda["enabled"] else hpa["minReplicas"] if hpa["enabled"] else eff["replicaCount"]
    if int(minimum) == 0:
        alerts.discard("PushworkerNoReadyWorkers")
    return alerts


def github_anchors(markdown: str) -> set[str]:
    anchors = set()
    for line in markdown.splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*$", line)
        if m:
            text = re.sub(r"[`*_]|<[^>]+>", "", m.group(1)).strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return anchors


def alert_rules(rule_doc: dict) -> dict[str, dict]:
    return {r["alert"]: r for g in rule_doc["spec"]["groups"] for r in g["rules"] if "alert" in r}


def expect_operator_features(set_name: str, docs: list[dict], eff: dict, values: dict) -> None:
    """commonLabels, podAnnotations, extraEnv, extra volumes, init containers, sidecars,
    extraObjects, rollout strategies, the startupProbe, the ServiceMonitor's extras and the
    topics hook Job render as values.yaml says, in every set (on and off)."""
    L = lambda what: f"[{set_name}] {what}"
    common = eff.get("commonLabels") or {}
    own = {d["metadata"]["name"] for d in docs} - {o["metadata"]["name"] for o in values.get("extraObjects", []) if isinstance(o, dict)}
    for d in docs:
        name = d["metadata"]["name"]
        if name not in own or name.endswith("-templated"):
            continue
        labels = d["metadata"].get("labels", {})
        check(L(f"{d['kind']}/{name} carries commonLabels"), all(labels.get(k) == v for k, v in common.items()), json.dumps(labels))
        template = (d.get("spec", {}).get("template") or {}).get("metadata")
        if template is not None:
            pod_labels = template.get("labels", {})
            check(L(f"{d['kind']}/{name} pods carry commonLabels"), all(pod_labels.get(k) == v for k, v in common.items()),
                  json.dumps(pod_labels))
            check(L(f"{d['kind']}/{name} pods carry podAnnotations"),
                  all(template.get("annotations", {}).get(k) == v for k, v in (eff.get("podAnnotations") or {}).items()))
    deployments = [d for d in (find(docs, "Deployment", FULLNAME), find(docs, "Deployment", f"{FULLNAME}-events"),
                               find(docs, "Deployment", f"{FULLNAME}-api")) if d]
    for dep in deployments:
        pod = dep["spec"]["template"]["spec"]
        main = pod["containers"][0]
        label = dep["metadata"]["name"]
        check(L(f"{label}: initContainers as given"), pod.get("initContainers", []) == eff["initContainers"], json.dumps(pod.get("initContainers")))
        check(L(f"{label}: sidecars after the main container"), pod["containers"][1:] == eff["sidecars"], json.dumps(pod["containers"][1:]))
        env = main.get("env", [])
        check(L(f"{label}: extraEnv in the main container"), all(e in env for e in eff["extraEnv"]))
        mounts, volumes = main.get("volumeMounts", []), pod.get("volumes", [])
        check(L(f"{label}: extraVolumes and extraVolumeMounts"),
              all(v in volumes for v in eff["extraVolumes"]) and all(m in mounts for m in eff["extraVolumeMounts"]))
        startup = main.get("startupProbe")
        want = eff["probes"]["startup"]
        if want.get("enabled"):
            expected = {k: v for k, v in want.items() if k != "enabled"}
            check(L(f"{label}: startupProbe on /healthz as configured"),
                  startup is not None and startup.get("httpGet") == {"path": "/healthz", "port": "http"}
                  and all(startup.get(k) == v for k, v in expected.items()) and "enabled" not in startup, json.dumps(startup))
        else:
            check(L(f"{label}: no startupProbe when probes.startup.enabled is false"), startup is None)
    worker = find(docs, "Deployment", FULLNAME)
    if worker is not None:
        want_strategy = {"type": "Recreate"} if eff["updateStrategy"].get("type") == "Recreate" else eff["updateStrategy"]
        check(L("worker rollout strategy from updateStrategy (Recreate without rollingUpdate)"), worker["spec"].get("strategy") == want_strategy,
              json.dumps(worker["spec"].get("strategy")))
        if "updateStrategy" not in values:
            check(L("worker rollout never surges by default (maxSurge 0)"),
                  worker["spec"]["strategy"].get("rollingUpdate", {}).get("maxSurge") == 0)
    events = find(docs, "Deployment", f"{FULLNAME}-events")
    if events is not None:
        check(L("events rollout strategy from events.updateStrategy (none: Kubernetes' default)"),
              events["spec"].get("strategy") == (eff["events"]["updateStrategy"] or None), json.dumps(events["spec"].get("strategy")))
    for obj in eff.get("extraObjects") or []:
        name = obj["metadata"]["name"] if isinstance(obj, dict) else f"{RELEASE}-templated"
        rendered = find(docs, "ConfigMap", name)
        check(L(f"extraObjects: {name} rendered"), rendered is not None)
        if rendered is not None and not isinstance(obj, dict):
            check(L("extraObjects: strings are templated"), rendered.get("data", {}).get("release") == RELEASE, json.dumps(rendered))
    sm = find(docs, "ServiceMonitor")
    if sm is not None:
        sme = eff["serviceMonitor"]
        endpoint = sm["spec"]["endpoints"][0]
        check(L("ServiceMonitor namespace (empty: the release's) and targets in the release's namespace"),
              sm["metadata"].get("namespace") == (sme["namespace"] or None) and sm["spec"]["namespaceSelector"]["matchNames"] == [NAMESPACE],
              json.dumps(sm["metadata"]))
        check(L("ServiceMonitor relabelings and metricRelabelings"),
              endpoint.get("relabelings") == (sme["relabelings"] or None) and endpoint.get("metricRelabelings") == (sme["metricRelabelings"] or None),
              json.dumps(endpoint))
    job = find(docs, "Job", f"{FULLNAME}-topics")
    if job is not None:
        tj = eff["topicsJob"]
        ann = job["metadata"].get("annotations", {})
        check(L("topics Job is a pre-install/pre-upgrade hook, deleted when it succeeded"),
              ann.get("helm.sh/hook") == "pre-install,pre-upgrade" and "hook-succeeded" in ann.get("helm.sh/hook-delete-policy", "")
              and "before-hook-creation" in ann.get("helm.sh/hook-delete-policy", ""), json.dumps(ann))
        pod = job["spec"]["template"]["spec"]
        c = pod["containers"][0]
        args = c.get("args", [])
        want_args = ["topics", "apply", "--timeout", str(tj["timeoutSeconds"])]
        if tj.get("replicationFactor"):
            want_args += ["--replication-factor", str(tj["replicationFactor"])]
        if tj.get("dryRun"):
            want_args += ["--dry-run"]
        check(L("topics Job runs `pushworker topics apply` with its options"), args == want_args, json.dumps(args))
        check(L("topics Job uses the worker image"), c["image"] == expected_image(eff["image"], eff.get("global"), yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]))
        env = env_names(c)
        check(L("topics Job has the Kafka settings inline (no ConfigMap before install)"),
              "envFrom" not in c and env.get("PUSHWORKER_KAFKA_BROKERS", {}).get("value") == eff["kafka"]["brokers"]
              and all(env.get("PUSHWORKER_TOPIC_" + re.sub(r"([a-z])([A-Z])", r"\1_\2", k).upper(), {}).get("value") == v
                      for k, v in eff["kafka"]["topics"].items()), json.dumps(env))
        for prop, value in (eff["kafka"].get("properties") or {}).items():
            name = "PUSHWORKER_RDKAFKA_" + prop.upper().replace(".", "_").replace("-", "_")
            check(L(f"topics Job passes {name}"), env.get(name, {}).get("value") == str(value))
        for sp in eff["kafka"].get("secretProperties") or []:
            name = "PUSHWORKER_RDKAFKA_" + sp["property"].upper().replace(".", "_").replace("-", "_")
            check(L(f"topics Job reads {name} from its Secret"),
                  env.get(name, {}).get("valueFrom", {}).get("secretKeyRef") == {"name": sp["secretName"], "key": sp["secretKey"]})
        check(L("topics Job: no message keys, Redis or credentials"),
              not {"PUSHWORKER_MSGID_KEYS", "PUSHWORKER_REDIS_URL"} & set(env) and "credentials" not in {v["name"] for v in pod.get("volumes", [])})
        sc = c.get("securityContext", {})
        check(L("topics Job hardened, no token, never restarted in place"),
              sc.get("readOnlyRootFilesystem") is True and sc.get("runAsNonRoot") is True and pod.get("automountServiceAccountToken") is False
              and pod.get("restartPolicy") == "Never", json.dumps(sc))
        check(L("topics Job's ServiceAccount: the namespace default unless named (the chart's does not exist before install)"),
              pod.get("serviceAccountName") == (tj["serviceAccountName"] or None), json.dumps(pod.get("serviceAccountName")))
        labels = job["spec"]["template"]["metadata"]["labels"]
        check(L("topics Job pods are component topics (not selected by the NetworkPolicy, not by Services)"),
              labels.get("app.kubernetes.io/component") == "topics")
        for np_ in (find(docs, "NetworkPolicy", FULLNAME), find(docs, "NetworkPolicy", f"{FULLNAME}-api")):
            if np_ is None:
                continue
            check(L(f"NetworkPolicy {np_['metadata']['name']} does not select the topics Job's pods"), not selector_matches(np_["spec"]["podSelector"], labels))


def check_schema_closed() -> None:
    """Every object of values.schema.json refuses unknown keys, but `global` and extraObjects' manifests."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    allowed_open = {"/properties/global", "/properties/extraObjects/items/anyOf/1"}
    open_objects: list[str] = []

    def walk(node: Any, path: str, is_schema: bool) -> None:
        if isinstance(node, dict):
            if is_schema and (node.get("type") == "object" or "properties" in node) and "additionalProperties" not in node \
                    and "$ref" not in node and path not in allowed_open:
                open_objects.append(path)
            for key, value in node.items():
                if key in ("properties", "definitions", "$defs"):
                    for name, child in value.items():
                        walk(child, f"{path}/{key}/{name}", True)
                elif key in ("items", "additionalProperties", "not"):
                    walk(value, f"{path}/{key}", True)
                elif key in ("anyOf", "oneOf", "allOf"):
                    for i, child in enumerate(value):
                        walk(child, f"{path}/{key}/{i}", True)
    walk(schema, "", True)
    check("values.schema.json: every object refuses unknown keys (global and extraObjects' manifests excepted)",
          not open_objects, ", ".join(open_objects[:10]))
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "chart_schema_k8s.py")], capture_output=True, text=True)
    check("values.schema.json: the embedded Kubernetes definitions are current", result.returncode == 0, result.stdout + result.stderr)


def expect_prometheus_rule(set_name: str, docs: list[dict], eff: dict) -> None:
    L = lambda what: f"[{set_name}] {what}"
    pr = find(docs, "PrometheusRule")
    if pr is None:
        return
    cfg = eff["prometheusRule"]
    rules = alert_rules(pr)
    own = {n: r for n, r in rules.items() if n not in {x.get("alert") for x in cfg["extraRules"]}}
    want = expected_alerts(eff)
    check(L("PrometheusRule has exactly the enabled alerts"), set(own) == want,
          f"missing {sorted(want - set(own))}, unexpected {sorted(set(own) - want)}")
    check(L("PrometheusRule labels and annotations from values"),
          all(pr["metadata"]["labels"].get(k) == v for k, v in cfg["labels"].items())
          and pr["metadata"].get("annotations", {}) == cfg["annotations"])
    anchors = github_anchors(OPERATIONS.read_text())
    worker_sel = cfg["workerSelector"] or f'namespace="{NAMESPACE}",job="{FULLNAME}"'
    events_sel = cfg["eventsSelector"] or f'namespace="{NAMESPACE}",job="{FULLNAME}-events"'
    for name, rule in own.items():
        a = cfg["alerts"][name] or {}
        labels = {**cfg["additionalAlertLabels"], "severity": a.get("severity", "warning"), **a.get("labels", {})}
        check(L(f"{name} labels (severity, additional, own)"), rule.get("labels") == labels, f"{rule.get('labels')} != {labels}")
        ann = rule.get("annotations", {})
        url = ann.get("runbook_url", "")
        base, _, anchor = url.partition("#")
        check(L(f"{name} runbook_url → docs/operations.md#{anchor}"),
              base == cfg["runbookBaseUrl"] and anchor == name.lower() and anchor in anchors, url)
        check(L(f"{name} summary, description, extra and own annotations"),
              bool(ann.get("summary")) and bool(ann.get("description"))
              and all(ann.get(k) == v for k, v in {**cfg["additionalAlertAnnotations"], **a.get("annotations", {})}.items()), json.dumps(ann))
        check(L(f"{name} for {a.get('for', '0m')}"), rule.get("for") == a.get("for", "0m"))
        selector = events_sel if name.startswith(("PushworkerEvents", "PushworkerWebhook")) else worker_sel
        series = re.findall(r"\b(pushworker_[a-z_]+)\{([^}]*)\}", rule["expr"])
        check(L(f"{name} selects its series with {selector}"), bool(series) and all(sel.startswith(selector) for _, sel in series),
              rule["expr"][:300])
        if "threshold" in a:
            check(L(f"{name} compares against threshold {a['threshold']}"),
                  re.search(rf"> {re.escape(str(a['threshold']))}(\s|$)", rule["expr"]) is not None, rule["expr"][-200:])
    extra = [g for g in pr["spec"]["groups"] if g["name"] == "pushworker.extra"]
    check(L("extraRules in their own group iff given"),
          (extra[0]["rules"] if extra else []) == cfg["extraRules"])


def check_dashboard() -> None:
    try:
        dash = json.loads(DASHBOARD.read_text())
    except (OSError, ValueError) as e:
        fail("dashboard JSON", str(e))
        return
    exprs = [t.get("expr", "") for p in dash.get("panels", []) for t in p.get("targets", [])]
    for metric in DASHBOARD_METRICS:
        check(f"dashboard queries {metric}", any(metric in e for e in exprs))
    check("dashboard throughput by status", any("sum by (status)" in e and "pushworker_notifications_total" in e for e in exprs))
    check("dashboard reasons by reason", any("reason)" in e and "pushworker_notifications_total" in e for e in exprs))
    check("dashboard p50 and p99 by provider",
          any("histogram_quantile(0.5," in e and "provider" in e for e in exprs)
          and any("histogram_quantile(0.99," in e and "provider" in e for e in exprs))
    check("dashboard lag by topic/partition", any("pushworker_kafka_consumer_lag" in e and "partition" in e for e in exprs))
    check("dashboard token refreshes by provider", any("pushworker_token_refreshes_total" in e and "by (provider)" in e for e in exprs))
    panels = dash.get("panels", [])
    ids = [p.get("id") for p in panels]
    check("dashboard panel ids unique", len(ids) == len(set(ids)))
    check("dashboard uses a datasource variable", any(v.get("type") == "datasource" for v in dash.get("templating", {}).get("list", [])))
    variables = {v.get("name") for v in dash.get("templating", {}).get("list", [])}
    used = {m for e in exprs for m in re.findall(r"\$(\w+)", e)} - {"__rate_interval", "__interval", "__range"}
    check("dashboard queries use only defined variables", used <= variables, f"undefined: {used - variables}")
    lag_panels = [p for p in panels if any("pushworker_kafka_consumer_lag" in t.get("expr", "") for t in p.get("targets", []))]
    for p in lag_panels:
        targets = [t["expr"] for t in p["targets"]]
        check(f"dashboard '{p['title']}': worker lag falls back to last_over_time when no worker reports",
              any("pushworker_kafka_consumer_lag" in e and " or " in e and "last_over_time(pushworker_kafka_consumer_lag" in e for e in targets),
              str(targets))
        check(f"dashboard '{p['title']}': broker-side kafka_consumergroup_lag as a second query",
              any("kafka_consumergroup_lag" in e for e in targets), str(targets))
        check(f"dashboard '{p['title']}': description explains the choice",
              "last_over_time" in p.get("description", "") or "last known" in p.get("description", ""), p.get("description", ""))
    for metric in EVENTS_DASHBOARD_METRICS:
        check(f"dashboard queries {metric} (tracking events)", any(metric in e for e in exprs))
    check("dashboard has a Tracking events row", any(p.get("type") == "row" and "Tracking events" in p.get("title", "") for p in panels))
    for metric in CAMPAIGN_DASHBOARD_METRICS:
        check(f"dashboard queries {metric} (campaign control, HTTP API)", any(metric in e for e in exprs))
    check("dashboard shows paused and cancelled campaigns",
          any('state="paused"' in e and "pushworker_campaign_controls" in e for e in exprs)
          and any('state="cancelled"' in e and "pushworker_campaign_controls" in e for e in exprs))
    check("dashboard has Campaign control and HTTP API rows",
          {"Campaign control", "HTTP API"} <= {p.get("title") for p in panels if p.get("type") == "row"})
    for p in panels:
        if p.get("type") != "row":
            check(f"dashboard panel '{p.get('title')}' has a description", bool(p.get("description")))
    cells: set[tuple[int, int]] = set()
    overlap = False
    for p in panels:
        g = p["gridPos"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                overlap |= (x, y) in cells
                cells.add((x, y))
    check("dashboard panels do not overlap and fit 24 columns", not overlap and all(p["gridPos"]["x"] + p["gridPos"]["w"] <= 24 for p in panels))


def dashboard_exprs() -> list[tuple[str, str]]:
    """(label, PromQL) of every dashboard target with Grafana's variables replaced."""
    dash = json.loads(DASHBOARD.read_text())
    out = []
    for p in dash.get("panels", []):
        for t in p.get("targets", []):
            e = t.get("expr", "")
            e = e.replace("$__rate_interval", "2m").replace('=~"$namespace"', '=~".*"').replace("$consumergroup", "pushworker")
            out.append((f"{p['title']} {t.get('refId')}", e))
    return out


# --- promtool ---------------------------------------------------------------------------------
def find_promtool() -> str | None:
    """promtool from PATH, else from .build/promtool (Debian's `prometheus` package unpacked there
    by `apt-get download` + `dpkg-deb`, promtool only, nothing installed or started)."""
    exe = shutil.which("promtool")
    if exe:
        return exe
    cache = ROOT / ".build" / "promtool"
    cached = cache / "usr" / "bin" / "promtool"
    if cached.exists():
        return str(cached)
    cache.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(["apt-get", "download", "-q", "prometheus"], cwd=cache, check=True, capture_output=True, timeout=300)
        deb = next(cache.glob("prometheus_*.deb"))
        subprocess.run(f"dpkg-deb --fsys-tarfile '{deb}' | tar -x -C '{cache}' ./usr/bin/promtool", shell=True, check=True,
                       capture_output=True, timeout=300)
        deb.unlink()
    except (OSError, subprocess.SubprocessError, StopIteration) as e:
        print(f"check_chart: cannot get promtool ({e}); install Debian's prometheus package", file=sys.stderr)
        return None
    return str(cached) if cached.exists() else None


def run_promtool(promtool: str, *args: str) -> tuple[bool, str]:
    r = subprocess.run([promtool, *args], capture_output=True, text=True, timeout=300)
    return r.returncode == 0, (r.stdout + r.stderr).strip()


W = f'namespace="{NAMESPACE}",job="{FULLNAME}"'
E = f'namespace="{NAMESPACE}",job="{FULLNAME}-events"'
LAG = f'pushworker_kafka_consumer_lag{{{W},topic="push.jobs.v1",partition="0"'


def promtool_tests(team: dict) -> list[dict]:
    """Synthetic series → which alerts fire (labels only: annotations are checked by `check rules`)."""
    def alert(name: str, at: str, *expected: dict) -> dict:
        return {"alertname": name, "eval_time": at, "exp_alerts": [{"exp_labels": {**team, **x}} for x in expected]}
    notif = lambda labels: f'pushworker_notifications_total{{{W},{labels}}}'
    return [
        {"name": "the first dead letter fires (the counter is exported at 0 from start-up)", "interval": "1m",
         "input_series": [{"series": f'pushworker_dlq_total{{{W},pod="w1"}}', "values": "0x5 1x10"}],
         "alert_rule_test": [alert("PushworkerDeadLetters", "4m"),
                             alert("PushworkerDeadLetters", "8m", {"severity": "warning"})]},
        {"name": "no ready worker: all unready or gone", "interval": "1m",
         "input_series": [{"series": f'pushworker_ready{{{W},pod="w1"}}', "values": "1 1 0x25"},
                          {"series": f'pushworker_ready{{{W},pod="w2"}}', "values": "1 1 stale"}],
         "alert_rule_test": [alert("PushworkerNoReadyWorkers", "3m"),
                             alert("PushworkerNoReadyWorkers", "9m", {"severity": "critical"}),
                             alert("PushworkerPodNotReady", "9m"),
                             alert("PushworkerPodNotReady", "20m", {"severity": "warning", "namespace": NAMESPACE, "pod": "w1"})]},
        {"name": "lag alert keeps firing after every worker is gone, for 15 min", "interval": "1m",
         "input_series": [{"series": LAG + ',pod="w1"}', "values": "60000x3 stale"}],
         "alert_rule_test": [alert("PushworkerConsumerLagHigh", "17m", {"severity": "critical", "pager": "yes"}),
                             alert("PushworkerConsumerLagHigh", "19m")],
         "promql_expr_test": [
             {"expr": DASHBOARD_LAG_BY_PARTITION, "eval_time": "10m",
              "exp_samples": [{"labels": '{partition="0", topic="push.jobs.v1"}', "value": 60000}]},
             {"expr": DASHBOARD_LAG_TOTAL, "eval_time": "10m", "exp_samples": [{"labels": "{}", "value": 60000}]},
             {"expr": f'max by (topic, partition) (pushworker_kafka_consumer_lag{{namespace=~".*"}})', "eval_time": "10m",
              "exp_samples": []}]},
        {"name": "dashboard lag: the live value wins over the last known one after a rebalance", "interval": "1m",
         "input_series": [{"series": LAG + ',pod="w1"}', "values": "100x4 stale"},
                          {"series": LAG + ',pod="w2"}', "values": "_x5 10x10"}],
         "promql_expr_test": [{"expr": DASHBOARD_LAG_BY_PARTITION, "eval_time": "8m",
                               "exp_samples": [{"labels": '{partition="0", topic="push.jobs.v1"}', "value": 10}]}]},
        {"name": "a stuck fleet: lag but no results", "interval": "1m",
         "input_series": [{"series": f'pushworker_ready{{{W},pod="w1"}}', "values": "1x30"},
                          {"series": LAG + ',pod="w1"}', "values": "5x30"},
                          {"series": notif('platform="ios",status="sent",reason=""'), "values": "100x30"}],
         "alert_rule_test": [alert("PushworkerNoSendsWhileLag", "5m"),
                             alert("PushworkerNoSendsWhileLag", "15m", {"severity": "critical"}),
                             alert("PushworkerNoReadyWorkers", "15m")]},
        {"name": "a healthy fleet raises none", "interval": "1m",
         "input_series": [{"series": f'pushworker_ready{{{W},pod="w1"}}', "values": "1x40"},
                          {"series": LAG + ',pod="w1"}', "values": "20x40"},
                          {"series": notif('platform="ios",status="sent",reason=""'), "values": "0+600x40"},
                          {"series": notif('platform="ios",status="failed",reason="timeout"'), "values": "0+6x40"},
                          {"series": f'pushworker_dlq_total{{{W},pod="w1"}}', "values": "0x40"},
                          {"series": f'pushworker_redis_errors_total{{{W},pod="w1"}}', "values": "0x40"},
                          {"series": f'pushworker_kafka_produce_failures_total{{{W},pod="w1"}}', "values": "0x40"},
                          {"series": f'pushworker_kafka_errors_total{{{W},pod="w1"}}', "values": "0x40"},
                          {"series": f'pushworker_provider_responses_total{{{W},provider="apns",status="200"}}', "values": "0+600x40"}],
         "alert_rule_test": [alert(n, "30m") for n in (
             "PushworkerNoReadyWorkers", "PushworkerPodNotReady", "PushworkerConsumerLagHigh", "PushworkerConsumerLagGrowing",
             "PushworkerNoSendsWhileLag", "PushworkerDeadLetters", "PushworkerKafkaProduceFailures", "PushworkerRedisErrors",
             "PushworkerKafkaErrors", "PushworkerProviderErrorRatio", "PushworkerFailedRatio", "PushworkerRejectedRatio",
             "PushworkerInvalidTokenRatio", "PushworkerCredentialsRejected")]},
        {"name": "provider errors per provider; failed share without duplicates in the denominator", "interval": "1m",
         "input_series": [{"series": f'pushworker_provider_responses_total{{{W},provider="apns",status="200"}}', "values": "0+600x30"},
                          {"series": f'pushworker_provider_responses_total{{{W},provider="apns",status="503"}}', "values": "0+300x30"},
                          {"series": f'pushworker_provider_responses_total{{{W},provider="fcm",status="200"}}', "values": "0+600x30"},
                          {"series": notif('platform="ios",status="sent",reason=""'), "values": "0+600x30"},
                          {"series": notif('platform="ios",status="failed",reason="timeout"'), "values": "0+60x30"},
                          {"series": notif('platform="ios",status="duplicate",reason=""'), "values": "0+60000x30"},
                          {"series": notif('platform="android",status="sent",reason=""'), "values": "0+600x30"}],
         "alert_rule_test": [alert("PushworkerProviderErrorRatio", "25m", {"severity": "warning", "provider": "apns"}),
                             alert("PushworkerFailedRatio", "25m", {"severity": "warning", "platform": "ios"})]},
        {"name": "credentials rejected, per platform and reason", "interval": "1m",
         "input_series": [{"series": notif('platform="android",status="rejected",reason="no_credentials"'), "values": "0 0 5x20"}],
         "alert_rule_test": [alert("PushworkerCredentialsRejected", "10m",
                                   {"severity": "warning", "platform": "android", "reason": "no_credentials"})]},
        {"name": "permanent produce failures", "interval": "1m",
         "input_series": [{"series": f'pushworker_kafka_produce_failures_total{{{W},pod="w1"}}', "values": "0 0 1x10"}],
         "alert_rule_test": [alert("PushworkerKafkaProduceFailures", "5m", {"severity": "critical"})]},
        {"name": "tracking endpoint: pings rate-limited, webhooks failing", "interval": "1m",
         "input_series": [{"series": f'pushworker_ready{{{E},pod="e1"}}', "values": "1x30"},
                          {"series": f'pushworker_events_total{{{E},type="opened",outcome="accepted"}}', "values": "0+600x30"},
                          {"series": f'pushworker_events_rate_limited_total{{{E}}}', "values": "0+1200x30"},
                          {"series": f'pushworker_webhook_deliveries_total{{{E},outcome="failed"}}', "values": "0x10 1x20"}],
         "alert_rule_test": [alert("PushworkerEventsRateLimited", "25m", {"severity": "warning"}),
                             alert("PushworkerEventsNotReady", "25m"),
                             alert("PushworkerEventsBadMsgIdRatio", "25m"),
                             alert("PushworkerWebhookFailures", "15m", {"severity": "warning", "outcome": "failed"})]},
        {"name": "tracking endpoint down", "interval": "1m",
         "input_series": [{"series": f'pushworker_ready{{{W},pod="w1"}}', "values": "1x15"}],
         "alert_rule_test": [alert("PushworkerEventsNotReady", "10m", {"severity": "critical"}),
                             alert("PushworkerNoReadyWorkers", "10m")]},
    ]


def check_promtool(rule_doc: dict, values: dict) -> None:
    promtool = find_promtool()
    if promtool is None:
        fail("promtool available", "neither on PATH nor fetchable with apt-get download prometheus")
        return
    ok("promtool available")
    team = values["prometheusRule"]["additionalAlertLabels"]
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        rules = tmpdir / "rules.yaml"
        rules.write_text(yaml.safe_dump(rule_doc["spec"], sort_keys=False))
        good, out = run_promtool(promtool, "check", "rules", str(rules))
        check("promtool check rules: the PrometheusRule (PromQL, annotation templates)", good, out[-800:])
        # Alert tests compare labels and annotations; annotations are left out here (check rules covers them).
        stripped = copy.deepcopy(rule_doc["spec"])
        for g in stripped["groups"]:
            for r in g["rules"]:
                r.pop("annotations", None)
        (tmpdir / "alerts.yaml").write_text(yaml.safe_dump(stripped, sort_keys=False))
        for test in promtool_tests(team):
            path = tmpdir / "test.yaml"
            path.write_text(yaml.safe_dump({"rule_files": ["alerts.yaml"], "evaluation_interval": "1m", "tests": [test]}, sort_keys=False))
            good, out = run_promtool(promtool, "test", "rules", str(path))
            check(f"promtool test rules: {test['name']}", good, out[-1500:])
        dash_rules = {"groups": [{"name": "dashboard", "rules": [
            {"record": f"dashboard:panel_{i}", "expr": e} for i, (_, e) in enumerate(dashboard_exprs())]}]}
        (tmpdir / "dashboard.yaml").write_text(yaml.safe_dump(dash_rules, sort_keys=False))
        good, out = run_promtool(promtool, "check", "rules", str(tmpdir / "dashboard.yaml"))
        check(f"promtool check rules: all {len(dash_rules['groups'][0]['rules'])} dashboard queries parse", good, out[-800:])


def check_metric_names(rule_doc: dict) -> None:
    """Alerts and panels use metric names the worker exports (or docs/reference/metrics.md marks
    planned), and docs/reference/metrics.md lists each of them."""
    exported = set()
    for path in (ROOT / "Sources").rglob("*.swift"):
        exported |= set(re.findall(r'"((?:pushworker|process)_[a-z0-9_]+)"', path.read_text(errors="replace")))
    docs_text = METRICS_REFERENCE.read_text()
    used: set[str] = set()
    for r in alert_rules(rule_doc).values():
        used |= set(re.findall(r"\b((?:pushworker|process)_[a-z0-9_]+)", r["expr"]))
    for _, e in dashboard_exprs():
        used |= set(re.findall(r"\b((?:pushworker|process)_[a-z0-9_]+)", e))
    for metric in sorted(used):
        base = re.sub(r"_(bucket|sum|count)$", "", metric)
        doc_lines = [line for line in docs_text.splitlines() if f"`{base}`" in line or f"| {base} " in line]
        check(f"metric {base} listed in docs/reference/metrics.md", bool(doc_lines))
        planned = any("planned" in line for line in doc_lines)
        check(f"metric {base} exported by Sources/ or marked planned in docs/reference/metrics.md",
              base in exported or planned, "neither exported nor planned")
        if base in exported and planned:
            fail(f"metric {base}", "exported now: drop 'planned' from docs/reference/metrics.md")


def check_subchart(app_version: str) -> None:
    """pushworker as a dependency of a parent chart: globals reach it, its schema still applies."""
    chart_meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
    child = merged(REQUIRED, {"enabled": True, "events": {"enabled": True}, "prometheusRule": {"enabled": True},
                              "imagePullSecrets": [{"name": "regcred"}]})
    parent_values = {"global": {"imageRegistry": "mirror.example", "imagePullSecrets": ["mirror-pull"], "storageClass": "fast"},
                     "pushworker": child}
    with tempfile.TemporaryDirectory() as tmp:
        parent = Path(tmp) / "platform"
        (parent / "charts").mkdir(parents=True)
        (parent / "templates").mkdir()
        shutil.copytree(CHART, parent / "charts" / "pushworker")
        (parent / "Chart.yaml").write_text(yaml.safe_dump({
            "apiVersion": "v2", "name": "platform", "version": "1.0.0", "type": "application",
            "dependencies": [{"name": "pushworker", "version": chart_meta["version"], "repository": "file://charts/pushworker",
                              "condition": "pushworker.enabled"}]}))
        (parent / "values.yaml").write_text(yaml.safe_dump({"pushworker": {"enabled": False}}))
        (parent / "templates" / "configmap.yaml").write_text(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-platform\ndata:\n  registry: {{ .Values.global.imageRegistry | quote }}\n")
        lint = helm.lint(str(parent), parent_values, strict=True, namespace=NAMESPACE, with_subcharts=True)
        problems = [m for m in lint.get("messages", []) if m.get("severity", 0) >= 2] + [{"error": e} for e in lint.get("errors") or []]
        check("[subchart] helm lint --strict of a parent chart", not problems, json.dumps(problems)[:500])
        with helm.Chart.load(str(parent)) as chart:
            try:
                docs, _ = render_all(chart, parent_values)
            except helm.HelmError as e:
                fail("[subchart] render as a dependency with globals", str(e)[:400])
                return
            ok(f"[subchart] render as a dependency with globals ({len(docs)} manifests)")
            validate_docs("subchart", docs)
            with helm.Chart.load(str(CHART)) as own:
                eff = merged(own.values, child, {"global": parent_values["global"]})
            expect_worker("subchart", docs, child)
            expect_images("subchart", docs, eff, app_version)
            check("[subchart] global.imageRegistry used for the worker image",
                  container(find(docs, "Deployment", FULLNAME) or {"spec": {"template": {"spec": {"containers": []}}}}, "worker")
                  .get("image", "").startswith("mirror.example/"))
            check("[subchart] parent and subchart objects side by side",
                  find(docs, "ConfigMap", f"{RELEASE}-platform") is not None and find(docs, "PrometheusRule", FULLNAME) is not None)
            try:
                render_all(chart, merged(parent_values, {"pushworker": {"replicas": 3}}))
                fail("[subchart] its values.schema.json still applies", "a typo'd key rendered")
            except helm.HelmError as e:
                check("[subchart] its values.schema.json still applies", "additional properties" in str(e), str(e)[:300])
        # A fresh load: rendering with a disabled dependency drops it from the loaded chart.
        with helm.Chart.load(str(parent)) as chart:
            try:
                off, _ = render_all(chart, {"global": parent_values["global"]})
                check("[subchart] condition pushworker.enabled false renders nothing of pushworker",
                      all("charts/pushworker" not in d["__source"] for d in off) and len(off) == 1, str([d["__source"] for d in off]))
            except helm.HelmError as e:
                fail("[subchart] disabled by its condition", str(e)[:400])


def main() -> int:
    lint = helm.lint(str(CHART), REQUIRED, strict=True, namespace=NAMESPACE)
    problems = [m for m in lint.get("messages", []) if m.get("severity", 0) >= 2] + [{"error": e} for e in lint.get("errors") or []]
    check("helm lint --strict", not problems, json.dumps(problems)[:500])
    rule_doc, rule_values = None, {}
    with helm.Chart.load(str(CHART)) as chart:
        chart_meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
        check("Chart.yaml apiVersion v2", chart_meta.get("apiVersion") == "v2")
        defaults = chart.values
        schema_alerts = set(json.loads((CHART / "values.schema.json").read_text())["properties"]["prometheusRule"]
                            ["properties"]["alerts"]["properties"])
        check("values.schema.json lists exactly the alerts of values.yaml",
              schema_alerts == set(defaults["prometheusRule"]["alerts"]), str(schema_alerts ^ set(defaults["prometheusRule"]["alerts"])))
        app_version = str(chart_meta["appVersion"])
        for set_name, values in SETS.items():
            try:
                docs, notes = render_all(chart, values)
            except helm.HelmError as e:
                fail(f"[{set_name}] render", str(e)[:400])
                continue
            ok(f"[{set_name}] render ({len(docs)} manifests)")
            eff = merged(defaults, values)
            validate_docs(set_name, docs)
            expect_worker(set_name, docs, values)
            presence(set_name, docs, eff)
            expect_autoscaler(set_name, docs, values, eff)
            expect_keda_auth(set_name, docs, eff)
            expect_images(set_name, docs, eff, app_version)
            expect_tests(set_name, docs, eff)
            expect_events(set_name, docs, eff, notes)
            expect_api(set_name, docs, eff, notes)
            expect_monitoring(set_name, docs, eff)
            expect_worker_coverage(set_name, docs, eff)
            expect_prometheus_rule(set_name, docs, eff)
            expect_operator_features(set_name, docs, eff, values)
            if set_name == "prometheus-rule":
                rule_doc, rule_values = find(docs, "PrometheusRule"), eff
        for set_name, (values, message) in MUST_FAIL.items():
            label = f"[{set_name}] must fail to render"
            try:
                render(chart, values)
                fail(label, "rendered without error")
            except helm.HelmError as e:
                check(label, message in str(e), f"failed, but without {message!r}: {str(e)[:300]}")
        values, messages = ALL_REQUIRED_MISSING
        try:
            render(chart, values)
            fail("[no-values] must fail to render", "rendered without error")
        except helm.HelmError as e:
            missing = [m for m in messages if m not in str(e)]
            check("[no-values] every missing required value reported in one error", not missing, f"missing {missing}: {str(e)[:500]}")
    check_schema_closed()
    check_dashboard()
    if rule_doc is None:
        fail("PrometheusRule of the prometheus-rule set", "not rendered")
    else:
        check_promtool(rule_doc, rule_values)
        check_metric_names(rule_doc)
    check_subchart(app_version)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

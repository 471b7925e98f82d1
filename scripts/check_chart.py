#!/usr/bin/env python3
"""Render charts/pushworker with several value sets and validate every manifest.

Rendering: the Helm v4 Go SDK through `helm-python-sdk` (import `helm_python`; its wheel
bundles libhelm_c.so, so no `helm` binary is needed and nothing is fetched). Rendering also
applies the chart's values.schema.json, exactly like `helm install`.

Validation:
- built-in kinds (Deployment, ConfigMap, Service, HPA, PDB, NetworkPolicy, ...) with
  `kubernetes-validate` in strict mode (unknown fields are errors) against Kubernetes 1.27
  (the chart's kubeVersion floor) and the newest schema the package ships;
- the two CRDs, keda.sh/v1alpha1 ScaledObject and monitoring.coreos.com/v1 ServiceMonitor,
  which kubernetes-validate has no schema for, against small schemas embedded below that
  cover the fields this chart uses (taken from the KEDA 2.x and prometheus-operator CRDs);
- chart-specific expectations (securityContext, probes, grace period, every env var, KEDA
  trigger, partition limit, dashboard queries) as named checks;
- `helm lint --strict` on the chart;
- value sets that must FAIL to render (keda maxReplicaCount > partitions, ...).

Prints one line per failure (all lines with -v), then "N passed, N failed"; exit 1 on any
failure. Usage: python3 scripts/check_chart.py [-v]
"""
from __future__ import annotations

import copy
import json
import sys
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
CRD_SCHEMAS = {("keda.sh/v1alpha1", "ScaledObject"): SCALED_OBJECT_SCHEMA,
               ("monitoring.coreos.com/v1", "ServiceMonitor"): SERVICE_MONITOR_SCHEMA}

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
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                       "whenUnsatisfiable": "ScheduleAnyway",
                                       "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "pushworker"}}}]}),
    "keda": merged(REQUIRED, {"autoscaling": {"keda": {"enabled": True, "maxReplicaCount": 24, "includeRetryTopic": True,
                                                        "authenticationRef": "kafka-trigger-auth"}}}),
    "hpa": merged(REQUIRED, {"autoscaling": {"hpa": {"enabled": True}}}),
    "events-netpol-monitor": merged(REQUIRED, CREDENTIALS, {
        "events": {"enabled": True}, "serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
        "networkPolicy": {"enabled": True, "kafka": {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kafka"}}}]},
                          "redis": {"to": [{"ipBlock": {"cidr": "10.20.0.0/16"}}]}},
        "dashboard": {"configMap": {"enabled": True}}}),
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
    "grace-not-above-drain": (merged(REQUIRED, {"terminationGracePeriodSeconds": 25}), "must exceed shutdownGraceSeconds"),
    "credentials-without-items": (merged(REQUIRED, {"credentials": {"existingSecret": "creds"}}), "credentials.items is required"),
    "schema-typo-key": (merged(REQUIRED, {"replicas": 3}), "additional properties"),
    "schema-bad-rate-limit": (merged(REQUIRED, {"events": {"enabled": True, "rateLimit": "lots"}}), "rateLimit"),
}

ENV_DEFAULTS = {
    "PUSHWORKER_KAFKA_GROUP": "pushworker", "PUSHWORKER_TOPIC_JOBS": "push.jobs.v1",
    "PUSHWORKER_TOPIC_RETRY": "push.retry.v1", "PUSHWORKER_TOPIC_RESULTS": "push.results.v1",
    "PUSHWORKER_TOPIC_TOKENS": "push.tokens.v1", "PUSHWORKER_TOPIC_DLQ": "push.dlq.v1",
    "PUSHWORKER_TOPIC_EVENTS": "push.events.v1", "PUSHWORKER_CREDENTIALS_DIR": "/etc/pushworker/credentials",
    "PUSHWORKER_HTTP_ADDR": "0.0.0.0:9400", "PUSHWORKER_MAX_IN_FLIGHT": "2000", "PUSHWORKER_MAX_ATTEMPTS": "5",
    "PUSHWORKER_SHUTDOWN_GRACE_SECONDS": "25", "PUSHWORKER_HTTP_CONNECTIONS": "2", "PUSHWORKER_HTTP_STREAMS": "100",
    "PUSHWORKER_REQUEST_TIMEOUT_MS": "10000", "PUSHWORKER_LOG_LEVEL": "info", "PUSHWORKER_LOG_FORMAT": "json",
}
DASHBOARD_METRICS = ["pushworker_notifications_total", "pushworker_provider_request_seconds_bucket",
                     "pushworker_kafka_consumer_lag", "pushworker_in_flight", "pushworker_retries_total",
                     "pushworker_dlq_total", "pushworker_redis_errors_total", "pushworker_kafka_errors_total",
                     "pushworker_token_refreshes_total"]


# --- helpers --------------------------------------------------------------------------------
def render(chart: Any, values: dict) -> list[dict]:
    manifests = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    docs: list[dict] = []
    for path, text in sorted(manifests.items()):
        if path.endswith("NOTES.txt"):
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                doc["__source"] = path
                docs.append(doc)
    return docs


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
    drain = int(cm["data"]["PUSHWORKER_SHUTDOWN_GRACE_SECONDS"])
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
    check(L("PUSHWORKER_KAFKA_BROKERS from values"), data.get("PUSHWORKER_KAFKA_BROKERS") == values["kafka"]["brokers"])
    redis_secret = values.get("redis", {}).get("existingSecret")
    if redis_secret:
        ref = env.get("PUSHWORKER_REDIS_URL", {}).get("valueFrom", {}).get("secretKeyRef", {})
        check(L("PUSHWORKER_REDIS_URL from Secret, not ConfigMap"),
              ref.get("name") == redis_secret and "PUSHWORKER_REDIS_URL" not in data)
    else:
        check(L("PUSHWORKER_REDIS_URL in ConfigMap"), data.get("PUSHWORKER_REDIS_URL") == values["redis"]["url"])
    if values.get("kafka", {}).get("properties"):
        check(L("librdkafka pass-through PUSHWORKER_RDKAFKA_*"),
              data.get("PUSHWORKER_RDKAFKA_SECURITY_PROTOCOL") == "SASL_SSL"
              and data.get("PUSHWORKER_RDKAFKA_SASL_MECHANISM") == "SCRAM-SHA-512"
              and data.get("PUSHWORKER_RDKAFKA_ENABLE_IDEMPOTENCE") == "true"
              and "secretKeyRef" in env.get("PUSHWORKER_RDKAFKA_SASL_PASSWORD", {}).get("valueFrom", {}), json.dumps(data))
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


def expect_set(set_name: str, docs: list[dict], values: dict) -> None:
    L = lambda what: f"[{set_name}] {what}"
    kinds = sorted(d["kind"] for d in docs)
    so, hpa = find(docs, "ScaledObject"), find(docs, "HorizontalPodAutoscaler")
    if set_name == "keda":
        check(L("ScaledObject rendered, no HPA"), so is not None and hpa is None, str(kinds))
        if so:
            trig = so["spec"]["triggers"][0]
            md = trig["metadata"]
            check(L("kafka trigger on push.jobs.v1 lag of the worker group"),
                  trig["type"] == "kafka" and md["topic"] == "push.jobs.v1" and md["consumerGroup"] == "pushworker"
                  and md["bootstrapServers"] == values["kafka"]["brokers"] and md["lagThreshold"] == "50", json.dumps(md))
            check(L("retry topic trigger too"), any(t["metadata"]["topic"] == "push.retry.v1" for t in so["spec"]["triggers"]))
            check(L("maxReplicaCount <= partitions"), so["spec"]["maxReplicaCount"] <= 24)
            check(L("authenticationRef passed"), trig.get("authenticationRef", {}).get("name") == "kafka-trigger-auth")
    elif set_name == "hpa":
        check(L("HPA rendered, no ScaledObject"), hpa is not None and so is None, str(kinds))
        if hpa:
            m = hpa["spec"]["metrics"][0]
            check(L("autoscaling/v2 on CPU"), hpa["apiVersion"] == "autoscaling/v2" and m["resource"]["name"] == "cpu")
    else:
        check(L("no autoscaler"), so is None and hpa is None, str(kinds))
    events = find(docs, "Deployment", f"{FULLNAME}-events")
    if set_name == "events-netpol-monitor":
        check(L("events Deployment runs `pushworker events`"), events is not None and container(events, "events").get("args") == ["events"])
        if events:
            ec = container(events, "events")
            check(L("events container hardened + probes"),
                  ec["securityContext"].get("readOnlyRootFilesystem") is True
                  and ec["readinessProbe"]["httpGet"]["path"] == "/readyz"
                  and env_names(ec).get("EVENT_RATE_LIMIT", {}).get("value") == "20/s")
        check(L("events Service"), find(docs, "Service", f"{FULLNAME}-events") is not None)
        check(L("events PDB"), find(docs, "PodDisruptionBudget", f"{FULLNAME}-events") is not None)
        np_ = find(docs, "NetworkPolicy")
        if np_ is None:
            fail(L("NetworkPolicy"), "missing")
        else:
            ports = sorted({p["port"] for rule in np_["spec"]["egress"] for p in rule["ports"]})
            check(L("NetworkPolicy egress DNS + 443 + Kafka + Redis only"), ports == [53, 443, 6379, 9092, 9093], str(ports))
        sm = find(docs, "ServiceMonitor")
        check(L("ServiceMonitor scrapes /metrics on http"),
              sm is not None and sm["spec"]["endpoints"][0]["port"] == "http" and sm["spec"]["endpoints"][0]["path"] == "/metrics"
              and sm["metadata"]["labels"].get("release") == "kube-prometheus-stack")
        dash = find(docs, "ConfigMap", f"{FULLNAME}-dashboard")
        if dash is None:
            fail(L("dashboard ConfigMap"), "missing")
        else:
            check(L("dashboard ConfigMap labelled grafana_dashboard=1"), dash["metadata"]["labels"].get("grafana_dashboard") == "1")
            try:
                check(L("dashboard ConfigMap holds the dashboard JSON"),
                      json.loads(dash["data"]["pushworker.json"]) == json.loads(DASHBOARD.read_text()))
            except ValueError as e:
                fail(L("dashboard ConfigMap JSON"), str(e))
    else:
        check(L("no events Deployment / NetworkPolicy / ServiceMonitor"),
              events is None and find(docs, "NetworkPolicy") is None and find(docs, "ServiceMonitor") is None, str(kinds))


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
    ids = [p.get("id") for p in dash.get("panels", [])]
    check("dashboard panel ids unique", len(ids) == len(set(ids)))
    check("dashboard uses a datasource variable", any(v.get("type") == "datasource" for v in dash.get("templating", {}).get("list", [])))


def main() -> int:
    lint = helm.lint(str(CHART), REQUIRED, strict=True, namespace=NAMESPACE)
    problems = [m for m in lint.get("messages", []) if m.get("severity", 0) >= 2] + [{"error": e} for e in lint.get("errors") or []]
    check("helm lint --strict", not problems, json.dumps(problems)[:500])
    with helm.Chart.load(str(CHART)) as chart:
        check("Chart.yaml apiVersion v2", yaml.safe_load((CHART / "Chart.yaml").read_text()).get("apiVersion") == "v2")
        for set_name, values in SETS.items():
            try:
                docs = render(chart, values)
            except helm.HelmError as e:
                fail(f"[{set_name}] render", str(e)[:400])
                continue
            ok(f"[{set_name}] render ({len(docs)} manifests)")
            validate_docs(set_name, docs)
            expect_worker(set_name, docs, values)
            expect_set(set_name, docs, values)
        for set_name, (values, message) in MUST_FAIL.items():
            label = f"[{set_name}] must fail to render"
            try:
                render(chart, values)
                fail(label, "rendered without error")
            except helm.HelmError as e:
                check(label, message in str(e), f"failed, but without {message!r}: {str(e)[:300]}")
    check_dashboard()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

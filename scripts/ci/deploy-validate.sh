#!/usr/bin/env bash
# CI step: validates the deployment files under deploy/ with tools made for
# each format, and checks that they agree with each other and with Herald.
#
#   bash scripts/ci/deploy-validate.sh [HERALD_BINARY]
#
# Compose (deploy/compose/compose.yaml)
#   - the compose-spec JSON schema (the one Docker Compose validates
#     against), as vendored by check-jsonschema: unknown keys, wrong types;
#   - references: depends_on, secrets and named volumes are defined, every
#     bind-mounted file exists, every required ${VAR} is in .env.example,
#     the Herald nodes have distinct node ids and ports;
#   - prometheus.yml with `promtool check config` (Debian's prometheus
#     package, unpacked into a cache), in a directory laid out as the
#     compose mounts lay out /etc/prometheus, so the shipped alerts are
#     checked with it; Prometheus's targets are the Herald services; the
#     Grafana provisioning points at the Prometheus service and at the
#     directory the dashboard is mounted in.
# Kubernetes (every *.yaml under deploy/kubernetes)
#   - every built-in kind against the Kubernetes OpenAPI schemas, strict
#     (unknown fields are errors), for the oldest version the manifests
#     support (1.30: the preStop sleep action) and the newest bundled by
#     kubernetes-validate;
#   - ServiceMonitor against prometheus-operator's types (the
#     cloudcoil-models-prometheus-operator models, generated from its CRDs),
#     plus a walk that refuses fields the types do not have;
#   - selectors match the pod labels, named ports exist, the ConfigMap is
#     shipped.
# systemd (deploy/systemd/herald.service)
#   - `systemd-analyze verify` on a copy whose ExecStart names a stub
#     binary (verify refuses a missing one); any line it prints fails the
#     step, since it only warns (exit 0) on unknown keys and bad values;
#   - `systemd-analyze security --offline`: exposure 2.0 at most.
# Across all three: each one's stop grace (stop_grace_period,
# terminationGracePeriodSeconds minus the preStop pause, TimeoutStopSec) is
# more than twice the engine.drain_timeout_ms that its configuration sets
# (a SIGTERM drains requests, then deliveries, each up to that long).
# With HERALD_BINARY: every shipped herald.toml (compose, both ConfigMaps)
# is loaded by `herald serve` on an in-memory store, which refuses unknown
# keys and bad channels.
#
# Tools are installed when missing: a venv with pinned versions under
# ~/.cache (kept between runs, like .ci/run's schemathesis venv), promtool
# unpacked from `apt-get download prometheus` under ~/.cache, and systemd
# with apt-get. Exits non-zero when any check fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
BINARY=${1:-}
if [ -n "$BINARY" ] && [ ! -x "$BINARY" ]; then
    echo "deploy-validate: no executable at $BINARY" >&2
    exit 2
fi

T_START=$(date +%s)
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
APT_UPDATED=""
apt_update() {
    if [ -z "$APT_UPDATED" ]; then $SUDO apt-get update -qq; APT_UPDATED=1; fi
}

echo "== deploy: tools"
KUBERNETES_VALIDATE_VERSION=1.37.0
CHECK_JSONSCHEMA_VERSION=0.39.0
CLOUDCOIL_VERSION=0.6.0
PROMETHEUS_OPERATOR_MODELS_VERSION=0.80.1.0
PY=python3
for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
    if [ -x "$p" ]; then PY="$p"; break; fi
done
PYV=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
VENV="$HOME/.cache/herald-deploy-validate-kv${KUBERNETES_VALIDATE_VERSION}-cj${CHECK_JSONSCHEMA_VERSION}-po${PROMETHEUS_OPERATOR_MODELS_VERSION}-py${PYV}"
if [ ! -x "$VENV/bin/check-jsonschema" ] || [ ! -f "$VENV/.complete" ]; then
    t=$(date +%s)
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check \
        "kubernetes-validate==${KUBERNETES_VALIDATE_VERSION}" \
        "check-jsonschema==${CHECK_JSONSCHEMA_VERSION}" \
        "cloudcoil==${CLOUDCOIL_VERSION}" \
        "cloudcoil-models-prometheus-operator==${PROMETHEUS_OPERATOR_MODELS_VERSION}" \
        PyYAML
    touch "$VENV/.complete"
    echo "venv $VENV made in $(($(date +%s) - t)) s"
fi

PROMTOOL_DIR="$HOME/.cache/herald-promtool"
PROMTOOL="$PROMTOOL_DIR/promtool"
if [ ! -x "$PROMTOOL" ]; then
    t=$(date +%s)
    dl=$(mktemp -d)
    # Only the package file, unpacked aside: nothing is installed and no
    # service is started. promtool alone is kept.
    if ! (cd "$dl" && apt-get download -qq prometheus 2>/dev/null); then
        apt_update
        (cd "$dl" && apt-get download -qq prometheus 2>/dev/null)
    fi
    dpkg-deb -x "$dl"/prometheus_*.deb "$dl/root"
    mkdir -p "$PROMTOOL_DIR"
    cp "$dl/root/usr/bin/promtool" "$PROMTOOL.tmp"
    mv "$PROMTOOL.tmp" "$PROMTOOL"
    rm -rf "$dl"
    echo "promtool unpacked in $(($(date +%s) - t)) s"
fi

if ! command -v systemd-analyze >/dev/null; then
    t=$(date +%s)
    apt_update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends systemd >/dev/null
    echo "systemd installed in $(($(date +%s) - t)) s"
fi
echo "$("$VENV/bin/check-jsonschema" --version), kubernetes-validate ${KUBERNETES_VALIDATE_VERSION}," \
    "cloudcoil-models-prometheus-operator ${PROMETHEUS_OPERATOR_MODELS_VERSION}," \
    "$("$PROMTOOL" --version 2>&1 | head -1 | cut -d' ' -f1-3), $(systemd-analyze --version | head -1)"
echo "tools ready after $(($(date +%s) - T_START)) s"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
FAILED=0
fail() { echo "FAIL: $*"; FAILED=1; }

echo "== deploy: compose schema (compose-spec, check-jsonschema)"
"$VENV/bin/check-jsonschema" --builtin-schema vendor.compose-spec deploy/compose/compose.yaml ||
    fail "deploy/compose/compose.yaml does not match the compose-spec schema"

echo "== deploy: compose, Prometheus and Grafana files, Kubernetes manifests, drain budgets"
# Also stages /etc/prometheus as compose mounts it, into $WORK/prometheus,
# and lists the herald.toml files to load, into $WORK/tomls.
"$VENV/bin/python" - "$REPO" "$WORK" <<'PY' || FAILED=1
import inspect, os, re, shutil, sys, tomllib, types, typing
import yaml

REPO, WORK = sys.argv[1], sys.argv[2]
errors = []
def err(msg):
    errors.append(msg)
    print("FAIL:", msg)

def rel(p):
    return os.path.relpath(p, REPO)

def duration_s(text):
    """Compose durations: 30s, 1m30s, 1500ms."""
    total, rest = 0.0, str(text)
    for num, unit in re.findall(r"([0-9.]+)(ms|us|h|m|s)", rest):
        total += float(num) * {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6}[unit]
    return total

def drain_s(toml_text, where):
    cfg = tomllib.loads(toml_text)
    ms = cfg.get("engine", {}).get("drain_timeout_ms", 10000)
    print(f"  {where}: engine.drain_timeout_ms = {ms}")
    return ms / 1000

tomls = []

# ---- compose ---------------------------------------------------------------
cdir = os.path.join(REPO, "deploy/compose")
cpath = os.path.join(cdir, "compose.yaml")
compose = yaml.safe_load(open(cpath))
services = compose.get("services", {})
raw = open(cpath).read()
env_example = open(os.path.join(cdir, ".env.example")).read()
declared = set(re.findall(r"^#?\s*([A-Z_][A-Z0-9_]*)=", env_example, re.M))
for m in re.finditer(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:?[-?+][^}]*)?\}", raw):
    name, mod = m.group(1), m.group(2) or ""
    if name not in declared:
        err(f"compose.yaml uses ${{{name}}}, which .env.example does not list")
    if not mod.startswith((":-", "-", ":?", "?")):
        err(f"compose.yaml: ${{{name}}} has neither a default nor a :? message")
top_secrets = set((compose.get("secrets") or {}).keys())
top_volumes = set((compose.get("volumes") or {}).keys())
for sname, svc in services.items():
    deps = svc.get("depends_on") or []
    for dep in (deps.keys() if isinstance(deps, dict) else deps):
        if dep not in services:
            err(f"compose service {sname} depends on {dep}, which is not a service")
    for sec in svc.get("secrets") or []:
        src = sec["source"] if isinstance(sec, dict) else sec
        if src not in top_secrets:
            err(f"compose service {sname} uses secret {src}, which is not defined")
    for vol in svc.get("volumes") or []:
        src = vol.split(":")[0] if isinstance(vol, str) else vol.get("source")
        if src.startswith((".", "/")):
            path = os.path.normpath(os.path.join(cdir, src))
            if not os.path.exists(path):
                err(f"compose service {sname} mounts {src}, which does not exist ({rel(path)})")
        elif src not in top_volumes:
            err(f"compose service {sname} mounts volume {src}, which is not defined")

heralds = {n: s for n, s in services.items() if "HERALD_NODE_ID" in (s.get("environment") or {})}
if len(heralds) < 3:
    err(f"compose.yaml: expected three Herald nodes, found {sorted(heralds)}")
ids = [s["environment"]["HERALD_NODE_ID"] for s in heralds.values()]
if len(set(ids)) != len(ids):
    err(f"compose.yaml: Herald node ids repeat: {ids}")
ports = [p for s in heralds.values() for p in s.get("ports", [])]
if len(set(ports)) != len(ports):
    err(f"compose.yaml: Herald nodes publish the same port: {ports}")
print(f"  compose: {len(services)} services, Herald nodes {sorted(heralds)} with ids {ids}")

# Each node's herald.toml: the file it mounts at its HERALD_CONFIG.
for name, svc in heralds.items():
    conf = svc["environment"].get("HERALD_CONFIG")
    src = None
    for vol in svc.get("volumes") or []:
        parts = vol.split(":")
        if len(parts) >= 2 and parts[1] == conf:
            src = os.path.normpath(os.path.join(cdir, parts[0]))
    if src is None:
        err(f"compose service {name}: HERALD_CONFIG={conf} is not a mounted file")
        continue
    grace = duration_s(svc.get("stop_grace_period", "10s"))
    drain = drain_s(open(src).read(), f"{name} ({rel(src)})")
    if not grace > 2 * drain:
        err(f"compose service {name}: stop_grace_period {grace:g} s is not above 2 x drain_timeout ({2 * drain:g} s)")
    if src not in tomls:
        tomls.append(src)

# Prometheus: stage /etc/prometheus as the compose mounts and secrets make it.
prom = services.get("prometheus")
stage = os.path.join(WORK, "prometheus")
os.makedirs(stage)
cfg_file = None
for vol in prom.get("volumes") or []:
    parts = vol.split(":")
    if parts[0].startswith(".") and parts[1].startswith("/etc/prometheus/"):
        dst = os.path.join(stage, parts[1][len("/etc/prometheus/"):])
        shutil.copy(os.path.join(cdir, parts[0]), dst)
        if parts[1] == "/etc/prometheus/prometheus.yml":
            cfg_file = dst
for sec in prom.get("secrets") or []:
    target = sec.get("target", "") if isinstance(sec, dict) else ""
    if target.startswith("/etc/prometheus/"):
        with open(os.path.join(stage, target[len("/etc/prometheus/"):]), "w") as f:
            f.write("placeholder-key-for-promtool\n")
if cfg_file is None:
    err("compose prometheus service does not mount prometheus.yml at /etc/prometheus/prometheus.yml")
else:
    pcfg = yaml.safe_load(open(cfg_file))
    targets = sorted(t for sc in pcfg["scrape_configs"] for st in sc.get("static_configs", []) for t in st["targets"])
    want = sorted(f"{n}:8780" for n in heralds)
    if targets != want:
        err(f"prometheus.yml scrapes {targets}, the Herald services are {want}")
    for sc in pcfg["scrape_configs"]:
        if sc.get("metrics_path", "/metrics") == "/metrics" and "authorization" not in sc:
            err(f"prometheus.yml job {sc['job_name']}: /metrics needs a key (authorization)")

# Grafana: the data source is the Prometheus service, the provider's path is
# where the dashboard is mounted.
graf = services.get("grafana")
mounts = {v.split(":")[1]: os.path.normpath(os.path.join(cdir, v.split(":")[0]))
          for v in graf.get("volumes") or [] if v.startswith(".")}
ds = prov = None
for target, src in mounts.items():
    if target.startswith("/etc/grafana/provisioning/datasources/"):
        ds = yaml.safe_load(open(src))
    elif target.startswith("/etc/grafana/provisioning/dashboards/"):
        prov = yaml.safe_load(open(src))
if not ds or ds.get("apiVersion") != 1 or not ds.get("datasources"):
    err("grafana: no data source provisioning file with apiVersion 1")
else:
    d0 = ds["datasources"][0]
    if d0.get("type") != "prometheus" or not re.match(r"http://prometheus:9090/?$", d0.get("url", "")):
        err(f"grafana data source: want type prometheus at http://prometheus:9090, got {d0}")
    if not d0.get("isDefault"):
        err("grafana data source: the dashboard's DS_PROMETHEUS picks the default data source; set isDefault")
if not prov or prov.get("apiVersion") != 1 or not prov.get("providers"):
    err("grafana: no dashboard provider file with apiVersion 1")
else:
    path = prov["providers"][0].get("options", {}).get("path", "")
    dash = [t for t, s in mounts.items() if s.endswith(".json")]
    if not dash or any(os.path.dirname(t) != path.rstrip("/") for t in dash):
        err(f"grafana: the provider reads {path}, the dashboard is mounted at {dash}")
    for t in dash:
        import json
        json.load(open(mounts[t]))

# ---- Kubernetes ------------------------------------------------------------
import kubernetes_validate
from kubernetes_validate.utils import SchemaNotFoundError, ValidationError
import pydantic
from cloudcoil.models.prometheus_operator.v1 import ServiceMonitor

K8S_VERSIONS = ["1.30.0", kubernetes_validate.utils.latest_version() + ".0"]

def unknown_fields(ann, value, path, out):
    """Paths of keys in value that the pydantic type ann does not define."""
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is typing.Annotated:
        return unknown_fields(args[0], value, path, out)
    if origin in (typing.Union, types.UnionType):
        for a in args:
            o = typing.get_origin(a)
            if isinstance(value, dict) and (o is dict or (inspect.isclass(a) and issubclass(a, pydantic.BaseModel))):
                return unknown_fields(a, value, path, out)
            if isinstance(value, list) and o is list:
                return unknown_fields(a, value, path, out)
        return
    if origin is list:
        for i, item in enumerate(value or []):
            unknown_fields(args[0], item, f"{path}[{i}]", out)
    elif origin is dict:
        for k, item in (value or {}).items():
            unknown_fields(args[1], item, f"{path}.{k}", out)
    elif inspect.isclass(ann) and issubclass(ann, pydantic.BaseModel) and isinstance(value, dict):
        known = {(f.alias or n): f for n, f in ann.model_fields.items()}
        for k, v in value.items():
            if k not in known:
                out.append(f"{path}.{k} (not a field of {ann.__name__})")
            else:
                unknown_fields(known[k].annotation, v, f"{path}.{k}", out)

def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())

kroot = os.path.join(REPO, "deploy/kubernetes")
dirs = sorted(d for d in os.listdir(kroot) if os.path.isdir(os.path.join(kroot, d)))
if not dirs:
    err("deploy/kubernetes has no manifest directory")
for d in dirs:
    docs = []
    for fn in sorted(os.listdir(os.path.join(kroot, d))):
        if not fn.endswith((".yaml", ".yml")):
            continue
        path = os.path.join(kroot, d, fn)
        for doc in yaml.safe_load_all(open(path)):
            if doc:
                docs.append((rel(path), doc))
    for path, doc in docs:
        what = f"{path}: {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        if doc.get("kind") == "ServiceMonitor":
            try:
                ServiceMonitor.model_validate(doc)
            except pydantic.ValidationError as e:
                err(f"{what}: " + " ".join(str(e).split())[:400])
                continue
            extra = []
            unknown_fields(ServiceMonitor, doc, "", extra)
            if extra:
                err(f"{what}: unknown fields {extra}")
                continue
            print(f"  ok {what} (prometheus-operator ServiceMonitor types, strict)")
            continue
        good = []
        for v in K8S_VERSIONS:
            try:
                good.append(kubernetes_validate.validate(doc, v, strict=True))
            except ValidationError as e:
                where = ".".join(str(p) for p in e.path)
                err(f"{what} (Kubernetes {e.version}): {where}: {e.message}")
            except SchemaNotFoundError as e:
                err(f"{what}: no schema for it: {e}")
        if len(good) == len(K8S_VERSIONS):
            print(f"  ok {what} (Kubernetes {', '.join(good)}, strict)")

    # Cross-references inside one directory.
    by_kind = {}
    for path, doc in docs:
        by_kind.setdefault(doc["kind"], []).append((path, doc))
    pods = []
    for path, doc in by_kind.get("StatefulSet", []) + by_kind.get("Deployment", []):
        tmpl = doc["spec"]["template"]
        labels = tmpl["metadata"].get("labels", {})
        if not matches(doc["spec"]["selector"]["matchLabels"], labels):
            err(f"{path}: the selector does not match the pod template's labels")
        pods.append((path, doc, labels, tmpl["spec"]))
    services = by_kind.get("Service", [])
    for path, svc in services:
        sel = svc["spec"].get("selector", {})
        hit = [p for p in pods if matches(sel, p[2])]
        if not hit:
            err(f"{path}: Service {svc['metadata']['name']} selects no pod")
        for p in svc["spec"]["ports"]:
            tp = p.get("targetPort")
            if isinstance(tp, str) and not all(any(cp.get("name") == tp for c in h[3]["containers"] for cp in c.get("ports", [])) for h in hit):
                err(f"{path}: Service {svc['metadata']['name']} targets port {tp}, which a selected pod does not name")
    for path, pdb in by_kind.get("PodDisruptionBudget", []):
        if not any(matches(pdb["spec"]["selector"]["matchLabels"], p[2]) for p in pods):
            err(f"{path}: PodDisruptionBudget selects no pod")
    for path, sm in by_kind.get("ServiceMonitor", []):
        hit = [s for _, s in services if matches(sm["spec"]["selector"]["matchLabels"], s["metadata"].get("labels", {}))]
        if len(hit) != 1:
            err(f"{path}: ServiceMonitor selects {len(hit)} services (each pod would be scraped {len(hit)} times); want 1")
        for ep in sm["spec"]["endpoints"]:
            if hit and not any(p.get("name") == ep.get("port") for p in hit[0]["spec"]["ports"]):
                err(f"{path}: ServiceMonitor endpoint port {ep.get('port')} is not a port of {hit[0]['metadata']['name']}")
    configmaps = {cm["metadata"]["name"]: cm for _, cm in by_kind.get("ConfigMap", [])}
    for path, doc, labels, spec in pods:
        for vol in spec.get("volumes", []):
            if "configMap" in vol and vol["configMap"]["name"] not in configmaps:
                err(f"{path}: volume {vol['name']} names ConfigMap {vol['configMap']['name']}, which {d}/ does not ship")
        for c in spec["containers"]:
            env = {e["name"]: e for e in c.get("env", [])}
            conf = env.get("HERALD_CONFIG", {}).get("value")
            text = None
            for vm in c.get("volumeMounts", []):
                if conf and conf.startswith(vm["mountPath"].rstrip("/") + "/"):
                    vol = next(v for v in spec["volumes"] if v["name"] == vm["name"])
                    key = conf[len(vm["mountPath"].rstrip("/")) + 1:]
                    cm = configmaps.get(vol.get("configMap", {}).get("name"))
                    if cm is not None:
                        text = cm["data"].get(key)
            if text is None:
                err(f"{path}: HERALD_CONFIG={conf} is not a key of a shipped ConfigMap")
                continue
            out = os.path.join(WORK, f"k8s-{d}.toml")
            open(out, "w").write(text)
            tomls.append(out)
            drain = drain_s(text, f"{d}/{c['name']} (ConfigMap)")
            pre = c.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
            grace = spec.get("terminationGracePeriodSeconds", 30)
            if not grace - pre > 2 * drain:
                err(f"{path}: terminationGracePeriodSeconds {grace} minus the preStop pause {pre} is not above 2 x drain_timeout ({2 * drain:g} s)")
            probes = {k: c.get(k, {}).get("httpGet", {}).get("path") for k in ("readinessProbe", "livenessProbe")}
            if probes != {"readinessProbe": "/readyz", "livenessProbe": "/healthz"}:
                err(f"{path}: probes {probes}; want readiness on /readyz, liveness on /healthz")

# ---- systemd: the drain budget (the unit runs with the default drain) -------
unit = open(os.path.join(REPO, "deploy/systemd/herald.service")).read()
m = re.search(r"^TimeoutStopSec=(\S+)", unit, re.M)
stop = duration_s(m.group(1)) if m else 90
drain = 10.0
print(f"  deploy/systemd/herald.service: TimeoutStopSec {stop:g} s, default drain_timeout_ms 10000")
if not stop > 2 * drain:
    err(f"herald.service: TimeoutStopSec {stop:g} s is not above 2 x the default drain_timeout (20 s)")

with open(os.path.join(WORK, "tomls"), "w") as f:
    f.write("\n".join(tomls) + "\n")
sys.exit(1 if errors else 0)
PY

echo "== deploy: promtool check config (prometheus.yml with the shipped alerts)"
"$PROMTOOL" check config "$WORK/prometheus/prometheus.yml" ||
    fail "promtool refuses deploy/compose/prometheus.yml or deploy/prometheus/alerts.yml"

echo "== deploy: systemd-analyze verify and security (deploy/systemd/herald.service)"
mkdir -p "$WORK/systemd/bin"
printf '#!/bin/sh\nexit 0\n' >"$WORK/systemd/bin/herald"
chmod +x "$WORK/systemd/bin/herald"
sed "s#/usr/local/bin/herald#$WORK/systemd/bin/herald#g" deploy/systemd/herald.service >"$WORK/systemd/herald.service"
set +e
VERIFY=$(systemd-analyze verify --man=no "$WORK/systemd/herald.service" 2>&1)
RC=$?
set -e
if [ $RC -ne 0 ] || [ -n "$VERIFY" ]; then
    printf '%s\n' "$VERIFY"
    fail "systemd-analyze verify: exit $RC, with the output above (a clean unit prints nothing)"
else
    echo "verify: clean (exit 0, nothing printed)"
fi
set +e
# --threshold takes tenths of the 0-10 exposure scale that it prints: 20 is 2.0.
SECURITY=$(systemd-analyze security --offline=true --threshold=20 "$WORK/systemd/herald.service" 2>&1)
RC=$?
set -e
printf '%s\n' "$SECURITY" | grep -E 'Overall exposure' || true
if [ $RC -ne 0 ]; then
    printf '%s\n' "$SECURITY" | grep -E '✗' || true
    fail "systemd-analyze security: exposure above 2.0 (exit $RC)"
fi

if [ -n "$BINARY" ]; then
    echo "== deploy: every shipped herald.toml loads ($BINARY serve)"
    while read -r toml; do
        [ -n "$toml" ] || continue
        name=${toml#"$REPO/"}
        case "$toml" in "$WORK"/k8s-*) name="deploy/kubernetes/$(basename "$toml" .toml | sed 's/^k8s-//')/configmap.yaml" ;; esac
        out="$WORK/serve.out"
        : >"$out"
        env -u HERALD_ADMIN_KEY -u HERALD_CONFIG -u HERALD_NODE_ID -u HERALD_SHARDS \
            HERALD_STORE=sqlite::memory: HERALD_LISTEN=127.0.0.1:0 \
            "$BINARY" serve --config "$toml" >"$out" 2>"$WORK/serve.err" &
        pid=$!
        ok=""
        for _ in $(seq 1 200); do
            if grep -q '^herald listening on ' "$out"; then ok=1; break; fi
            if ! kill -0 $pid 2>/dev/null; then break; fi
            sleep 0.1
        done
        kill -TERM $pid 2>/dev/null || true
        wait $pid 2>/dev/null || true
        if [ -n "$ok" ]; then
            echo "ok $name"
        else
            grep -E 'error' "$WORK/serve.err" | tail -3 || true
            fail "$name: herald serve did not start with it"
        fi
    done <"$WORK/tomls"
fi

echo "deploy-validate: $(($(date +%s) - T_START)) s"
if [ $FAILED -ne 0 ]; then
    echo "deploy-validate: FAILED"
    exit 1
fi
echo "deploy-validate: every check passed"

#!/usr/bin/env python3
"""make k8s-check: check samples/kubernetes/ without a cluster.

1. Every YAML document parses (PyYAML safe_load_all).
2. When the kubernetes-validate package is importable (pip install kubernetes-validate), every
   object validates strictly (unknown keys are errors) against the Kubernetes schemas of 1.29 (the
   oldest version the sample supports) and of the package's latest version.
3. The rules the API server enforces on Jobs that a schema cannot express, and the sample's own
   invariants: restartPolicy Never with podFailurePolicy, FailIndex only with backoffLimitPerIndex,
   no 0 in an `In` exit-code list, containerName naming a container or init container, the same
   shard count everywhere, the same schedule for both CronJobs, non-root read-only containers.
4. When a showbatch binary is there (SHOWBATCH=..., else .build/release/showbatch), the manifest in
   the ConfigMap passes `showbatch validate`, with its /data paths pointed at samples/data.
Prints each check; exits 1 on the first failed group.
"""
import base64
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SAMPLES = os.path.join(ROOT, "samples", "kubernetes")
IMAGE = "ghcr.io/example/showbatch:0.1.0"
failures = []


def check(cond, what):
    print(("    ok: " if cond else "    FAILED: ") + what)
    if not cond:
        failures.append(what)


def finish_group():
    if failures:
        print(f"\n{len(failures)} check(s) failed", file=sys.stderr)
        sys.exit(1)


# 1. parse -----------------------------------------------------------------------------------------
print("==> 1. every YAML document parses")
files = sorted(
    os.path.join(d, f)
    for d, _, fs in os.walk(SAMPLES)
    for f in fs
    if f.endswith((".yaml", ".yml", ".yaml.example"))
)
objects = {}
for path in files:
    rel = os.path.relpath(path, ROOT)
    try:
        with open(path) as fh:
            docs = [d for d in yaml.safe_load_all(fh) if d is not None]
    except yaml.YAMLError as err:
        check(False, f"{rel}: {err}")
        continue
    check(bool(docs), f"{rel}: {len(docs)} document(s): " + ", ".join(f"{d.get('kind')}/{d.get('metadata', {}).get('name')}" for d in docs))
    for d in docs:
        objects[(d["kind"], d["metadata"]["name"])] = (rel, d)
finish_group()

# 2. schemas ---------------------------------------------------------------------------------------
print("==> 2. Kubernetes schemas (strict)")
try:
    import kubernetes_validate
except ImportError:
    kubernetes_validate = None
    print("    skipped: kubernetes-validate is not installed (pip install kubernetes-validate)")
if kubernetes_validate:
    versions = ["1.29.0", kubernetes_validate.latest_version()]
    for (kind, name), (rel, obj) in sorted(objects.items()):
        for v in versions:
            try:
                kubernetes_validate.validate(obj, v, strict=True)
                check(True, f"{kind}/{name} ({rel}) against {v}")
            except kubernetes_validate.ValidationError as err:
                check(False, f"{kind}/{name} ({rel}) against {v}: {'.'.join(map(str, err.path))}: {err.message}")
finish_group()

# 3. API-server rules and the sample's invariants ---------------------------------------------------
print("==> 3. Job rules the API server enforces, and the sample's invariants")


def pod_specs():
    for (kind, name), (_, obj) in objects.items():
        if kind == "CronJob":
            yield f"{kind}/{name}", obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        elif kind == "Pod":
            yield f"{kind}/{name}", obj["spec"]


cron = {name: obj for (kind, name), (_, obj) in objects.items() if kind == "CronJob"}
check(set(cron) == {"showbatch-shards", "showbatch-merge"}, f"CronJobs: {sorted(cron)}")
shards_cj, merge_cj = cron["showbatch-shards"], cron["showbatch-merge"]

for name, cj in cron.items():
    spec = cj["spec"]
    job = spec["jobTemplate"]["spec"]
    pod = job["template"]["spec"]
    check(spec.get("concurrencyPolicy") == "Forbid", f"{name}: concurrencyPolicy Forbid")
    check(isinstance(spec.get("startingDeadlineSeconds"), int), f"{name}: startingDeadlineSeconds {spec.get('startingDeadlineSeconds')}")
    check(isinstance(job.get("activeDeadlineSeconds"), int), f"{name}: activeDeadlineSeconds {job.get('activeDeadlineSeconds')}")
    check(isinstance(job.get("backoffLimit"), int), f"{name}: backoffLimit {job.get('backoffLimit')}")
    pfp = job.get("podFailurePolicy")
    if pfp:
        check(pod.get("restartPolicy") == "Never", f"{name}: podFailurePolicy needs restartPolicy Never (has {pod.get('restartPolicy')})")
        names = {c["name"] for c in pod.get("containers", []) + pod.get("initContainers", [])}
        for i, rule in enumerate(pfp["rules"]):
            action = rule["action"]
            check(action in {"FailJob", "FailIndex", "Ignore", "Count"}, f"{name}: rule {i} action {action}")
            if action == "FailIndex":
                check("backoffLimitPerIndex" in job, f"{name}: rule {i} FailIndex needs backoffLimitPerIndex")
            check(("onExitCodes" in rule) != ("onPodConditions" in rule), f"{name}: rule {i} has exactly one of onExitCodes/onPodConditions")
            if "onExitCodes" in rule:
                oec = rule["onExitCodes"]
                vals = oec["values"]
                check(oec["operator"] in {"In", "NotIn"}, f"{name}: rule {i} operator {oec['operator']}")
                check(oec.get("containerName") in names, f"{name}: rule {i} containerName {oec.get('containerName')} is one of {sorted(names)}")
                check(vals == sorted(set(vals)) and 0 < len(vals) <= 255, f"{name}: rule {i} exit codes {vals} sorted, unique")
                check(not (oec["operator"] == "In" and 0 in vals), f"{name}: rule {i} has no 0 with In")
    if "backoffLimitPerIndex" in job:
        check(job.get("completionMode") == "Indexed", f"{name}: backoffLimitPerIndex needs completionMode Indexed")
    check(not spec["schedule"].startswith("TZ") and "timeZone" in spec, f"{name}: timeZone {spec.get('timeZone')} in its own field")

check(shards_cj["spec"]["schedule"] == merge_cj["spec"]["schedule"] and shards_cj["spec"].get("timeZone") == merge_cj["spec"].get("timeZone"),
      f"both CronJobs run at {shards_cj['spec']['schedule']} {shards_cj['spec'].get('timeZone')} (the merge gate needs the same minute)")

sj = shards_cj["spec"]["jobTemplate"]["spec"]
shard_args = sj["template"]["spec"]["containers"][0]["args"]
m = re.fullmatch(r"auto/(\d+)", shard_args[shard_args.index("--shard") + 1])
n = int(m.group(1)) if m else None
check(sj.get("completionMode") == "Indexed" and sj.get("completions") == n and sj.get("parallelism") == n,
      f"Indexed Job: completions {sj.get('completions')}, parallelism {sj.get('parallelism')}, --shard auto/{n}")
check(shard_args[:2] == ["run", "/config/manifest.yaml"] and "--resume=auto" in shard_args and shard_args[-2:] == ["--log-format", "json"],
      "shard command: showbatch " + " ".join(shard_args))
codes = {}
for rule in sj["podFailurePolicy"]["rules"]:
    for v in rule.get("onExitCodes", {}).get("values", []):
        codes[v] = rule["action"]
# Each exit code of showbatch run has a rule that treats it deliberately (README, "The command line").
expected_run = {
    1: ({"FailIndex", "FailJob"}, "rows failed, the file is written: a retry would reveal the shard again"),
    2: ({"FailJob"}, "fix the manifest: every shard fails the same way"),
    3: ({"Count"}, "runtime failure: retried, resuming from the journal"),
    4: ({"Count"}, "the endpoint or the credentials: retried with the Job's backoff, resuming from the journal"),
    130: ({"Count"}, "interrupted: retried, resuming from the journal"),
}
for code, (actions, why) in expected_run.items():
    check(codes.get(code) in actions, f"showbatch-shards: exit {code} -> {codes.get(code)} ({why})")
check(set(codes) == set(expected_run), f"showbatch-shards: the rules name exactly exits {sorted(expected_run)} (have {sorted(codes)})")

merge_codes = {}
for rule in merge_cj["spec"]["jobTemplate"]["spec"]["podFailurePolicy"]["rules"]:
    oec = rule.get("onExitCodes", {})
    if oec.get("containerName") == "merge":
        for v in oec.get("values", []):
            merge_codes[v] = rule["action"]
# merge sends nothing, so it never exits 1 or 4.
expected_merge = {2: "FailJob", 3: "Count", 130: "Count"}
for code, action in expected_merge.items():
    check(merge_codes.get(code) == action, f"showbatch-merge: exit {code} -> {merge_codes.get(code)} (expected {action})")
check(set(merge_codes) == set(expected_merge), f"showbatch-merge: the rules name exactly exits {sorted(expected_merge)} (have {sorted(merge_codes)})")

mpod = merge_cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
margs = mpod["containers"][0]["args"]
check(margs == ["merge", "/config/manifest.yaml", "--shards", str(n)], "merge command: showbatch " + " ".join(margs))
genv = {e["name"]: e.get("value") for e in mpod["initContainers"][0]["env"]}
check(genv.get("SHARDS") == str(n), f"merge gate SHARDS={genv.get('SHARDS')}")

manifest = yaml.safe_load(objects[("ConfigMap", "showbatch-nightly")][1]["data"]["manifest.yaml"])
check(genv.get("OUTPUT") == manifest["output"]["path"], f"merge gate OUTPUT={genv.get('OUTPUT')} is the manifest's output.path")

pvc = objects[("PersistentVolumeClaim", "showbatch-data")][1]
check(pvc["spec"]["accessModes"] == ["ReadWriteMany"], f"PVC access modes {pvc['spec']['accessModes']}")

for where, pod in pod_specs():
    sc = pod.get("securityContext", {})
    check(sc.get("runAsNonRoot") is True and sc.get("runAsUser") == 10001, f"{where}: runAsNonRoot, runAsUser 10001")
    check(pod.get("automountServiceAccountToken") is False, f"{where}: no service account token")
    for c in pod.get("initContainers", []) + pod["containers"]:
        csc = c.get("securityContext", {})
        check(csc.get("readOnlyRootFilesystem") is True and csc.get("allowPrivilegeEscalation") is False,
              f"{where} {c['name']}: readOnlyRootFilesystem, no privilege escalation")
        check(c["image"] == IMAGE, f"{where} {c['name']}: image {c['image']}")
        for e in c.get("env", []):
            if e["name"] == "REVEAL_TOKEN":
                check("secretKeyRef" in e.get("valueFrom", {}), f"{where} {c['name']}: REVEAL_TOKEN from a Secret")
        for e in c.get("env", []):
            if e["name"] == "SHOWBATCH_STATE_KEY":
                check(e.get("valueFrom", {}).get("secretKeyRef", {}).get("name") == "showbatch-state",
                      f"{where} {c['name']}: SHOWBATCH_STATE_KEY from the Secret showbatch-state")
    for v in pod.get("volumes", []):
        if "configMap" in v:
            keys = [i["key"] for i in v["configMap"].get("items", [])]
            expected_keys = {"showbatch-nightly": ["manifest.yaml"], "showbatch-recipients": ["processor.asc"]}.get(v["configMap"]["name"])
            check(keys == expected_keys, f"{where}: the ConfigMap volume {v['configMap']['name']} holds {keys}")
cm_keys = list(objects[("ConfigMap", "showbatch-nightly")][1]["data"])
check(cm_keys == ["manifest.yaml"], f"ConfigMap showbatch-nightly holds {cm_keys} (the data file is on the volume)")
finish_group()

# 4. the manifest -----------------------------------------------------------------------------------
print("==> 4. the ConfigMap's manifest passes `showbatch validate`")
binary = os.environ.get("SHOWBATCH") or os.path.join(ROOT, ".build", "release", "showbatch")
if not os.access(binary, os.X_OK):
    print(f"    skipped: no showbatch binary at {binary} (build it, or set SHOWBATCH)")
else:
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "in"))
        shutil.copy(os.path.join(ROOT, "samples", "data", "customers.csv"), os.path.join(tmp, "in", "customers.csv"))
        text = objects[("ConfigMap", "showbatch-nightly")][1]["data"]["manifest.yaml"].replace("/data/", tmp + "/").replace("/keys/", tmp + "/keys/")
        path = os.path.join(tmp, "manifest.yaml")
        with open(path, "w") as fh:
            fh.write(text)
        os.makedirs(os.path.join(tmp, "keys"))
        with open(os.path.join(tmp, "keys", "processor.asc"), "w") as fh:
            fh.write(objects[("ConfigMap", "showbatch-recipients")][1]["data"]["processor.asc"])
        env = dict(os.environ, REVEAL_TOKEN="not-a-real-token", SHOWBATCH_STATE_KEY=base64.b64encode(os.urandom(32)).decode())
        res = subprocess.run([binary, "validate", path], env=env, capture_output=True, text=True)
        check(res.returncode == 0, f"showbatch validate (data paths under a temporary folder): exit {res.returncode} {res.stdout.strip()} {res.stderr.strip()}")
finish_group()
print("\nkubernetes samples: all checks passed")

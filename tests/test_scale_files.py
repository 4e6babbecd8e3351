"""The scale-out deployment files keep their promises: compose.scale.yaml, deploy/nginx/ and the Kubernetes
manifests of deploy/k8s (validated offline against the Kubernetes 1.37 schemas by kubernetes-validate). No Docker or
cluster here: the files are parsed and checked; deploy/nginx/proxy.conf itself runs in tests/test_fleet.py."""

from __future__ import annotations

import re
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from tests.test_deploy_files import compose, environment, strings, test_service_promises

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy" / "k8s"
ONE_SERVER = K8S / "one-server"  # the other layout: one pod, one worker per GPU of its node
SECRET_NAME = re.compile(r"API_?KEY|TOKEN|SECRET|PASSWORD|ICE_SERVERS", re.IGNORECASE)


def kustomization(directory: Path = K8S) -> dict:
    return yaml.safe_load((directory / "kustomization.yaml").read_text())


def manifests(directory: Path = K8S) -> list[dict]:
    return [doc for name in kustomization(directory)["resources"]
            for doc in yaml.safe_load_all((directory / name).read_text())]


def every_manifest() -> list[dict]:
    return manifests() + manifests(ONE_SERVER)


def find(kind: str, name: str, directory: Path = K8S) -> dict:
    (doc,) = [d for d in manifests(directory) if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def container(workload: dict) -> dict:
    (c,) = workload["spec"]["template"]["spec"]["containers"]
    return c


def flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


# -- Kubernetes ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("directory", [K8S, ONE_SERVER], ids=lambda d: d.name)
def test_kustomization_lists_every_manifest(directory: Path):
    assert sorted(kustomization(directory)["resources"]) == sorted(p.name for p in directory.glob("*.yaml")
                                                                   if p.name != "kustomization.yaml")


@pytest.mark.parametrize("doc", every_manifest(), ids=lambda d: f"{d['kind']}/{d['metadata']['name']}")
def test_manifest_is_valid_for_kubernetes(doc):
    kubernetes_validate.validate(doc, "1.37.0", strict=True)  # raises with the offending field


def test_engine_workers_get_one_gpu_each_behind_a_headless_service():
    engine, service = find("StatefulSet", "cbf-engine"), find("Service", "cbf-engine")
    c = container(engine)
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 1 and engine["spec"]["replicas"] >= 2
    port = int(flag(c["args"], "--listen").rsplit(":", 1)[1])
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["selector"] == engine["spec"]["selector"][
        "matchLabels"] == engine["spec"]["template"]["metadata"]["labels"]
    assert [p["port"] for p in service["spec"]["ports"]] == [port]
    assert {p["containerPort"] for p in c["ports"]} == {port}
    assert c["readinessProbe"]["tcpSocket"]["port"] == "engine"


def test_gateways_find_the_engines_by_name_and_are_ready_on_health():
    gateway, engine_service = find("Deployment", "cbf-gateway"), find("Service", "cbf-engine")
    c = container(gateway)
    port = engine_service["spec"]["ports"][0]["port"]
    assert flag(c["args"], "--engine-url") == f"dns+ws://{engine_service['metadata']['name']}:{port}"
    assert "nvidia.com/gpu" not in str(c["resources"])
    served = int(flag(c["args"], "--port"))
    assert {p["containerPort"] for p in c["ports"]} == {served}
    assert c["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert "httpGet" not in c["livenessProbe"]  # an engine outage must not restart every gateway
    service, ingress = find("Service", "cbf-gateway"), find("Ingress", "cbf-gateway")
    assert service["spec"]["selector"] == gateway["spec"]["template"]["metadata"]["labels"]
    (rule,) = ingress["spec"]["rules"]
    assert rule["http"]["paths"][0]["backend"]["service"]["name"] == "cbf-gateway"
    notes = ingress["metadata"]["annotations"]
    assert int(notes["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600
    assert notes["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"


def test_the_autoscaler_follows_active_sessions_of_the_gateways():
    hpa = find("HorizontalPodAutoscaler", "cbf-gateway")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "cbf-gateway"}
    (metric,) = hpa["spec"]["metrics"]
    assert metric["pods"]["metric"]["name"] == "cbf_active_sessions"  # the gauge gateway/metrics.py exports
    assert hpa["spec"]["minReplicas"] >= 2


def test_media_goes_through_a_turn_relay_on_the_host_network():
    turn = find("Deployment", "cbf-turn")
    assert turn["spec"]["template"]["spec"]["hostNetwork"] is True
    gateway_env = {e["name"]: e for e in container(find("Deployment", "cbf-gateway"))["env"]}
    assert gateway_env["CBF_ICE_SERVERS"]["valueFrom"]["secretKeyRef"]["name"] == "chatterbox-fast"
    assert "--lt-cred-mech" in container(turn)["args"]


def test_one_server_runs_a_worker_per_gpu_of_its_pod_and_is_ready_on_health():
    from gateway.engine_link.devices import parse

    server, service = find("Deployment", "cbf-server", ONE_SERVER), find("Service", "cbf-server", ONE_SERVER)
    c = container(server)
    assert parse(flag(c["args"], "--engine-devices")) == ("auto",) and "--engine-url" not in c["args"]
    assert c["resources"]["limits"]["nvidia.com/gpu"] >= 2  # auto: one worker per card the pod is given
    assert flag(c["args"], "--host") == "0.0.0.0" and int(flag(c["args"], "--processes")) >= 2
    assert c["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert "httpGet" not in c["livenessProbe"]  # a worker down is the server's own to restart
    assert server["spec"]["strategy"]["type"] == "Recreate"  # its ReadWriteOnce volume
    assert service["spec"]["selector"] == server["spec"]["template"]["metadata"]["labels"]


def test_secrets_come_from_one_secret_and_images_are_pinned():
    for doc in every_manifest():
        spec = doc["spec"].get("template", {}).get("spec")
        if spec is None:
            continue
        security = spec.get("securityContext", {})
        for c in spec["containers"]:
            image = c["image"]
            assert re.search(r":\d+\.\d+\.\d+", image), image
            for env in c.get("env", []):
                if SECRET_NAME.search(env["name"]):
                    assert "value" not in env, env["name"]
                    assert env["valueFrom"]["secretKeyRef"]["name"] == "chatterbox-fast"
            if "chatterbox-fast" in image:
                assert security.get("runAsNonRoot") is True and security.get("runAsUser") == 10001


# -- compose.scale.yaml and nginx ------------------------------------------------------------------------------------

SCALE = compose("compose.scale.yaml")


@pytest.mark.parametrize(("name", "svc"), SCALE["services"].items(), ids=str)
def test_scale_service_promises(name, svc):
    test_service_promises("compose.scale.yaml", name, svc)


def test_each_engine_reserves_one_gpu_by_its_own_uuid_and_answers_to_one_name():
    engines = {n: s for n, s in SCALE["services"].items() if s.get("command", [""])[0] == "engine"}
    assert len(engines) >= 2
    uuids = set()
    for svc in engines.values():
        (device,) = svc["deploy"]["resources"]["reservations"]["devices"]
        (uuid,) = device["device_ids"]
        assert re.fullmatch(r"\$\{CBF_GPU_UUID_\d:\?[^}]+\}", uuid) and "count" not in device
        uuids.add(uuid)
        assert svc["networks"]["default"]["aliases"] == ["engine"]
        assert "ports" not in svc
    assert len(uuids) == len(engines)
    ports = {flag(svc["command"], "--listen").rsplit(":", 1)[1] for svc in engines.values()}
    gateway = SCALE["services"]["gateway"]
    assert flag(gateway["command"], "--engine-url") == f"dns+ws://engine:{ports.pop()}" and not ports
    assert gateway["deploy"]["replicas"] >= 2 and "ports" not in gateway  # only the balancer is published
    assert environment(gateway)["CBF_ICE_SERVERS"].startswith("turn:${CBF_TURN_USER:?")
    assert SCALE["services"]["turn"]["network_mode"] == "host"


def test_the_balancer_serves_the_gateways_with_long_lived_connection_settings():
    balancer = SCALE["services"]["balancer"]
    assert balancer["ports"] == ["${CBF_PUBLISH:-8197}:8197"]
    mounts = dict(reversed(v.split(":")[:2]) for v in balancer["volumes"])
    conf = (ROOT / mounts["/etc/nginx/nginx.conf"]).read_text()
    proxy = (ROOT / mounts["/etc/nginx/chatterbox-fast/proxy.conf"]).read_text()
    assert "include /etc/nginx/chatterbox-fast/proxy.conf;" in conf
    assert re.search(r"server gateway:8197 resolve", conf) and "listen 8197;" in conf
    assert "map $http_upgrade $connection_upgrade" in conf
    for setting in ("proxy_pass http://gateways;", "proxy_http_version 1.1;", "proxy_set_header Upgrade $http_upgrade;",
                    "proxy_set_header Connection $connection_upgrade;", "proxy_buffering off;",
                    "proxy_read_timeout 1h;", "proxy_next_upstream error timeout;"):
        assert setting in proxy, setting


def test_no_secret_values_in_the_scale_files():
    for path in [ROOT / "compose.scale.yaml", *K8S.glob("*.yaml")]:
        text = path.read_text()
        assert not re.search(r"Bearer\s+\w|sk-[A-Za-z0-9]{8}|hf_[A-Za-z0-9]{8}", text), path
    for name, svc in SCALE["services"].items():
        for key, value in environment(svc).items():
            if SECRET_NAME.search(key):
                assert value is not None and "${" in value, (name, key)
    assert not [s for s in strings(SCALE) if re.search(r"--user=\w+:\w", s)]  # TURN credentials from the environment

"""deploy/grafana/chatterbox-fast.json and deploy/prometheus/alerts.yml (issue 50 part 5): the dashboard loads as
Grafana's JSON model (every panel a query on the template's Prometheus data source), the rules as Prometheus rule
groups, and every metric either names is one a real gateway's /metrics exposes; the per-worker gauges say each
worker's state."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import yaml

from gateway.metrics import Metrics

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "deploy/grafana/chatterbox-fast.json"
ALERTS = ROOT / "deploy/prometheus/alerts.yml"
METRIC = re.compile(r"\bcbf_[a-z0-9_]+")


def exposed(text: str) -> set[str]:
    """The metric names a scrape offers: each family's samples, histograms' by their base name too."""
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            name, kind = line.split()[2:4]
            names |= {name, name + "_total"} if kind == "counter" else {name}
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def test_the_dashboard_and_the_rules_name_only_metrics_the_gateway_exposes(plain_server: str) -> None:
    httpx.post(plain_server + "/v1/tts", json={"text": "Counted once.", "format": "wav"}, timeout=60)
    scraped = httpx.get(plain_server + "/metrics", timeout=30).text
    offered = exposed(scraped)
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] == "chatterbox-fast" and dashboard["templating"]["list"][0]["type"] == "datasource"
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    assert all(panel["datasource"]["uid"] == "${datasource}" for panel in dashboard["panels"]) and len(exprs) >= 12
    rules = [rule for group in yaml.safe_load(ALERTS.read_text())["groups"] for rule in group["rules"]]
    assert all({"alert", "expr", "for", "labels", "annotations"} <= set(rule) for rule in rules) and len(rules) >= 5
    named = {re.sub(r"_(bucket|sum|count)$", "", name) for expr in [*exprs, *(r["expr"] for r in rules)]
             for name in METRIC.findall(expr)}
    assert named and not {name for name in named if name not in offered and name + "_bucket" not in offered}, (
        named - offered)
    worker = re.search(r'^cbf_engine_worker_up\{device="cpu",worker="unix:[^"]+"\} 1\.0$', scraped, re.M)
    assert worker and re.search(r'^cbf_engine_worker_loaded\{worker="unix:[^"]+"\} 1\.0$', scraped, re.M), scraped
    assert re.search(r'^cbf_engine_worker_restarts\{device="",worker="unix:[^"]+"\} 0\.0$', scraped, re.M), scraped


def test_a_cuda_workers_memory_and_state_become_its_series() -> None:
    """What the pool says of two workers (one a CUDA worker's ready message as this CPU machine never sees one: its
    figures, its card's utilisation too, written here as a stand-in), as the scrape shows them; a worker gone from the
    pool leaves no series behind."""
    metrics = Metrics()
    gpu = {"url": "ws://gpu-a:9000", "available": True, "device": "cuda:0", "state": "loaded", "in_flight": 3,
           "prompt_cache": {"voices": 2, "bytes": 77 * 2 ** 20},
           "memory": {"allocated": 9 * 2 ** 30, "reserved": 10 * 2 ** 30, "card_free": 2 ** 30,
                      "card_total": 24 * 2 ** 30, "budget": 12 * 2 ** 30}, "utilization": 0.42}
    idle = {"url": "ws://gpu-b:9000", "available": True, "device": "cuda:0", "state": "unloaded", "in_flight": 0}
    metrics.engines(True, [gpu, idle])
    text = metrics.render().decode()
    assert 'cbf_engine_worker_memory_bytes{kind="card_free",worker="ws://gpu-a:9000"} 1.073741824e+09' in text
    assert 'cbf_engine_worker_memory_bytes{kind="budget",worker="ws://gpu-a:9000"} 1.2884901888e+10' in text
    assert 'cbf_engine_worker_in_flight{worker="ws://gpu-a:9000"} 3.0' in text
    assert 'cbf_engine_worker_loaded{worker="ws://gpu-b:9000"} 0.0' in text
    assert 'cbf_engine_worker_gpu_utilization_ratio{device="cuda:0",worker="ws://gpu-a:9000"} 0.42' in text
    assert 'cbf_engine_worker_gpu_utilization_ratio{device="cuda:0",worker="ws://gpu-b:9000"}' not in text
    metrics.engines(True, [gpu])
    assert "gpu-b" not in metrics.render().decode()

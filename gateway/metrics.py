"""Prometheus metrics of one gateway (a registry per app, so several apps can live in one process).

Under ``serve --processes N`` every process runs with PROMETHEUS_MULTIPROC_DIR set (prometheus-client's multiprocess
mode: values live in files there), and whichever process answers /metrics reports the sum over all of them: counters
and histograms added up, active sessions summed over the live processes, ``cbf_engine_up`` the highest of them."""

from __future__ import annotations

from collections import Counter as Tally
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

_LATENCY_BUCKETS = (0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.6, 0.8, 1.0, 1.5, 2.5, 5.0)


class Metrics:
    def __init__(self, shared_dir: str | None = None) -> None:
        """``shared_dir``: the multiprocess directory (PROMETHEUS_MULTIPROC_DIR) of `serve --processes N`."""
        self.shared_dir = shared_dir
        self.registry = CollectorRegistry()
        r = self.registry
        self.ttfa = Histogram("cbf_time_to_first_audio_seconds", "From an utterance's first text to its first audio "
                              "leaving the gateway", ["transport"], buckets=_LATENCY_BUCKETS, registry=r)
        self.chunk_gen = Histogram("cbf_chunk_generation_seconds", "Engine generation time per chunk",
                                   buckets=_LATENCY_BUCKETS, registry=r)
        self.rtf = Histogram("cbf_real_time_factor", "Audio seconds per generation second, per utterance",
                             buckets=(0.5, 1, 1.5, 2, 3, 4, 6, 10, 20, 50, 100, 1000), registry=r)
        self.underruns = Counter("cbf_underruns_total", "Times a stream ran dry after first audio", ["transport"],
                                 registry=r)
        self.underruns_in_gateway = Counter("cbf_underruns_in_gateway_total", "Of cbf_underruns_total, those where "
                                            "the missing audio had reached the gateway and was still being encoded "
                                            "(the rest: the engine's audio came late)", ["transport"], registry=r)
        self.sessions = Gauge("cbf_active_sessions", "Open sessions and streams", ["transport"], registry=r,
                              multiprocess_mode="livesum")
        self.utterances = Counter("cbf_utterances_total", "Utterances finished", ["transport", "outcome"], registry=r)
        self.failovers = Counter("cbf_failovers_total", "Utterances whose engine worker went away mid-way: moved "
                                 "to another (moved) or failed (given_up)", ["outcome"], registry=r)
        self.errors = Counter("cbf_errors_total", "Errors sent to clients", ["code"], registry=r)
        self.caller_frames = Counter("cbf_caller_audio_frames_total", "Frames of callers' audio: heard, rejected (not "
                                     "the call's format), flooded (faster than real time), dropped (a controller "
                                     "listening did not read them)", ["outcome"], registry=r)
        self.caller_tally: Tally[str] = Tally()  # the same figures for /health (this process's)
        self.barge_ins = Counter("cbf_barge_ins_total", "The gateway's speech stopped (or paused) by the caller's",
                                 ["transport", "act"], registry=r)
        self.prompt_cache = Counter("cbf_prompt_cache_lookups_total", "Requests the prompt cache looked up: served "
                                    "from it (hit) or said by the engine (miss)", ["outcome"], registry=r)
        self.prompt_cache_bytes = Gauge("cbf_prompt_cache_bytes", "Bytes of cached prompts, in memory and in the "
                                        "cache directory", ["store"], registry=r, multiprocess_mode="livesum")
        # per tenant of the keys file (gateway/guard/tenancy.py): its name as the label, never its key
        self.tenant_chars = Counter("cbf_tenant_characters_total", "Characters of text taken from a tenant",
                                    ["tenant"], registry=r)
        self.tenant_audio = Counter("cbf_tenant_audio_seconds_total", "Seconds of speech sent to a tenant",
                                    ["tenant"], registry=r)
        self.tenant_utterances = Counter("cbf_tenant_utterances_total", "A tenant's utterances done", ["tenant"],
                                         registry=r)
        self.tenant_ttfa = Histogram("cbf_tenant_time_to_first_audio_seconds", "From a tenant's utterance's start "
                                     "to its first audio", ["tenant"], buckets=_LATENCY_BUCKETS, registry=r)
        self.tenant_refusals = Counter("cbf_tenant_refusals_total", "A tenant's requests refused, by reason "
                                       "(sessions, utterances, chars, voice, route, revoked)", ["tenant", "reason"],
                                       registry=r)
        self.engine_up = Gauge("cbf_engine_up", "1 when the engine worker is connected and ready", registry=r,
                               multiprocess_mode="livemax")
        # Per worker (its URL), from the pool's view at each scrape (and each second under --processes N)
        self.worker_up = Gauge("cbf_engine_worker_up", "1 when this worker is connected and ready", ["worker", "device"],
                               registry=r, multiprocess_mode="livemax")
        self.worker_loaded = Gauge("cbf_engine_worker_loaded", "1 when this worker's model is in memory (0: unloaded "
                                   "by --unload-after or /v1/admin/unload, or loading)", ["worker"], registry=r,
                                   multiprocess_mode="livemax")
        self.worker_in_flight = Gauge("cbf_engine_worker_in_flight", "Utterances this process has in flight on this "
                                      "worker", ["worker"], registry=r, multiprocess_mode="livesum")
        self.worker_memory = Gauge("cbf_engine_worker_memory_bytes", "A CUDA worker's device memory: allocated and "
                                   "reserved by torch, the card's free and total, its --gpu-memory budget (0: none)",
                                   ["worker", "kind"], registry=r, multiprocess_mode="livemax")
        self.worker_utilization = Gauge("cbf_engine_worker_gpu_utilization_ratio", "A CUDA worker's card's "
                                        "utilisation, 0..1 (nvidia-smi's utilization.gpu, read every 5 s; absent "
                                        "while unloaded or when nvidia-smi does not answer)", ["worker", "device"],
                                        registry=r, multiprocess_mode="livemax")
        self.worker_restarts = Gauge("cbf_engine_worker_restarts", "Times this embedded worker (serve "
                                     "--engine-devices: one per device) was restarted after it died",
                                     ["worker", "device"], registry=r, multiprocess_mode="livemax")
        self.worker_prompt_bytes = Gauge("cbf_engine_worker_prompt_cache_bytes", "Bytes of voice prompts this worker "
                                         "keeps on its device", ["worker"], registry=r, multiprocess_mode="livemax")

    def engines(self, available: bool, workers: list[dict[str, Any]],
                embedded: list[dict[str, Any]] | None = None) -> None:
        """The engine's gauges from the pool's view (EnginePool.available, .engines) and the embedded workers'
        supervision (/health's ``workers``): stale workers' series dropped."""
        self.engine_up.set(1 if available else 0)
        for gauge in (self.worker_up, self.worker_loaded, self.worker_in_flight, self.worker_prompt_bytes,
                      self.worker_memory, self.worker_utilization, self.worker_restarts):
            gauge.clear()
        for worker in embedded or ():
            self.worker_restarts.labels(worker["url"], worker["device"]).set(worker["restarts"])
        for worker in workers:
            url = worker["url"]
            self.worker_up.labels(url, worker.get("device") or "").set(1 if worker["available"] else 0)
            self.worker_loaded.labels(url).set(1 if worker.get("state") in (None, "loaded") and worker["available"]
                                               else 0)
            self.worker_in_flight.labels(url).set(worker.get("in_flight") or 0)
            self.worker_prompt_bytes.labels(url).set((worker.get("prompt_cache") or {}).get("bytes") or 0)
            for kind, value in (worker.get("memory") or {}).items():
                self.worker_memory.labels(url, kind).set(value)
            if worker.get("utilization") is not None:
                self.worker_utilization.labels(url, worker.get("device") or "").set(worker["utilization"])

    def caller_audio(self, outcome: str, frames: int = 1) -> None:
        if frames:
            self.caller_frames.labels(outcome).inc(frames)
            self.caller_tally[outcome] += frames

    def _collected(self) -> CollectorRegistry:
        """This process's registry, or under ``serve --processes N`` every process's summed."""
        if self.shared_dir is None:
            return self.registry
        merged = CollectorRegistry()
        MultiProcessCollector(merged, path=self.shared_dir)
        return merged

    def render(self) -> bytes:
        return generate_latest(self._collected())

    def usage(self) -> dict[str, dict[str, Any]]:
        """Each tenant's figures (GET /v1/usage): characters in, audio seconds out, utterances, first audio (count,
        mean, p95 as the upper bound of its bucket), refusals by reason."""
        tenants: dict[str, dict[str, Any]] = {}
        buckets: dict[str, list[tuple[float, float]]] = {}

        def of(name: str) -> dict[str, Any]:
            return tenants.setdefault(name, {"characters": 0, "audio_seconds": 0.0, "utterances": 0,
                                             "first_audio": {"count": 0, "mean_s": None, "p95_s": None},
                                             "refusals": {}})

        for family in self._collected().collect():
            for sample in family.samples:
                name = sample.labels.get("tenant")
                if name is None:
                    continue
                figures = of(name)
                match sample.name:
                    case "cbf_tenant_characters_total":
                        figures["characters"] = int(sample.value)
                    case "cbf_tenant_audio_seconds_total":
                        figures["audio_seconds"] = round(sample.value, 3)
                    case "cbf_tenant_utterances_total":
                        figures["utterances"] = int(sample.value)
                    case "cbf_tenant_refusals_total":
                        figures["refusals"][sample.labels["reason"]] = int(sample.value)
                    case "cbf_tenant_time_to_first_audio_seconds_count":
                        figures["first_audio"]["count"] = int(sample.value)
                    case "cbf_tenant_time_to_first_audio_seconds_sum":
                        figures["first_audio"]["sum"] = sample.value
                    case "cbf_tenant_time_to_first_audio_seconds_bucket":
                        buckets.setdefault(name, []).append((float(sample.labels["le"]), sample.value))
        for name, figures in tenants.items():
            first = figures["first_audio"]
            total = first.pop("sum", 0.0)
            if first["count"]:
                first["mean_s"] = round(total / first["count"], 4)
                first["p95_s"] = next((le if le != float("inf") else None for le, n in sorted(buckets.get(name, []))
                                       if n >= 0.95 * first["count"]), None)
        return tenants

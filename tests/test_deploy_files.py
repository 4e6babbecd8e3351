"""The deployment files keep their promises. No Docker here: the Dockerfile and compose files are parsed and checked."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from docker.utils.build import PatternMatcher, exclude_paths
from setuptools import find_packages

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILES = ("compose.yaml", "compose.split.yaml", "compose.cpu.yaml", "compose.gpus.yaml")
PORT = "8197"
GPU_PICKERS = {"NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"}  # select cards by index (or UUID) outside compose


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str


@dataclass
class Stage:
    name: str
    base: str  # an image reference or an earlier stage's name
    instructions: list[Instruction]


def dockerfile_instructions(text: str) -> list[Instruction]:
    """Instructions with line continuations joined and heredoc bodies folded into their instruction."""
    instructions: list[Instruction] = []
    lines = iter(text.splitlines())
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        while line.endswith("\\"):
            line = line[:-1] + " " + next(lines)
        heredoc = re.search(r"<<-?'?(\w+)'?\s*$", line)
        if heredoc:
            body = []
            for inner in lines:
                if inner.strip() == heredoc.group(1):
                    break
                body.append(inner)
            line += "\n" + "\n".join(body)
        keyword, _, args = line.strip().partition(" ")
        instructions.append(Instruction(keyword.upper(), args.strip()))
    return instructions


def dockerfile_stages(text: str) -> tuple[dict[str, str], list[Stage]]:
    """The global ARG defaults and the build stages, in order."""
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for ins in dockerfile_instructions(text):
        if ins.keyword == "FROM":
            match = re.fullmatch(r"(\S+)(?:\s+AS\s+(\S+))?", ins.args, re.IGNORECASE)
            assert match, ins
            base = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], match.group(1))
            stages.append(Stage(match.group(2) or str(len(stages)), base, []))
        elif not stages and ins.keyword == "ARG":
            name, _, default = ins.args.partition("=")
            args[name] = default
        elif stages:
            stages[-1].instructions.append(ins)
    return args, stages


DOCKERFILE = (ROOT / "Dockerfile").read_text()
ARGS, STAGES = dockerfile_stages(DOCKERFILE)
BY_NAME = {stage.name: stage for stage in STAGES}


def lineage(name: str) -> list[Stage]:
    """A stage and the stages it is built on, base first."""
    chain = [BY_NAME[name]]
    while chain[0].base in BY_NAME:
        chain.insert(0, BY_NAME[chain[0].base])
    return chain


def effective(name: str, keyword: str) -> list[str]:
    return [ins.args for stage in lineage(name) for ins in stage.instructions if ins.keyword == keyword]


def env_of(name: str) -> dict[str, str]:
    env: dict[str, str] = {}
    for args in effective(name, "ENV"):
        env.update(re.findall(r"(\w+)=(\S+)", args))
    return env


def compose(name: str) -> dict:
    return yaml.safe_load((ROOT / name).read_text())


def services() -> list[tuple[str, str, dict]]:
    return [(file, name, svc) for file in COMPOSE_FILES for name, svc in compose(file)["services"].items()]


def environment(svc: dict) -> dict[str, str | None]:
    env = svc.get("environment", {})
    if isinstance(env, list):
        return {k: (v if sep else None) for k, sep, v in (item.partition("=") for item in env)}
    return env


def requirement_pins(lines: list[str]) -> dict[str, str]:
    pins = {}
    for line in lines:
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[re.split(r"[<>=!~;\[ ]", name)[0].lower().replace("_", "-")] = version.split(";")[0].strip()
    return pins


LOCK = requirement_pins((ROOT / "requirements/lock.txt").read_text().splitlines())


# -- Dockerfile ------------------------------------------------------------------------------------------------------

def test_every_base_image_is_pinned_to_a_full_version():
    for stage in STAGES:
        if stage.base in BY_NAME:
            continue
        image, _, tag = stage.base.partition(":")
        assert "@sha256:" in stage.base or re.match(r"\d+\.\d+\.\d+", tag), stage.base
        assert "latest" not in tag


def test_gpu_is_the_default_target_and_cpu_runs_espeak():
    assert STAGES[-1].name == "gpu"  # a plain `docker build` makes the deployment image
    assert env_of("gpu")["CBF_ENGINE"] == "chatterbox-turbo"
    assert env_of("cpu")["CBF_ENGINE"] == "espeak"
    assert lineage("cpu")[0] is lineage("gpu")[0]  # one set of wheels for both


@pytest.mark.parametrize("target", ["cpu", "gpu"])
def test_runs_as_a_non_root_user(target):
    users = effective(target, "USER")
    assert users and not any(u in ("root", "0") or u.startswith(("root:", "0:")) for u in users)  # never back to root
    created = " ".join(effective(target, "RUN"))
    assert re.search(rf"useradd\b.*\b{re.escape(users[-1])}\b", created)


@pytest.mark.parametrize("target", ["cpu", "gpu"])
def test_healthcheck_asks_health_on_the_served_port(target):
    (check,) = effective(target, "HEALTHCHECK")
    assert re.search(rf"http://127\.0\.0\.1:{PORT}/health['\"]", check) and "--start-period" in check
    assert "'ok'" in check  # healthy means /health says ok, not merely that the port answers
    assert PORT in effective(target, "EXPOSE")
    cmd = effective(target, "CMD")[-1]
    assert '"serve"' in cmd and f'"--port", "{PORT}"' in cmd and '"0.0.0.0"' in cmd


def test_every_serve_in_a_container_listens_on_every_address_said_explicitly():
    """``serve`` listens on 127.0.0.1 by default: every container's gateway sets its host, or nothing reaches it."""
    for target in ("cpu", "gpu"):
        assert env_of(target)["CBF_HOST"] == "0.0.0.0"  # a compose command override too
    every = [svc for file in (*COMPOSE_FILES, "compose.scale.yaml") for svc in compose(file)["services"].values()]
    serving = [svc["command"] for svc in every if svc.get("command", [""])[0] == "serve"]
    k8s = yaml.safe_load_all((ROOT / "deploy/k8s/gateway.yaml").read_text())
    serving += [c["args"] for doc in k8s if doc and doc["kind"] == "Deployment"
                for c in doc["spec"]["template"]["spec"]["containers"] if c.get("args", [""])[0] == "serve"]
    assert len(serving) >= 3
    for command in serving:
        assert command[command.index("--host") + 1] == "0.0.0.0", command


def test_every_pip_install_is_constrained_by_the_lock():
    installs = [cmd for ins in dockerfile_instructions(DOCKERFILE) if ins.keyword == "RUN"
                for cmd in re.split(r"&&", ins.args) if "pip install" in cmd]
    assert installs
    for cmd in installs:
        # the project itself (no dependencies) is the one install that needs no constraint
        assert "-c requirements/lock.txt" in cmd or re.search(r"--no-deps .*-e \.\s*$", cmd), cmd


def test_lock_pins_everything_and_agrees_with_pyproject():
    assert all(re.fullmatch(r"\d[\w.+]*", version) for version in LOCK.values()), LOCK
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = requirement_pins(project["dependencies"] + extras["engine"] + extras["traces"] + extras["test"]
                              + extras["gate"] + extras["tools"])
    for nodeps in ("engine-nodeps.txt", "test-nodeps.txt", "gate-nodeps.txt"):
        wanted |= requirement_pins((ROOT / "requirements" / nodeps).read_text().splitlines())
    for name, version in wanted.items():
        assert name in LOCK, f"{name} is not in requirements/lock.txt"
        if version and not version.startswith(("<", ">")):
            assert LOCK[name] == version, f"{name}: pyproject/requirements say {version}, the lock {LOCK[name]}"


def test_torch_is_the_cuda_13_build_with_its_cuda_libraries():
    assert "+cpu" not in LOCK["torch"] and "+cpu" not in LOCK["torchaudio"]
    assert LOCK["nvidia-cuda-runtime"].startswith("13.")
    assert any(name.endswith("-cu13") for name in LOCK)


def test_no_weights_are_baked_into_the_image():
    runs_and_copies = [ins.args for ins in dockerfile_instructions(DOCKERFILE) if ins.keyword in ("RUN", "COPY", "ADD")]
    for args in runs_and_copies:
        assert not re.search(r"\.safetensors|\.pt\b|snapshot_download|hf_hub_download|huggingface-cli|from_pretrained",
                             args), args
    for path in (".venv/bin/python", ".git/HEAD", "data/hf/x", "tests/conftest.py"):
        assert IGNORED.matches(path), path
    assert env_of("gpu")["HF_HOME"].startswith("/data/")


def test_builds_with_no_registry_beyond_the_base_image_and_pypi():
    """No frontend image to fetch (a `# syntax=` directive pulls one from Docker Hub at every build), and nothing only
    a newer frontend or BuildKit understands: Docker 20.10's BuildKit and the classic builder (what a current docker
    CLI without buildx falls back to) build this file as it is."""
    head = DOCKERFILE.split("\n\n", 1)[0]  # parser directives can only come before the first blank line
    assert not re.search(r"^#\s*syntax\s*=", head, re.IGNORECASE | re.MULTILINE)
    assert not re.search(r"^#\s*(check|escape)\s*=", head, re.IGNORECASE | re.MULTILINE)
    for ins in dockerfile_instructions(DOCKERFILE):
        assert "<<" not in ins.args or ins.keyword not in ("RUN", "COPY", "ADD"), f"heredoc: {ins}"
        assert not re.match(r"(--\S+\s+)*--(mount|network|security|link|chmod|chown|checksum|parents|exclude)\b",
                            ins.args), f"builder-specific flag: {ins}"
        assert ins.keyword != "ADD", ins  # ADD fetches URLs and unpacks archives; COPY copies
        if ins.keyword == "COPY":
            assert not re.search(r"--from=(?!(" + "|".join(BY_NAME) + r")\b)", ins.args), ins  # no other image
    assert ARGS["PYTHON_IMAGE"].startswith("python:")
    assert all(stage.base in BY_NAME or stage.base == ARGS["PYTHON_IMAGE"] for stage in STAGES)


# -- .dockerignore: matched by docker's own client library (docker-py), as the engine matches it ----------------------

IGNORED_PATTERNS = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
                    if line.strip() and not line.startswith("#")]
IGNORED = PatternMatcher(IGNORED_PATTERNS)
SOURCES = ["pyproject.toml", "README.md", "requirements/lock.txt", "requirements/engine-nodeps.txt", "gateway/app.py",
           "gateway/http/speech.py", "engine/worker.py", "engine/engines/turbo.py", "cbf_tools/doctor/command.py",
           "web/index.html", "docs/protocol.md"]
LOCAL_STATE = [
    "voices/narrator.wav", "voices/narrator/conds.pt",  # the voice library `make run` writes
    ".venv/bin/python", ".pytest_cache/v/cache/nodeids", ".hypothesis/examples/ab/cd", ".mypy_cache/x.json",
    ".ruff_cache/x", ".cache/huggingface/token", "test-artifacts/heard.wav", "build/lib/gateway/app.py",
    "dist/chatterbox_fast-0.1.0.whl", "chatterbox_fast.egg-info/PKG-INFO", "data/hf/hub/model.safetensors",
    "gateway/__pycache__/app.cpython-311.pyc", "engine/engines/__pycache__/turbo.cpython-311.pyc",
    "engine/voices/cloned.wav", "web/voices/x.wav", ".env", "prod.env", "gateway/.env", "id_ed25519", "notes.txt",
    "tests/test_http.py", ".git/HEAD", ".ci/run.log", "compose.override.yaml", "scripts/image-check", "core",
]


def test_dockerignore_lets_in_only_what_the_image_builds_from(tmp_path: Path):
    for path in SOURCES + LOCAL_STATE:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(path)
    sent = {p for p in exclude_paths(str(tmp_path), IGNORED_PATTERNS) if (tmp_path / p).is_file()}
    assert sent - {".dockerignore"} == set(SOURCES)


def test_dockerignore_keeps_every_source_the_image_needs():
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = find_packages(str(ROOT), include=include)  # what the image's pip install finds
    needed = [Path(pkg.replace(".", "/")) / "__init__.py" for pkg in packages]
    needed += [p.relative_to(ROOT) for top in ("web", "docs", "requirements") for p in (ROOT / top).rglob("*")
               if p.is_file() and "__pycache__" not in p.parts]
    assert len(needed) > 30 and "cbf_tools/gate/__init__.py" in map(str, needed)
    for path in map(str, needed):
        assert not IGNORED.matches(path), path


# -- compose ---------------------------------------------------------------------------------------------------------

def test_gpu_reserved_by_uuid_from_the_environment_never_by_index_or_count():
    gpu_services = [(f, n, s) for f, n, s in services() if "deploy" in s]
    assert {(f, n) for f, n, _ in gpu_services} == {("compose.yaml", "chatterbox-fast"),
                                                    ("compose.split.yaml", "engine"),
                                                    ("compose.gpus.yaml", "chatterbox-fast")}
    for file, _, svc in gpu_services:
        (device,) = svc["deploy"]["resources"]["reservations"]["devices"]
        assert device["driver"] == "nvidia" and "count" not in device and device["capabilities"] == ["gpu"]
        if file == "compose.gpus.yaml":  # several cards, each by its own variable
            assert [re.fullmatch(r"\$\{(CBF_GPU_UUID_\d):\?[^}]+\}", uuid).group(1) for uuid in device["device_ids"]] \
                == ["CBF_GPU_UUID_0", "CBF_GPU_UUID_1"]
            continue
        (uuid,) = device["device_ids"]
        assert re.fullmatch(r"\$\{CBF_GPU_UUID:\?[^}]+\}", uuid)
    for file, name, svc in services():  # and no other way to pick a card: no `gpus:`, no runtime, no device variable
        assert not {"gpus", "runtime"} & svc.keys(), (file, name)
        assert not GPU_PICKERS & environment(svc).keys(), (file, name)
    assert not GPU_PICKERS & env_of("gpu").keys()


def strings(node: object) -> list[str]:
    """Every string in a parsed YAML document, keys included."""
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in strings(k) + strings(v)]
    if isinstance(node, list):
        return [s for item in node for s in strings(item)]
    return [node] if isinstance(node, str) else []


def test_cpu_file_needs_no_gpu_and_no_required_variable():
    spec = compose("compose.cpu.yaml")
    assert not [s for s in strings(spec) if re.search(r"\$\{\w+:?\?", s)]  # ${VAR?} or ${VAR:?}: `up` fails unset
    (svc,) = spec["services"].values()
    assert svc["build"]["target"] == "cpu"
    assert not {"deploy", "gpus", "runtime"} & svc.keys()
    assert not GPU_PICKERS & environment(svc).keys()


@pytest.mark.parametrize(("file", "name", "svc"), services(), ids=lambda v: v if isinstance(v, str) else "")
def test_service_promises(file, name, svc):
    assert svc.get("restart") in ("unless-stopped", "always")
    image = svc["image"]
    assert ":" in image and not image.endswith(":latest")
    if "build" in svc:
        assert svc["build"]["target"] in BY_NAME
    for port in svc.get("ports", []):
        assert port.endswith(f":{PORT}")
    env = environment(svc)
    if "CBF_API_KEYS" in env:
        value = env["CBF_API_KEYS"]
        assert value is None or re.fullmatch(r"\$\{CBF_API_KEYS(:\?[^}]*)?\}", value), value


def test_weights_and_voices_live_on_named_volumes():
    for file in COMPOSE_FILES:
        spec = compose(file)
        for name, svc in spec["services"].items():
            if svc.get("command", ["serve"])[0] == "serve" and "--engine-url" in svc.get("command", []):
                continue  # a gateway with a remote engine keeps neither weights nor voices
            env = environment(svc)
            mounts = dict(reversed(v.split(":")[:2]) for v in svc["volumes"])
            voices = env.get("CBF_VOICES_DIR") or env_of("gpu")["CBF_VOICES_DIR"]
            assert mounts[voices] in spec["volumes"], (file, name)
            if svc.get("build", {}).get("target", "gpu") == "gpu":
                assert mounts[env["HF_HOME"]] in spec["volumes"], (file, name)


def test_volumes_are_shared_between_variants():
    names = {file: {k: v["name"] for k, v in compose(file)["volumes"].items()} for file in COMPOSE_FILES}
    assert names["compose.split.yaml"] == names["compose.yaml"]
    assert names["compose.cpu.yaml"]["voices"] == names["compose.yaml"]["voices"]


def test_several_gpus_file_runs_one_worker_per_reserved_card():
    from gateway.engine_link.devices import parse

    (svc,) = compose("compose.gpus.yaml")["services"].values()
    env = environment(svc)
    assert parse(env["CBF_ENGINE_DEVICES"]) == ("auto",)  # every card the container sees: those reserved
    assert int(env["CBF_PROCESSES"]) >= 2 and "CBF_ENGINE_URL" not in env and "command" not in svc  # the image's serve
    (device,) = svc["deploy"]["resources"]["reservations"]["devices"]
    assert len(device["device_ids"]) >= 2


def test_split_gateway_reaches_the_engine_it_starts():
    spec = compose("compose.split.yaml")["services"]
    engine, gateway = spec["engine"], spec["gateway"]
    listen = engine["command"][engine["command"].index("--listen") + 1]
    port = listen.rsplit(":", 1)[1]
    assert gateway["command"][gateway["command"].index("--engine-url") + 1] == f"ws://engine:{port}"
    assert "ports" not in engine  # the engine protocol is not published beyond the project network
    assert environment(engine)["CBF_ENGINE_SECRET"] == environment(gateway)["CBF_ENGINE_SECRET"]  # one secret
    assert environment(engine)["CBF_ENGINE_SECRET"].startswith("${CBF_ENGINE_SECRET:?")  # required, never a default
    assert port in " ".join(engine["healthcheck"]["test"])
    assert gateway["depends_on"]["engine"]["condition"] == "service_healthy"
    assert "deploy" not in gateway


def test_no_secret_values_in_any_deployment_file():
    secret_name = re.compile(r"API_?KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
    for file in ("Dockerfile", *COMPOSE_FILES):
        text = (ROOT / file).read_text()
        assert not re.search(r"Bearer\s+\w|sk-[A-Za-z0-9]{8}|hf_[A-Za-z0-9]{8}", text), file
        for name, value in re.findall(r"^\s*-?\s*(\w+)\s*[:=]\s*(\S.*)$", text, re.MULTILINE):
            if secret_name.search(name):
                assert value.startswith("${"), f"{file}: {name} has a literal value"
    for name, value in env_of("gpu").items():
        assert not secret_name.search(name), name

# chatterbox-fast built from source, every release pinned. Needs nothing beyond the Python base image and PyPI: no
# Dockerfile frontend to fetch (no `# syntax=` line), and only what Docker 20.10's BuildKit and the classic builder
# know (no heredocs, no cache mounts): scripts/image-check builds it with both.
#
#   docker build -t chatterbox-fast:0.1.0 .                     # GPU image (the default target): Chatterbox-Turbo
#   docker build --target cpu -t chatterbox-fast:0.1.0-cpu .    # CPU image: the embedded eSpeak engine, no GPU
#
# Why a slim Python base and not nvidia/cuda: the torch 2.14.1 and torchaudio 2.11.1 wheels on PyPI are CUDA 13 builds
# that bring their own CUDA runtime, cuBLAS, cuDNN and NCCL as nvidia-* wheels (pinned in requirements/lock.txt). A
# cuda-cudnn-runtime base would add a second, unused copy of the same libraries (about 3 GB). The host needs only the
# NVIDIA driver (>= 580, for CUDA 13) and the NVIDIA Container Toolkit, which mounts the driver's libcuda into the
# container when compose reserves a GPU for it.
#
# Weights are never baked in: Chatterbox-Turbo comes from the Hugging Face cache at HF_HOME (/data/hf, a volume) or a
# mounted model directory (CBF_MODEL_DIR). Cloned voices live in /data/voices (a volume) so they survive a rebuild.

ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

FROM ${PYTHON_IMAGE} AS base
# NUMBA_CACHE_DIR: librosa's numba kernels cache compiled code next to their source by default, and site-packages
# belongs to root; a fixed, writable cache directory keeps that out of the read-only tree. CBF_HOST: `serve` listens
# on 127.0.0.1 by default, which nothing outside a container reaches; in the image every `serve` (a compose command
# override too) listens on every address of the container, whose published port is what the host opens.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    NUMBA_CACHE_DIR=/tmp/numba \
    HF_HOME=/data/hf \
    CBF_VOICES_DIR=/data/voices \
    CBF_HOST=0.0.0.0
RUN groupadd --system --gid 10001 cbf \
 && useradd --system --uid 10001 --gid cbf --create-home --home-dir /home/cbf cbf \
 && mkdir -p /data/hf /data/voices /data/models \
 && chown -R cbf:cbf /data \
 && python -m venv /opt/venv

WORKDIR /app
# Dependencies first, in their own layer (rebuilt only when a pin changes), in the Makefile's order:
# the packages that pin an old torch go in with --no-deps, then what they and the gateway really need. No pip cache
# (PIP_NO_CACHE_DIR) and no BuildKit cache mount: the classic builder (a current docker CLI without buildx falls back
# to it) must build this file too.
COPY pyproject.toml ./
COPY requirements/ requirements/
RUN pip install -c requirements/lock.txt --upgrade pip \
 && pip install --no-deps -c requirements/lock.txt -r requirements/engine-nodeps.txt \
 && python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
print('\n'.join(p['dependencies'] + p['optional-dependencies']['engine'] + p['optional-dependencies']['traces']))" \
> /tmp/deps.txt \
 && pip install -c requirements/lock.txt -r /tmp/deps.txt \
 && rm /tmp/deps.txt

# The project itself, editable like `make venv`, so the gateway finds web/ and docs/ beside its code.
COPY . .
RUN pip install --no-deps --no-build-isolation -e .

USER cbf
# Real audio through the real stack, not only imports: doctor checks the installed pins, that PerTh marks a probe and
# finds its mark again, that the voices directory is writable, and speaks one utterance through a real worker. (As the
# service user, so the numba cache it leaves in /tmp/numba stays writable at run time.)
# librosa's numba cache written by one process before several workers could race to (engine/numba_warm.py).
RUN python -m engine.numba_warm
RUN chatterbox-fast doctor --engine espeak

EXPOSE 8197
# Healthy only once /health says "ok" (the engine is loaded and warm, the watermarker is on); the start period covers
# loading and warming the model (and a first download into an empty HF cache). With CBF_TLS_CERT set the port speaks
# https only: asked over https, the certificate not checked (it names the public host, and this is the loopback).
HEALTHCHECK --interval=15s --timeout=5s --start-period=180s --retries=3 \
    CMD python -c "import json, os, ssl, urllib.request; url = 'http://127.0.0.1:8197/health'; \
tls = ssl._create_unverified_context() if os.environ.get('CBF_TLS_CERT') else None; \
url = url.replace('http:', 'https:') if tls else url; \
raise SystemExit(json.load(urllib.request.urlopen(url, timeout=4, context=tls))['status'] != 'ok')"
ENTRYPOINT ["chatterbox-fast"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8197"]

# The same wheels (CUDA builds run on the CPU), speaking with the embedded eSpeak engine: try it anywhere.
FROM base AS cpu
ENV CBF_ENGINE=espeak

# The deployment image (last, so a plain `docker build` makes it).
FROM base AS gpu
ENV CBF_ENGINE=chatterbox-turbo \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility

# The Docker host of scripts/image-check and scripts/compose-check (sourced, not run): a Docker engine (Debian's
# docker.io installed when there is none, a dockerd of its own started when none runs), the Dockerfile's Python base
# (pulled, or a stand-in made with debootstrap where no registry answers, given this host's pip CA), the image
# targets built. Each script sets ROOT and VENV, then sources this with its name:
#
#   . "$ROOT/scripts/lib/docker-host.sh" image-check
#
# It makes WORK (a temporary directory) and defines docker_host_cleanup, which stops only the dockerd it started and
# removes WORK: each script's EXIT trap calls it last.

CHECK_NAME=$1
TAG=chatterbox-fast:0.1.0
BASE=$(sed -n 's/^ARG PYTHON_IMAGE=//p' "$ROOT/Dockerfile")
STANDIN=chatterbox-fast-standin/python:3.11-bookworm
WORK=$(mktemp -d "/tmp/$CHECK_NAME.XXXXXX")
STARTED_DOCKERD=""

say() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*"; }
fail() { say "FAIL: $*"; exit 1; }
since() { echo $(( $(date +%s) - $1 )); }

docker_host_cleanup() {
  if [ -n "$STARTED_DOCKERD" ]; then
    say "stopping the dockerd this check started (pid $STARTED_DOCKERD)"
    kill "$STARTED_DOCKERD" && while kill -0 "$STARTED_DOCKERD" 2>/dev/null; do sleep 0.5; done
  fi
  rm -rf "$WORK"
}

apt_install() {  # without starting any service the package brings (policy-rc.d): these scripts start their own
  say "installing Debian's $*"
  local policy=""
  [ -e /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; policy=1; }
  local code=0
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null \
    || code=$?
  [ -z "$policy" ] || rm -f /usr/sbin/policy-rc.d
  return $code
}

docker_up() {  # sets DOCKER (the client command) and, when it started one, STARTED_DOCKERD
  command -v dockerd >/dev/null || apt_install docker.io
  # The client: one that builds with BuildKit. Docker 23+ hands BuildKit builds to the buildx plugin; without it, the
  # 20.10 client of Debian's docker.io has BuildKit built in (DOCKER_BUILDKIT=1).
  if docker buildx version >/dev/null 2>&1; then
    DOCKER=docker
  elif [ -x /usr/bin/docker ]; then
    DOCKER=/usr/bin/docker
  else
    DOCKER=docker
  fi
  export DOCKER_BUILDKIT=1
  if ! $DOCKER info >/dev/null 2>&1; then
    say "no Docker engine running: starting one (dockerd, niced; log $WORK/dockerd.log)"
    nice -n 10 dockerd >"$WORK/dockerd.log" 2>&1 &
    STARTED_DOCKERD=$!
    for _ in $(seq 120); do $DOCKER info >/dev/null 2>&1 && break; sleep 0.5; done
    $DOCKER info >/dev/null 2>&1 || { tail -20 "$WORK/dockerd.log"; fail "dockerd did not start"; }
  fi
  say "docker: client $($DOCKER version -f '{{.Client.Version}}') ($DOCKER), engine $($DOCKER version -f '{{.Server.Version}}')," \
      "storage $($DOCKER info -f '{{.Driver}}'), BuildKit"
}

pulled_or_standin() {  # image standin-tag debootstrap-packages: IMAGE when it is here or can be pulled, else a
  # stand-in debootstrapped (bookworm, minbase, with those packages) from this host's Debian mirror, made once
  local image=$1 standin=$2 packages=$3 started mirror
  if $DOCKER image inspect "$image" >/dev/null 2>&1 || timeout 120 $DOCKER pull -q "$image" >/dev/null 2>&1; then
    echo "$image"
    return
  fi
  if ! $DOCKER image inspect "$standin" >/dev/null 2>&1; then
    command -v debootstrap >/dev/null || apt_install debootstrap >&2
    mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
    mirror=${mirror:-$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list)}
    say "  debootstrap bookworm (minbase, $packages) from this host's mirror for $standin" >&2
    started=$(date +%s)
    rm -rf "$WORK/rootfs"
    nice -n 10 debootstrap --variant=minbase --include="$packages" bookworm "$WORK/rootfs" "$mirror" \
      >"$WORK/debootstrap.log" 2>&1 || { tail -20 "$WORK/debootstrap.log" >&2; fail "debootstrap" >&2; }
    rm -rf "$WORK/rootfs/var/cache/apt/archives/"*.deb "$WORK/rootfs/var/lib/apt/lists/"*
    tar -C "$WORK/rootfs" -c . | $DOCKER import --change 'ENV LANG=C.UTF-8' - "$standin" >/dev/null
    rm -rf "$WORK/rootfs"
    say "  stand-in $standin made in $(since "$started") s" >&2
  fi
  echo "$standin"
}

python_base() {  # sets BASE: the Dockerfile's Python image, or its stand-in; given this host's pip CA where it has one
  local image=$BASE
  BASE=$(pulled_or_standin "$image" "$STANDIN" python3,python3-venv,python-is-python3,ca-certificates)
  if [ "$BASE" = "$image" ]; then
    say "base: $BASE"
  else
    say "base: $image cannot be pulled (no registry reachable): using a stand-in, $BASE ($($DOCKER run --rm "$BASE" python --version))"
  fi
  # Behind a TLS-intercepting proxy (this host's pip trusts a CA bundle of its own), the build's pip must trust it
  # too: the base is given the host's bundle, as an organisation's own base image would carry its CA.
  local cert
  cert=${PIP_CERT:-$("$VENV/bin/python" -m pip config get global.cert 2>/dev/null || true)}
  if [ -n "$cert" ] && [ -f "$cert" ]; then
    mkdir -p "$WORK/ca" && cp "$cert" "$WORK/ca/ca-certificates.crt"
    printf 'FROM %s\nCOPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt\nENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt\n' \
      "$BASE" >"$WORK/ca/Dockerfile"
    $DOCKER build -q -t chatterbox-fast-standin/base:host-ca "$WORK/ca" >/dev/null || fail "the base with this host's CA"
    BASE=chatterbox-fast-standin/base:host-ca
    say "base: this host's pip trusts $cert (a proxy's CA, here): the base is given the same bundle (PIP_CERT)"
  fi
}

build() {  # target tag [classic]: the Dockerfile's target built on BASE
  local started progress=(--progress=plain) builder=BuildKit
  started=$(date +%s)
  [ -z "${3:-}" ] || { progress=(); builder="the classic builder"; }
  say "building --target $1 -> $2 with $builder (log $WORK/build-$1${3:+-classic}.log)"
  if ! DOCKER_BUILDKIT=$([ -z "${3:-}" ] && echo 1 || echo 0) nice -n 10 $DOCKER build "${progress[@]}" --target "$1" \
      --build-arg PYTHON_IMAGE="$BASE" -t "$2" "$ROOT" >"$WORK/build-$1${3:+-classic}.log" 2>&1; then
    tail -30 "$WORK/build-$1${3:+-classic}.log"
    fail "the $1 target does not build with $builder"
  fi
  say "  built in $(since "$started") s: $($DOCKER image inspect -f '{{.Size}}' "$2" | awk '{printf "%.2f GB", $1 / 1e9}')"
}

free_port() {
  "$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

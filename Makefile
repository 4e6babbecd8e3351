# `make run` and `make test` set everything up from this repository's own files on a fresh machine.
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
# uv installs the venv's 7 GB: downloads and unpacks in parallel, and on a second clone links from its cache (a fresh
# 2-core machine: 2 min 30 s with pip, 53 s with uv; a warm cache: seconds). The same pins, the same packages.
# --compile-bytecode: each module's .pyc written once here, in parallel, as pip does by default (uv does not): without
# it the suite's four processes all compiled the same ~5,000 modules at once while collecting (four collections on
# 2 cores: 47 s, 23 s with them compiled), and every server and worker the first tests start compiled them again
# (2026-12-07: the venv 29 -> 63 s).
UV := $(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY)
ARGS ?=

.PHONY: run test test-long venv docs config-reference chromium gstreamer fleet-tools

run: $(VENV)/.ready
	$(VENV)/bin/chatterbox-fast serve $(ARGS)

# Two test processes more than there are cores: the suite waits on real time (servers starting, audio played out at
# its pace) as well as computing, and the extra processes fill those waits (this 2-core machine: 2026-12-02, 640 s of
# tests with 2 processes, 520 s with 3; 2026-12-04, 674-724 s with 3 (scipy 1.17), 592-618 s with 4 (scipy
# 1.15), 700 s with 5, whose CPU grew by a fifth: the cores thrash).
TEST_PROCESSES ?= $(shell echo $$(( $$(nproc) + 2 )))
# A file's tests stay in one process (they share its servers), and so do all the files of one shared session server
# (tests/conftest.py's scheduler); files go out in tests/conftest.py's order, the slowest first
# (--no-loadscope-reorder: not xdist's own, by how many tests a file has). Every run ends with its 30 slowest steps,
# so a CI log says where the suite's time went (tests/conftest.py's SLOWEST_FIRST is kept from them).

# The tests marked `long` (a minute or more of a core each, whose figures a command also checks: the GPU kit's dry run
# is scripts/gpu-host-dryrun's, Turbo's unload is `bench engine --unload-after`'s) are left out to keep `make test`
# within 15 minutes on a fresh 2-core machine; `make test-long` runs them, and those marked `known_gap` (an opt-in
# feature's behaviour that does not yet hold every time: what each says it shows).
test: $(VENV)/.ready chromium gstreamer fleet-tools
	PYTHONDONTWRITEBYTECODE= OMP_NUM_THREADS=1 $(VENV)/bin/pytest -n $(TEST_PROCESSES) --dist loadfile --no-loadscope-reorder \
		--durations=30 -m "not long and not known_gap" $(ARGS)

test-long: $(VENV)/.ready chromium
	PYTHONDONTWRITEBYTECODE= OMP_NUM_THREADS=1 $(VENV)/bin/pytest -m "long or known_gap" $(ARGS)

venv: $(VENV)/.ready

# docs/configuration.md from the parser's own flags, variables and defaults (tests/test_configuration_reference.py
# fails when the committed page differs).
config-reference: $(VENV)/.ready
	$(VENV)/bin/chatterbox-fast config-reference > docs/configuration.md.tmp
	mv docs/configuration.md.tmp docs/configuration.md

# The documentation site from docs/ (mkdocs.yml) into site/, strict: a broken link or anchor, or a page missing from
# the nav, fails it. Nothing is fetched, to build or to read it. The generated configuration page is made first.
docs: $(VENV)/.ready config-reference
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# The *-nodeps.txt packages pin releases below ours: installed without their dependencies, their real needs are in
# pyproject.toml's extras (engine-nodeps: the engine's; test-nodeps: pipecat, whose client the tests run; gate-nodeps:
# the deploy gate's speaker encoder and recognizer).
$(VENV)/.ready: pyproject.toml requirements/engine-nodeps.txt requirements/test-nodeps.txt requirements/gate-nodeps.txt \
		requirements/lock.txt
	python3 -m venv $(VENV)
	$(PIP) install -c requirements/lock.txt uv
	$(UV) -c requirements/lock.txt pip
	$(UV) --no-deps -c requirements/lock.txt -r requirements/engine-nodeps.txt -r requirements/test-nodeps.txt \
		-r requirements/gate-nodeps.txt
	$(UV) -c requirements/lock.txt -e '.[engine,traces,test,gate,tools,docs]'
	# librosa's numba functions compiled once here, before any two processes could race to write their cache
	# (numba issue 10128: a fresh venv's test and engine processes died with SIGSEGV in librosa.yin)
	OMP_NUM_THREADS=1 $(PY) -m engine.numba_warm
	touch $@

# Debian's Chromium for the browser tests (never a browser download).
chromium:
	@command -v chromium >/dev/null || scripts/install-chromium

# Debian's GStreamer webrtcbin for the phone-bridge test (a WebRTC stack other than aiortc and Chromium).
GST_CHECK := import gi; gi.require_version("Gst", "1.0"); gi.require_version("GstWebRTC", "1.0"); \
	from gi.repository import Gst; Gst.init(None); assert Gst.ElementFactory.find("webrtcbin") and Gst.ElementFactory.find("nicesrc")
gstreamer:
	@/usr/bin/python3 -c '$(GST_CHECK)' 2>/dev/null || scripts/install-gstreamer

# Debian's nginx and coturn for the fleet and TURN tests (started by the tests on free ports, never as services).
fleet-tools:
	@[ -x /usr/sbin/nginx ] && [ -x /usr/bin/turnserver ] || scripts/install-fleet-tools

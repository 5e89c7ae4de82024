# Entry points. Caches live outside the clone (KEP5004_CACHE, default ~/.cache/kep5004-conformance)
# so that a fresh clone reuses what an earlier run built.
SHELL := /bin/bash
CACHE ?= $(or $(KEP5004_CACHE),$(HOME)/.cache/kep5004-conformance)
VENV := $(CACHE)/venv
PY := $(VENV)/bin/python
DEPS_STAMP := $(VENV)/.deps-$(shell sha256sum pyproject.toml | cut -c1-16)
export KEP5004_CACHE := $(CACHE)
export PYTHONPATH := $(CURDIR)
# VERSIONS=v1.37.2 limits toolchain and image builds to some pinned Kubernetes versions.
VERSIONS ?=
# The CI tier (make test) builds and runs only the default pinned version.
DEFAULT_VERSION := $(shell source clusters/versions.env && echo $$KUBERNETES_DEFAULT)

.PHONY: venv lint protos host toolchain images report-tools browser unit test conformance selfcheck interrupts soak vendor-check upstream-e2e bench scale-bench clean-clusters

venv: $(DEPS_STAMP)
# Only the dependencies go into the shared venv; the project itself always runs from this
# checkout (PYTHONPATH below), so several clones can share one venv.
# The stamp's name carries pyproject.toml's digest, so it has no prerequisite: a fresh clone's
# newer pyproject.toml must not re-run pip (which asks the index about pip itself, ~10 s).
$(DEPS_STAMP):
	@python3.11 -m venv $(VENV) || { echo "Python 3.11 with venv is required" >&2; exit 1; }
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; print("\n".join(d.split("#")[0].strip() for d in p["dependencies"] + p["optional-dependencies"]["dev"] + p["optional-dependencies"]["bench"]))' > $(VENV)/requirements.txt
	$(PY) -m pip install --quiet -r $(VENV)/requirements.txt
	@rm -f $(VENV)/.deps-*; touch $@

# ruff: lint and formatting of every Python file (its settings in pyproject.toml; generated
# protocol code excepted). mypy: strict type check of the packages [tool.mypy] in pyproject.toml
# names (the tests excepted). actionlint checks the nightly workflow (built from its Go module at
# a pinned version).
ACTIONLINT := github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy
	go run $(ACTIONLINT) -shellcheck= -pyflakes= .github/workflows/*.yml

# Allure 3 from npm (the versions conformance/report/allure/package-lock.json pins) into the
# cache: every run's HTML report (conformance/report/html.py).
report-tools: venv
	$(PY) -m conformance.report.html

# Debian's Chromium, for the test that opens a run's HTML report in a headless browser.
browser:
	@test -x /usr/bin/chromium || { apt-get update -q && apt-get install -y -q chromium; }

protos: venv
	$(PY) -m fake_driver.protos.generate

host:
	bash clusters/host/prepare.sh

toolchain: host
	bash clusters/toolchain/build-all.sh $(VERSIONS)

images: toolchain protos
	bash clusters/images/build-all.sh $(VERSIONS)

unit: protos report-tools browser
	$(PY) -m pytest -m "not cluster" -q

# Two tiers (docs/timings.md has what each costs, cold and warm):
# - test (CI, every change; must pass cold in <= 60 min): unit tests, real-cluster tests of
#   clusters/ and fake_driver/, and the conformance main and mixed stages, all on the default
#   version only, so only that version's Kubernetes is built (hence no faults, gate cycle, upgrade or skew:
#   they change a cluster in place and move it to another pinned version).
# - conformance (nightly, and before resolving an issue that touches its stages): every pinned
#   version, profile and stage (gate cycle, upgrade, ...).
# Both run every shipped fake-driver profile (PROFILES), one after the other on each cluster.
# Each stage deletes the clusters it made.
PROFILES ?= fake-gpu,example-gpu
test: VERSIONS = $(DEFAULT_VERSION)
test: lint images report-tools browser
	$(PY) -m pytest -q --k8s-versions $(DEFAULT_VERSION) $(PYTEST_ARGS)
	$(PY) -m conformance.runner --k8s-versions $(DEFAULT_VERSION) --profile $(PROFILES) --no-faults --no-gate-cycle --no-upgrade --no-skew $(ARGS)

# JOBS versions at once, each with its own clusters (docs/timings.md measures 1 against 3).
JOBS ?= 3
conformance: images report-tools
	$(PY) -m conformance.runner --profile $(PROFILES) --jobs $(JOBS) $(ARGS)

# A vendor's certification rehearsed on kind with a driver no one here wrote (Kubernetes' DRA test
# driver, installed by hand; ARGS="--driver example-gpu" for the fake one), the disruptive tests
# included, restricted ServiceAccount, in-cluster Job, hydrophone: the verdicts of every way must
# agree. Default version only.
vendor-check: VERSIONS = $(DEFAULT_VERSION)
vendor-check: images report-tools
	$(PY) -m conformance.rigs.vendor_check $(ARGS)

# Kubernetes' own DRAExtendedResource e2e specs (test/e2e/dra of the pinned version, e2e.test built
# from its module, the images they deploy built here) on clusters the suite made, after our own run
# there: each spec's result beside our verdicts for the IDs it shows (docs/upstream-e2e.md). Nightly,
# not part of `make test`. VERSIONS (default: every pinned one) chooses the versions.
upstream-e2e: images
	$(PY) -m conformance.rigs.upstream_e2e --k8s-versions "$(VERSIONS)" $(ARGS)

# Does the suite catch a broken driver by name? Each fake-driver defect mode, on the default version.
selfcheck: VERSIONS = $(DEFAULT_VERSION)
selfcheck: images
	$(PY) -m conformance.rigs.selfcheck $(ARGS)

# Does an interrupted run clean up? SIGINT and SIGTERM at several points of a run, default version.
interrupts: VERSIONS = $(DEFAULT_VERSION)
interrupts: images
	$(PY) -m conformance.rigs.interrupts $(ARGS)

# How often does each test fail on a healthy cluster? N runs of the main stages on one cluster.
N ?= 10
soak: VERSIONS = $(DEFAULT_VERSION)
soak: images
	$(PY) -m conformance.rigs.soak --runs $(N) $(ARGS)

# Side-by-side measurements (DRA vs device plugin) on a mixed kind cluster; prints ratios.
bench: images
	$(PY) -m conformance.rigs.bench $(ARGS)

# Scheduling at scale: kwok plays --nodes fake nodes (default 100, 1000 and 5000, 8 GPUs each), a DRA-backed
# name against a device-plugin-backed one, 3 rounds; prints pods/s and ratios, writes a table and a plot.
scale-bench: VERSIONS = $(DEFAULT_VERSION)
scale-bench: images
	$(PY) -m conformance.rigs.scale_bench $(ARGS)

clean-clusters: venv
	$(PY) -m clusters down --all

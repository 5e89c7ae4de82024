# Entry points. Caches live outside the clone (KEP5004_CACHE, default ~/.cache/kep5004-conformance)
# so that a fresh clone reuses what an earlier run built.
SHELL := /bin/bash
CACHE ?= $(or $(KEP5004_CACHE),$(HOME)/.cache/kep5004-conformance)
VENV := $(CACHE)/venv
PY := $(VENV)/bin/python
DEPS_STAMP := $(VENV)/.deps-$(shell sha256sum pyproject.toml | cut -c1-16)
export KEP5004_CACHE := $(CACHE)
# VERSIONS=v1.37.2 limits toolchain and image builds to some pinned Kubernetes versions.
VERSIONS ?=

.PHONY: venv protos host toolchain images unit test conformance bench clean-clusters

venv: $(DEPS_STAMP)
$(DEPS_STAMP): pyproject.toml
	@python3.11 -m venv $(VENV) || { echo "Python 3.11 with venv is required" >&2; exit 1; }
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	@rm -f $(VENV)/.deps-*; touch $@

protos: venv
	$(PY) -m fake_driver.protos.generate

host:
	bash clusters/host/prepare.sh

toolchain: host
	bash clusters/toolchain/build-all.sh $(VERSIONS)

images: toolchain protos
	bash clusters/images/build-all.sh $(VERSIONS)

unit: protos
	$(PY) -m pytest -m "not cluster" -q

# Unit tests, then the real-cluster tests (clusters kept for reuse), then a conformance run
# on kind that reuses those clusters and deletes them at the end.
test: images
	$(PY) -m pytest -q --keep || { $(PY) -m clusters down --all; exit 1; }
	$(PY) -m conformance.run $(ARGS)

conformance: images
	$(PY) -m conformance.run $(ARGS)

# Side-by-side measurements (DRA vs device plugin) on a mixed kind cluster; prints ratios.
bench: images
	$(PY) -m conformance.bench $(ARGS)

clean-clusters: venv
	$(PY) -m clusters delete --all

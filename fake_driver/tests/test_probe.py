"""The in-container probe (POSIX sh) and its parser."""

from __future__ import annotations

import shutil

import pytest

from fake_driver.probe_output import ProbedGpu, ProbeOutputError, parse_probe_output
from fake_driver.tests.helpers import PROBE, run_probe

# The workload image is busybox-static: run the probe under busybox too when it is installed.
SHELLS = ["sh"] + (["busybox sh"] if shutil.which("busybox") else [])


def write_device(root, uuid, index, via, node="node-a", newline=True):
    root.mkdir(parents=True, exist_ok=True)
    line = f"uuid={uuid} index={index} node={node} model=FAKE-GPU-80GB driver={via}"
    (root / uuid).write_text(line + ("\n" if newline else ""))


def test_probe_is_posix_sh_and_executable():
    text = PROBE.read_text()
    assert text.startswith("#!/bin/sh\n")
    assert PROBE.stat().st_mode & 0o111, "the image copies it as an executable"
    assert "[[" not in text and "local " not in text and "$(<" not in text  # bashisms


@pytest.mark.parametrize("shell", SHELLS)
def test_probe_lists_devices_sorted_with_env_check(tmp_path, shell):
    root = tmp_path / "fake-gpu"
    write_device(root, "gpu-bbb", 1, "dra")
    write_device(root, "gpu-aaa", 0, "device-plugin", newline=False)
    write_device(root, "gpu-ccc", 2, "dra")
    (root / "subdir").mkdir()  # not a device
    out = run_probe(root, {"FAKE_GPU_0": "gpu-aaa", "FAKE_GPU_1": "gpu-other"}, shell=shell)
    assert out.splitlines() == [
        "FAKEGPU uuid=gpu-aaa index=0 node=node-a model=FAKE-GPU-80GB via=device-plugin env=ok",
        "FAKEGPU uuid=gpu-bbb index=1 node=node-a model=FAKE-GPU-80GB via=dra env=wrong",
        "FAKEGPU uuid=gpu-ccc index=2 node=node-a model=FAKE-GPU-80GB via=dra env=missing",
        "FAKEGPU-ENV gpu-aaa",
        "FAKEGPU-ENV gpu-other",
    ]
    assert parse_probe_output(out) == [
        ProbedGpu("gpu-aaa", 0, "node-a", "FAKE-GPU-80GB", "device-plugin", "ok"),
        ProbedGpu("gpu-bbb", 1, "node-a", "FAKE-GPU-80GB", "dra", "wrong"),
        ProbedGpu("gpu-ccc", 2, "node-a", "FAKE-GPU-80GB", "dra", "missing"),
    ]


@pytest.mark.parametrize("shell", SHELLS)
def test_probe_reports_none(tmp_path, shell):
    (tmp_path / "empty").mkdir()
    for root in (tmp_path / "empty", tmp_path / "absent"):
        out = run_probe(root, {}, shell=shell)
        assert out == "FAKEGPU none\n"
        assert parse_probe_output(out) == []


@pytest.mark.parametrize("shell", SHELLS)
def test_a_variable_naming_a_gpu_without_a_device_file_is_listed_too(tmp_path, shell):
    """A driver that names in the environment a GPU it did not mount must show in that channel."""
    out = run_probe(tmp_path / "absent", {"FAKE_GPU_3": "gpu-ddd", "FAKE_GPU_PROBE_ROOT_X": "no"}, shell=shell)
    assert out.splitlines() == ["FAKEGPU-ENV gpu-ddd", "FAKEGPU none"]


def test_parser_ignores_other_log_lines():
    text = "starting\nFAKEGPU uuid=u1 index=3 node=n model=m via=dra\nbye\n"
    assert parse_probe_output(text) == [ProbedGpu("u1", 3, "n", "m", "dra", None)]


@pytest.mark.parametrize(
    "text,message",
    [
        ("hello\n", "no FAKEGPU line"),
        ("FAKEGPU none\nFAKEGPU uuid=u index=0 node=n model=m via=dra\n", "mixed with device lines"),
        ("FAKEGPU uuid=u index=0 node=n model=m\n", "missing via"),
        ("FAKEGPU uuid=u index=x node=n model=m via=dra\n", "index 'x' is not a number"),
        ("FAKEGPU uuid=u index=0 node=n model=m via=magic\n", "via 'magic'"),
        ("FAKEGPU uuid=u index=0 node=n model=m via=dra env=perhaps\n", "env 'perhaps'"),
        ("FAKEGPU uuid=u index=0 node=n model=two words via=dra\n", "malformed field 'words'"),
        ("FAKEGPU uuid=u index=0 node=n model=m via=dra\n" * 2, "listed twice"),
    ],
)
def test_parser_rejects_bad_output(text, message):
    with pytest.raises(ProbeOutputError, match=message):
        parse_probe_output(text)

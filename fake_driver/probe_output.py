"""Parse what fake_driver/probe/fake-gpu-probe printed (e.g. from a container's log).

    FAKEGPU uuid=<uuid> index=<i> node=<node> model=<model> via=<dra|device-plugin> env=<ok|missing|wrong>
    FAKEGPU none

Lines without the FAKEGPU prefix are ignored, so the probe can share a log with other output.
Output of exactly one probe run is expected.
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "FAKEGPU"
NONE_LINE = f"{PREFIX} none"
VIAS = ("dra", "device-plugin")
ENV_STATES = ("ok", "missing", "wrong")
_REQUIRED = ("uuid", "index", "node", "model", "via")


class ProbeOutputError(ValueError):
    pass


@dataclass(frozen=True)
class ProbedGpu:
    uuid: str
    index: int
    node: str
    model: str
    via: str  # "dra" or "device-plugin"
    env: str | None  # FAKE_GPU_<index> check; None when the probe did not report it


def _parse_line(line: str) -> ProbedGpu:
    fields: dict[str, str] = {}
    for token in line.split()[1:]:
        key, sep, value = token.partition("=")
        if not sep or not value:
            raise ProbeOutputError(f"malformed field {token!r} in {line!r}")
        if key in fields:
            raise ProbeOutputError(f"field {key!r} repeated in {line!r}")
        fields[key] = value
    missing = [key for key in _REQUIRED if key not in fields]
    if missing:
        raise ProbeOutputError(f"missing {', '.join(missing)} in {line!r}")
    if not fields["index"].isdigit():
        raise ProbeOutputError(f"index {fields['index']!r} is not a number in {line!r}")
    if fields["via"] not in VIAS:
        raise ProbeOutputError(f"via {fields['via']!r} is not one of {VIAS} in {line!r}")
    if fields.get("env", "ok") not in ENV_STATES:
        raise ProbeOutputError(f"env {fields['env']!r} is not one of {ENV_STATES} in {line!r}")
    return ProbedGpu(
        uuid=fields["uuid"],
        index=int(fields["index"]),
        node=fields["node"],
        model=fields["model"],
        via=fields["via"],
        env=fields.get("env"),
    )


def parse_probe_output(text: str) -> list[ProbedGpu]:
    """The devices a container saw, sorted by uuid; [] for `FAKEGPU none`."""
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line == PREFIX or line.startswith(PREFIX + " ")]
    if not lines:
        raise ProbeOutputError("no FAKEGPU line: the probe did not run or its output was lost")
    if NONE_LINE in lines:
        if len(lines) > 1:
            raise ProbeOutputError(f"'{NONE_LINE}' mixed with device lines: {lines}")
        return []
    devices = [_parse_line(line) for line in lines]
    uuids = [d.uuid for d in devices]
    if len(set(uuids)) != len(uuids):
        raise ProbeOutputError(f"a uuid is listed twice (more than one probe run?): {uuids}")
    return sorted(devices, key=lambda d: d.uuid)

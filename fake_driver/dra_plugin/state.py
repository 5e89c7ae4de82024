"""`python -m fake_driver.dra_plugin.state`: what this node's plugin holds prepared, for the suite.

Run inside the driver's container (the profile's `nodeState` capability), it prints one line
per claim UID the plugin still holds:

    prepared <claim uid>     (in the checkpoint)
    cdi-spec <claim uid>     (a CDI spec file of the claim is still on the node)

After NodeUnprepareResources neither line may remain for that claim.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fake_driver.config import ConfigError, load_config


def held(checkpoint_uids: list[str], spec_names: list[str], prefix: str) -> list[str]:
    """The report lines, from checkpoint UIDs and the CDI spec file names in the CDI directory."""
    lines = [f"prepared {uid}" for uid in sorted(checkpoint_uids)]
    lines += [
        f"cdi-spec {name[len(prefix) : -len('.json')]}"
        for name in sorted(spec_names)
        if name.startswith(prefix) and name.endswith(".json")
    ]
    return lines


def _checkpoint_uids(path: Path) -> list[str]:
    """Read-only (Checkpoint() would move a corrupt file aside): a corrupt file is reported as such."""
    if not path.exists():
        return []
    try:
        return list(json.loads(path.read_text())["claims"])
    except (ValueError, KeyError, TypeError) as exc:
        return [f"unreadable-checkpoint:{type(exc).__name__}"]


def main() -> int:
    try:
        config = load_config()
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    prefix = config.cdi_kind.spec_path(config.cdi_dir, "").name.removesuffix(".json")
    specs = [p.name for p in config.cdi_dir.glob(f"{prefix}*.json")] if config.cdi_dir.is_dir() else []
    for line in held(_checkpoint_uids(config.checkpoint_path), specs, prefix):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

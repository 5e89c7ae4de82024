"""`python -m fake_driver.dra_plugin`: run the DRA kubelet plugin until SIGTERM."""

from __future__ import annotations

import sys

from fake_driver.config import ConfigError, load_config
from fake_driver.dra_plugin.kube_api import CredentialsError, RestKubeApi
from fake_driver.dra_plugin.plugin import DraPlugin
from fake_driver.runtime import configure_logging, stop_event_on_signals


def main() -> int:
    log = configure_logging("fake-gpu-dra-plugin")
    try:
        config = load_config()
    except ConfigError as exc:
        log.error("%s", exc)
        return 2
    try:
        api = RestKubeApi.from_environment()
    except CredentialsError as exc:
        log.error("%s", exc)
        return 2
    DraPlugin(config, api).run(stop_event_on_signals())
    return 0


if __name__ == "__main__":
    sys.exit(main())

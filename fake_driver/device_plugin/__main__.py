"""`python -m fake_driver.device_plugin`: run the device plugin until SIGTERM."""

from __future__ import annotations

import sys

from fake_driver.config import ConfigError, load_config
from fake_driver.device_plugin.plugin import DevicePlugin
from fake_driver.runtime import configure_logging, stop_event_on_signals


def main() -> int:
    log = configure_logging("fake-gpu-device-plugin")
    try:
        config = load_config()
    except ConfigError as exc:
        log.error("%s", exc)
        return 2
    DevicePlugin(config).run(stop_event_on_signals())
    return 0


if __name__ == "__main__":
    sys.exit(main())

pytest_plugins = ["clusters.pytest_plugin"]

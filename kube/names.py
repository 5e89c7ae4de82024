"""Name rules shared by the suite's profiles and the fake driver's configuration: what the API
server accepts as an extended resource name, and how a node name is matched against a table of
node names and shell-style patterns."""

from __future__ import annotations

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def is_dns_subdomain(name: str) -> bool:
    return len(name) <= 253 and bool(_DNS_SUBDOMAIN.match(name))


def extended_resource_name_problem(name: str) -> str | None:
    """Why `name` cannot be an extended resource name (a DeviceClass's extendedResourceName, a
    device plugin's resource), or None if it can."""
    domain, slash, short = name.partition("/")
    if not slash:
        return "needs a domain prefix, e.g. example.com/gpu"
    if "kubernetes.io/" in name:
        return "the kubernetes.io domains are reserved for native resources"
    if name.startswith("requests."):
        return "must not start with 'requests.'"
    # The API server also validates "requests.<name>" as a quota key, hence the shorter domain.
    if len(domain) > 253 - len("requests.") or not is_dns_subdomain(domain):
        return f"prefix {domain!r} is not a valid DNS subdomain"
    if len(short) > 63 or not _QUALIFIED_NAME_PART.match(short):
        return f"name part {short!r} must be 1-63 alphanumerics, '-', '_' or '.', alphanumeric at both ends"
    return None


def per_node(node_name: str, table: Mapping[str, int], default: int) -> int:
    """The value of the first entry of `table` naming the node exactly, else of the first whose
    shell-style pattern matches it, else `default`. Patterns let one table serve clusters whose
    node names carry the cluster's name."""
    exact = table.get(node_name)
    if exact is not None:
        return exact
    return next((count for pattern, count in table.items() if fnmatchcase(node_name, pattern)), default)

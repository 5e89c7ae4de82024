"""Reaching a cluster's API, waiting on it, and the feature-gate facts of each Kubernetes minor.

A leaf package: clusters/, conformance/ and fake_driver/ may import it, it imports none of them.
"""

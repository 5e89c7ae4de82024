"""Project-owned .proto definitions of the kubelet plugin protocols (compiled by generate.py)."""

"""Emulated GPUs for the KEP-5004 conformance suite: one node inventory served by a DRA kubelet
plugin and by a classic device plugin, with a shared in-container exposure contract."""

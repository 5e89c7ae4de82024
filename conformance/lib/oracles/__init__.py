"""Oracles: what a cluster and driver must show, judged from API objects and node state (a pod
served end to end, what containers see, what survives a disruption, convergence after a fault,
what the driver still holds)."""

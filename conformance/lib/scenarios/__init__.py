"""Scenarios around a disruption (a driver pod deleted or killed, a node drained, a kubelet
restarted), node access, and the set-up steps of scenario modules."""

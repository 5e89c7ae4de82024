"""DRA kubelet plugin: registration, NodePrepare/Unprepare (v1 + v1beta1), ResourceSlices, CDI."""

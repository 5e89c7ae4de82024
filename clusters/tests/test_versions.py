def test_a_server_version_is_its_release_whatever_a_distribution_appends():
    from clusters.versions import KubeVersion

    for reported in ("v1.37.2", "v1.37.2+k3s1", "v1.37.2-gke.1200", " v1.37.2-eks-1a2b3c "):
        assert KubeVersion.of_server(reported) == KubeVersion(1, 37, 2)

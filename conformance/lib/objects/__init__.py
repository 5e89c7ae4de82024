"""The API objects the tests make and read: pods and classes built from the profile, the special
claim and its queries, workload manifests, quota, writes whose outcome is checked, waits on them,
and the cleanup label everything carries."""

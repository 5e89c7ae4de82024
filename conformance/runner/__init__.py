"""What users run: the conformance job (`run`, kind or existing-cluster mode, `RunOptions` in,
`RunResult` out), their own workloads (`byo`), the suite as a Job in their cluster
(`incluster`); the installed tool's commands are these modules' main()."""

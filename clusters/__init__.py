"""Everything that makes a kind cluster exist: offline toolchain, images, topologies, lifecycle."""

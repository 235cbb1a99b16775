# A container with every toolchain coreb's sample build needs (Rust, and from
# scripts/debian-packages.txt: python3, g++, a JDK, go, ruby, unshare), for hosts that are not
# Debian/Ubuntu. Build and run the sample build:
#
#   docker build -t coreb .
#   docker run --rm --security-opt seccomp=unconfined --security-opt apparmor=unconfined coreb
#
# The sandboxed judge creates PID, mount, network and user namespaces: Docker's default seccomp
# and AppArmor profiles refuse those, hence the two options (or run with --privileged).
# Untested where this was written (no container runtime there); scripts/setup, which it runs,
# is tested (tests/zero_glue.rs).
FROM rust:1.95-bookworm

WORKDIR /coreb
COPY scripts/setup scripts/debian-packages.txt scripts/
RUN scripts/setup && rm -rf /var/lib/apt/lists/*

COPY . .
RUN cargo build --locked && rm -rf build/sample
CMD ["cargo", "run", "--locked", "--", "build", "manifests/sample.toml"]

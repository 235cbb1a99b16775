# coreb in a container: a build stage (the release binary) and a slim runtime stage (the binary
# and the sandboxed judge's toolchains: python3, g++, a JDK, go, ruby, unshare; no Rust), whose
# default command makes a workspace with `coreb init /work` and builds the sample release in it.
#
#   podman build -t coreb .            (or docker build)
#   podman run --rm --security-opt unmask=ALL coreb
#   docker run --rm --security-opt seccomp=unconfined --security-opt systempaths=unconfined \
#              --security-opt apparmor=unconfined coreb
#
# The judge runs as the user `coreb` and makes user, PID, mount and network namespaces with a
# fresh /proc for each run: podman's masked /proc paths refuse that /proc (hence unmask=ALL);
# Docker's seccomp and AppArmor profiles also refuse the namespaces (or run with --privileged).
# The workspace and its release are /work inside the container; to keep them, mount an empty
# folder there that uid 1000 can write (podman: `-v "$PWD/bench:/work:U"`).
#
# Build arguments:
#   BUILD_IMAGE    the build stage's base: Rust and a C compiler on Debian bookworm
#   RUNTIME_IMAGE  the runtime's base: Debian bookworm (the judge's packages are bookworm's)
#   DEBIAN_SNAPSHOT  a snapshot.debian.org timestamp (`20250601T000000Z`): the runtime's packages
#                  come from Debian's archive as it was then, so that an image made later installs
#                  the same versions where the archive keeps them (default: none, the mirror's
#                  current packages). The image records the exact versions it installed either way
#                  (/usr/share/coreb/toolchain-packages.tsv, which builds add to the MANIFEST).
#   BINARY         `build` (default): the build stage compiles coreb; `prebuilt`: the binary
#                  comes from the named build context `coreb-bin` (a folder holding `coreb`,
#                  built from this checkout on bookworm or older, glibc <= 2.36), and the build
#                  stage is skipped (Docker: `docker buildx build`, which has --build-context):
#                    podman build --build-arg BINARY=prebuilt --build-context coreb-bin=DIR -t coreb .
# scripts/container builds and runs it, and makes both base images from Debian's packages
# where no image registry can be reached (--base). Tested with podman (docs/benchmarks.md,
# "The container"): the runtime stage and the default command, with BINARY=prebuilt; the build
# stage's base was checked (its cargo and rustc, a compile and link), its full release build
# was not run there.
ARG BUILD_IMAGE=rust:1.95-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim
ARG BINARY=build
ARG DEBIAN_SNAPSHOT=

FROM ${BUILD_IMAGE} AS build
WORKDIR /coreb
COPY . .
RUN cargo build --release --locked \
    && install -D -m 0755 target/release/coreb /out/coreb \
    && rm -rf target

FROM scratch AS prebuilt
COPY --from=coreb-bin coreb /out/coreb

FROM ${BINARY} AS binary

FROM ${RUNTIME_IMAGE} AS runtime
ARG DEBIAN_SNAPSHOT
LABEL org.debian.snapshot="${DEBIAN_SNAPSHOT}"
WORKDIR /opt/coreb
COPY scripts/setup scripts/debian-packages.txt scripts/toolchain-packages scripts/
# With a snapshot, Debian's archive as it was at that time (its Release files are long expired).
RUN if [ -n "$DEBIAN_SNAPSHOT" ]; then \
        rm -f /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list \
        && printf 'deb http://snapshot.debian.org/archive/debian/%s bookworm main\ndeb http://snapshot.debian.org/archive/debian/%s bookworm-updates main\ndeb http://snapshot.debian.org/archive/debian-security/%s bookworm-security main\n' \
            "$DEBIAN_SNAPSHOT" "$DEBIAN_SNAPSHOT" "$DEBIAN_SNAPSHOT" > /etc/apt/sources.list \
        && echo 'Acquire::Check-Valid-Until "false";' > /etc/apt/apt.conf.d/10coreb-snapshot; \
    fi
# The one package list, less what only the tests use (the test venv, Chromium, Slurm): what
# remains is the judge's toolchains and util-linux. The JDK's post-install needs the man1
# folder that a slim image leaves out.
RUN sed -i -E '/^[[:space:]]*(python3-venv|chromium|chromium-driver|slurm-wlm|munge)[[:space:]]*(#.*)?$/d' \
        scripts/debian-packages.txt \
    && mkdir -p /usr/share/man/man1
# The exact package versions installed, kept in the image; every build there records them in
# its MANIFEST's toolchains (`deb:<package>`).
RUN scripts/setup && apt-get clean && rm -rf /var/lib/apt/lists/* \
    && install -d /usr/share/coreb \
    && scripts/toolchain-packages > /usr/share/coreb/toolchain-packages.tsv \
    && printf '%s\n' "${DEBIAN_SNAPSHOT:-none}" > /usr/share/coreb/debian-snapshot \
    && cat /usr/share/coreb/toolchain-packages.tsv
ENV COREB_TOOLCHAIN_PACKAGES=/usr/share/coreb/toolchain-packages.tsv
COPY --from=binary /out/coreb /usr/local/bin/coreb
# Not root: the judge then puts each run in a user namespace of its own (its unprivileged mode),
# which needs no added capability; as root it would need CAP_SYS_ADMIN for its namespaces.
RUN useradd --create-home --uid 1000 coreb && install -d -o coreb -g coreb /work
USER coreb
WORKDIR /home/coreb
CMD ["sh", "-c", "coreb init /work && cd /work && coreb build manifests/sample.toml"]

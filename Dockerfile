# syntax=docker/dockerfile:1.7
#
# The wasmcm image: the `wasmcm` binary (the built-in plugins are embedded in it) and a precompiled
# cache of those plugins, on distroless (glibc, no shell, user 65532).
#
#   docker build -t <registry>/wasmcm:0.1.0 .
#
# Not run on this project's machines (they have no Docker engine): there, scripts/build-image.sh
# (`make image`) assembles the same image with umoci, and host/tests/image.rs checks that its
# configuration is this file's runtime stage and runs it under runc; see deploy/README.md. Build it
# on the CPU family the cluster's nodes have (see the warm stage).

ARG RUST_IMAGE=rust:1.95-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

# --- build: the host, with host/build.rs building the guest plugins for wasm32-unknown-unknown ---
FROM ${RUST_IMAGE} AS builder
WORKDIR /src
# The pinned toolchain with its components and the wasm32-unknown-unknown target
# (rust-toolchain.toml; cargo does not install a missing target by itself). Its own layer, so a
# source change does not reinstall it. wasm-component-ld, the guests' linker, ships with it.
COPY rust-toolchain.toml ./
RUN rustup toolchain install && rustup target list --installed
COPY . .
# The registry and target dir are cache mounts (kept between builds, not in the image), so the
# binary is copied out in the same step.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked -p wasmcm \
    && install -D -m 0755 target/release/wasmcm /out/wasmcm

# --- warm: compile the built-ins once into a precompiled cache ---
# `plugins inspect` loads every built-in through the engine, which writes each compiled artefact to
# --cache-dir (named by the component's sha256 and the engine's compatibility hash). Cranelift
# targets the CPU features of the machine this runs on (wasmtime's default, native detection), and
# those features are part of the hash: on a node whose CPU differs, the host does not find (or
# wasmtime refuses) the baked artefact, logs it and compiles the plugin, as without a cache.
FROM builder AS warm
# The compiled functions (for recompiling changed plugins) are left out: the artefacts only.
RUN /out/wasmcm --cache-dir /out/cache plugins inspect && rm -rf /out/cache/functions

# --- runtime ---
FROM ${RUNTIME_IMAGE}
LABEL org.opencontainers.image.title="wasmcm" \
      org.opencontainers.image.description="WebAssembly controller manager for Kubernetes" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="0.1.0"
COPY --from=builder /out/wasmcm /wasmcm
# Owned by the runtime user: writable when the root filesystem is (docker run), read-only under
# readOnlyRootFilesystem, where the host still loads from it and only logs that it cannot keep
# what it compiles. deploy/ uses an emptyDir at /var/cache/wasmcm instead unless told to use this
# one (helm: cache.useImageCache=true).
COPY --from=warm --chown=65532:65532 /out/cache /opt/wasmcm/cache
# The key the artefacts are authenticated with (engine/precompiled.rs): a cache is trusted only
# with the key that made it, which lives outside the cache directory.
COPY --from=warm --chown=65532:65532 /out/cache.key /opt/wasmcm/cache.key
ENV WASMCM_CACHE_DIR=/opt/wasmcm/cache
USER 65532:65532
# /metrics, /healthz, /readyz, /plugins (with --metrics-bind-address 0.0.0.0:8080).
EXPOSE 8080
ENTRYPOINT ["/wasmcm"]
CMD ["run"]

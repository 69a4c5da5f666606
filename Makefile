# The two commands of the README. Both install the pinned toolchain and its wasm target first
# (rust-toolchain.toml; cargo will not install a missing target by itself), then cargo builds
# the guest plugins through host/build.rs.

.PHONY: run test cluster bench soak image toolchain

toolchain:
	rustup toolchain install

# The main job: the host with its built-in plugins on a new embedded cluster (or the cluster
# of $KUBECONFIG). `cargo run -p wasmcm -- --help` lists everything. The tests' pinned kubectl
# first, into target/tools, which the "try:" line the host prints names (without one, that
# line names the PATH's kubectl and the host runs all the same).
KUBECTL_FOR_RUN = scripts/install-kubectl.sh >/dev/null || echo "make: no kubectl in target/tools (see above); the host runs without it" >&2

run: toolchain
	$(KUBECTL_FOR_RUN)
	cargo run -p wasmcm -- run

# The embedded Kubernetes API server alone; prints the kubeconfig to use with kubectl.
cluster: toolchain
	$(KUBECTL_FOR_RUN)
	cargo run -p wasmcm -- cluster

# Every test: formatting, lints (the host's also without the embedded cluster, as a production
# build may leave it out), the SDK's docs, then the whole workspace (native logic, engine,
# sandbox, CLI, the embedded cluster through kube-rs and the real kubectl, the deploy manifests and
# Helm chart through the real kubectl and helm, the image through umoci, skopeo and runc; the
# scripts install those tools). The integration tests mostly wait on clusters, kubelets and
# leases, so they run on at least 4 threads, more on a machine with more cores.
TEST_THREADS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n > 4 ? n : 4 )))

# The example plugin is a crate of its own, outside the workspace as a team's plugin would be:
# checked (natively: for wasm32 it adds only the export macro, which clippy does not lint),
# unit-tested and built (both releases) in its directory, into the target dir the
# custom_resource test builds it in, so that test finds it built instead of compiling beside
# the other tests (cold: about 1.5 minutes on 2 cores; then seconds).
EXAMPLE := examples/website

test: toolchain
	scripts/install-kubectl.sh
	scripts/install-helm.sh
	scripts/install-image-tools.sh
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	cargo clippy --locked -p wasmcm --no-default-features -- -D warnings
	cargo clippy --locked --target wasm32-unknown-unknown -p wasmcm-core -p wasmcm-guest -p wasmcm-replicaset -p wasmcm-deployment -p wasmcm-deployment-plugin -p wasmcm-rollback -p wasmcm-job -p wasmcm-job-plugin -p wasmcm-cronjob -p wasmcm-cronjob-plugin -p wasmcm-ttlafterfinished -p wasmcm-hostile -p wasmcm-stamp -p wasmcm-legacy -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc -p wasmcm-guest --no-deps --locked
	cd $(EXAMPLE) && cargo fmt --check
	cd $(EXAMPLE) && cargo clippy --locked --all-targets --target-dir ../../target/plugins -- -D warnings
	cd $(EXAMPLE) && cargo test --locked --target-dir ../../target/plugins
	cd $(EXAMPLE) && cargo build --release --locked --target wasm32-unknown-unknown --target-dir ../../target/plugins
	cd $(EXAMPLE) && cargo build --release --locked --target wasm32-unknown-unknown --target-dir ../../target/plugins --features v2
	cargo test --workspace --locked -- --test-threads=$(TEST_THREADS)

# The scale bench (host/benches/scale.rs) runs the server and the host as two processes; its
# size is 1,000 Deployments × 3 replicas unless SCALE_ARGS says otherwise, e.g.
# `make bench SCALE_ARGS="--sizes 1000,3000,10000"` (each size on a fresh server and host).
SCALE_ARGS ?= --sizes 1000

bench: toolchain
	cargo bench -p wasmcm --bench reconcile
	cargo bench -p wasmcm-apiserver --bench cluster
	cargo bench -p wasmcm --bench scale -- $(SCALE_ARGS)
	cargo bench -p wasmcm --bench scale -- --size 3000 --replicas 1 --hosts 1,2,3
	cargo bench -p wasmcm --bench lifecycle

# The chaos soak, long (host/benches/chaos.rs): three hosts at KCM's lease timings, 300
# Deployments under churn, 30 minutes of injected faults unless SOAK_ARGS says otherwise, e.g.
# `make soak SOAK_ARGS="--minutes 120 --deployments 600"`. `make test` runs it small.
SOAK_ARGS ?=

soak: toolchain
	cargo bench -p wasmcm --bench chaos -- $(SOAK_ARGS)

# The image as an OCI layout in target/image/wasmcm, without a Docker engine (deploy/README.md).
image: toolchain
	scripts/install-image-tools.sh
	scripts/build-image.sh

# The two commands of the README. Both install the pinned toolchain and its wasm target first
# (rust-toolchain.toml; cargo will not install a missing target by itself), then cargo builds
# the guest plugins through host/build.rs.

.PHONY: run test test-python test-typescript example-typescript cluster bench soak image toolchain install

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

# `wasmcm` on your PATH: cargo's own bin directory (~/.cargo/bin, which rustup put on the PATH),
# as `cargo install --path host` does. INSTALL_FLAGS adds cargo install's flags (--root DIR).
install: toolchain
	cargo install --locked --path host $(INSTALL_FLAGS)

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

# In `test`, the guests' wasm32 lints run where host/build.rs built them (target/guests, the
# guest profile), so the proc macros they need (wit-bindgen's, serde's: about 80 s of CPU in a
# debug build) are the ones already built, not compiled again for a profile nothing else uses.

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
	cargo clippy --locked --profile guest --target wasm32-unknown-unknown --target-dir target/guests -p wasmcm-core -p wasmcm-guest -p wasmcm-replicaset -p wasmcm-deployment -p wasmcm-deployment-plugin -p wasmcm-rollback -p wasmcm-job -p wasmcm-job-plugin -p wasmcm-cronjob -p wasmcm-cronjob-plugin -p wasmcm-ttlafterfinished -p wasmcm-hostile -p wasmcm-stamp -p wasmcm-legacy -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc -p wasmcm-guest --no-deps --locked
	cd $(EXAMPLE) && cargo fmt --check
	cd $(EXAMPLE) && cargo clippy --locked --all-targets --target-dir ../../target/plugins -- -D warnings
	cd $(EXAMPLE) && cargo test --locked --target-dir ../../target/plugins
	cd $(EXAMPLE) && cargo build --release --locked --target wasm32-unknown-unknown --target-dir ../../target/plugins
	cd $(EXAMPLE) && cargo build --release --locked --target wasm32-unknown-unknown --target-dir ../../target/plugins --features v2
	$(MAKE) test-python
	$(MAKE) test-typescript
	cargo test --workspace --locked -- --test-threads=$(TEST_THREADS)

# Python plugins (issue 34): the pinned componentize-py into target/tools/python, the SDK's and
# the Python website example's unit tests natively, then the example's first release built into
# target/plugins/python, where the python tests find it (a build is about 20 s of CPU, redone
# only when a .py file is newer than it; the tests need no second release, which
# `make target/plugins/python/website-python/website-v2.wasm` builds).
PY_EXAMPLE := examples/website-python
PY_OUT := target/plugins/python/website-python
PY_SOURCES := $(wildcard $(PY_EXAMPLE)/*.py guest-controllers/sdk-python/wasmcm_guest/*.py)

test-python: $(PY_OUT)/website.wasm
	guest-controllers/sdk-python/test.sh
	$(PY_EXAMPLE)/test.sh

$(PY_OUT)/website.wasm: $(PY_SOURCES)
	scripts/install-componentize-py.sh >/dev/null
	$(PY_EXAMPLE)/build.sh v1 $@

$(PY_OUT)/website-v2.wasm: $(PY_SOURCES)
	scripts/install-componentize-py.sh >/dev/null
	$(PY_EXAMPLE)/build.sh v2 $@

# npm's cache under target/, beside the pinned tools (CI keeps target/ between runs): the
# TypeScript toolchain, the example's and the scaffold test's `npm ci` install from it offline
# once it is filled, instead of downloading the same 400 MB of packages again.
export npm_config_cache ?= $(CURDIR)/target/tools/cache/npm

# The TypeScript SDK and example (issue 34): the pinned toolchain into target/tools/js, the SDK's
# generated WIT types checked fresh, its unit tests; then the example as a team would build it
# (npm ci of its lock, its unit tests, its component build/website.wasm, which the tests replay
# the Rust example's recordings against and the language bench measures). The example's npm ci
# (about 15 s, 400 MB written) is redone only when its lock changes, its component (about 15 s
# of CPU) only when a source of it or of the SDK is newer.
TS_EXAMPLE := examples/website-typescript
TS_SDK := guest-controllers/sdk-typescript
TS_SOURCES := $(wildcard $(TS_EXAMPLE)/src/*.ts $(TS_SDK)/src/*.ts $(TS_SDK)/src/wit/*.ts $(TS_SDK)/src/wit/interfaces/*.ts $(TS_SDK)/bin/*.mjs)

test-typescript: $(TS_EXAMPLE)/build/website.wasm
	$(TS_SDK)/check.sh
	cd $(TS_EXAMPLE) && npm test

$(TS_EXAMPLE)/node_modules/.wasmcm-installed: $(TS_EXAMPLE)/package.json $(TS_EXAMPLE)/package-lock.json $(TS_SDK)/package.json
	cd $(TS_EXAMPLE) && npm ci --prefer-offline --no-audit --no-fund
	touch $@

$(TS_EXAMPLE)/build/website.wasm: $(TS_EXAMPLE)/node_modules/.wasmcm-installed $(TS_SOURCES)
	cd $(TS_EXAMPLE) && npm run build

# The TypeScript example's component alone (for make bench).
example-typescript: $(TS_EXAMPLE)/build/website.wasm

# The scale bench (host/benches/scale.rs) runs the server and the host as two processes; its
# size is 1,000 Deployments × 3 replicas unless SCALE_ARGS says otherwise, e.g.
# `make bench SCALE_ARGS="--sizes 1000,3000,10000"` (each size on a fresh server and host).
SCALE_ARGS ?= --sizes 1000

# The language bench (host/benches/languages.rs) runs on the website example's first release in
# each language, built here; a language whose build is missing is skipped with a line saying so.

bench: toolchain
	cargo bench -p wasmcm --bench reconcile
	cargo bench -p wasmcm-apiserver --bench cluster
	cargo bench -p wasmcm --bench scale -- $(SCALE_ARGS)
	cargo bench -p wasmcm --bench scale -- --size 3000 --replicas 1 --hosts 1,2,3
	cargo bench -p wasmcm --bench lifecycle
	cd $(EXAMPLE) && cargo build --release --locked --target wasm32-unknown-unknown --target-dir ../../target/plugins
	$(MAKE) $(PY_OUT)/website.wasm example-typescript
	cargo bench -p wasmcm --bench languages

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

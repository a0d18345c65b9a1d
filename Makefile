# Ringjob — `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := bin
CONFIG ?= configs/ringjob.sample.yaml
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOIMPORTS := golang.org/x/tools/cmd/goimports@v0.39.0
MODULE := github.com/ringjob/ringjob

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[1m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/ringjob and bin/demo-executor
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ringjob ./cmd/ringjob
ifneq ($(wildcard cmd/demo-executor/*.go),)
	$(GO) build -o $(BIN)/demo-executor ./cmd/demo-executor
endif

.PHONY: sample-function
sample-function: ## Build the hello function for this machine (the sample config runs it under the Lambda emulator)
	@mkdir -p $(BIN)/functions/hello
	CGO_ENABLED=0 $(GO) build -tags lambda.norpc -o $(BIN)/functions/hello/bootstrap ./functions/examples/hello

.PHONY: run
run: build sample-function ## Build and start the server on SQLite with the sample config
	$(BIN)/ringjob server --config $(CONFIG)

.PHONY: test
test: lint ## make lint, terraform fmt + validate + test (skipped without a provider mirror), then all tests with the race detector (the Terraform provider's acceptance tests need terraform on the PATH or TF_ACC_TERRAFORM_PATH)
	infra/terraform/check all
	$(GO) test -race -timeout 9m ./...

.PHONY: test-faults
test-faults: ## Long fault-injection suite: 3 replicas, 200 jobs, SIGKILL/SIGSTOP/mariadbd restarts/executor down, kills inside the dispatch window, DB outages vs misfire policy, 200 workflows of 5 nodes through kills, pauses and DB restarts (~20 min, the workflows again on PostgreSQL with RINGJOB_POSTGRES_DSN; docs/reliability.md)
	RINGJOB_FAULTS=long RINGJOB_FAULTS_REPORT=$(CURDIR)/bin/faults-report.md $(GO) test -count=1 -run 'TestFaultsLong|TestFaultsDatabaseOutage|TestFaultsKillInDispatchWindow|TestFaultsWorkflows' -v -timeout 40m ./tests/faults/

.PHONY: test-crash
test-crash: ## Crash tests of follow-ups and workflows: 2 replicas SIGKILLed at random while runs succeed (children), fail (retries) and workflows run; each follow-up and node attempt made once, run once at the executor (~3 min; again on PostgreSQL with RINGJOB_POSTGRES_DSN)
	RINGJOB_CRASH_TEST=1 $(GO) test -race -count=1 -timeout 10m -run 'TestCrashFollowupsExactlyOnce|TestCrashWorkflowsExactlyOncePerAttempt' -v ./tests/integration

.PHONY: test-login-load
test-login-load: ## Login under attack: 200 clients sending wrong passwords to a real server (SQLite, MariaDB); peak RSS, other endpoints, a real user signing in (~1 min, both cores)
	RINGJOB_LOGIN_LOAD=1 $(GO) test -count=1 -timeout 10m -run TestLoginUnderAttack -v ./cmd/ringjob/

.PHONY: test-short
test-short: ## Tests without the slow multi-process ones
	$(GO) test -race -short ./...

.PHONY: lint
lint: ## gofmt, goimports (standard, third-party and our imports in separate groups), go vet and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@out=$$($(GO) run $(GOIMPORTS) -local $(MODULE) -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "goimports -local $(MODULE) -w needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

.PHONY: bench
bench: ## Scheduler throughput and lag against MariaDB (bench/), then Go benchmarks
	$(GO) run ./bench -jobs 1000 -duration 30s
	$(GO) run ./bench -jobs 5000 -duration 30s
	$(GO) run ./bench -jobs 10000 -duration 30s
	$(GO) test -run '^$$' -bench . -benchmem ./schedule ./scheduler

# Authentication and permission check per request with 10,000 tokens and
# 1,000 role bindings, on SQLite and on MariaDB (RINGJOB_MYSQL_DSN's server).
AUTH_MYSQL_URL ?= mysql://root@127.0.0.1:3306/ringjob_bench_auth
.PHONY: bench-auth
bench-auth: ## Auth + permission cost per request (bench/auth), SQLite and MariaDB
	rm -f /tmp/ringjob-bench-auth.db*
	$(GO) run ./bench/auth -database-url sqlite:///tmp/ringjob-bench-auth.db
	mariadb -h 127.0.0.1 -u root -e 'DROP DATABASE IF EXISTS ringjob_bench_auth; CREATE DATABASE ringjob_bench_auth'
	$(GO) run ./bench/auth -database-url $(AUTH_MYSQL_URL)

# Jobs as code at scale: `ringjob apply -f DIR` of 10,000 jobs to an empty
# server on MariaDB, then the no-change re-apply and diff (bench/apply).
APPLY_MYSQL_URL ?= mysql://root@127.0.0.1:3306/ringjob_bench_apply
.PHONY: bench-apply
bench-apply: ## Jobs as code: apply 10,000 jobs to an empty server, then re-apply (bench/apply, MariaDB)
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ringjob ./cmd/ringjob
	mariadb -h 127.0.0.1 -u root -e 'DROP DATABASE IF EXISTS ringjob_bench_apply; CREATE DATABASE ringjob_bench_apply'
	$(GO) run ./bench/apply -bin $(BIN)/ringjob -database-url $(APPLY_MYSQL_URL) -jobs 10000 -groups 10

# The end-to-end benchmark of record: the real server on its own MariaDB,
# real targets in separate processes, measured from the targets' side
# (bench/e2e). Takes about 12 minutes with 30 s rows; writes its table into
# docs/benchmarks.md, its result lines into docs/bench/e2e.jsonl and the charts
# drawn from them into docs/bench. "+burst": the N jobs fire in the same second
# every 10 s.
E2E_ROWS ?= xxl-batch=1000,5000,10000 xxl-batch+burst=1000 xxl-sdk=1000 lambda=1000 local=50,200
E2E_DURATION ?= 30s
.PHONY: bench-e2e
bench-e2e: ## End-to-end throughput through real targets (bench/e2e): table into docs/benchmarks.md, result lines and charts into docs/bench
	$(GO) build -o $(BIN)/bench-e2e ./bench/e2e
	rm -f $(BIN)/bench-e2e.jsonl
	$(BIN)/bench-e2e -rows "$(E2E_ROWS)" -duration $(E2E_DURATION) -doc docs/benchmarks.md -label "$$(git rev-parse --short HEAD)" -out $(BIN)/bench-e2e.jsonl
	cp $(BIN)/bench-e2e.jsonl docs/bench/e2e.jsonl
	$(GO) run ./bench/chart -in docs/bench/e2e.jsonl -out docs/bench

# Workflows (bench/e2e -workflows): 1,000 workflow runs of 10 nodes (1 -> 4 ->
# 4 -> 1) over the xxl-batch executor, triggered in the same second, on the
# benchmark's own MariaDB; about 2 minutes. Result line into docs/bench/workflows.jsonl.
WF_RUNS ?= 1000
.PHONY: bench-workflows
bench-workflows: ## Workflows: 1,000 runs of 10 nodes triggered in the same second (bench/e2e -workflows), result line into docs/bench
	$(GO) build -o $(BIN)/bench-e2e ./bench/e2e
	$(BIN)/bench-e2e -workflows $(WF_RUNS) -label "$$(git rev-parse --short HEAD)" -out docs/bench/workflows.jsonl

.PHONY: bench-lifecycle
bench-lifecycle: ## Data lifecycle and scale (bench/lifecycle, private mariadbd, ~40 min): 1M daily jobs, a big runs table with retention, the stats endpoint
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ringjob ./cmd/ringjob
	$(GO) run ./bench/lifecycle -mode jobs -throwaway-pool 2G -daily 0 -groups 1 -every 1000 -duration 60s -label baseline-1k-every-second -out $(BIN)/bench-lifecycle.jsonl
	$(GO) run ./bench/lifecycle -mode jobs -throwaway-pool 2G -daily 1000000 -groups 10000 -every 1000 -duration 60s -server-bin $(BIN)/ringjob -label 1M-daily+1k-every-second -out $(BIN)/bench-lifecycle.jsonl
	$(GO) run ./bench/lifecycle -mode bigtable -throwaway-pool 2G -rows $(BIG_ROWS) -every 1000 -duration 60s -partitioned -label partitioned -out $(BIN)/bench-lifecycle.jsonl
	$(GO) run ./bench/lifecycle -mode bigtable -throwaway-pool 2G -rows $(BIG_ROWS) -every 1000 -duration 60s -label rows -out $(BIN)/bench-lifecycle.jsonl

BIG_ROWS ?= 5000000

FUNCTIONS := $(notdir $(wildcard functions/examples/*))
FUNCTION_ARCHS := arm64 amd64

.PHONY: functions
functions: ## Build functions/examples/* as provided.al2023 bootstraps (arm64, amd64), zipped in bin/functions/
	@mkdir -p $(BIN)/functions
	$(GO) build -o $(BIN)/zipfn ./functions/cmd/zipfn
	@set -e; for fn in $(FUNCTIONS); do for arch in $(FUNCTION_ARCHS); do \
		out=$(BIN)/functions/$$fn-$$arch; mkdir -p $$out; \
		echo "  $$out.zip"; \
		GOOS=linux GOARCH=$$arch CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags "-s -w" -o $$out/bootstrap ./functions/examples/$$fn; \
		$(BIN)/zipfn -o $$out.zip $$out/bootstrap; \
	done; done

IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
# DATABASE_CA_BUNDLE: the database's CA bundle to build into the image
# (/etc/ringjob/database-ca.pem), on AWS the RDS global-bundle.pem.
DATABASE_CA_BUNDLE ?=

.PHONY: image
image: ## Build the multi-arch container image without Docker: bin/image/oci (OCI layout), ringjob-oci.tar, ringjob-linux-ARCH.tar
	$(GO) run ./cmd/ringjob-image -platforms $(IMAGE_PLATFORMS) -version $(VERSION) -revision "$$(git rev-parse HEAD 2>/dev/null)" -out $(BIN)/image -database-ca-bundle "$(DATABASE_CA_BUNDLE)"

.PHONY: image-push
image-push: ## Build the image and push it: make image-push IMAGE_REF=ACCOUNT.dkr.ecr.REGION.amazonaws.com/ringjob:TAG
	@test -n "$(IMAGE_REF)" || { echo "set IMAGE_REF=REGISTRY/REPO:TAG"; exit 2; }
	$(GO) run ./cmd/ringjob-image -platforms $(IMAGE_PLATFORMS) -version $(VERSION) -revision "$$(git rev-parse HEAD 2>/dev/null)" -out $(BIN)/image -database-ca-bundle "$(DATABASE_CA_BUNDLE)" -push $(IMAGE_REF)

.PHONY: image-test
image-test: ## The image test for every platform of IMAGE_PLATFORMS (make test checks the host's only)
	RINGJOB_IMAGE_TEST_PLATFORMS=$(IMAGE_PLATFORMS) $(GO) test -count=1 -run 'TestImage|TestDockerfile' -v ./internal/imagebuild

TF_PROVIDER_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

.PHONY: tf-provider
tf-provider: ## Build the Terraform provider for Linux and macOS, amd64 and arm64: bin/terraform-provider-ringjob_OS_ARCH
	@mkdir -p $(BIN)
	@set -e; for p in $(TF_PROVIDER_PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; \
		echo "  $(BIN)/terraform-provider-ringjob_$${os}_$${arch}"; \
		GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(BIN)/terraform-provider-ringjob_$${os}_$${arch} ./cmd/terraform-provider-ringjob; \
	done

# The version the local mirror gives the provider (Terraform wants a
# semantic version there).
TF_PROVIDER_VERSION ?= 0.1.0

.PHONY: tf-provider-mirror
tf-provider-mirror: ## Lay out the provider for this machine as a Terraform filesystem mirror in bin/tf-plugins (docs/deploy-aws.md)
	@dir=$(BIN)/tf-plugins/registry.terraform.io/ringjob/ringjob/$(TF_PROVIDER_VERSION)/$$($(GO) env GOOS)_$$($(GO) env GOARCH); mkdir -p $$dir; \
		echo "  $$dir"; \
		CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $$dir/terraform-provider-ringjob_v$(TF_PROVIDER_VERSION) ./cmd/terraform-provider-ringjob

.PHONY: tf-provider-docs
tf-provider-docs: ## Regenerate the schema sections of docs/terraform-provider (the registry layout) from the provider's schema
	$(GO) test -count=1 -run TestDocs ./tfprovider -update-docs

.PHONY: tf-check
tf-check: ## Terraform: fmt, policy tests, README tables, terraform validate + test (mocked AWS provider from a local mirror), trivy config (waivers in infra/terraform/.trivyignore.yaml)
	$(GO) test -count=1 ./infra/terraform/...
	infra/terraform/check all
	infra/terraform/check trivy

.PHONY: tf-docs
tf-docs: ## Regenerate the inputs/outputs tables of infra/terraform/modules/*/README.md
	$(GO) run ./infra/terraform/docgen

.PHONY: clean
clean: ## Remove build output
	rm -rf $(BIN)

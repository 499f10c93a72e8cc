# nsguard: a CoreDNS plugin. `make test` is what CI runs.
GO        ?= go
BIN       ?= bin
FUZZTIME  ?= 10m
BENCHSTAT ?= $(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

.PHONY: all test test-node helm-check deps fmt-check vet cli-deps plugin-deps deploy-check coredns cli fuzz bench-go demo bench bench-scale clean

all: coredns

# The demo runs first: it is the README's quick start, so CI proves it too. The e2e tag
# adds the suites that need root and the real stack; plain go test ./... runs the rest.
test: deps fmt-check vet deploy-check cli-deps plugin-deps
	@mkdir -p $(BIN)
	@echo "make demo (output in $(BIN)/demo.log)"
	@$(GO) run ./test/e2e/demo >$(BIN)/demo.log 2>&1 || { cat $(BIN)/demo.log; exit 1; }
	$(GO) test -race -tags e2e -count=1 -timeout 60m ./...

# The node suite alone (test/e2e/node): a single-node cluster of real parts on this machine,
# and a platform team's journey with nsguard on it. Root; it changes the host's network while
# it runs, and removes what it added.
test-node: deps
	$(GO) test -tags e2e -count=1 -timeout 45m -v ./test/e2e/node/

# deploy/helm/values-nsguard.yaml against the chart version it names (test/e2e/helmcheck), with
# a real helm: CHART is that chart, a directory or a .tgz (helm pull coredns/coredns --version
# 1.46.2). Not in make test: no chart repository can be reached from the test machine.
HELM ?= helm.sh/helm/v4/cmd/helm@v4.3.2
helm-check:
	@test -n "$(CHART)" || { echo "helm-check: set CHART to the coredns chart (directory or .tgz)"; exit 1; }
	@mkdir -p $(BIN)
	GOBIN=$(CURDIR)/$(BIN) $(GO) install $(HELM)
	$(GO) run ./test/e2e/helmcheck -helm $(BIN)/helm -chart $(CHART)

deps:
	@hack/deps.sh

fmt-check:
	@files=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$files" ]; then echo "gofmt wants to change:"; echo "$$files"; exit 1; fi

vet:
	$(GO) vet -tags e2e ./...

# The operator CLI must not link CoreDNS: it runs on laptops and in CI jobs.
cli-deps:
	@if $(GO) list -deps ./cmd/nsguard | grep -q '^github.com/coredns/'; then \
		echo "cmd/nsguard depends on CoreDNS:"; $(GO) list -deps ./cmd/nsguard | grep '^github.com/coredns/'; exit 1; fi

# CoreDNS with nsguard must not link the CLI: its manifest loading, explain and offline model
# (audit/model), its kubectl flags (cli-runtime) or its commands. The plugin runs the checks
# of package audit, which need none of them.
PLUGIN_MUST_NOT_LINK = ^github.com/nsguard/nsguard/(audit/model|cmd/nsguard)$$|^k8s.io/cli-runtime/|^github.com/spf13/cobra$$
plugin-deps:
	@if $(GO) list -deps ./cmd/coredns | grep -Eq '$(PLUGIN_MUST_NOT_LINK)'; then \
		echo "cmd/coredns links the CLI's packages:"; $(GO) list -deps ./cmd/coredns | grep -E '$(PLUGIN_MUST_NOT_LINK)'; exit 1; fi

# The alerting rules with promtool (its own module under tools/), and the image with buildah.
deploy-check:
	@mkdir -p $(BIN)
	$(GO) -C tools/promtool build -trimpath -o $(CURDIR)/$(BIN)/promtool github.com/prometheus/prometheus/cmd/promtool
	$(BIN)/promtool check rules deploy/prometheus/nsguard-rules.yaml
	$(BIN)/promtool test rules deploy/prometheus/nsguard-rules_test.yaml
	hack/check-image.sh
	hack/check-webhook-image.sh

coredns:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/coredns ./cmd/coredns

# The operator CLI, and the same binary as the kubectl plugin: for 'kubectl nsguard', kubectl
# runs kubectl-nsguard from the PATH, and the binary names itself by how it was called.
cli:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/nsguard ./cmd/nsguard
	cp $(BIN)/nsguard $(BIN)/kubectl-nsguard

# Each target in turn, FUZZTIME each: go test fuzzes one target at a time.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzServeDNS$$' -fuzztime $(FUZZTIME) .
	$(GO) test -run '^$$' -fuzz '^FuzzServeDNSWithView$$' -fuzztime $(FUZZTIME) .
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./logline
	$(GO) test -run '^$$' -fuzz '^FuzzOffenders$$' -fuzztime $(FUZZTIME) ./cmd/nsguard
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) ./audit/model
	$(GO) test -run '^$$' -fuzz '^FuzzPodDecoder$$' -fuzztime $(FUZZTIME) ./clusterview
	$(GO) test -run '^$$' -fuzz '^FuzzAgrees$$' -fuzztime $(FUZZTIME) ./clusterview/leanpod
	$(GO) test -run '^$$' -fuzz '^FuzzReview$$' -fuzztime $(FUZZTIME) ./webhook

# Go benchmarks, 10 runs each; benchstat puts nsguard beside the next handler alone, beside
# cache alone for the held path through cache (ServeDNSThroughCache), and beside the any
# plugin on a fresh goroutine per query, as CoreDNS serves them; ServerCache asks a real
# server over UDP, where the stack of each query grows as it does in a cluster.
bench-go:
	@mkdir -p $(BIN)
	$(GO) test -run '^$$' -bench 'ServeDNS|FreshGoroutine' -count 10 . | tee $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench 'Classify' -count 10 ./clusterdns | tee -a $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench 'ServerCache' -count 10 ./cmd/coredns | tee -a $(BIN)/bench.txt
	$(BENCHSTAT) -col /handler $(BIN)/bench.txt

# The incident, step by step, on a real control plane, CoreDNS and resolvers; also a check.
demo: deps
	$(GO) run ./test/e2e/demo

# dnsperf against real CoreDNS servers on a real control plane (test/e2e/bench): the chain
# without cache (about 20 minutes), then the stock Corefile with cache, asked by several client
# Pods, in the everyday mix and the incident's (about 22 minutes; every server starts afresh each 5 rounds).
bench: deps
	$(GO) run ./test/e2e/bench
	$(GO) run ./test/e2e/bench -workload stock -rounds 30

# CoreDNS's peak memory with and without nsguard, through the sync and a relist, on a real API
# server holding 5,000 namespaces, 20,000 Services and 50,000 realistic Pods (test/e2e/benchscale);
# about 90 minutes with 3 rounds and a cluster to create, as root. BENCH_SCALE_FLAGS: e.g.
# -namespaces 500, -pods-verified, -reuse-etcd DIR.
bench-scale: deps
	@mkdir -p $(BIN)
	$(GO) run ./test/e2e/benchscale $(BENCH_SCALE_FLAGS)

clean:
	rm -rf $(BIN)

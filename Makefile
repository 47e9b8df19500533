# gpuledger — one plain Makefile (STYLE.md "Build and tests").
#
#   make            build ./gpuledger (the libraries must be there: make deps)
#   make deps       install the missing Debian packages (tools/install-deps.sh)
#   make run        deps, then the demo: a simulated cluster, served on
#                   127.0.0.1:8420
#   make test       deps, build, run every test
#   make test SANITIZE=address,undefined
#   make bench | install [PREFIX=/usr/local DESTDIR=] | clean
#   make layercheck headercheck mutatecheck

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
CC ?= cc
PKG_CONFIG ?= pkg-config
SANITIZE ?=

# The version, set here only; the commit is the checkout's (or COMMIT=...
# from a build without .git, e.g. the image build). Both are baked into
# ledger/build.o: `gpuledger version`, --version, gpuledger_build_info.
VERSION := 0.1.0
COMMIT ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)

LIBS_PKG := lmdb jansson libuv libcurl libssl libcrypto yaml-0.1
TEST_PKG := check

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-unused-parameter
ifneq ($(CI),)
WARN += -Werror
endif

CFLAGS ?= -O2 -g
ALL_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) \
	$(CFLAGS) -I. $(shell $(PKG_CONFIG) --cflags $(LIBS_PKG) 2>/dev/null)
ALL_LDFLAGS := $(LDFLAGS)
LDLIBS := $(shell $(PKG_CONFIG) --libs $(LIBS_PKG) 2>/dev/null) -lhttp_parser -lm
TEST_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(TEST_PKG) 2>/dev/null)
TEST_LIBS := $(shell $(PKG_CONFIG) --libs $(TEST_PKG) 2>/dev/null)

ifneq ($(SANITIZE),)
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer \
	-fno-sanitize-recover=all
ALL_LDFLAGS += -fsanitize=$(SANITIZE)
BUILD := build/san
else
BUILD := build/rel
endif

LAYERS := model sim ledger ingest query etcd cluster tools
MODEL_SRC := $(wildcard model/*.c)
SIM_SRC := $(wildcard sim/*.c)
LEDGER_SRC := $(wildcard ledger/*.c)
INGEST_SRC := $(wildcard ingest/*.c)
QUERY_SRC := $(wildcard query/*.c)
ETCD_SRC := $(wildcard etcd/*.c)
CLUSTER_SRC := $(wildcard cluster/*.c)
TOOLS_SRC := $(wildcard tools/*.c)
LIB_SRC := $(MODEL_SRC) $(SIM_SRC) $(LEDGER_SRC) $(INGEST_SRC) $(QUERY_SRC) \
	$(ETCD_SRC) $(CLUSTER_SRC)
# The web console's files (query/ui/) compiled in as byte arrays.
UI_FILES := $(sort $(wildcard query/ui/*.html query/ui/*.css query/ui/*.js))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/query/ui_assets.o
TOOLS_OBJ := $(TOOLS_SRC:%.c=$(BUILD)/%.o)
# One Check suite per module: tests/test_<m>.c plus its parts tests/<m>_*.c.
TEST_MODULES := $(foreach m,model sim ledger ingest query cluster,$(if $(wildcard tests/test_$(m).c),$(m)))
UNIT_TESTS := $(TEST_MODULES:%=$(BUILD)/tests/test_%)


.PHONY: run
.PHONY: all test check bench bench-build install man completion clean layercheck headercheck mutatecheck deps \
	libcheck \
	unit integration format

# `make` only builds: installing packages is `make deps`, which `make test`,
# `make run` and `make bench` run first and then build in a sub-make, so that
# pkg-config sees the freshly installed libraries. Without them `make` says
# so instead of failing on a missing header.
all: libcheck
	@$(MAKE) --no-print-directory gpuledger

libcheck:
	@$(PKG_CONFIG) --exists $(LIBS_PKG) 2>/dev/null || { \
		echo "make: missing libraries ($(LIBS_PKG)):" \
			"run 'make deps' (tools/install-deps.sh) first" >&2; \
		exit 1; }

deps:
	@sh tools/install-deps.sh

# build.o is rebuilt when the version or commit changes (the stamp's
# content changes only then).
$(BUILD)/build-id: FORCE
	@mkdir -p $(dir $@)
	@echo '$(VERSION) $(COMMIT)' | cmp -s - $@ || echo '$(VERSION) $(COMMIT)' > $@
$(BUILD)/ledger/build.o: $(BUILD)/build-id
$(BUILD)/ledger/build.o: ALL_CFLAGS += -DGPULEDGER_VERSION='"$(VERSION)"' \
	-DGPULEDGER_COMMIT='"$(COMMIT)"'
.PHONY: FORCE
FORCE:

$(BUILD)/libgpuledger.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# Each flavour links its own binary in its build directory; ./gpuledger, what
# every test script runs, is a copy of the flavour of this make's SANITIZE.
# It is refreshed whenever it differs, so after `make test SANITIZE=...` a
# plain `make` (or `make install`) brings back the plain binary instead of
# finding ./gpuledger up to date.
$(BUILD)/gpuledger: $(TOOLS_OBJ) $(BUILD)/libgpuledger.a
	$(CC) $(ALL_LDFLAGS) -o $@ $(TOOLS_OBJ) $(BUILD)/libgpuledger.a $(LDLIBS)

gpuledger: $(BUILD)/gpuledger FORCE
	@cmp -s $< $@ || { cp $< $@.tmp && mv -f $@.tmp $@ && \
		echo "gpuledger: $< (SANITIZE=$(SANITIZE))"; }

$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TEST_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/query/ui_assets.c: $(UI_FILES) tools/embed-ui.sh
	@mkdir -p $(dir $@)
	sh tools/embed-ui.sh $(UI_FILES) >$@.tmp && mv $@.tmp $@

$(BUILD)/query/ui_assets.o: $(BUILD)/query/ui_assets.c
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

define test_binary
$(BUILD)/tests/test_$(1): $(patsubst %.c,$(BUILD)/%.o,tests/test_$(1).c $(wildcard tests/$(1)_*.c)) $(BUILD)/libgpuledger.a
	$$(CC) $$(ALL_LDFLAGS) -o $$@ $$(filter %.o,$$^) $(BUILD)/libgpuledger.a \
		$$(LDLIBS) $$(TEST_LIBS)
endef
$(foreach m,$(TEST_MODULES),$(eval $(call test_binary,$(m))))

test: deps
	@$(MAKE) --no-print-directory unit integration layercheck headercheck \
		mutatecheck

check: test

# Check's per-test timeout is a guard against a hang, not a measure: on a
# loaded machine (CI, two busy loops, AddressSanitizer) the property tests
# take several times their usual seconds, so it is 8 times Check's default
# unless CK_TIMEOUT_MULTIPLIER says otherwise.
unit: $(UNIT_TESTS)
	@failed=""; for t in $(UNIT_TESTS); do echo "== $$t"; \
		CK_FORK=yes CK_TIMEOUT_MULTIPLIER=$${CK_TIMEOUT_MULTIPLIER:-8} \
			$$t || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "unit: FAILED:$$failed"; exit 1; fi

# Every tests/<name>_cli.sh drives the real binary; each prints its own
# "N passed, N failed" line. All of them run, so that one failure does not
# hide another; the failed ones are listed at the end, and each says how
# long it took (so that CI time stays measured, script by script).
CLI_TESTS := $(sort $(wildcard tests/*_cli.sh))
integration: gpuledger
	@failed=""; for t in $(CLI_TESTS); do \
		t0=$$(date +%s); \
		sh $$t ./gpuledger || failed="$$failed $$t"; \
		echo "$$t: $$(($$(date +%s) - t0)) s"; \
	done; \
	if [ -n "$$failed" ]; then \
		echo "integration: FAILED:$$failed"; exit 1; \
	fi; echo "integration: all $(words $(CLI_TESTS)) scripts passed"

# The fault soak of DESIGN 11, not part of CI: SOAK faults drawn at random
# from tests/cluster/faults.py's table, each under admission load, the
# history checked every 25 and at the end, then etcd wiped and initialised
# again (`make soak SOAK=50 SEED=N`).
SOAK ?= 200
.PHONY: soak
soak: gpuledger
	@SOAK=$(SOAK) sh tests/faults_cli.sh ./gpuledger

# Mutation testing, not part of CI (slow): each deliberate bug of
# tests/mutate/mutations.txt is applied alone to a scratch copy of the tree
# and the suites it names must fail; prints the score and the survivors.
# `make mutate MUTATE=ID...` runs some only. mutatecheck runs first: a
# mutation whose text the code no longer has is found in a fraction of a
# second instead of after the build and the baseline.
.PHONY: mutate
mutate: mutatecheck gpuledger $(UNIT_TESTS)
	@nice sh tests/mutate/run.sh $(MUTATE)

# Every mutation of tests/mutate/mutations.txt still applies to the code
# (its file, its text, its suites; no build): in `make test`, so that a
# change that moves a mutated line fixes the list in the same commit.
mutatecheck:
	@sh tests/mutate/check.sh

# Benchmarks measure; tests never time anything. `make bench` runs
# tests/bench/run.sh: it installs what the benchmarks need (SQLite,
# PostgreSQL, wrk) when missing, sizes itself to finish in under 10 minutes
# on the 2-core machine, and prints one table. The knobs: events per append
# run (gpuledger and baselines), runs per figure (median, min-max), watch
# events of the default-mix and of the --all-gpu-pods stream, holders in the
# memory-per-holder state, seconds per wrk run, remaining-budget queries per
# run and store.
BENCH_EVENTS ?= 1000000
BENCH_RUNS ?= 3
BENCH_LINES ?= 500000
BENCH_GPU_LINES ?= 150000
BENCH_HOLDERS ?= 1000000
BENCH_SECS ?= 5
BENCH_QUERIES ?= 20000
# The cluster figures (DESIGN 10, 11): events fed per run in batches of 1
# and of 100 through a real 3-member etcd. `BENCH_ONLY=cluster make bench`
# runs the cluster's figures alone, BENCH_CLUSTER_PARTS="admission" (or feed,
# failover) some of them, and BENCH_QUICK=1 one short run of each (for
# development; run.sh lists every knob).
BENCH_CLUSTER_SINGLES ?= 300
BENCH_CLUSTER_EVENTS ?= 20000
BENCH_PKG := sqlite3 libpq
BENCH_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(BENCH_PKG) 2>/dev/null)
BENCH_LIBS := $(shell $(PKG_CONFIG) --libs $(BENCH_PKG) 2>/dev/null)
BENCH_COMPARE_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/bench/base_*.c) \
	tests/bench/bench_compare.c tests/ledger_gen.c)
BENCH_BIN := $(BUILD)/tests/bench_ledger $(BUILD)/tests/bench_compare \
	$(BUILD)/tests/bench_holders $(BUILD)/tests/bench_serve \
	$(BUILD)/tests/bench_holds

$(BUILD)/tests/bench_ledger: $(BUILD)/tests/bench/bench_ledger.o $(BUILD)/tests/ledger_gen.o $(BUILD)/libgpuledger.a
	$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(BUILD)/libgpuledger.a $(LDLIBS)

$(BENCH_COMPARE_OBJ): TEST_CFLAGS += $(BENCH_CFLAGS)
$(BUILD)/tests/bench_compare: $(BENCH_COMPARE_OBJ) $(BUILD)/libgpuledger.a
	$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(BUILD)/libgpuledger.a \
		$(BENCH_LIBS) $(LDLIBS)

$(BUILD)/tests/bench_holders: $(BUILD)/tests/bench/bench_holders.o $(BUILD)/libgpuledger.a
	$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(BUILD)/libgpuledger.a $(LDLIBS)

$(BUILD)/tests/bench_holds: $(BUILD)/tests/bench/bench_holds.o $(BUILD)/libgpuledger.a
	$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(BUILD)/libgpuledger.a $(LDLIBS)

$(BUILD)/tests/bench_serve: $(BUILD)/tests/bench/bench_serve.o $(BUILD)/tests/ledger_gen.o $(BUILD)/libgpuledger.a
	$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(BUILD)/libgpuledger.a $(LDLIBS)

bench: deps
	@BENCH_EVENTS=$(BENCH_EVENTS) BENCH_RUNS=$(BENCH_RUNS) \
	BENCH_LINES=$(BENCH_LINES) BENCH_GPU_LINES=$(BENCH_GPU_LINES) \
	BENCH_HOLDERS=$(BENCH_HOLDERS) BENCH_SECS=$(BENCH_SECS) \
	BENCH_QUERIES=$(BENCH_QUERIES) BUILD=$(BUILD) MAKE="$(MAKE)" \
	BENCH_CLUSTER_SINGLES=$(BENCH_CLUSTER_SINGLES) \
	BENCH_CLUSTER_EVENTS=$(BENCH_CLUSTER_EVENTS) \
	sh tests/bench/run.sh

# Builds what run.sh runs (a sub-make, after the packages are installed).
bench-build: gpuledger $(BENCH_BIN)

# The main job on an embedded default: a simulated cluster ingested into
# var/demo, served on 127.0.0.1:8420 (PORT=...; a free port, printed, when
# 8420 is taken), with commands to try.
run: deps
	@$(MAKE) --no-print-directory gpuledger
	@sh tools/demo.sh

# Man pages and bash completion, both made from the option tables the
# parser reads (SUB --help-man, SUB --completion-helper): they cannot drift.
MANDIR ?= $(PREFIX)/share/man
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
man: gpuledger
	@rm -rf build/man
	sh tools/manpages.sh ./gpuledger build/man

completion: gpuledger
	@mkdir -p build/completion
	sh tools/completion.sh ./gpuledger > build/completion/gpuledger

install: gpuledger man completion
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(COMPLETIONDIR)
	install -m 0755 $(BUILD)/gpuledger $(DESTDIR)$(BINDIR)/gpuledger
	install -m 0644 build/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 build/completion/gpuledger \
		$(DESTDIR)$(COMPLETIONDIR)/gpuledger

# ./gpuledger follows the flavour of the last make (tests/flavour_check.sh;
# builds both flavours when they are not built yet).
.PHONY: flavourcheck
flavourcheck:
	@sh tests/flavour_check.sh

# Layers: model <- ledger <- ingest, query <- cluster <- tools, model <-
# etcd <- cluster (etcd's v3 gateway client), and model <- sim <- tools
# (sim is the simulator; tools/ and the benchmarks use it). A layer may
# include only its own headers and those of the layers below it; foreign
# types stay home. The naming rules (internal prefix, narrow public headers)
# read the objects.
layercheck: gpuledger
	@sh tools/layercheck.sh $(BUILD)

# Every public header <m>/<m>.h compiles on its own.
headercheck:
	@set -e; for h in $(foreach l,$(LAYERS),$(wildcard $(l)/$(l).h)) \
		model/base.h model/jcs.h model/tlog.h; do \
		echo "#include \"$$h\"" | $(CC) $(ALL_CFLAGS) -x c -fsyntax-only - \
		|| { echo "headercheck: $$h is not self-contained"; exit 1; }; \
	done; echo "headercheck: ok"

# Layout is settled by .clang-format; run before committing.
format:
	clang-format -i $(wildcard $(foreach l,$(LAYERS) tests,$(l)/*.[ch]))

clean:
	rm -rf build gpuledger

-include $(shell find build -name '*.d' 2>/dev/null)

# querygate, built with PGXS.
#
# The version is EXTVERSION below, as pgvector keeps it: querygate.control is generated from it, and
# `make test` checks that META.json says the same.
EXTENSION = querygate
EXTVERSION = 0.1.0

PG_CONFIG ?= pg_config

MODULE_big = $(EXTENSION)
MODULEDIR = extension
DATA = $(wildcard extension/$(EXTENSION)--*.sql)
EXTRA_CLEAN = $(EXTENSION).control

# Sources live in folders that carry a rule (docs/architecture.md). The plain-C++ folders are
# compiled without PostgreSQL's include directories and with QUERYGATE_PLAIN_CXX defined, so a
# file there that includes a PostgreSQL header, directly or through one of ours, fails to build:
# the compiler is the boundary check.
PLAIN_DIRS = common http api auth rules
SRCS = $(sort $(wildcard src/*.cpp src/*/*.cpp))
OBJS = $(SRCS:.cpp=.o)
PLAIN_OBJS = $(filter $(addprefix src/,$(addsuffix /%,$(PLAIN_DIRS))),$(OBJS))
HEADERS = $(wildcard src/*/*.hpp)

PG_CPPFLAGS = -DQUERYGATE_VERSION=$(EXTVERSION) -Isrc
# Warnings are errors in `make test` and CI (WERROR=1); a plain `make` warns and still builds, so a
# newer compiler's new warnings never keep a user from building a release.
WERROR ?=
PG_CXXFLAGS = -std=c++17 -Wall -Wextra $(if $(WERROR),-Werror) -Wno-unused-parameter \
              -Wno-missing-field-initializers -Wno-register -fno-omit-frame-pointer
SHLIB_LINK = -lmicrohttpd -ljansson -lcrypto -lz -lstdc++

# pgTAP suites under pg_regress, on a temporary instance with the library preloaded (test/regress.conf).
REGRESS = $(sort $(notdir $(basename $(wildcard sql/*.sql))))
REGRESS_OPTS = --temp-instance=./tmp_check --temp-config=test/regress.conf --load-extension=pgtap

# Debian's PostgreSQL is built with LLVM and would also compile every source to bitcode with clang;
# querygate has nothing to JIT, so that step is turned off.
override with_llvm = no

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The plain folders see only our own headers and the system's.
PLAIN_CPPFLAGS = -Isrc -D_GNU_SOURCE -DQUERYGATE_PLAIN_CXX -DQUERYGATE_VERSION=$(EXTVERSION)
$(PLAIN_OBJS): override CPPFLAGS = $(PLAIN_CPPFLAGS)

$(EXTENSION).control: extension/$(EXTENSION).control.in Makefile
	sed 's/@VERSION@/$(EXTVERSION)/' $< > $@

$(OBJS): $(HEADERS)

.PHONY: test test-cassert test-valgrind test-sanitize test-citus warm-cache run bench deps print-plain-cppflags print-plain-sources print-version
# Installs what is missing, builds with warnings as errors, and runs every suite; ends with
# "N passed, N failed".
test:
	test/run

# The same suites against PostgreSQL 15 of Debian's version built with assertions from Debian's
# source package, once per version, into /var/cache/querygate (scripts/build-pg prints its
# pg_config on its last line; --enable-cassert, -O1 -g, USE_VALGRIND): as it is; with every server
# under Valgrind; or with the extension built with AddressSanitizer and UndefinedBehaviorSanitizer
# (clang 14) and their runtime preloaded into the servers. Each report of Valgrind or a sanitizer
# is a failure.
test-cassert:
	pg_config=$$(scripts/build-pg cassert) && PG_CONFIG="$$(echo "$$pg_config" | tail -n 1)" test/run
test-valgrind:
	pg_config=$$(scripts/build-pg cassert) && PG_CONFIG="$$(echo "$$pg_config" | tail -n 1)" QUERYGATE_VALGRIND=1 test/run
test-sanitize:
	pg_config=$$(scripts/build-pg cassert) && PG_CONFIG="$$(echo "$$pg_config" | tail -n 1)" QUERYGATE_SANITIZE=1 test/run
# Starts the cached builds above and Citus's in the background and returns (scripts/warm-cache):
# the first thing to do on a new machine.
warm-cache:
	scripts/warm-cache
# Builds Citus (once, cached) from its source and runs the Citus suite (docs/scaling.md, Citus).
test-citus:
	scripts/build-citus && FUZZ_SECONDS=0 REGRESS_TESTS=keys PROVE_TESTS=test/t/processes_065_citus.pl test/run

# A throwaway local cluster with the library preloaded, a small demo, and curl lines to paste.
run:
	scripts/run-demo

bench:
	bench/run

deps:
	scripts/install-deps

# For the test scripts: how a plain-C++ file is compiled, which files are plain, and the version.
print-plain-cppflags:
	@echo '$(PLAIN_CPPFLAGS)'
print-plain-sources:
	@echo '$(filter $(addprefix src/,$(addsuffix /%,$(PLAIN_DIRS))),$(SRCS))'
print-version:
	@echo '$(EXTVERSION)'

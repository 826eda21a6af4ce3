# querygate: built with PGXS. The version lives in META.json only (EXT_VERSION: PGXS owns VERSION);
# from it and the compiler receives it as QUERYGATE_VERSION.
PG_CONFIG ?= pg_config

EXT_VERSION := $(shell sed -n 's/^  "version": "\([^"]*\)",/\1/p' META.json)
ifeq ($(EXT_VERSION),)
$(error could not read the version from META.json)
endif

MODULE_big = querygate
SRCS = $(sort $(wildcard src/*.cpp))
OBJS = $(SRCS:.cpp=.o)
MODULEDIR = extension
DATA = $(wildcard extension/querygate--*.sql)
DATA_built = extension/querygate.control

PG_CPPFLAGS = -DQUERYGATE_VERSION='"$(EXT_VERSION)"' -Isrc
# Warnings are errors in every build, not only in CI: a warning left today is a bug found later.
PG_CXXFLAGS = -std=c++17 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -Wno-register \
              -fno-omit-frame-pointer
SHLIB_LINK = -lmicrohttpd -ljansson -lcrypto -lstdc++

# pgTAP suites under pg_regress, on a temporary instance with the library preloaded (test/regress.conf).
REGRESS = $(sort $(notdir $(basename $(wildcard sql/*.sql))))
REGRESS_OPTS = --temp-instance=./tmp_check --temp-config=test/regress.conf --load-extension=pgtap

# Debian's PostgreSQL is built with LLVM and would also compile every source to bitcode with clang;
# querygate has nothing to JIT, so that step is turned off.
override with_llvm = no

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

extension/querygate.control: extension/querygate.control.in META.json
	sed 's/@VERSION@/$(EXT_VERSION)/' $< > $@

$(OBJS): $(wildcard src/*.hpp)

.PHONY: test run bench deps
# Installs what is missing, builds, and runs every suite; ends with "N passed, N failed".
test:
	test/run

# A throwaway local cluster with the library preloaded, a small demo, and curl lines to paste.
run:
	scripts/run-demo

bench:
	bench/run

deps:
	scripts/install-deps

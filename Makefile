# hookprof - plain GNU make.
#   make                 runtime, hooks and the hookprof tool, in build/
#   make demo            profile the bundled example (installs what it needs)
#   make check           unit and end-to-end tests (installs what it needs)
#   make bench           overhead, size and speed against the floor and uftrace
#   make fuzz            libFuzzer target of the trace reader (clang), build/fuzz/fuzz_trace
#   make install PREFIX=/usr/local DESTDIR=
#   make clean

PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
CFLAGS ?= -O2 -g
BUILD := build
VERSION := 0.1.0

# The runtime must never be instrumented itself, whatever CFLAGS says.
HP_CFLAGS := -std=gnu11 -Wall -Wextra -Wshadow -pthread -MMD -MP -fno-instrument-functions
LIB_CFLAGS := $(HP_CFLAGS) -fPIC -fvisibility=hidden
SYM_LIBS := -ldw -lelf -lstdc++

LIB_SRC := $(wildcard lib/*.c) $(wildcard hooks/*.c)
SYM_SRC := $(wildcard symbolize/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
# The interposed C library functions would clash with libc.a's in a -static link.
ARCHIVE_OBJ := $(filter-out $(BUILD)/lib/hp_interpose.o,$(LIB_OBJ))
SYM_OBJ := $(SYM_SRC:%.c=$(BUILD)/%.o)
SYM_LIB_OBJ := $(filter-out $(BUILD)/symbolize/main.o,$(SYM_OBJ))
UNIT_SRC := $(wildcard tests/check_*.c)
UNIT_BIN := $(UNIT_SRC:tests/%.c=$(BUILD)/tests/%)
# Helpers the unit tests share: linked into each of them, never into the library.
TESTKIT_OBJ := $(BUILD)/tests/testkit.o

all: $(BUILD)/libhookprof.so $(BUILD)/libhookprof.a $(BUILD)/hookprof

$(BUILD)/lib/%.o $(BUILD)/hooks/%.o: CFLAGS_EXTRA = $(LIB_CFLAGS)
$(BUILD)/symbolize/%.o $(BUILD)/tests/%.o: CFLAGS_EXTRA = $(HP_CFLAGS) -Ilib

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CFLAGS_EXTRA) -c $< -o $@

# -z nodelete: dlclose of an object that pulled us in must not unmap the
# signal handlers and the thread-exit destructor we installed.
$(BUILD)/libhookprof.so: $(LIB_OBJ)
	$(CC) $(CFLAGS) -shared -pthread -Wl,-soname,libhookprof.so -Wl,-z,defs -Wl,-z,nodelete -o $@ $^

$(BUILD)/libhookprof.a: $(ARCHIVE_OBJ)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/hookprof: $(SYM_OBJ) $(BUILD)/lib/hp_config.o
	$(CC) $(CFLAGS) -pthread -o $@ $(SYM_OBJ) $(BUILD)/lib/hp_config.o $(SYM_LIBS)

$(BUILD)/tests/check_%: $(BUILD)/tests/check_%.o $(TESTKIT_OBJ) $(SYM_LIB_OBJ) $(BUILD)/libhookprof.a
	$(CC) $(CFLAGS) -pthread -o $@ $< $(TESTKIT_OBJ) $(SYM_LIB_OBJ) $(BUILD)/libhookprof.a $(SYM_LIBS) -lcheck -lsubunit -lm -lrt

# The reader, decoder and profile under libFuzzer, ASan and UBSan; no
# symbol lookup. tests/fuzz/run.sh runs it.
FUZZ_CC ?= clang
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_SRC := tests/fuzz/fuzz_trace.c symbolize/hp_trace.c symbolize/hp_decode.c \
	symbolize/hp_opencount.c symbolize/hp_analyze.c symbolize/hp_profile.c

fuzz: $(BUILD)/fuzz/fuzz_trace

$(BUILD)/fuzz/fuzz_trace: $(FUZZ_SRC) $(wildcard symbolize/*.h) lib/hp_format.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -std=gnu11 -Wall -Wextra -Ilib -o $@ $(FUZZ_SRC)

deps:
	@scripts/deps.sh

demo: deps all
	@examples/demo.sh

check: deps all $(UNIT_BIN)
	@tests/run.sh $(UNIT_BIN)

bench: deps all
	@tests/bench/bench.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 755 $(BUILD)/hookprof $(DESTDIR)$(PREFIX)/bin/hookprof
	install -m 755 $(BUILD)/libhookprof.so $(DESTDIR)$(PREFIX)/lib/libhookprof.so
	install -m 644 $(BUILD)/libhookprof.a $(DESTDIR)$(PREFIX)/lib/libhookprof.a
	install -m 644 include/hookprof.h $(DESTDIR)$(PREFIX)/include/hookprof.h
	# Made here, not in all: it must name the PREFIX of this install.
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' hookprof.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/hookprof.pc
	chmod 644 $(DESTDIR)$(PREFIX)/lib/pkgconfig/hookprof.pc

clean:
	rm -rf $(BUILD)

.PHONY: all deps demo check bench fuzz install clean
.SECONDARY:

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

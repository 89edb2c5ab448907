# hookprof - plain GNU make.
#   make                 runtime, hooks and the hookprof tool, in build/
#   make demo            profile the bundled example (installs what it needs)
#   make check           unit and end-to-end tests (installs what it needs)
#   make check-asan      the same under AddressSanitizer+UBSan, built in build-asan/
#   make check-tsan      the concurrent modules' unit tests and the e2e tests under
#                        ThreadSanitizer, built in build-tsan/ (docs/testing.md)
#   make bench           overhead, size and speed against the floor and uftrace;
#                        fidelity: self-time shares against perf sampling
#   make fuzz            libFuzzer target of the trace reader (clang), build/fuzz/fuzz_trace
#   make windows         hookprof.dll, its import libraries and libhookprof.a for Windows
#                        x64, and the Windows test programs, cross-built with mingw-w64
#                        into build/win (docs/windows.md); the tests run under Wine
#   make install PREFIX=/usr/local DESTDIR=
#   make clean           (build/ and the sanitizer builds)

PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
CFLAGS ?= -O2 -g
BUILD ?= build
# Added to every compile and link line: the sanitizer builds set it.
SAN_FLAGS ?=
VERSION := 0.1.0

# The runtime must never be instrumented itself, whatever CFLAGS says.
HP_CFLAGS := -std=gnu11 -Wall -Wextra -Wshadow -pthread -MMD -MP -fno-instrument-functions
LIB_CFLAGS := $(HP_CFLAGS) -fPIC -fvisibility=hidden
# protobuf-c writes the pprof and Perfetto exports, zlib gzips the pprof one.
SYM_LIBS := -ldw -lelf -lstdc++ -lprotobuf-c -lz -lm
# Crash backtraces and thread root stacks (lib/hp_unwind.c); users of
# libhookprof.a link it too (hookprof.pc's Libs.private).
UNWIND_LIBS := -lunwind

# lib/ is split by the platform interface (lib/hp_platform.h): the portable
# files, the Linux-only ones, and hp_platform_win.c, which only the Windows
# build compiles.
LIB_LINUX_ONLY := lib/hp_platform_linux.c lib/hp_unwind.c lib/hp_interpose.c lib/hp_interpose_fd.c \
	lib/hp_interpose_proc.c
LIB_PORTABLE := $(filter-out $(LIB_LINUX_ONLY) lib/hp_platform_win.c,$(wildcard lib/*.c))
LIB_SRC := $(LIB_PORTABLE) $(LIB_LINUX_ONLY) $(wildcard hooks/*.c)
SYM_SRC := $(wildcard symbolize/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
# The interposed C library functions would clash with libc.a's in a -static link.
ARCHIVE_OBJ := $(filter-out $(BUILD)/lib/hp_interpose.o $(BUILD)/lib/hp_interpose_fd.o $(BUILD)/lib/hp_interpose_proc.o,$(LIB_OBJ))
# The C code of the exports' .proto files, made by protoc-c at build time:
# pprof's profile.proto as Debian's pprof package ships it, and the few
# messages of Perfetto's trace format that the perfetto export writes.
GEN := $(BUILD)/gen
PPROF_PROTO ?= /usr/share/gocode/src/github.com/google/pprof/proto/profile.proto
PROTOC_C ?= protoc-c
GEN_SRC := $(GEN)/profile.pb-c.c $(GEN)/hp_perfetto.pb-c.c
GEN_OBJ := $(GEN_SRC:.c=.o)
SYM_OBJ := $(SYM_SRC:%.c=$(BUILD)/%.o) $(GEN_OBJ)
SYM_LIB_OBJ := $(filter-out $(BUILD)/symbolize/main.o,$(SYM_OBJ))
UNIT_SRC := $(wildcard tests/check_*.c)
UNIT_BIN := $(UNIT_SRC:tests/%.c=$(BUILD)/tests/%)
# Helpers the unit tests share: linked into each of them, never into the library.
TESTKIT_OBJ := $(BUILD)/tests/testkit.o

all: $(BUILD)/libhookprof.so $(BUILD)/libhookprof.a $(BUILD)/hookprof

$(BUILD)/lib/%.o $(BUILD)/hooks/%.o: CFLAGS_EXTRA = $(LIB_CFLAGS)
$(BUILD)/symbolize/%.o $(BUILD)/tests/%.o: CFLAGS_EXTRA = $(HP_CFLAGS) -Ilib -I$(GEN)
# The generated code is protoc-c's, not ours to warn about.
$(GEN)/%.o: CFLAGS_EXTRA = -std=gnu11 -pthread -MMD -MP -fno-instrument-functions -I$(GEN)

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN_FLAGS) $(CFLAGS_EXTRA) -c $< -o $@

$(GEN)/profile.pb-c.c $(GEN)/profile.pb-c.h &: $(PPROF_PROTO)
	@mkdir -p $(@D)
	$(PROTOC_C) --c_out=$(GEN) -I$(dir $(PPROF_PROTO)) $(PPROF_PROTO)

$(GEN)/hp_perfetto.pb-c.c $(GEN)/hp_perfetto.pb-c.h &: symbolize/hp_perfetto.proto
	@mkdir -p $(@D)
	$(PROTOC_C) --c_out=$(GEN) -Isymbolize symbolize/hp_perfetto.proto

$(GEN)/%.o: $(GEN)/%.c
	$(CC) $(CFLAGS) $(SAN_FLAGS) $(CFLAGS_EXTRA) -c $< -o $@

# The views include the generated headers: they must exist before the
# first compile (later, the .d files know).
$(BUILD)/symbolize/hp_view_pprof.o: $(GEN)/profile.pb-c.h
$(BUILD)/symbolize/hp_view_perfetto.o: $(GEN)/hp_perfetto.pb-c.h

# -z nodelete: dlclose of an object that pulled us in must not unmap the
# signal handlers and the thread-exit destructor we installed.
$(BUILD)/libhookprof.so: $(LIB_OBJ)
	$(CC) $(CFLAGS) $(SAN_FLAGS) -shared -pthread -Wl,-soname,libhookprof.so -Wl,-z,defs -Wl,-z,nodelete -o $@ $^ $(UNWIND_LIBS)

$(BUILD)/libhookprof.a: $(ARCHIVE_OBJ)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/hookprof: $(SYM_OBJ) $(BUILD)/lib/hp_config.o
	$(CC) $(CFLAGS) $(SAN_FLAGS) -pthread -o $@ $(SYM_OBJ) $(BUILD)/lib/hp_config.o $(SYM_LIBS)

$(BUILD)/tests/check_%: $(BUILD)/tests/check_%.o $(TESTKIT_OBJ) $(SYM_LIB_OBJ) $(BUILD)/libhookprof.a
	$(CC) $(CFLAGS) $(SAN_FLAGS) -pthread -o $@ $< $(TESTKIT_OBJ) $(SYM_LIB_OBJ) $(BUILD)/libhookprof.a $(UNWIND_LIBS) $(SYM_LIBS) -lcheck -lsubunit -lm -lrt

# The encoder alone, ns per event (make bench runs it).
$(BUILD)/encode_bench: tests/bench/encode_bench.c $(BUILD)/libhookprof.a
	$(CC) $(CFLAGS) $(HP_CFLAGS) -Ilib -o $@ $< $(BUILD)/libhookprof.a $(UNWIND_LIBS)

# The reader, decoder and profile under libFuzzer, ASan and UBSan; no
# symbol lookup. tests/fuzz/run.sh runs it.
FUZZ_CC ?= clang
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_SRC := tests/fuzz/fuzz_trace.c symbolize/hp_trace.c symbolize/hp_decode.c \
	symbolize/hp_opencount.c symbolize/hp_analyze.c symbolize/hp_profile.c symbolize/hp_funcmap.c \
	symbolize/hp_merge.c symbolize/hp_pause.c

fuzz: $(BUILD)/fuzz/fuzz_trace

$(BUILD)/fuzz/fuzz_trace: $(FUZZ_SRC) $(wildcard symbolize/*.h) lib/hp_format.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -std=gnu11 -Wall -Wextra -Ilib -o $@ $(FUZZ_SRC)

# Windows x64 (docs/windows.md), cross-built with mingw-w64 into $(WIN):
# hookprof.dll with its import libraries (libhookprof.dll.a for mingw,
# hookprof.lib for MSVC's linker) and the static libhookprof.a, from the
# portable runtime, lib/hp_platform_win.c, lib/win/ and the hooks; and the
# test programs of tests/win, which the e2e section 89 runs under Wine
# (it builds them with WIN=<its directory>).
MINGW_CC ?= x86_64-w64-mingw32-gcc
MINGW_AR ?= x86_64-w64-mingw32-ar
MINGW_DLLTOOL ?= x86_64-w64-mingw32-dlltool
WIN ?= $(BUILD)/win
# The runtime's compiler: clang for the mingw-w64 target when there is one
# (scripts/deps.sh installs it), as its __thread is native TLS; mingw-w64's
# gcc emulates it (a call into libgcc, and three into kernel32, for each
# access: one per hook), and its hooks cost nearly twice as much
# (docs/windows.md). make windows WIN_RT_CC=x86_64-w64-mingw32-gcc takes gcc.
ifeq ($(origin WIN_RT_CC),undefined)
WIN_RT_CC := $(if $(shell command -v clang 2>/dev/null),clang --target=x86_64-w64-mingw32,$(MINGW_CC))
endif
# Objects of each compiler apart: their TLS does not mix in one DLL.
WIN_OBJ := $(WIN)/obj-$(notdir $(firstword $(WIN_RT_CC)))
# mingw's own printf family: the runtime's messages use %zu and %llu.
# clang knows neither gnu_printf nor -fno-instrument-functions (its default).
WIN_RT_CFLAGS := -O2 -g -std=gnu11 -Wall -Wextra -Wshadow -MMD -MP -D__USE_MINGW_ANSI_STDIO=1 -Ilib \
	$(if $(findstring clang,$(WIN_RT_CC)),-Wno-ignored-attributes -Wno-dll-attribute-on-redeclaration,-fno-instrument-functions)
WIN_RT_SRC := $(LIB_PORTABLE) lib/hp_platform_win.c $(wildcard lib/win/*.c) hooks/hp_cyg_profile.c
WIN_RT_OBJ := $(WIN_RT_SRC:%.c=$(WIN_OBJ)/%.o) $(WIN_OBJ)/hooks/hp_penter_win64.o
# WaitOnAddress, NtQueryInformationProcess; no libgcc DLL to ship beside
# the programs.
WIN_RT_LIBS := -lsynchronization -lntdll -static-libgcc
WIN_CFLAGS := -O1 -g -Wall -Wextra -Itests/win -Iinclude
WIN_LDFLAGS := -static-libgcc

$(WIN_OBJ)/%.o: %.c
	@mkdir -p $(@D)
	$(WIN_RT_CC) $(WIN_RT_CFLAGS) -c $< -o $@
$(WIN_OBJ)/hooks/hp_penter_win64.o: hooks/hp_penter_win64.S
	@mkdir -p $(@D)
	$(MINGW_CC) -c $< -o $@

$(WIN)/hookprof.dll $(WIN)/libhookprof.dll.a &: $(WIN_RT_OBJ) lib/win/hookprof.def
	$(MINGW_CC) -shared -o $(WIN)/hookprof.dll $(WIN_RT_OBJ) lib/win/hookprof.def \
		-Wl,--out-implib,$(WIN)/libhookprof.dll.a $(WIN_RT_LIBS)
# The import library MSVC's link.exe takes (/Gh /GH code calls _penter/_pexit).
$(WIN)/hookprof.lib: lib/win/hookprof.def
	@mkdir -p $(@D)
	$(MINGW_DLLTOOL) -d $< -D hookprof.dll -l $@
# Linked into an executable: its users link -lsynchronization -lntdll too.
$(WIN)/libhookprof.a: $(WIN_RT_OBJ)
	rm -f $@
	$(MINGW_AR) rcs $@ $^

# The hooks in front of a C callee that clobbers every volatile register
# (tests/win/clobber_hooks.c): penter_clobber.exe shows the hooks keep them
# whatever the C behind them does.
$(WIN)/clobber.dll: tests/win/clobber_hooks.c hooks/hp_penter_win64.S hooks/hp_win_hooks.h
	@mkdir -p $(@D)
	$(MINGW_CC) $(WIN_CFLAGS) -fno-instrument-functions -shared -o $@ tests/win/clobber_hooks.c \
		hooks/hp_penter_win64.S $(WIN_LDFLAGS) -Wl,--out-implib,$(WIN)/libclobber.dll.a
PROBE_SRC := tests/win/penter_probe.c tests/win/penter_probe_asm.S tests/win/probe_fib_asm.S
$(WIN)/penter_clobber.exe: $(PROBE_SRC) tests/win/hook_bench.h $(WIN)/clobber.dll
	$(MINGW_CC) $(WIN_CFLAGS) -o $@ $(PROBE_SRC) $(WIN_LDFLAGS) -L$(WIN) -lclobber
$(WIN)/penter_probe.exe: $(PROBE_SRC) tests/win/hook_bench.h $(WIN)/hookprof.dll
	$(MINGW_CC) $(WIN_CFLAGS) -o $@ $(PROBE_SRC) $(WIN_LDFLAGS) -L$(WIN) -lhookprof
# --build-id: a CodeView record (GUID and age) that identifies the build.
$(WIN)/winprog.exe: tests/win/winprog.c $(WIN)/hookprof.dll
	$(MINGW_CC) $(WIN_CFLAGS) -finstrument-functions -Wl,--build-id -o $@ $< $(WIN_LDFLAGS) -L$(WIN) -lhookprof
# The same, with the runtime linked in (libhookprof.a, not the DLL).
$(WIN)/winprog_static.exe: tests/win/winprog.c $(WIN)/libhookprof.a
	$(MINGW_CC) $(WIN_CFLAGS) -finstrument-functions -Wl,--build-id -o $@ $< $(WIN_LDFLAGS) \
		$(WIN)/libhookprof.a -lsynchronization -lntdll
# Without -g: its names come from the COFF symbol table.
$(WIN)/winplug.dll: tests/win/winplug.c $(WIN)/hookprof.dll
	$(MINGW_CC) -O1 -Wall -finstrument-functions -shared -o $@ $< $(WIN_LDFLAGS) -L$(WIN) -lhookprof
$(WIN)/wincrash.exe: tests/win/wincrash.c $(WIN)/hookprof.dll
	$(MINGW_CC) $(WIN_CFLAGS) -finstrument-functions -Wl,--build-id -o $@ $< $(WIN_LDFLAGS) -L$(WIN) -lhookprof
$(WIN)/winexit.exe: tests/win/winexit.c $(WIN)/hookprof.dll
	$(MINGW_CC) $(WIN_CFLAGS) -finstrument-functions -Wl,--build-id -o $@ $< $(WIN_LDFLAGS) -L$(WIN) -lhookprof
$(WIN)/winbench.exe: tests/win/winbench.c tests/win/hook_bench.h $(WIN)/hookprof.dll
	$(MINGW_CC) -O2 -g -Wall -finstrument-functions -o $@ $< $(WIN_LDFLAGS) -L$(WIN) -lhookprof
# Built the MSVC way, with a PDB (clang and lld-link; not part of `windows`).
$(WIN)/msvcmod.dll: tests/win/msvcmod.c
	@mkdir -p $(@D)
	clang --target=x86_64-pc-windows-msvc -O1 -g -gcodeview -finstrument-functions -c $< -o $(WIN)/msvcmod.obj
	lld-link /nologo /dll /noentry /nodefaultlib /debug /pdb:$(WIN)/msvcmod.pdb /out:$@ $(WIN)/msvcmod.obj

# A DLL's function as MSVC's /Gh /GH compiles it, linked by lld-link
# against hookprof.lib as an MSVC program would be (not part of `windows`).
$(WIN)/msvcgh.dll: tests/win/probe_fib_asm.S $(WIN)/hookprof.lib
	clang --target=x86_64-pc-windows-msvc -c $< -o $(WIN)/msvcgh.obj
	lld-link /nologo /dll /noentry /nodefaultlib /debug /pdb:$(WIN)/msvcgh.pdb /export:probe_fib /out:$@ \
		$(WIN)/msvcgh.obj $(WIN)/hookprof.lib

windows: $(WIN)/hookprof.dll $(WIN)/hookprof.lib $(WIN)/libhookprof.a $(WIN)/penter_probe.exe \
	$(WIN)/penter_clobber.exe $(WIN)/winprog.exe $(WIN)/winprog_static.exe $(WIN)/winplug.dll \
	$(WIN)/wincrash.exe $(WIN)/winexit.exe $(WIN)/winbench.exe

deps:
	@scripts/deps.sh

demo: deps all
	@examples/demo.sh

check: deps all $(UNIT_BIN)
	@HOOKPROF_BUILD=$(BUILD) tests/run.sh $(UNIT_BIN)

# Sanitizer builds (docs/testing.md): each in its own directory, its unit
# tests and the e2e tests run against it, the sample programs built with the
# same sanitizer (the runtime lives inside them).
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# The sample programs: no null check, which would stop ending.c's deliberate
# null store before it is a SIGSEGV (UBSan must be linked: libhookprof.a).
ASAN_E2E_FLAGS := -fsanitize=address,undefined -fno-sanitize=null -fno-omit-frame-pointer
TSAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer
# verify_asan_link_order=0: the runtime is preloaded in front of the ASan
# runtime the programs link; harmless, as it defines none of the functions
# ASan intercepts but exit and dlclose, which call the next definition.
# handle_segv=0: ASan's own SIGSEGV handler would keep the runtime from
# installing its own, which writes the trace of a crashing program.
ASAN_ENV := ASAN_OPTIONS=verify_asan_link_order=0:handle_segv=0:detect_leaks=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# handle_segv=0: as for ASan. die_after_fork=0: a forked child starts a
# writer thread of its own, by design; TSan refuses any thread started in
# the child of a multi-threaded parent unless told not to.
TSAN_ENV := TSAN_OPTIONS=suppressions=$(CURDIR)/tests/tsan.supp:handle_segv=0:exitcode=66:second_deadlock_stack=1:die_after_fork=0
# The unit tests of the modules that run concurrently.
TSAN_UNITS := buffer writer runtime platform output

# SAN_FLAGS in the tests' environment: the e2e tests' `make install` must
# build (if at all) with the same flags.
check-asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan SAN_FLAGS='$(ASAN_FLAGS)' all $(UNIT_BIN:$(BUILD)/%=build-asan/%)
	@$(ASAN_ENV) SAN_FLAGS='$(ASAN_FLAGS)' HOOKPROF_SANITIZER=address HOOKPROF_E2E_CFLAGS='$(ASAN_E2E_FLAGS)' \
		HOOKPROF_BUILD=build-asan tests/run.sh $(UNIT_BIN:$(BUILD)/%=build-asan/%)

check-tsan: deps
	@$(MAKE) --no-print-directory BUILD=build-tsan SAN_FLAGS='$(TSAN_FLAGS)' all $(TSAN_UNITS:%=build-tsan/tests/check_%)
	@$(TSAN_ENV) SAN_FLAGS='$(TSAN_FLAGS)' HOOKPROF_SANITIZER=thread HOOKPROF_E2E_CFLAGS='$(TSAN_FLAGS)' \
		HOOKPROF_BUILD=build-tsan tests/run.sh $(TSAN_UNITS:%=build-tsan/tests/check_%)

bench: deps all $(BUILD)/encode_bench
	@$(BUILD)/encode_bench
	@tests/bench/bench.sh
	@tests/bench/fidelity.sh

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
	rm -rf $(BUILD) build-asan build-tsan

.PHONY: all deps demo check check-asan check-tsan bench fuzz windows install clean
.SECONDARY:

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

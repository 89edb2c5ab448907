#!/bin/sh
# Installs, from Debian's packages, what building and testing hookprof needs,
# if it is not there yet. Runs apt-get as root, or through sudo.
set -e
need=""
have_header() { printf '#include <%s>\n' "$1" | cc -E -x c - >/dev/null 2>&1; }
have_header elfutils/libdwfl.h || need="$need libdw-dev libelf-dev"
have_header check.h || need="$need check"
have_header libunwind.h || need="$need libunwind-dev"
# libc's local symbols (start_thread, __libc_start_call_main) for the
# crash backtraces and root stacks the e2e tests name.
if command -v dpkg-query >/dev/null 2>&1; then
	dpkg-query -W -f='${Status}' libc6-dbg 2>/dev/null | grep -q 'ok installed' || need="$need libc6-dbg"
fi
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
command -v g++ >/dev/null 2>&1 || need="$need g++"
command -v clang >/dev/null 2>&1 || need="$need clang"
# The pprof and Perfetto exports: protobuf-c and its code generator, zlib
# for the gzip, pprof's profile.proto from Debian's pprof package.
have_header protobuf-c/protobuf-c.h || need="$need libprotobuf-c-dev"
command -v protoc-c >/dev/null 2>&1 || need="$need protobuf-c-compiler"
have_header zlib.h || need="$need zlib1g-dev"
[ -e /usr/share/gocode/src/github.com/google/pprof/proto/profile.proto ] ||
	need="$need golang-github-google-pprof-dev"
# The tools the e2e tests read the exports back with, as their users do:
# callgrind_annotate, go tool pprof, protoc --decode.
command -v callgrind_annotate >/dev/null 2>&1 || need="$need valgrind"
command -v go >/dev/null 2>&1 || need="$need golang-go"
command -v protoc >/dev/null 2>&1 || need="$need protobuf-compiler"
# The e2e tests read the JSON exports back with it (tests/e2e/sections/92-json-exports.sh).
command -v python3 >/dev/null 2>&1 || need="$need python3"
# The e2e tests count a failing mmap's retries with it.
command -v strace >/dev/null 2>&1 || need="$need strace"
# libFuzzer (make fuzz): Debian has it in libclang-rt-dev, only recommended by clang.
have_libfuzzer() {
	printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n; }\n' |
		clang -fsanitize=fuzzer -x c - -o /dev/null >/dev/null 2>&1
}
have_libfuzzer || need="$need libclang-rt-dev"
# Windows (docs/windows.md, e2e section 89): mingw-w64 cross-builds the test
# programs, Wine runs them; llvm-symbolizer reads PDBs, lld-link makes one.
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || need="$need gcc-mingw-w64-x86-64"
command -v wine >/dev/null 2>&1 || need="$need wine wine64"
command -v llvm-symbolizer >/dev/null 2>&1 || need="$need llvm"
command -v lld-link >/dev/null 2>&1 || need="$need lld"
[ -n "$need" ] || exit 0
echo "hookprof: installing$need" >&2
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends build-essential $need >/dev/null

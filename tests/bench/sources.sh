# sources.sh - real programs for the bench, from Debian's source packages:
# zlib's minigzip and the Lua 5.4 interpreter. Sourced by fidelity.sh.
# Downloaded once with apt-get source (a private deb-src list: the machine's
# own apt settings are left alone) into $BENCH_SRC (default
# build/bench-src); built with the caller's flags.

src_dir=${BENCH_SRC:-$root/build/bench-src}

# fetch_source PKG: PKG's upstream tarball unpacked in $src_dir/PKG, or 1.
fetch_source() {
	local pkg=$1 apt=$src_dir/apt
	[ -d "$src_dir/$pkg" ] && return 0
	mkdir -p "$apt/lists/partial" "$src_dir/dl" || return 1
	printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		>"$apt/src.sources"
	local o=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$apt" -o Dir::State::Lists="$apt/lists")
	[ -n "$(ls "$apt/lists" 2>/dev/null | grep -v partial)" ] ||
		apt-get "${o[@]}" update >/dev/null 2>&1 || return 1
	(cd "$src_dir/dl" && apt-get "${o[@]}" source --download-only "$pkg" >/dev/null 2>&1) || return 1
	local tarball
	tarball=$(ls "$src_dir/dl/${pkg}_"*.orig.tar.* 2>/dev/null | head -n 1)
	[ -n "$tarball" ] || return 1
	mkdir -p "$src_dir/$pkg.tmp" && tar xf "$tarball" -C "$src_dir/$pkg.tmp" &&
		mv "$src_dir/$pkg.tmp"/* "$src_dir/$pkg" && rmdir "$src_dir/$pkg.tmp"
}

# build_minigzip OUT FLAGS...: zlib and its test/minigzip.c in one program.
build_minigzip() {
	local out=$1 z=$src_dir/zlib
	shift
	fetch_source zlib || return 1
	(cd "$z" && "$cc" "$@" -DHAVE_UNISTD_H -DHAVE_STDARG_H -I. adler32.c compress.c crc32.c deflate.c \
		gzclose.c gzlib.c gzread.c gzwrite.c infback.c inffast.c inflate.c inftrees.c trees.c \
		uncompr.c zutil.c test/minigzip.c -o "$out") >/dev/null 2>&1
}

# build_lua OUT FLAGS...: the interpreter (src/*.c but luac.c).
build_lua() {
	local out=$1 l=$src_dir/lua5.4
	shift
	fetch_source lua5.4 || return 1
	(cd "$l/src" && "$cc" "$@" -DLUA_USE_LINUX $(ls ./*.c | grep -v luac.c) -o "$out" -lm -ldl) >/dev/null 2>&1
}

# minigzip_input FILE: 16 MiB of text, the same every time (words drawn by
# a fixed linear congruential generator).
minigzip_input() {
	[ -s "$1" ] && return 0
	awk 'BEGIN { x = 12345; n = split("the of and to in is that for it as with was on be by at this from or an are not have which but had his they were", w, " ")
		while (bytes < 16777216) { line = ""
			for (i = 0; i < 12; i++) { x = (x * 1103515245 + 12345) % 2147483648; line = line w[1 + int(x / 65536) % n] (x % 7 ? " " : ", ") }
			print line; bytes += length(line) + 1 } }' >"$1"
}

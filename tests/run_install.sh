#!/bin/bash
# run_install.sh BUILD: `make install` of BUILD into a temporary prefix (with
# an INCLUDEDIR of its own), then what an embedder does with it:
# libwsfuse.so exports only wsf_* (nm -D) and libwsfuse.a defines no other
# global (nm); tests/install/clash.c, with functions named as the library's
# internals and libyaml's, links statically and runs; tests/install/hello.c
# builds through pkg-config with only wsfuse.pc to read, shared and static,
# and through CMake's find_package(wsfuse) after the tree has moved, and
# each program runs.
# Each case counts once; a missing tool (nm, pkg-config, cmake) skips the
# cases that need it, and a sanitized build skips them all (its library
# needs the sanitizer runtimes; make test runs them).
# Ends with "N passed, N failed[, N skipped]".
set -u
b=${1:?usage: run_install.sh BUILD}
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL install: $1: $2"; }
skipped() { skip=$((skip + $1)); echo "skipped install: $2"; }
finish() {
	echo "$pass passed, $fail failed$([ $skip -gt 0 ] && echo ", $skip skipped")"
	exit $((fail > 0))
}

if nm -D "$b/libwsfuse.so" 2>/dev/null | grep -q __asan_; then
	skipped 9 "$b is a sanitized build"
	finish
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT; [ -n "${KEEP:-}" ] && trap - EXIT
p=$tmp/prefix
version=$(sed -n 's/^#define WSF_VERSION_STRING "\(.*\)"$/\1/p' include/wsfuse.h)
want="$version hello"

# -o all: install what BUILD holds, never rebuild it (with other flags)
if ! env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory -o all B="$b" PREFIX="$p" \
	INCLUDEDIR="$p/include/wsfuse" install >"$tmp/log" 2>&1; then
	bad "make install" "$(tail -n 5 "$tmp/log")"
	finish
fi
for f in bin/wsfuse include/wsfuse/wsfuse.h lib/libwsfuse.a "lib/libwsfuse.so.$version" \
	lib/libwsfuse.so.0 lib/libwsfuse.so lib/pkgconfig/wsfuse.pc \
	lib/cmake/wsfuse/wsfuse-config.cmake lib/cmake/wsfuse/wsfuse-config-version.cmake; do
	[ -e "$p/$f" ] || { bad "make install" "no $f"; finish; }
done
ok

# runs PROGRAM CASE: it prints "$want"
runs() {
	local out
	out=$("$1" 2>&1)
	if [ "$out" = "$want" ]; then ok; else bad "$2" "$1 printed '$out', expected '$want'"; fi
}

if command -v nm >/dev/null; then
	extra=$(nm -D --defined-only "$p/lib/libwsfuse.so" | awk '$3 !~ /^wsf_/ { print $3 }')
	n=$(nm -D --defined-only "$p/lib/libwsfuse.so" | grep -c ' wsf_')
	if [ -n "$extra" ]; then bad "nm -D" "exports other than wsf_*: $(echo "$extra" | tr "\n" " " | head -c 300)"
	elif [ "$n" -lt 10 ]; then bad "nm -D" "only $n wsf_ symbols"
	else ok; fi
	# the archive: one object, whose only defined globals are wsf_*
	extra=$(nm -g --defined-only "$p/lib/libwsfuse.a" | awk 'NF == 3 && $3 !~ /^wsf_/ { print $3 }')
	n=$(nm -g --defined-only "$p/lib/libwsfuse.a" | grep -c ' wsf_')
	if [ -n "$extra" ]; then bad "nm libwsfuse.a" "globals other than wsf_*: $(echo "$extra" | tr "\n" " " | head -c 300)"
	elif [ "$n" -lt 10 ]; then bad "nm libwsfuse.a" "only $n wsf_ symbols"
	else ok; fi
else
	skipped 2 "nm -D, nm libwsfuse.a: no nm (binutils)"
fi

# a program with its own buf_init, intern, kernel_new (and yaml_parser_initialize
# where the archive carries libyaml: then wsfuse.pc's Libs.private names none)
private=$(sed -n 's/^Libs.private: *//p' "$p/lib/pkgconfig/wsfuse.pc")
# clash CASE CFLAGS...: builds clash.c against the archive and runs it
clash() {
	local c=$1
	shift
	# shellcheck disable=SC2086 # Libs.private's words
	if ${CC:-cc} "$@" -o "$tmp/clash" tests/install/clash.c -I"$p/include/wsfuse" "$p/lib/libwsfuse.a" \
		$private 2>"$tmp/log"; then
		runs "$tmp/clash" "$c"
	else
		bad "$c" "cc ... libwsfuse.a $private: $(head -c 400 "$tmp/log")"
	fi
}
clash "static link, own buf_init"
if grep -q yaml <<<"$private"; then
	skipped 1 "static link, own yaml_*: libwsfuse.a does not carry libyaml (no libyaml.a at build time)"
else
	clash "static link, own yaml_*" -DOWN_YAML
fi

if command -v pkg-config >/dev/null; then
	# wsfuse.pc alone: it needs no other package's .pc (libyaml's)
	export PKG_CONFIG_LIBDIR=$p/lib/pkgconfig
	unset PKG_CONFIG_PATH
	# shellcheck disable=SC2086 # pkg-config's words
	if ! flags=$(pkg-config --cflags --libs wsfuse 2>&1); then
		bad "pkg-config" "pkg-config --cflags --libs wsfuse: $flags"
	elif ${CC:-cc} -o "$tmp/hello" tests/install/hello.c $flags \
		-Wl,-rpath,"$(pkg-config --variable=libdir wsfuse)" 2>"$tmp/log"; then
		runs "$tmp/hello" "pkg-config"
	else
		bad "pkg-config" "cc ... $flags: $(head -c 400 "$tmp/log")"
	fi
	# the archive with the libraries it needs (Libs.private)
	# shellcheck disable=SC2086 # pkg-config's words
	if ! libs=$(pkg-config --cflags --static --libs wsfuse 2>&1); then
		bad "pkg-config --static" "pkg-config --cflags --static --libs wsfuse: $libs"
	elif ${CC:-cc} -o "$tmp/hello-static" tests/install/hello.c \
		${libs/-lwsfuse/-Wl,-Bstatic -lwsfuse -Wl,-Bdynamic} 2>"$tmp/log"; then
		if readelf -d "$tmp/hello-static" 2>/dev/null | grep -q 'NEEDED.*libwsfuse'; then
			bad "pkg-config --static" "hello-static needs libwsfuse.so"
		else
			runs "$tmp/hello-static" "pkg-config --static"
		fi
	else
		bad "pkg-config --static" "cc ... $libs: $(head -c 400 "$tmp/log")"
	fi
	unset PKG_CONFIG_LIBDIR
else
	skipped 2 "pkg-config: no pkg-config"
fi

# the CMake package finds its files relative to itself: move the tree first
mv "$p" "$tmp/moved"
p=$tmp/moved
if command -v cmake >/dev/null; then
	if cmake -S tests/install -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$p" >"$tmp/log" 2>&1 &&
		cmake --build "$tmp/cmake" >>"$tmp/log" 2>&1; then
		runs "$tmp/cmake/hello" "cmake"
	else
		bad "cmake" "$(grep -m3 -iE 'error|not found' "$tmp/log")"
	fi
	# find_package(wsfuse X.Y): this version, or an older minor one after 1.0
	IFS=. read -r major minor _ <<<"$version"
	expect="'' yes
'$version' yes
'$major.$minor' yes
'$major.$((minor + 1))' no
'$((major + 1)).0' no"
	got=$(cmake -DCONFIG="$p/lib/cmake/wsfuse/wsfuse-config-version.cmake" -P tests/install/version.cmake 2>&1)
	if [ "$got" = "$expect" ]; then ok; else bad "cmake version" "$(tr "\n" " " <<<"$got")"; fi
else
	skipped 2 "cmake: no cmake"
fi
finish

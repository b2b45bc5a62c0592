#!/bin/sh
# deps.sh MODE 'CC FLAGS' HEADER=PACKAGE...: the build's check for the C
# headers it needs.  Each HEADER is preprocessed with CC FLAGS; for those
# that fail, MODE "auto" as root on a machine with apt-get installs their
# Debian PACKAGEs (saying what it runs); otherwise, or with MODE "no", it
# prints the one command that would, and exits 1.  The make variable APT
# sets MODE.
mode=$1 cc=$2
shift 2
missing='' pkgs=''
for dep; do
	h=${dep%%=*}
	# cmocka.h wants these before it; they are harmless before any other
	printf '#include <stdarg.h>\n#include <stddef.h>\n#include <setjmp.h>\n#include <%s>\n' "$h" |
		$cc -E -x c - >/dev/null 2>&1 && continue
	missing="$missing $h"
	pkgs="$pkgs ${dep#*=}"
done
[ -z "$pkgs" ] && exit 0

if [ "$mode" = auto ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	echo "wsfuse: missing$missing; running: apt-get install -y$pkgs" >&2
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086 # one word per package
	apt-get install -y -qq $pkgs </dev/null >/dev/null && exit 0
	# a fresh image has no package lists yet
	echo "wsfuse: running: apt-get update && apt-get install -y$pkgs" >&2
	# shellcheck disable=SC2086
	apt-get update -qq </dev/null && apt-get install -y -qq $pkgs </dev/null >/dev/null && exit 0
	echo "wsfuse: apt-get failed; install$pkgs and run make again" >&2
	exit 1
fi
if command -v apt-get >/dev/null; then
	sudo=
	[ "$(id -u)" = 0 ] || sudo="sudo "
	echo "wsfuse: missing$missing; run: ${sudo}apt-get install$pkgs" >&2
else
	echo "wsfuse: missing$missing; install the packages Debian calls$pkgs (with their headers)" >&2
fi
exit 1

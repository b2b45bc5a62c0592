#!/bin/bash
# comment_share.sh [DIR...]: the share of characters in comments over every
# *.c and *.h under DIR (default: the library and CLI source,
# ir passes codegen runtime compiler include), .cuh left out.  Strings and
# character literals are skipped: a "//" inside one is no comment.  Prints: comment chars, all chars, %.
set -e
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- ir passes codegen runtime compiler include
find "$@" -name '*.[ch]' -print0 | xargs -0 cat | perl -0777 -ne '
	my $all = length; my $com = 0;
	while (m{ (/\*.*?\*/) | (//[^\n]*) | ("(?:\\.|[^"\\\n])*") | (\x27(?:\\.|[^\x27\\\n])*\x27) }gsx) {
		$com += length($1 // $2 // "");
	}
	printf "%d comment chars of %d: %.1f%%\n", $com, $all, 100 * $com / $all;'

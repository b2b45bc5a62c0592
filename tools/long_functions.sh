#!/bin/sh
# long_functions.sh [LIMIT [FILELIMIT]]: the functions longer than LIMIT lines
# (default 150) and the source files longer than FILELIMIT (default 1200) in
# ir/ compiler/ passes/ codegen/ runtime/ (issue 64's limits).  A function is
# counted from its name (at the start of a line, the project's style) to the
# "}" that starts a line; "switch N" marks one that holds a switch with N case
# labels in all: the limit allows one that is a flat switch over kinds, which
# is for a reader to judge.  Prints "LINES FILE:LINE NAME [switch N]",
# longest first; exits 1 if anything is over.
limit=${1:-150}
flimit=${2:-1200}
cd "$(dirname "$0")/.." || exit 2
files=$(ls ir/*.c compiler/*.c passes/*.c codegen/*.c runtime/*.c 2>/dev/null)
over=0
for f in $files; do
	n=$(wc -l < "$f")
	if [ "$n" -gt "$flimit" ]; then
		echo "$n $f (file)"
		over=1
	fi
done
awk -v limit="$limit" '
FNR == 1 { name = "" }
/^[a-z_][a-z_0-9]*\(/ && name == "" { name = $0; sub(/\(.*/, "", name); start = FNR; cases = 0; next }
name != "" && /^[ \t]+case .*:/ { cases++ }
name != "" && /^}/ {
	len = FNR - start + 1
	if (len > limit)
		printf "%d %s:%d %s%s\n", len, FILENAME, start, name, (cases ? " switch " cases : "")
	name = ""
}
name != "" && /;[ \t]*$/ && FNR == start { name = "" }
' $files | sort -rn > /tmp/long_functions.$$
cat /tmp/long_functions.$$
[ -s /tmp/long_functions.$$ ] && over=1
rm -f /tmp/long_functions.$$
exit $over

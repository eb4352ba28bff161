#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a set time each (default 60 s;
# FUZZTIME=10s for a quick round), under the network guard like the tests,
# and writes what each found into docs/bench.md between the fuzz markers:
# the target, its package, executions, new corpus entries kept under
# testdata/fuzz (a failing input, which `go test -fuzz`
# writes under testdata/fuzz/FuzzNAME/ — commit it with the fix).
#
# Usage: bench/fuzz.sh [PACKAGE-PATTERN]   e.g. bench/fuzz.sh ./ic/...
# (a pattern updates only its packages' rows of the table)
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-60s}"
pattern="${1:-./...}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# package directory and target name of every fuzz test
mapfile -t targets < <(
  go list -f '{{.Dir}}' "$pattern" | while read -r dir; do
    { grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null || true; } | sed "s|^func |${dir#"$PWD"/} |"
  done
)
[ ${#targets[@]} -gt 0 ] || { echo "fuzz: no fuzz targets under $pattern" >&2; exit 1; }

# count FOLDER: how many files the folder holds (0 when it does not exist)
count() { if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi; }

failed=0
rows=()
for t in "${targets[@]}"; do
  dir="${t% *}" name="${t#* }"
  log="$out/$name-$(echo "$dir" | tr / _).log"
  before=$(count "$dir/testdata/fuzz/$name")
  echo "fuzz: $dir $name for $fuzztime" >&2
  verdict=ok
  if ! scripts/netguard.sh go test "./$dir" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -parallel 2 >"$log" 2>&1; then
    verdict="FAILED (see ./$dir/testdata/fuzz/$name)"
    failed=1
    tail -20 "$log" >&2
  fi
  after=$(count "$dir/testdata/fuzz/$name")
  execs=$({ grep -o 'execs: [0-9]*' "$log" || true; } | tail -1 | awk '{print $2}')
  rows+=("| \`$name\` | $dir | ${execs:-0} | $((after - before)) | $verdict |")
done

table="$(
  echo "<!-- fuzz:begin -->"
  echo "Last run: $(date -u +%Y-%m-%d), \`FUZZTIME=$fuzztime bench/fuzz.sh${1:+ $1}\` on $(nproc) CPUs ($(go version | awk '{print $3}'))."
  echo
  echo "| target | package | executions | failing inputs written | result |"
  echo "| --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
  echo "<!-- fuzz:end -->"
)"
# A run of some packages (a pattern given) replaces their rows and keeps
# the others' from earlier runs; a run of every package replaces them all.
partial=0
[ "$pattern" != ./... ] && partial=1
python3 - "$table" "$partial" <<'EOF'
import re, sys

p = "docs/bench.md"
s = open(p).read()
new, partial = sys.argv[1], sys.argv[2] == "1"
m = re.search(r"<!-- fuzz:begin -->.*?<!-- fuzz:end -->", s, flags=re.S)


def key(line):
    return tuple(c.strip() for c in line.strip("|").split("|")[:2])


if partial and m:
    old = [l for l in m.group(0).splitlines() if l.startswith("| `")]
    fresh = [l for l in new.splitlines() if l.startswith("| `")]
    ran = {key(l) for l in fresh}
    order = {key(l): i for i, l in enumerate(old)}
    rows = [l for l in old if key(l) not in ran] + fresh
    rows.sort(key=lambda l: (order.get(key(l), len(order)), key(l)))
    head = [l for l in new.splitlines() if not l.startswith("| `") and l != "<!-- fuzz:end -->"]
    head[1] += " Rows of packages it did not fuzz are from earlier runs."
    new = "\n".join(head + rows + ["<!-- fuzz:end -->"])
if m:
    s = s[: m.start()] + new + s[m.end():]
else:
    s += "\n## Fuzzing every target (bench/fuzz.sh)\n\n" + new + "\n"
open(p, "w").write(s)
EOF
echo "$table"
exit $failed

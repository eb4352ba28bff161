#!/usr/bin/env bash
# `make demo`: runs what exists of the two products on embedded defaults and
# says what you are looking at. Later work extends each section.
set -euo pipefail
bin=${1:-bin}
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "alp: declarative node-fleet management for the Internet Computer"
"$bin/alp" version
"$bin/alp" --help

say "nibrunnerd: a host for hundreds of microVMs, converging on desired.json"
"$bin/nibrunnerd" version
"$bin/nibrunnerd" --help

say "What you just saw"
cat <<TXT
Both binaries were built from this checkout into $bin/. The commands each
--help lists are the ones that work today; the README's "Status" section says
what each product does so far and docs/ holds the references.
TXT

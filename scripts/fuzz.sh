#!/usr/bin/env bash
# Runs every fuzz target (the proptest properties of proto/model/tests/fuzz.rs and
# cli/tests/fuzz.rs) at volume, in a release build: CASES inputs per property (default
# 100000; also BERTH_FUZZ_CASES), and prints how many inputs ran in all and how long it
# took. Any panic fails the run with proptest's smallest failing input.
#
#   scripts/fuzz.sh            # 100,000 inputs per property
#   scripts/fuzz.sh 1000       # a quick look
set -euo pipefail
cd "$(dirname "$0")/.."

cases="${1:-${BERTH_FUZZ_CASES:-100000}}"
case "$cases" in
'' | *[!0-9]*)
	echo "usage: $0 [CASES per property]" >&2
	exit 2
	;;
esac
# Tests of the fuzz files that are not properties (they run once).
not_properties='the_seeds_are_valid|the_dra_seeds_are_valid'

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
cargo build --release --locked --tests -p berth-model -p berth-cli
start=$(date +%s)
BERTH_FUZZ_CASES="$cases" cargo test --release --locked -p berth-model -p berth-cli --test fuzz 2>&1 | tee "$log"
seconds=$(($(date +%s) - start))

properties=$(grep -E '^test .* \.\.\. ok$' "$log" | grep -cvE "^test ($not_properties) ")
echo "fuzz: $properties properties x $cases cases = $((properties * cases)) inputs without a panic in ${seconds}s"

#!/usr/bin/env bash
# Cold release builds of coreb at one or more git revisions, for comparing build cost.
#
# For each REV: a clean copy of the tree at REV (`git archive`, in a temporary directory), an
# empty CARGO_TARGET_DIR, and
#     /usr/bin/time -v cargo build --release --locked -p coreb --timings
# Then one line per revision: wall seconds, user+sys CPU seconds, peak RSS (the largest single
# process of the build, from `time -v`: in practice one rustc), the binary's size in bytes; and
# each build's cargo-timing.html copied to the output folder as <label>.cargo-timing.html
# (label: the revision as given, `/` made `_`, and its commit).
#
# Usage: bench/build/cold.sh [--parallel] [--out DIR] [--jobs N] [--offline] [--keep]
#                            [--repo DIR] [--dry-run] REV...
#   --parallel  build every revision at once (each sees the same load; on a machine with few
#               cores they also slow each other, so compare them with each other only)
#   --out DIR   where the summary (summary.tsv), logs and timing pages go
#               (default: build/cold-<UTC time> in the repository)
#   --jobs N    cargo -j N (default: cargo's, all cores)
#   --offline   cargo --offline (the crates must be in CARGO_HOME already)
#   --keep      keep the checkouts and target directories (several GB each)
#   --repo DIR  the git repository the revisions are of (default: the one holding this script)
#   --dry-run   resolve the revisions and print what would run; build nothing
#
# Run it on a quiet machine: another build beside it changes every figure but the size.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }

parallel=0 dry=0 keep=0 offline=0 jobs="" out="" repo=""
revs=()
while [ $# -gt 0 ]; do
    case "$1" in
        --parallel) parallel=1 ;;
        --dry-run) dry=1 ;;
        --keep) keep=1 ;;
        --offline) offline=1 ;;
        --jobs) jobs="${2:?--jobs needs a number}"; shift ;;
        --out) out="${2:?--out needs a directory}"; shift ;;
        --repo) repo="${2:?--repo needs a directory}"; shift ;;
        -h|--help) usage ;;
        -*) echo "cold.sh: unknown option $1" >&2; usage ;;
        *) revs+=("$1") ;;
    esac
    shift
done
[ ${#revs[@]} -gt 0 ] || { echo "cold.sh: no revision given" >&2; usage; }
[ -x /usr/bin/time ] || { echo "cold.sh: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
repo="$(git -C "${repo:-$(dirname "$0")}" rev-parse --show-toplevel)"
out="${out:-$repo/build/cold-$(date -u +%Y%m%dT%H%M%SZ)}"

# Resolve every revision before building anything: a typo fails at once.
labels=() commits=()
for rev in "${revs[@]}"; do
    commit="$(git -C "$repo" rev-parse --verify --quiet "$rev^{commit}")" || { echo "cold.sh: \`$rev\` is not a revision of $repo" >&2; exit 2; }
    commits+=("$commit")
    labels+=("$(printf '%s' "$rev" | tr -c 'A-Za-z0-9._-' '_')-${commit:0:10}")
done

cargo_args=(build --release --locked -p coreb --timings)
[ -n "$jobs" ] && cargo_args+=(-j "$jobs")
[ "$offline" = 1 ] && cargo_args+=(--offline)

work=""
if [ "$dry" = 0 ]; then
    mkdir -p "$out"
    out="$(cd "$out" && pwd)"
    work="$(mktemp -d "${TMPDIR:-/tmp}/coreb-cold.XXXXXX")"
    if [ "$keep" = 0 ]; then trap 'rm -rf "$work"' EXIT; fi
fi

# One build: checkout, build, figures into $out/<label>.tsv (one line).
build_one() {
    local label="$1" commit="$2"
    local src="$work/$label/src" target="$work/$label/target" log="$out/$label.log" timelog="$out/$label.time"
    if [ "$dry" = 1 ]; then
        echo "$label: git -C $repo archive $commit | tar -x -C <tmp>/$label/src"
        echo "$label: cd <tmp>/$label/src && CARGO_TARGET_DIR=<tmp>/$label/target (empty) /usr/bin/time -v cargo ${cargo_args[*]}"
        echo "$label: copy <tmp>/$label/target/cargo-timings/cargo-timing.html to $out/$label.cargo-timing.html"
        return 0
    fi
    mkdir -p "$src" "$target"
    git -C "$repo" archive "$commit" | tar -x -C "$src"
    local status=0
    (cd "$src" && CARGO_TARGET_DIR="$target" /usr/bin/time -v -o "$timelog" cargo "${cargo_args[@]}") >"$log" 2>&1 || status=$?
    local wall cpu rss size=""
    # `Elapsed (wall clock) time (h:mm:ss or m:ss): 1:02:03.45` → seconds.
    wall="$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; printf "%.1f", s }' "$timelog")"
    cpu="$(awk -F': ' '/User time \(seconds\)/ { u = $2 } /System time \(seconds\)/ { s = $2 } END { printf "%.1f", u + s }' "$timelog")"
    rss="$(awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$timelog")"
    if [ "$status" = 0 ]; then
        size="$(stat -c %s "$target/release/coreb")"
        cp "$target/cargo-timings/cargo-timing.html" "$out/$label.cargo-timing.html"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$commit" "$status" "$wall" "$cpu" "$rss" "$size" >"$out/$label.tsv"
    [ "$status" = 0 ] || echo "cold.sh: the build of $label failed (exit $status): see $log" >&2
}

echo "cold.sh: ${#revs[@]} revision(s), $([ "$parallel" = 1 ] && echo "side by side" || echo "one after another"); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); cargo ${cargo_args[*]}"
[ "$dry" = 1 ] || echo "cold.sh: output in $out; checkouts and targets in $work$([ "$keep" = 1 ] && echo " (kept)")"
pids=()
for i in "${!revs[@]}"; do
    if [ "$parallel" = 1 ] && [ "$dry" = 0 ]; then
        build_one "${labels[$i]}" "${commits[$i]}" &
        pids+=($!)
    else
        build_one "${labels[$i]}" "${commits[$i]}"
    fi
done
for pid in "${pids[@]}"; do wait "$pid" || true; done
[ "$dry" = 1 ] && exit 0

echo "cold.sh: done; load $(cut -d' ' -f1-3 /proc/loadavg)"
summary="$out/summary.tsv"
printf 'label\tcommit\texit\twall_s\tcpu_s\tpeak_rss_mib\tbinary_bytes\n' >"$summary"
failed=0
for i in "${!labels[@]}"; do
    label="${labels[$i]}"
    # No line: the checkout itself failed (its error is above).
    [ -f "$out/$label.tsv" ] || printf '%s\t%s\t-\t\t\t\t\n' "$label" "${commits[$i]}" >"$out/$label.tsv"
    cat "$out/$label.tsv" >>"$summary"
    [ "$(cut -f3 "$out/$label.tsv")" = 0 ] || failed=1
done
awk -F'\t' 'NR == 1 { printf "%-40s %5s %10s %10s %13s %14s\n", $1, $3, "wall s", "user+sys s", "peak RSS MiB", "binary bytes"; next }
            { printf "%-40s %5s %10s %10s %13s %14s\n", $1, $3, $4, $5, $6, ($7 == "" ? "-" : $7) }' "$summary"
echo "cold.sh: $summary; timing pages: $out/<label>.cargo-timing.html"
exit "$failed"

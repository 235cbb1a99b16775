#!/usr/bin/env bash
# LLM gateway benchmark (issue 4): prints
#  1. achieved throughput against a local OpenAI-compatible server that answers after a
#     fixed delay, as a share of the concurrency/latency limit (concurrency / delay);
#  2. the time to serve 10,000 stored responses from the response store (replay mode),
#     sequentially and 16 at a time, and the time to write them (fdatasync + rename each).
# Everything runs on 127.0.0.1; nothing leaves the machine.
#
# Usage: bench/llm/run.sh [scratch-dir]   (builds the bench in release mode first)
set -euo pipefail
cd "$(dirname "$0")/../.."
scratch="${1:-$(mktemp -d)}"
cargo bench -p coreb-llm --bench llm --no-run >&2
bench() { cargo bench -q -p coreb-llm --bench llm -- "$@"; }
echo "# $(date -u +%FT%TZ) $(nproc) cores; scratch $scratch"
# Same request rate (320/s) with a short and a long delay, then a rate (1280/s) beyond what
# one fdatasync per stored response sustains on a small machine.
bench "$scratch" --requests 4000 --delay-ms 50 --concurrency 16 --stored 10000
bench "$scratch" --requests 4000 --delay-ms 200 --concurrency 64 --stored 0
bench "$scratch" --requests 4000 --delay-ms 50 --concurrency 64 --stored 0

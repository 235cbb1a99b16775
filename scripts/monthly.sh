#!/usr/bin/env bash
# The scheduled monthly build: plan, build, verify and evaluate last month's release,
# unattended. Any failing step (a bad row, a failed gate, a checksum that does not rebuild)
# stops the script with a non-zero exit, so cron mails it / the CI job goes red.
#
#   scripts/monthly.sh [YYYY-MM]        (default: the previous calendar month)
#
# Needs: the coreb binary on PATH (or COREB=...), the API key variable named in the
# manifest's [llm] section, and the repository as the working directory.
set -euo pipefail
cd "$(dirname "$0")/.."

COREB=${COREB:-coreb}
MONTH=${1:-$(date -u -d "$(date -u +%Y-%m-01) -1 day" +%Y-%m)}
VERSION="v${MONTH/-/}"

echo "== plan ${VERSION}"
"$COREB" plan "$MONTH"
mkdir -p build
echo "== build ${VERSION}"
"$COREB" build "manifests/${VERSION}.toml" --json > "build/${VERSION}.build.jsonl"
echo "== verify ${VERSION}"
"$COREB" verify "releases/${VERSION}"
echo "== eval ${VERSION}"
"$COREB" eval "releases/${VERSION}" --retriever bm25 --manifest "manifests/${VERSION}.toml" --out "build/${VERSION}/eval" --json > "build/${VERSION}.eval.json"
echo "== ${VERSION} published in releases/${VERSION}"

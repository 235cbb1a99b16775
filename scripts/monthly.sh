#!/usr/bin/env bash
# The scheduled monthly build: plan, build, verify and evaluate last month's release,
# record the built-in baselines' results and regenerate the leaderboard site, unattended.
# Any failing step (a bad row, a failed gate, a checksum that does not rebuild) stops the
# script with a non-zero exit (1, or 2 for a wrong command), so cron mails it / the CI job goes red. A month whose sources hold no
# problem in its window (LiveCodeBench has published nothing newer) is not a failure of the
# pipeline: the script says "no new problems", builds nothing and exits 3, which a CI job can
# accept (`scripts/monthly.sh || [ $? -eq 3 ]`) and cron still mails.
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
if [ -e "manifests/${VERSION}.toml" ]; then
  # A rerun after a failed step builds the manifest planned (or edited) before: `coreb plan`
  # overwrites no manifest without --force.
  echo "manifests/${VERSION}.toml exists: kept"
else
  status=0
  planned=$("$COREB" plan "$MONTH" 2>&1) || status=$?
  if [ "$status" -ne 0 ]; then
    echo "$planned" >&2
    if [ "$status" -eq 1 ] && grep -q "no new problems" <<<"$planned"; then
      echo "== no new problems for ${VERSION}: the sources hold nothing in its window; nothing built (exit 3)"
      exit 3
    fi
    exit "$status"
  fi
  echo "$planned"
fi
mkdir -p build
echo "== build ${VERSION}"
"$COREB" build "manifests/${VERSION}.toml" --json > "build/${VERSION}.build.jsonl"
echo "== verify ${VERSION}"
"$COREB" verify "releases/${VERSION}"
echo "== eval ${VERSION}"
"$COREB" eval "releases/${VERSION}" --retriever bm25 --manifest "manifests/${VERSION}.toml" --out "build/${VERSION}/eval" --record --json > "build/${VERSION}.eval.json"
echo "== record the built-in baselines on every release (releases/results; a run recorded before is not recorded again)"
for release in releases/v*/; do
  "$COREB" eval "$release" --retriever bm25 --record --json > /dev/null
  # The dense baseline, when an embeddings endpoint is configured:
  #   EMBED_MODEL=text-embedding-3-small [EMBED_BASE_URL=...] [EMBED_CUTOFF=2024-09] [EMBED_API_KEY_ENV=OPENAI_API_KEY]
  if [ -n "${EMBED_MODEL:-}" ]; then
    "$COREB" eval "$release" --retriever "embed:${EMBED_MODEL}" --base-url "${EMBED_BASE_URL:-https://api.openai.com/v1}" \
      --api-key-env "${EMBED_API_KEY_ENV:-OPENAI_API_KEY}" ${EMBED_CUTOFF:+--cutoff "$EMBED_CUTOFF"} --record --json > /dev/null
  fi
done
echo "== leaderboard"
"$COREB" leaderboard --releases-dir releases --out build/leaderboard
echo "== ${VERSION} published in releases/${VERSION}; leaderboard in build/leaderboard/index.html"

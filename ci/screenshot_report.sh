#!/usr/bin/env bash
# A screenshot of a report page in headless Chromium (Debian: apt-get install chromium).
#   ci/screenshot_report.sh docs/sample-report/report.html docs/sample-report/screenshot.png [WIDTH,HEIGHT]
set -euo pipefail
page=$(realpath "$1")
shot=$(realpath -m "$2")
size=${3:-1400,2600}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "headless Chromium not installed (Debian: apt-get install chromium)" >&2
  exit 1
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$profile" \
  --window-size="$size" --screenshot="$shot" "file://$page" 2>/dev/null
echo "screenshot written to $shot"

#!/bin/sh
# report_browser_test.sh REPORT.html [--charts N] [--series N] [--min-points N] [--screenshot PNG]
#
# Opens an `ixsubmit report` page in headless Chromium through chromedriver
# and checks its charts and console (report_browser_test.py says what).
# Skips (exit 77, CTest's skip code) where Chromium, chromedriver or
# python3 is not installed.
set -eu
for tool in /usr/bin/chromium /usr/bin/chromedriver; do
  if [ ! -x "$tool" ]; then
    echo "SKIP: $tool is not installed" >&2
    exit 77
  fi
done
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: python3 is not installed" >&2
  exit 77
fi
exec python3 "$(dirname "$0")/report_browser_test.py" "$@"

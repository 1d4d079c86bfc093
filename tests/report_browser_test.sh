#!/bin/sh
# report_browser_test.sh REPORT.html [--charts N] [--series N] [--min-points N] [--kinds KIND=N,...]
#                        [--screenshot PNG]
# report_browser_test.sh --sample REPORT_TEST [--screenshot PNG]
#
# Opens an `ixsubmit report` page in headless Chromium through chromedriver
# and checks its charts and console (report_browser_test.py says what).
# With --sample, the page is the report of the unit tests' sample sweep
# (submitter/report/report_sample.h: fixed-seq-len keys and an
# agentic-coding key), written by the report_test binary REPORT_TEST, and
# the expected counts are those its data gives (report_html_test.cc:
# SampleHasTheChartsSeriesAndPointsItsDataSays).
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
test_py="$(dirname "$0")/report_browser_test.py"
if [ "${1:-}" != "--sample" ]; then
  exec python3 "$test_py" "$@"
fi
report_test=${2:?usage: report_browser_test.sh --sample REPORT_TEST [--screenshot PNG]}
shift 2
tmp=$(mktemp -d /tmp/ix-report-sample.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
IX_REPORT_SAMPLE_OUT="$tmp/sample.html" "$report_test" --gtest_filter=ReportHtml.WritesTheSampleWhenAsked \
  >"$tmp/write.log" 2>&1 || {
  echo "FAIL: $report_test did not write the sample:" >&2
  cat "$tmp/write.log" >&2
  exit 1
}
# The fixed-seq-len charts, then the agentic-coding ones (one KV usage chart
# per agentic arm: tp4, dep4, dep4 + cpu offload).
kinds=throughput-interactivity=3,ttft=3,energy=1,dep-sessions=1
kinds=$kinds,agentic-throughput-interactivity=1,agentic-ttft-turn=1,agentic-cache-hit=1,agentic-kv-usage=3
kinds=$kinds,agentic-dp-sessions=1,agentic-dp-hit-rate=1
python3 "$test_py" "$tmp/sample.html" --charts 16 --series 43 --min-points 208 --kinds "$kinds" "$@"

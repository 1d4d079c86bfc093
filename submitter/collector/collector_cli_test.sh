#!/usr/bin/env bash
# `ixsubmit serve` and `ixsubmit events` end to end, with curl: batches
# stored once each, a wrong token, malformed, oversized and traversing
# requests refused with nothing stored, result files checked by sha256, and
# a kill -9 losing nothing that was answered.
# Usage: collector_cli_test.sh IXSUBMIT
set -uo pipefail
ixsubmit=$1
dir=$(mktemp -d /tmp/ix-collector-cli.XXXXXX)
server=
trap '[[ -n $server ]] && kill -9 $server 2>/dev/null; rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
db=$dir/state/ix.db
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$token" >"$dir/token"; chmod 600 "$dir/token"
# curl reads the header from a file, so the token is in no command line.
printf 'Authorization: Bearer %s\n' "$token" >"$dir/auth"
printf 'Authorization: Bearer %s\n' "wrong-$token" >"$dir/wrong"

start_server() {
  "$ixsubmit" serve --listen 127.0.0.1:0 --db "$db" --token-file "$dir/token" >"$dir/out" 2>"$dir/err" &
  server=$!
  for _ in $(seq 100); do grep -q "listening on" "$dir/out" && break; sleep 0.1; done
  port=$(sed -n 's/^ixsubmit serve: listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$dir/out")
  [[ -n $port ]] || { fail "serve did not start: $(cat "$dir/out" "$dir/err")"; exit 1; }
  url=http://127.0.0.1:$port
}
# post FILE [HEADER_FILE] -> the status code; the answer in $dir/answer.
post() {
  curl -sS -o "$dir/answer" -w '%{http_code}' -H @"${2:-$dir/auth}" -H 'Content-Type: application/json' \
    --data-binary @"$1" "$url/v1/events"
}
batch() {  # batch FROM TO: events FROM..TO-1 as a JSON array
  local i sep='' out='['
  for ((i = $1; i < $2; i++)); do
    out+="$sep{\"id\":\"77.0:$i\",\"event\":\"telemetry\",\"step\":\"77.0\",\"time\":$((1764691740 + i)).5,"
    out+="\"sweep\":\"sw-cli\",\"entry\":$((i % 7)),\"node\":\"n$((i % 3))\",\"sender\":{\"pid\":1,\"uid\":0,\"gid\":0}}"
    sep=,
  done
  printf '%s]' "$out"
}
count() { "$ixsubmit" events --db "$db" --json | jq length; }

# Misuse and a token file others may read.
"$ixsubmit" serve --listen nowhere --token-file "$dir/token" >/dev/null 2>"$dir/e"; rc=$?
[[ $rc == 2 && $(cat "$dir/e") == *"argument --listen: must be HOST:PORT"* ]] || fail "bad --listen: $rc $(cat "$dir/e")"
cp "$dir/token" "$dir/open-token"; chmod 644 "$dir/open-token"
"$ixsubmit" serve --db "$db" --token-file "$dir/open-token" --listen 127.0.0.1:0 >/dev/null 2>"$dir/e"; rc=$?
[[ $rc == 1 && $(cat "$dir/e") == *"run chmod 600 $dir/open-token"* ]] || fail "0644 token file: $rc $(cat "$dir/e")"
[[ $(cat "$dir/e") != *"$token"* ]] || fail "the token was printed"

start_server
[[ $(curl -sS -o /dev/null -w '%{http_code}' "$url/v1/health") == 200 ]] || fail "health"

# 200 events in batches of 50, then the first 10 again.
for from in 0 50 100 150; do
  batch $from $((from + 50)) >"$dir/b"
  [[ $(post "$dir/b") == 200 && $(cat "$dir/answer") == '{"stored":50,"duplicates":0}' ]] \
    || fail "batch $from: $(cat "$dir/answer")"
done
batch 0 10 >"$dir/b"
[[ $(post "$dir/b") == 200 && $(cat "$dir/answer") == '{"stored":0,"duplicates":10}' ]] \
  || fail "repeat: $(cat "$dir/answer")"
[[ $(count) == 200 ]] || fail "stored: $(count), not 200"
[[ $("$ixsubmit" events --db "$db" --json | jq -r '.[].id' | sort -u | wc -l) == 200 ]] || fail "ids not unique"
first=$("$ixsubmit" events sw-cli --db "$db" --json | jq -r '.[0].id')
[[ $first == 77.0:0 ]] || fail "not ordered by time: first is $first"
[[ $("$ixsubmit" events --db "$db" | head -1) == TIME*NODE*STEP*EVENT*ID ]] || fail "table header"
[[ $("$ixsubmit" events --db "$db" | wc -l) == 201 ]] || fail "table lines"
[[ $("$ixsubmit" events other-sweep --db "$db" --json) == "[]" ]] || fail "another sweep's events"

# Refused, nothing stored: a wrong token, malformed JSON, one bad event, an
# oversized body, a body that is not JSON.
batch 500 510 >"$dir/b"
[[ $(post "$dir/b" "$dir/wrong") == 401 ]] || fail "wrong token: $(cat "$dir/answer")"
[[ $(curl -sS -D - -o /dev/null -H @"$dir/wrong" -H 'Content-Type: application/json' --data-binary @"$dir/b" \
  "$url/v1/events") == *"WWW-Authenticate: Bearer"* ]] || fail "no WWW-Authenticate"
printf '[{"id":"77.0:900",' >"$dir/m"
[[ $(post "$dir/m") == 400 && $(cat "$dir/answer") == '{"error":"body: not valid JSON'* ]] \
  || fail "malformed: $(cat "$dir/answer")"
{ batch 600 605 | head -c -1; printf ',{"id":"77.0:999","event":"x","step":"77.0","time":1,"sweep":"../up"}]'; } >"$dir/m"
[[ $(post "$dir/m") == 400 && $(cat "$dir/answer") == '{"error":"events[5]: sweep: must be'* ]] \
  || fail "bad event: $(cat "$dir/answer")"
{ printf '['; head -c $((4 * 1024 * 1024)) /dev/zero | tr '\0' ' '; printf ']'; } >"$dir/big"
[[ $(post "$dir/big") == 413 ]] || fail "oversized: $(cat "$dir/answer")"
[[ $(count) == 200 ]] || fail "refused requests stored something: $(count)"

# Result files: the right sha256 stored, a wrong one refused, names that
# leave the path refused (curl --path-as-is sends ../ as it is).
printf '{"throughput": 1234.5}\n' >"$dir/result.json"
sha=$(sha256sum "$dir/result.json" | cut -d' ' -f1)
put() {  # put PATH SHA -> the status code
  curl -sS --path-as-is -o "$dir/answer" -w '%{http_code}' -H @"$dir/auth" -H "X-Content-SHA256: $2" \
    -H 'Content-Type: application/octet-stream' -T "$dir/result.json" "$url$1"
}
[[ $(put /v1/results/sw-cli/3/result.json "$sha") == 201 ]] || fail "result put: $(cat "$dir/answer")"
[[ $(put /v1/results/sw-cli/3/result.json "$sha") == 200 ]] || fail "result put again: $(cat "$dir/answer")"
[[ $(put /v1/results/sw-cli/3/other.json "$(printf x | sha256sum | cut -d' ' -f1)") == 400 ]] \
  || fail "wrong sha256: $(cat "$dir/answer")"
for path in /v1/results/sw-cli/3/../../events /v1/results/sw-cli/3/.. /v1/results/../3/x \
            /v1/results/sw-cli/3/%2e%2e /v1/results/sw-cli/3/..%2Fx /v1/results/sw-cli/3/a/b/c; do
  code=$(put "$path" "$sha")
  [[ $code == 400 || $code == 404 ]] || fail "$path: $code $(cat "$dir/answer")"
done
results=$("$ixsubmit" events --db "$db" --results --json)
[[ $(jq length <<<"$results") == 1 && $(jq -r '.[0].sha256' <<<"$results") == "$sha" ]] \
  || fail "results: $results"
[[ $(sqlite3 "$db" "SELECT content FROM result_files") == '{"throughput": 1234.5}' ]] || fail "stored content"

# kill -9, restart on the same database: nothing answered is lost.
kill -9 $server; wait $server 2>/dev/null
start_server
[[ $(count) == 200 ]] || fail "after kill -9: $(count) events"
[[ $("$ixsubmit" events --db "$db" --results --json | jq length) == 1 ]] || fail "result lost after kill -9"
batch 0 20 >"$dir/b"
[[ $(post "$dir/b") == 200 && $(cat "$dir/answer") == '{"stored":0,"duplicates":20}' ]] \
  || fail "after restart: $(cat "$dir/answer")"

# SIGTERM stops it cleanly.
kill -TERM $server; wait $server; rc=$?; server=
[[ $rc == 0 ]] || fail "SIGTERM: exit $rc"
grep -q "stopping (SIGTERM)" "$dir/err" || fail "no stopping line: $(cat "$dir/err")"
! grep -q -- "$token" "$dir/err" "$dir/out" || fail "the token was logged"

[[ $failures == 0 ]] && echo "collector_cli: all passed"
exit $((failures > 0))

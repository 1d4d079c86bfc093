# shellcheck shell=bash
# Helpers shared by the fakes' process-level tests (fakes_test.sh,
# aiperf_test.sh); source it, do not run it. Uses the sourcing script's TMP,
# FAILED (0 until fail) and FAIL_FD (where failures go; 2 when unset: a
# script that mutes stderr points it at a copy of it).

# A port in 24000-24999 (outside the ephemeral range) that binds right now.
free_port() {
  python3 - <<'PY'
import random, socket
for _ in range(200):
    p = random.randint(24000, 24999)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
else:
    raise SystemExit("no free port in 24000-24999")
PY
}

# show_logs FD: the last lines of every log in $TMP, to file descriptor FD.
show_logs() {
  local f
  for f in "$TMP"/*.log; do
    [[ -e $f ]] || continue
    echo "---- $f (last 15 lines)" >&"$1"
    tail -n 15 "$f" >&"$1"
  done
}

# fail MESSAGE: the test failed: says so with the logs and exits 1 (the
# script's EXIT trap then keeps $TMP, see remove_tmp).
fail() {
  FAILED=1
  echo "FAIL: $*" >&"${FAIL_FD:-2}"
  show_logs "${FAIL_FD:-2}"
  exit 1
}
ok() { echo "ok: $*"; }

# remove_tmp: for the EXIT trap: $TMP removed after a pass, kept and named
# after a failure.
remove_tmp() {
  if [[ ${FAILED:-0} -eq 0 ]]; then rm -rf "$TMP"; else echo "logs kept in $TMP" >&"${FAIL_FD:-2}"; fi
}

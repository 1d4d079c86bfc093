# shellcheck shell=bash
# Helpers shared by the fakes' process-level tests (fakes_test.sh,
# aiperf_test.sh); source it, do not run it. Uses the sourcing script's TMP.

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

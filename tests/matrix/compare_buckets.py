#!/usr/bin/env python3
"""compare_buckets.py EXPECTED.json CMD...: runs CMD (an `ixsubmit matrix
... --buckets` command) and compares its stdout with EXPECTED as parsed
JSON: key order does not matter, list order does.

The reference files come from InferenceX's workflow, which adds fields that
`ixsubmit matrix` does not produce; they are removed from EXPECTED before
comparing (docs/MATRIX.md, "Buckets and canary", says why):
  - changelog_metadata (the changelog that selected the keys),
  - recipe-fingerprint, priority, queue-token on every entry (workflow
    bookkeeping: a hash of recipe files, a queue priority, a random token),
  - pydantic defaults: "eval-only": false, "eval-all-concs": false, and
    "additional-settings": [] in prefill/decode.
"""
import json
import subprocess
import sys

WORKFLOW_FIELDS = ("recipe-fingerprint", "priority", "queue-token")


def normalize_entry(e):
    e = {k: v for k, v in e.items() if k not in WORKFLOW_FIELDS}
    for k in ("eval-only", "eval-all-concs"):
        if e.get(k) is False:
            del e[k]
    for side in ("prefill", "decode"):
        if isinstance(e.get(side), dict) and e[side].get("additional-settings") == []:
            e[side] = {k: v for k, v in e[side].items() if k != "additional-settings"}
    return e


def normalize(x):
    if isinstance(x, list):
        return [normalize_entry(e) if isinstance(e, dict) else e for e in x]
    if isinstance(x, dict):
        return {k: normalize(v) for k, v in x.items() if k != "changelog_metadata"}
    return x


def first_difference(a, b, path="$"):
    if type(a) is not type(b):
        return f"{path}: expected {type(a).__name__}, got {type(b).__name__}"
    if isinstance(a, dict):
        for k in a:
            if k not in b:
                return f"{path}: key {k!r} missing"
        for k in b:
            if k not in a:
                return f"{path}: unexpected key {k!r}"
        for k in a:
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        if len(a) != len(b):
            return f"{path}: expected {len(a)} items, got {len(b)}"
        return None
    return None if a == b else f"{path}: expected {a!r}, got {b!r}"


def main():
    expected_path, cmd = sys.argv[1], sys.argv[2:]
    try:
        with open(expected_path) as f:
            expected = normalize(json.load(f))
    except OSError as e:
        print(f"cannot read the reference {expected_path}: {e} (are the InferenceX fixtures in ../shared?)")
        return 1
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        print(f"command failed (exit {run.returncode}): {' '.join(cmd)}\n{run.stderr}")
        return 1
    got = json.loads(run.stdout)
    d = first_difference(expected, got)
    if d:
        print(f"differs from {expected_path}: {d}")
        return 1
    print(f"matches {expected_path} as parsed JSON")
    return 0


if __name__ == "__main__":
    sys.exit(main())

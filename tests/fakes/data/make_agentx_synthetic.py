#!/usr/bin/env python3
"""Writes agentx-synthetic.jsonl, the fake aiperf's trace set (run once; the
output is committed). Deterministic: the same file every run.

Each line is one trace in the Weka v1 layout that AIPerf's weka loaders and
InferenceX's trace_metadata.py read (tests/fakes/README.md, "aiperf"):
{"id", "models", "block_size", "hash_id_scope": "local", "requests": [...]}
where a request is a main-agent turn {"t", "type": "s"|"n", "model", "in",
"out", "hash_ids", "api_time", "think_time"} or a subagent entry {"t", "type":
"subagent", "agent_id", "subagent_type", "requests": [turns of type "n"]}.
A main turn's hash_ids extend the previous turn's (a growing shared prefix);
a subagent starts from a prefix of its parent's blocks. "in" is
len(hash_ids) * block_size, as in the real traces; "think_time" is the idle
gap before the request, sub-second to a few seconds, with one long gap (to be
capped by --trace-idle-gap-cap-seconds).
"""
import json
import random
from pathlib import Path

BLOCK = 16
MODEL = "claude-fake"


def make_trace(rng: random.Random, index: int) -> dict:
    next_id = 0

    def new_blocks(n):
        nonlocal next_id
        ids = list(range(next_id, next_id + n))
        next_id += n
        return ids

    system = new_blocks(6)
    prefix = list(system)
    requests = []
    t = 0.0
    turns = rng.randint(6, 10)
    subagents = 0
    for turn in range(turns):
        think = 0.0 if turn == 0 else round(rng.uniform(0.05, 1.5), 3)
        if index == 3 and turn == 4:
            think = 30.0  # one long idle gap, for --trace-idle-gap-cap-seconds
        t = round(t + think, 3)
        prefix = prefix + new_blocks(rng.randint(2, 6))
        out = rng.randint(8, 48)
        api_time = round(0.2 + out * 0.02, 3)
        requests.append({"t": t, "type": "s" if rng.random() < 0.85 else "n", "model": MODEL,
                         "in": len(prefix) * BLOCK, "out": out, "hash_ids": list(prefix),
                         "api_time": api_time, "think_time": think})
        t = round(t + api_time, 3)
        if 0 < turn < turns - 1 and rng.random() < 0.35:
            subagents += 1
            shared = prefix[: len(system) + rng.randint(0, len(prefix) - len(system))]
            own = list(shared)
            inner = []
            for _ in range(rng.randint(2, 3)):
                gap = round(rng.uniform(0.05, 0.8), 3)
                t = round(t + gap, 3)
                own = own + new_blocks(rng.randint(1, 4))
                sout = rng.randint(8, 32)
                sapi = round(0.2 + sout * 0.02, 3)
                inner.append({"t": t, "type": "n", "model": MODEL, "in": len(own) * BLOCK, "out": sout,
                              "hash_ids": list(own), "api_time": sapi, "think_time": gap})
                t = round(t + sapi, 3)
            kind = rng.choice(["Explore", "General"])
            requests.append({"t": inner[0]["t"], "type": "subagent",
                             "agent_id": f"{kind.lower()}_{subagents:03d}", "subagent_type": kind,
                             "requests": inner})
    return {"id": f"synthetic-{index:03d}", "models": [MODEL], "block_size": BLOCK,
            "hash_id_scope": "local", "requests": requests}


def main() -> None:
    rng = random.Random(20250601)
    out = Path(__file__).with_name("agentx-synthetic.jsonl")
    with open(out, "w") as f:
        for i in range(12):
            f.write(json.dumps(make_trace(rng, i), separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()

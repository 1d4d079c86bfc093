#!/usr/bin/env python3
"""Stand-in for InferenceX's utils/bench_serving/benchmark_serving.py.

Why it exists: InferenceX's run_benchmark_serving (benchmarks/benchmark_lib.sh)
runs `python3 WORKSPACE/utils/bench_serving/benchmark_serving.py ARGS...`, and
the fixed-seq-len scenario runs that very command. Here there is no InferenceX
checkout, no GPU and no tokenizer, so a test points WORKSPACE at
tests/fakes/inferencex-workspace and this file hands the unchanged arguments to
the fake client, `ix-fake-client --benchmark-serving ARGS...`, found on PATH
(put the fakes' bin directory first). The fake accepts exactly the flags that
command uses (plus --seed); see tests/fakes/README.md, "ix-fake-client".
Nothing of InferenceX is copied here.
"""
import os
import shutil
import sys


def main() -> None:
    client = shutil.which("ix-fake-client")
    if client is None:
        sys.exit("benchmark_serving.py (stand-in): ix-fake-client is not on PATH; "
                 "put the fakes' bin directory (build/tests/fakes/bin) first")
    os.execv(client, [client, "--benchmark-serving", *sys.argv[1:]])


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""power_check.py GPU_METRICS_CSV BENCH_RESULT_JSON EXPECTED_GPUS

Checks a step's gpu_metrics.csv against its benchmark result the way
InferenceX's utils/aggregate_power.py judges a measurement valid (its
documented rules, written here independently): the header has a timestamp,
a power and a GPU index column; every row's timestamp parses as
nvidia-smi's local "YYYY/MM/DD HH:MM:SS.fff" and its power as a
non-negative number; the expected number of GPUs is seen; for every GPU the
samples bracket the benchmark window [benchmark_start_time_unix,
benchmark_end_time_unix] and no gap between the samples that matter
exceeds 3 s; the result's window, duration and counts are sane. Prints the
energy per GPU (trapezoids, linear at the window's ends) and exits 0 when
valid, else prints the reasons and exits 1.
"""
import csv
import json
import math
import re
import sys
from datetime import datetime

MAX_GAP_S = 3.0


def parse_time(text):
    for fmt in ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S"):
        try:
            return datetime.strptime(text.strip(), fmt).timestamp()
        except ValueError:
            pass
    return None


def parse_power(text):
    m = re.search(r"-?\d+(?:\.\d+)?", text or "")
    return float(m.group(0)) if m else None


def read_samples(path, start, end, reasons):
    samples = {}
    with open(path, newline="") as f:
        reader = csv.DictReader(f, skipinitialspace=True)
        header = [c.strip() for c in reader.fieldnames or []]
        reader.fieldnames = header
        time_col = next((c for c in header if "time" in c.lower()), None)
        power_col = next((c for c in header if "power" in c.lower()
                          and not re.search("limit|cap|max|min", c, re.I)), None)
        gpu_col = next((c for c in header if c.lower() in ("index", "gpu", "gpu_id", "gpu_index")), None)
        if not (time_col and power_col and gpu_col):
            reasons.append("columns missing in %s" % header)
            return samples
        for row in reader:
            t = parse_time(row.get(time_col) or "")
            if t is None:
                reasons.append("bad timestamp %r" % row.get(time_col))
                continue
            if t < start - MAX_GAP_S or t > end + MAX_GAP_S:
                continue
            p = parse_power(row.get(power_col))
            if p is None or not math.isfinite(p) or p < 0:
                reasons.append("bad power %r" % row.get(power_col))
                continue
            samples.setdefault(row[gpu_col].strip(), []).append((t, p))
    return samples


def energy(samples, start, end):
    def at(t):
        for (t0, p0), (t1, p1) in zip(samples, samples[1:]):
            if t0 <= t <= t1:
                return p0 if t1 == t0 else p0 + (t - t0) / (t1 - t0) * (p1 - p0)
        raise ValueError("not bracketed")
    points = [(start, at(start))] + [s for s in samples if start < s[0] < end] + [(end, at(end))]
    return sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(points, points[1:]))


def main():
    csv_path, result_path, expected = sys.argv[1], sys.argv[2], int(sys.argv[3])
    bench = json.load(open(result_path))
    reasons = []
    start, end, duration = (bench.get(k) for k in
                            ("benchmark_start_time_unix", "benchmark_end_time_unix", "duration"))
    if not all(isinstance(v, (int, float)) for v in (start, end, duration)) or end <= start:
        print("invalid benchmark window: %s" % [start, end, duration])
        return 1
    if abs(duration - (end - start)) > max(0.5, (end - start) * 0.01):
        reasons.append("duration %s does not match the window" % duration)
    for k in ("completed", "total_input_tokens", "total_output_tokens"):
        if not isinstance(bench.get(k), int) or bench[k] <= 0:
            reasons.append("%s is %r" % (k, bench.get(k)))
    samples = read_samples(csv_path, start, end, reasons)
    if len(samples) != expected:
        reasons.append("%d GPUs seen (%s), %d expected" % (len(samples), sorted(samples), expected))
    report = {}
    for gpu, s in sorted(samples.items()):
        s.sort()
        if len(s) < 2 or s[0][0] > start or s[-1][0] < end:
            reasons.append("GPU %s: the window %.3f-%.3f is not bracketed by %d samples (%.3f-%.3f)"
                           % (gpu, start, end, len(s), s[0][0], s[-1][0]))
            continue
        before = max(i for i, x in enumerate(s) if x[0] <= start)
        after = min(i for i, x in enumerate(s) if x[0] >= end)
        gaps = [b[0] - a[0] for a, b in zip(s[before:after + 1], s[before + 1:after + 1])]
        if gaps and max(gaps) > MAX_GAP_S:
            reasons.append("GPU %s: a %.2f s gap between samples" % (gpu, max(gaps)))
        report[gpu] = round(energy(s, start, end), 3)
    if reasons:
        print("power invalid: " + "; ".join(reasons[:5]))
        return 1
    print("power valid: energy per GPU (J) %s" % json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())

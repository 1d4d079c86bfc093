// Python's json.dumps(value, indent=2), byte for byte, for a RapidJSON
// value: InferenceX's utils/process_result.py and aggregate_power.py write
// their agg_*.json that way, and a sweep writes the same file, so a diff of
// the two is empty. Object members keep their order (Python dicts keep
// insertion order); floats are written as Python's repr writes them
// (shortest round trip, "1e-05", "2.0", "Infinity"); strings are escaped
// with ensure_ascii (every non-ASCII code point as \uXXXX).
#pragma once

#include <rapidjson/document.h>

#include <string>

namespace ix {

// repr(x) of a Python float.
std::string PyFloatRepr(double x);

// json.dumps(v, indent=indent) (indent 0: the one-line form with ", " and
// ": " separators, as json.dumps(v) writes).
std::string PyJsonDumps(const rapidjson::Value& v, int indent = 2);

// Python's round(x, ndigits) for a float: correctly rounded to ndigits
// decimals (ties to even on the exact binary value).
double PyRound(double x, int ndigits);

// InferenceX's agentic round_floats(v, ndigits), in place: every finite
// float (a double, never an int) becomes round(x, ndigits), and an integral
// result of magnitude >= 1 becomes an int (so 1.0 prints "1", 0.0 stays
// "0.0"); ints, bools, null, strings, NaN and infinities are unchanged.
void PyRoundFloats(rapidjson::Value& v, int ndigits);

}  // namespace ix

// MatrixJson: the generator's output, written exactly as Python's
// json.dumps writes it: one line, ", " and ": " separators, keys in the
// reference's insertion order, every non-ASCII character (and DEL and
// controls) escaped as \uXXXX with surrogate pairs above U+FFFF. No output
// field carries a float (dram-utilization is consumed, not echoed), so
// there is no float formatting here.
//
// Invariant: functions only append to `out`; they never allocate per entry
// beyond the growth of `out`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/matrix/matrix.h"

namespace ix {

// A JSON string literal, Python ensure_ascii style.
void AppendJsonString(std::string& out, std::string_view s);
void AppendJsonInt(std::string& out, int64_t v);
// One matrix entry as a JSON object; `without_conc` leaves out conc and
// exp-name (the identity of a config apart from its concurrency).
void AppendMatrixEntry(std::string& out, const MatrixEntry& e, bool without_conc = false);
// The reference's _multinode_parallelism_key as a string: the entry without
// conc, exp-name, run-eval, eval-conc, eval-all-concs and eval-only, nested
// objects in one key order (the reference compares them as dicts, where
// written order does not count). Equal strings, equal identities.
void AppendMultinodeIdentity(std::string& out, const MatrixEntry& e);
void AppendMatrixList(std::string& out, const std::vector<MatrixEntry>& entries);
// "[...]", no trailing newline.
std::string MatrixToJson(const std::vector<MatrixEntry>& entries);

}  // namespace ix

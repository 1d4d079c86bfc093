// The sweep's collector token: 32 random bytes (getrandom) as 64 lowercase
// hex digits, made once when the sweep is submitted and kept in
// SWEEP_DIR/collector.token (0600, the submitting user's). Each job hands
// the file to its node agent as a descriptor (task_events.h); the agent
// sends the token with every request to the sweep's collector. It is never
// on a command line, in sweep.json or in a log, and a --resume reads it back
// from the file.
//
// Invariants: the file is created O_CREAT | O_EXCL | O_NOFOLLOW (never
// through a planted link), fsync'd with its directory before the sweep's
// jobs exist; it is read back only as a private regular file.
#pragma once

#include <string>

#include "core/base/result.h"

namespace ix {

inline constexpr const char* kTokenFileName = "collector.token";

// SWEEP_DIR/collector.token.
std::string SweepTokenPath(const std::string& sweep_dir);

// 32 bytes from getrandom as 64 lowercase hex digits.
Result<std::string> NewSweepToken();

// Writes `token` (and a line end) as a new file at `path`, 0600; an
// existing file (or link) there is an error naming the path.
Status WriteTokenFile(const std::string& path, const std::string& token);

// A new token, written into SWEEP_DIR/collector.token in place of an
// earlier sweep's (a directory taken over after that sweep ended).
Result<std::string> CreateSweepToken(const std::string& sweep_dir);

// The token at `path`, for --resume: refused when the file is a symbolic
// link, not a regular file, readable or writable by group or others, or
// holds no token; the error names the file and what to do.
Result<std::string> ReadSweepToken(const std::string& path);

}  // namespace ix

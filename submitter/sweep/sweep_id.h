// Sweep ids: "sw-YYYYMMDD-HHMMSS-xxxx" (UTC time, 16 random bits), one
// per sweep, sortable by when it started, safe in file and job names.
#pragma once

#include <string>

namespace ix {

// A new id for a sweep started at `now` (seconds since the epoch).
std::string NewSweepId(double now);

}  // namespace ix

// The port broker's lease table as files in its lease directory (ports.h):
// DIR/leases, one lease a line, "FIRST COUNT NAME OWNER PID START_TIME
// BOOT_ID TIME", replaced whole (written to DIR/leases.tmp, fsynced, then
// renamed, so a reader sees the old table or the new); and DIR/lock, the
// flock(2) that every transaction on the table holds. Internal to ports.cc.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "core/base/unique_fd.h"
#include "core/node/ports.h"

namespace ix {

// The leases in the table file at `path`; none when it does not exist. A
// malformed line is an error naming PATH:LINE and the expected fields.
Result<std::vector<PortLease>> ReadLeaseTable(const std::string& path);
// Replaces DIR/leases with `table` (mode 0600).
Status WriteLeaseTable(const std::string& dir, const std::vector<PortLease>& table);
// DIR/lock (0600), opened and locked exclusively; held until the returned
// descriptor closes. Gives up after `timeout` with an error naming the
// holder, so nobody (a job user included) can make a step wait for ever.
Result<UniqueFd> LockLeaseTable(const std::string& dir, std::chrono::milliseconds timeout);

}  // namespace ix

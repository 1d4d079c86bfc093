// /proc, read the same way by everything that looks at processes: through
// one directory descriptor (never by path), one parse of /proc/PID/stat,
// and the identity of a process that survives pid reuse. Also the boot id,
// which tells records of this boot from those of an earlier one.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace ix {

// The /proc that every reader of processes uses: a directory descriptor
// opened on first use and kept for the life of the process (-1 when /proc
// cannot be opened). A supervisor in a container calls it at start: when the
// container's rootfs is removed under it (Pyxis without --container-name),
// its /proc mount is detached but still readable through the descriptor.
int ProcDirFd();

// A process identity that survives pid reuse: two ProcessIds name the same
// process exactly when both fields are equal. start_time is never 0 for an
// identity read from /proc.
struct ProcessId {
  pid_t pid = 0;
  uint64_t start_time = 0;  // /proc/PID/stat field 22, clock ticks since boot
  bool operator==(const ProcessId&) const = default;
};

// A process as one read of /proc/PID/stat saw it.
struct ProcessInfo {
  pid_t pid = 0, ppid = 0, pgid = 0, sid = 0;
  char state = '?';      // R S D Z T t X I ...
  std::string comm;      // at most 15 characters, may hold spaces and ')'
  uint64_t start_time = 0;
  uint64_t utime_ticks = 0, stime_ticks = 0;  // CPU time (clock ticks), user and system
  uint64_t rss_pages = 0;                     // resident set size in pages
  ProcessId id() const { return {pid, start_time}; }
  // A zombie has exited: it only waits to be reaped.
  bool exited() const { return state == 'Z' || state == 'X'; }
};

// Parses the text of /proc/PID/stat. `where` names it in errors.
Result<ProcessInfo> ParseProcStat(std::string_view text, const std::string& where);
// Reads /proc/PID/stat; an Error when the process is gone.
Result<ProcessInfo> ReadProcessInfo(pid_t pid);
// Every process on the machine (one pass over /proc).
Result<std::vector<ProcessInfo>> ListProcesses();

// The start time of a live process (ProcessInfo::start_time), or 0 when it
// is gone or a zombie: a zombie keeps its pid and start time (and kill(pid,
// 0) succeeds) until its parent reaps it, which can take long (a
// slurmstepd killed under an init that reaps late).
uint64_t LiveStartTime(pid_t pid);

// This boot's id (/proc/sys/kernel/random/boot_id; letters, digits and
// dashes only, so it is safe in a file name), or "" when it cannot be read.
std::string BootId();

}  // namespace ix

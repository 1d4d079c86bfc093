// The process tree as /proc shows it: a process's descendants by parent
// pid, and whether an identity still names a running process. Every
// function here reads /proc through ProcDirFd() (core/base/proc_fs.h).
//
// Processes are identified by (pid, start time): /proc/PID/stat field 22
// does not change at execve and differs for a recycled pid.
#pragma once

#include <sys/types.h>

#include <vector>

#include "core/base/proc_fs.h"  // ProcessId, ProcessInfo, ListProcesses
#include "core/base/result.h"

namespace ix {

// The descendants of `root` in `table` by parent pid, breadth first
// (children before grandchildren), `root` itself excluded. Pure.
std::vector<ProcessInfo> DescendantsIn(const std::vector<ProcessInfo>& table, pid_t root);
// The same on the live machine.
Result<std::vector<ProcessInfo>> ListDescendants(pid_t root);
// Whether `id` still names a running (not exited) process.
bool IsRunning(const ProcessId& id);

}  // namespace ix

// StepBackstop: what slurmstepd does at the end of a step in case ix-stepd's
// own stop did not take everything with it (ix-stepd killed, or stopping
// blind after a container's removal took its view of the tree). From the
// host's /proc it finds the processes left over: ix-stepd and its
// descendants as they were when the step began to end, and every process
// of the job's user that listens on a port leased to the step, with the
// members of the process groups they lead; it kills them before the leases
// are released. The choice is pure (Leftovers), so it is tested without
// processes; FindLeftovers reads the machine.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/process/process.h"

namespace ix {

// A listening TCP socket: its local port and socket inode.
struct ListenSocket {
  int port = 0;
  uint64_t inode = 0;
};

// The LISTEN sockets (state 0A) of /proc/net/tcp or /proc/net/tcp6 text
// whose port is in `ports`. Lines that do not parse are skipped.
std::vector<ListenSocket> ParseListenSockets(std::string_view text, const std::set<int>& ports);

// A process and who owns it (the owner of /proc/PID).
struct OwnedProcess {
  ProcessInfo info;
  uid_t uid = 0;
};

// Pure. Of `table` (the machine now), the live processes to kill: those in
// `remembered` (same pid and start time), those of `uid` in `listeners`,
// and the members of `uid` of the process groups these lead; never `self`
// or pid 1. In table order.
std::vector<ProcessInfo> Leftovers(const std::vector<OwnedProcess>& table, const std::vector<ProcessId>& remembered,
                                   const std::set<pid_t>& listeners, uid_t uid, pid_t self);

// The machine: every process with its owner, and the pids of `uid`'s
// processes that hold a LISTEN socket on one of `ports`. Errors name what
// could not be read.
Result<std::vector<OwnedProcess>> ListOwnedProcesses();
std::set<pid_t> ListenersOn(const std::vector<OwnedProcess>& table, const std::set<int>& ports, uid_t uid);

// The processes left over on this machine (see above).
Result<std::vector<ProcessInfo>> FindLeftovers(const std::vector<ProcessId>& remembered, const std::set<int>& ports,
                                               uid_t uid);

}  // namespace ix

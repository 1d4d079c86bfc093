// Process: running a step's processes, in three parts. Include the one you
// need; this header keeps every name available to code that includes it.
//   spawn.h         starting one program exactly as a launch plan says (fork +
//                   execve, no shell), the environment it gets
//   process_tree.h  the process tree from /proc: descendants, IsRunning
//   process_stop.h  stopping a whole tree so nothing outlives a step
// docs/PROCESS.md.
#pragma once

#include "core/base/proc_fs.h"  // ProcessId, ProcessInfo, ListProcesses
#include "core/process/process_stop.h"
#include "core/process/process_tree.h"
#include "core/process/spawn.h"

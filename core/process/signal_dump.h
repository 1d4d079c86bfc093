// Stack dumps a server prints itself when signalled: Python's faulthandler
// registered on SIGUSR1 (`faulthandler.register(signal.SIGUSR1)`, as vLLM
// users enable it) writes every thread's Python stack to the process's
// stderr, which is the server's log in a step. Part of a hang's diagnosis
// (diagnosis.h), next to py-spy, which needs ptrace and may be absent.
//
// A signal is sent only to a process that catches it (its SigCgt bit in
// /proc/PID/status): SIGUSR1's default action ends a process, and a
// diagnosis must not be what kills a server. What the dump wrote is read
// back as the bytes its log gained after the signal, through the result
// directory's descriptor (never by path).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/proc_fs.h"

namespace ix {

// The signals a process catches, from the text of /proc/PID/status (bit
// N-1 is signal N); nullopt when there is no well-formed SigCgt line.
std::optional<uint64_t> CaughtSignals(std::string_view status_text);

// Whether the set `caught` holds signal `sig` (1..64).
bool CatchesSignal(uint64_t caught, int sig);

// One dump asked of a server's process tree: the signal, the processes it
// was sent to (those of the tree that catch it, alive, not the caller),
// and where its log stood before. Invariant: log_offset is -1 when there
// is no log or it could not be read (nothing is read back then).
struct SignalDump {
  int signal = 0;
  std::vector<pid_t> sent;
  std::string log;
  off_t log_offset = -1;
};

// Sends `sig` to every process of `processes` that catches it and still
// has the start time it had when read (a pid reused since is left alone).
// `log` under `dir` is measured first, so what the dumps write is after it.
SignalDump SendDumpSignal(const std::vector<ProcessInfo>& processes, int sig, int dir, const std::string& log);

// Waits, until `deadline` at the latest, for the dumps' output: until every
// log that was sent a dump has stopped growing for 100 ms after it grew, or
// 1 s after the signals when one stays still (a stopped process dumps
// nothing until it runs).
void AwaitDumps(const std::vector<SignalDump>& dumps, int dir, std::chrono::steady_clock::time_point deadline);

// The section of a diagnosis file for `dump` ("" when it was sent to no
// process): which processes got the signal, and what the log gained after
// it (at most `cap` bytes).
std::string DumpSection(const SignalDump& dump, int dir, size_t cap);

}  // namespace ix

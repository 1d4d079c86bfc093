// A diagnosis of a step's hung server processes, taken just before
// ix-stepd kills them: for each server's process tree, what the
// kernel says every process and thread is doing (state, wchan, kernel
// stacks where readable), its open TCP sockets, the end of its log, the
// GPU rows the caller has, its Python stacks when a py-spy is given, and
// the faulthandler dumps of processes that catch SIGUSR1 (signal_dump.h);
// one text file per server in the step's result directory.
//
// Bounded: py-spy runs in parallel and is killed at the deadline, every
// file is cut at a byte cap, and /proc is read only through files that do
// not wait on the target (no cmdline or environ: those take the target's
// mmap lock, which a process stuck in D state may hold). It never fails
// and never throws: what it could not read or write is in the notes.
// Static-binary safe: /proc, posix_spawn and the directory descriptor only.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ix {

// A server process of the step: its plan name (any bytes; the file name is
// made safe from it), the pid of the process ix-stepd started, and its
// log's file name in the result directory ("" = none). Its descendants
// (vLLM's EngineCores are children of the API server) are found in /proc.
struct DiagnosisTarget {
  std::string name;
  pid_t pid = 0;
  std::string log;
};

// How a diagnosis is taken. Invariants: result_dir_fd is a directory
// descriptor that stays open for the call; deadline is set by the caller
// (a few seconds from now: a default one has passed, so only the roots'
// /proc entries would be read); max_file_bytes below 4 KiB counts as 4 KiB.
struct DiagnosisOptions {
  int result_dir_fd = -1;
  std::string result_dir_label = "result dir";  // names the directory in notes
  // Every read and py-spy ends by then; writing the files comes after (a
  // few small writes).
  std::chrono::steady_clock::time_point deadline;
  size_t max_file_bytes = 256 * 1024;  // per file, and per py-spy output
  int log_lines = 50;
  std::string py_spy;    // the py-spy program (a path), "" = no Python stacks
  std::string gpu_rows;  // the GPUs' last samples as the caller has them, copied into every file
  // Sent to every process that catches it (signal_dump.h: Python's
  // faulthandler registered on it); what its log gained after is copied
  // in. 0 = none.
  int dump_signal = SIGUSR1;
};

// What a diagnosis left: the names of the files written under the result
// directory, in target order, and one line per thing it could not read,
// run or write and why ("engine: py-spy on pid 12 killed at the deadline").
struct DiagnosisReport {
  std::vector<std::string> files;
  std::vector<std::string> notes;
};

// Takes the diagnosis of every target's tree and writes
// `diagnosis-NAME.txt` for each, atomically through options.result_dir_fd
// (never following a link). Returns by options.deadline plus the writes.
// A second target whose NAME sanitizes alike gets `diagnosis-NAME-PID.txt`.
//
// The file, plain text in sections (for people; nothing parses it):
//   ix diagnosis of 'NAME' (pid PID) / taken: UTC time / processes (N): PIDS
//   == process PID (COMM), parent PPID   one per process, the root first:
//      state, wchan ("-": none), cpu and rss, "threads (N): tid state wchan
//      name" lines, kernel stacks grouped by identical stack (or
//      "unreadable: EACCES ..."), "sockets: N TCP, M other" and a line per
//      TCP socket ("fd 7: LISTEN 0.0.0.0:8000", "fd 9: ESTABLISHED A -> B")
//   == log LOG, last N lines             == gpus (the caller's rows)
//   == SIGUSR1 (a faulthandler dump) sent to PIDS   what the log gained after
//   == py-spy dump --pid PID: OUTCOME     its output, one per process
// cut at max_file_bytes with a last line "[cut: ...]".
DiagnosisReport DiagnoseProcesses(const std::vector<DiagnosisTarget>& targets, const DiagnosisOptions& options);

// "diagnosis-NAME.txt": every byte of NAME outside [A-Za-z0-9._-] becomes
// '_', NAME is cut to 200 bytes, and an empty NAME is "_".
std::string DiagnosisFileName(std::string_view name);

}  // namespace ix

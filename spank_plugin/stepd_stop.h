// StepdStop: how slurmstepd (root) ends the step's ix-stepd. ix-stepd is
// found by the pid task 0 wrote (the job user's file, read through the run
// directory's descriptor without following a link or blocking on a FIFO)
// and kept only if that process is the job user's; a pidfd is taken first,
// so the pid checked is the pid signalled and cannot be recycled between.
// Invariants: the stop happens at most once; the tree it remembers (for the
// backstop) is taken while ix-stepd still runs, and grows when it had to be
// killed.
#pragma once

#include <sys/types.h>

#include <optional>
#include <vector>

#include "core/process/process.h"

namespace ix {

class StepdStop {
 public:
  StepdStop(int run_dir_fd, uid_t uid) : run_dir_fd_(run_dir_fd), uid_(uid) {}
  StepdStop(const StepdStop&) = delete;
  StepdStop& operator=(const StepdStop&) = delete;
  ~StepdStop();

  // SIGTERM to ix-stepd (it stops what it started), then its grace and a
  // margin (5 s), then SIGKILL. Once; later calls return at once.
  void Stop();
  // Waits, without signalling, until ix-stepd ends on its own: on a node
  // after the head of a step across nodes, whose part ends with the head.
  // It has no deadline of its own: the head's end, a failure anywhere,
  // scancel and the time limit all end ix-stepd.
  void AwaitOwnEnd();
  // ix-stepd's tree as it was when the stop (or the wait) began.
  const std::vector<ProcessId>& remembered() const { return remembered_; }

 private:
  struct Found {
    ProcessId id;
    int pidfd = -1;
  };
  Found* Find();
  void Remember();

  int run_dir_fd_;
  uid_t uid_;
  bool looked_ = false;
  std::optional<Found> found_;
  bool stopped_ = false;
  std::vector<ProcessId> remembered_;
};

}  // namespace ix

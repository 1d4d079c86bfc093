// BoundedWorkQueue: a fixed number of worker threads and a queue of at most
// `capacity` waiting tasks, for the collector's HTTP server: each accepted
// connection is one task, so a flood of connections waits in the kernel's
// backlog (Enqueue blocks the accepting thread) instead of growing memory.
//
// Invariants: at most `threads` tasks run at once on the workers; at most
// `capacity` wait; once Release() or Shutdown() is called, Enqueue never
// waits (a task that finds the queue full runs on the caller's thread), so
// stopping cannot hang on a full queue. Shutdown() runs what is queued, then
// joins the workers; it is idempotent.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ix {

class BoundedWorkQueue {
 public:
  BoundedWorkQueue(size_t threads, size_t capacity);
  ~BoundedWorkQueue();
  BoundedWorkQueue(const BoundedWorkQueue&) = delete;
  BoundedWorkQueue& operator=(const BoundedWorkQueue&) = delete;

  void Enqueue(std::function<void()> task);
  // Blocked and later Enqueue calls stop waiting for room.
  void Release();
  void Shutdown();

 private:
  void Work();

  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable has_task_;
  std::condition_variable has_room_;
  std::deque<std::function<void()>> tasks_;
  bool released_ = false;
  bool shutting_down_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace ix

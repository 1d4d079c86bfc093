// HttpTaskQueue: cpp-httplib's TaskQueue (the queue a Server hands each
// accepted connection to) with `enqueue` written once for every cpp-httplib
// Debian ships: it returns void in 0.11 (bookworm) and bool, "accepted", in
// 0.18 (trixie) and later, where a refused connection is closed. Queues
// derive from this and implement Submit, which must take every job (run it
// on the caller when full, block, or grow): a job owns a socket to close.
// Header only, for the programs that already include httplib.h.
#pragma once

#include <httplib.h>

#include <functional>
#include <utility>

namespace ix {

class HttpTaskQueue : public httplib::TaskQueue {
 public:
  // enqueue's return type in the cpp-httplib at hand.
  using EnqueueResult = decltype(std::declval<httplib::TaskQueue&>().enqueue(std::function<void()>()));

  // void: static_cast<void>(true); bool: true, the job was taken.
  EnqueueResult enqueue(std::function<void()> fn) final {
    Submit(std::move(fn));
    return static_cast<EnqueueResult>(true);
  }

 protected:
  virtual void Submit(std::function<void()> fn) = 0;
};

}  // namespace ix

// GrowingPool: a cpp-httplib task queue that starts a worker thread only
// when a request finds none idle, up to `max` (cpp-httplib's ThreadPool
// starts all of them up front: 128 threads cost the fake router several
// milliseconds before it answers its first /health, which a dep4 step's
// set-up would count as ours). Workers stay once started.
//
// Invariant: threads_.size() <= max_; idle_ counts workers waiting for a job.
#pragma once

#include "core/base/http_task_queue.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ixfake {

class GrowingPool final : public ix::HttpTaskQueue {
 public:
  explicit GrowingPool(size_t max) : max_(max) {}
  ~GrowingPool() override = default;

  void shutdown() override {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      shutdown_ = true;
    }
    cond_.notify_all();
    for (auto& t : threads_) t.join();  // enqueue is not called any more
  }

 private:
  void Submit(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(fn));
    if (idle_ < jobs_.size() && threads_.size() < max_) {
      threads_.emplace_back([this] { Work(); });
    }
    cond_.notify_one();
  }

  void Work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ++idle_;
        cond_.wait(lock, [&] { return !jobs_.empty() || shutdown_; });
        --idle_;
        if (shutdown_ && jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
    }
  }

  const size_t max_;
  std::vector<std::thread> threads_;
  std::deque<std::function<void()>> jobs_;
  size_t idle_ = 0;
  bool shutdown_ = false;
  std::condition_variable cond_;
  std::mutex mutex_;
};

}  // namespace ixfake

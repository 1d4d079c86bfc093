#include "submitter/collector/bounded_work_queue.h"

namespace ix {

BoundedWorkQueue::BoundedWorkQueue(size_t threads, size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {
  if (threads == 0) threads = 1;
  workers_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
}

BoundedWorkQueue::~BoundedWorkQueue() { Shutdown(); }

void BoundedWorkQueue::Enqueue(std::function<void()> task) {
  std::unique_lock<std::mutex> lock(mu_);
  has_room_.wait(lock, [this] { return tasks_.size() < capacity_ || released_; });
  if (tasks_.size() >= capacity_ || shutting_down_) {
    lock.unlock();
    task();  // released: never wait, never drop (a task may own a socket to close)
    return;
  }
  tasks_.push_back(std::move(task));
  has_task_.notify_one();
}

void BoundedWorkQueue::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  released_ = true;
  has_room_.notify_all();
}

void BoundedWorkQueue::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_ && workers_.empty()) return;
    shutting_down_ = true;
    released_ = true;
    has_task_.notify_all();
    has_room_.notify_all();
  }
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
  std::lock_guard<std::mutex> lock(mu_);
  workers_.clear();
}

void BoundedWorkQueue::Work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      has_task_.wait(lock, [this] { return !tasks_.empty() || shutting_down_; });
      if (tasks_.empty()) return;  // shutting down and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
      has_room_.notify_one();
    }
    task();
  }
}

}  // namespace ix

#include "node_agent/engine_scraper.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace ix {

namespace {

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

EngineScraper::EngineScraper(std::chrono::milliseconds timeout)
    : timeout_(timeout), wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), thread_([this] { Run(); }) {}

EngineScraper::~EngineScraper() { Stop(); }

void EngineScraper::Request(std::vector<std::pair<std::string, std::vector<std::string>>> round) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_ = std::move(round);
  }
  cv_.notify_one();
}

std::vector<StepEngineReading> EngineScraper::Take() {
  uint64_t ignored = 0;
  if (wake_.valid()) (void)!::read(wake_.get(), &ignored, sizeof ignored);
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<StepEngineReading> out;
  out.swap(done_);
  return out;
}

void EngineScraper::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void EngineScraper::Run() {
  for (;;) {
    std::vector<std::pair<std::string, std::vector<std::string>>> round;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || waiting_.has_value(); });
      if (stop_) return;
      round = std::move(*waiting_);
      waiting_.reset();
    }
    std::vector<StepEngineReading> readings;
    for (const auto& [step, urls] : round) {
      readings.push_back({step, UnixNow(), CombineReadings(ReadEngineMetrics(urls, timeout_))});
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (StepEngineReading& r : readings) done_.push_back(std::move(r));
    }
    const uint64_t one = 1;
    if (wake_.valid()) (void)!::write(wake_.get(), &one, sizeof one);
  }
}

}  // namespace ix

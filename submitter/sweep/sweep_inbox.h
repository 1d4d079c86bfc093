// SweepInbox: what the sweep's collector received that the driver acts on,
// handed from the collector's serving threads (its callbacks) to the
// driver's thread. The callbacks Push; the driver Drains once a look and
// waits on it between looks (WaitFor), so a failure or a result is acted on
// as soon as it arrives instead of at the next poll of Slurm.
//
// Only the events the driver acts on become items (StreamItemOfEvent):
// `entry` (the task's word on its entry), `failure` (ix-stepd's) and
// `result` (a result file announced; the file itself comes by a PUT, as a
// kResultFile item). Everything else stays in the database for `ixsubmit
// events`.
//
// Invariants: items come out in the order they went in; Push never blocks
// on the driver (the callbacks must stay short); thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ix {

// One thing an entry's node said through the collector.
struct StreamItem {
  enum class Kind {
    kEntry,        // the task's state: running, succeeded or failed
    kFailure,      // the step failed (ix-stepd): the entry will fail
    kResultNamed,  // a result file is on its way (the `result` event)
    kResultFile,   // a result file arrived
  };
  Kind kind = Kind::kEntry;
  int64_t entry = 0;
  double time = 0;                   // the sender's clock (unix seconds)
  std::string state;                 // kEntry
  std::optional<int64_t> exit_code;  // kEntry, final states
  std::string reason, process;       // kEntry (failed), kFailure
  std::string name;                  // kResultNamed, kResultFile
  std::string content;               // kResultFile, unless `written`
  bool written = false;              // kResultFile: already in results/INDEX/NAME
};

class SweepInbox {
 public:
  void Push(StreamItem item);
  // Every item waiting, oldest first; the inbox is empty after.
  std::vector<StreamItem> Drain();
  // Waits up to `limit` for an item; true when one is waiting (at once
  // when one already is).
  bool WaitFor(std::chrono::milliseconds limit);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<StreamItem> items_;
};

// The item a stored event of sweep `sweep_id` is for the driver, from the
// event's columns and its JSON `body`; nullopt for another sweep, an event
// without an entry, an event the driver does not act on, or fields of the
// wrong type (a malformed event is not the driver's to fix: it stays in the
// database).
std::optional<StreamItem> StreamItemOfEvent(const std::string& event, const std::optional<std::string>& sweep,
                                            const std::optional<int64_t>& entry, double time,
                                            const std::string& body, const std::string& sweep_id);

}  // namespace ix

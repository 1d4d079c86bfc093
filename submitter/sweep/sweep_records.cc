#include "submitter/sweep/sweep_records.h"

#include <cstddef>

namespace ix {
namespace {

// The names, in the order of each enum's values: what the database holds.
constexpr const char* kSweepStates[] = {"submitting", "running", "succeeded", "failed", "cancelled"};
constexpr const char* kJobStates[] = {"planned", "submitting", "submitted", "cancelled", "finished"};
constexpr const char* kEntryStates[] = {"pending", "running", "succeeded", "failed", "cancelled", "skipped"};
constexpr const char* kJobKinds[] = {"canary", "array"};

template <class E, size_t N>
bool ParseName(const char* const (&names)[N], std::string_view s, E& out) {
  for (size_t i = 0; i < N; ++i) {
    if (s == names[i]) {
      out = static_cast<E>(i);
      return true;
    }
  }
  return false;
}

}  // namespace

const char* StateName(SweepState s) { return kSweepStates[static_cast<size_t>(s)]; }
const char* StateName(JobState s) { return kJobStates[static_cast<size_t>(s)]; }
const char* StateName(EntryState s) { return kEntryStates[static_cast<size_t>(s)]; }
const char* JobKindName(JobKind k) { return kJobKinds[static_cast<size_t>(k)]; }

bool ParseStateName(std::string_view name, SweepState& out) { return ParseName(kSweepStates, name, out); }
bool ParseStateName(std::string_view name, JobState& out) { return ParseName(kJobStates, name, out); }
bool ParseStateName(std::string_view name, EntryState& out) { return ParseName(kEntryStates, name, out); }
bool ParseJobKind(std::string_view name, JobKind& out) { return ParseName(kJobKinds, name, out); }

bool IsFinal(EntryState s) {
  return s == EntryState::kSucceeded || s == EntryState::kFailed || s == EntryState::kCancelled ||
         s == EntryState::kSkipped;
}

const JobRecord* LoadedSweep::FindJob(std::string_view key) const {
  for (const JobRecord& j : jobs) {
    if (j.key == key) return &j;
  }
  return nullptr;
}

}  // namespace ix

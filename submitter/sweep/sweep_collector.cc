#include "submitter/sweep/sweep_collector.h"

#include <fcntl.h>

#include <cstdio>
#include <cstring>
#include <utility>

#include "core/base/file_text.h"
#include "core/base/text.h"
#include "submitter/collector/collector.h"
#include "submitter/collector/collector_store.h"
#include "submitter/sweep/sweep_stream.h"

namespace ix {
namespace {

void Say(const std::string& line) { std::fprintf(stderr, "ixsubmit sweep: %s\n", line.c_str()); }

}  // namespace

SweepCollector::SweepCollector(std::unique_ptr<Collector> c, std::string host)
    : collector_(std::move(c)), host_(std::move(host)) {}

SweepCollector::~SweepCollector() { Stop(); }

Result<std::unique_ptr<SweepCollector>> SweepCollector::Start(const SweepManifest& m, const ListenAddress& listen,
                                                              const std::string& db_path, const std::string& token,
                                                              SweepInbox& inbox) {
  CollectorOptions o;
  o.host = listen.host;
  o.port = listen.port;
  o.db_path = db_path;
  o.token = token;
  const std::string id = m.sweep_id;
  SweepInbox* box = &inbox;
  o.on_event = [box, id](const StoredEvent& e) {
    if (std::optional<StreamItem> item = StreamItemOfEvent(e.event, e.sweep, e.entry, e.time, e.body, id)) {
      box->Push(std::move(*item));
    }
  };
  o.on_result = [box, id](const std::string& sweep, int64_t entry, const std::string& name,
                          const std::string& content) {
    if (sweep != id) return;
    StreamItem item;
    item.kind = StreamItem::Kind::kResultFile;
    item.entry = entry;
    item.name = name;
    item.content = content;
    box->Push(std::move(item));
  };
  o.log = [](const std::string& line) { Say("collector: " + line); };
  Result<std::unique_ptr<Collector>> c = Collector::Start(std::move(o));
  if (!c) return Error{"the sweep's collector on " + listen.ToString() + ": " + c.error().message};
  std::unique_ptr<SweepCollector> sc(new SweepCollector(std::move(c).value(), listen.host));
  sc->Replay(m, db_path, inbox);
  return sc;
}

void SweepCollector::Replay(const SweepManifest& m, const std::string& db_path, SweepInbox& inbox) {
  Result<CollectorStore> store = CollectorStore::Open(db_path);
  if (!store) return Say("cannot read what the collector stored before: " + store.error().message);
  if (Result<std::vector<StoredEvent>> events = store.value().ListEvents(m.sweep_id); events) {
    for (const StoredEvent& e : events.value()) {
      if (std::optional<StreamItem> item = StreamItemOfEvent(e.event, e.sweep, e.entry, e.time, e.body, m.sweep_id)) {
        inbox.Push(std::move(*item));
      }
    }
  }
  Result<std::vector<StoredResultInfo>> results = store.value().ListResults(m.sweep_id);
  if (!results) return Say("cannot list the stored result files: " + results.error().message);
  for (const StoredResultInfo& r : results.value()) {
    if (r.entry < 0 || r.entry >= static_cast<int64_t>(m.plan.entries.size())) continue;
    // One file at a time (up to 64 MiB each), written here, not queued.
    Result<std::optional<std::string>> content = store.value().ReadResult(ResultTarget{r.sweep, r.entry, r.name});
    if (!content || !content.value()) continue;
    if (Result<bool> w = WriteResultFile(m.sweep_dir, r.entry, r.name, *content.value()); !w) {
      Say(w.error().message);
      continue;
    }
    StreamItem item;
    item.kind = StreamItem::Kind::kResultFile;
    item.entry = r.entry;
    item.name = r.name;
    item.written = true;
    inbox.Push(std::move(item));
  }
}

ListenAddress SweepCollector::address() const {
  ListenAddress a;
  a.host = host_;
  a.port = collector_ ? collector_->port() : 0;
  return a;
}

void SweepCollector::Stop() {
  if (collector_) collector_->Stop();
}

}  // namespace ix

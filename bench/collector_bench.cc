// collector_bench: events per second that `ixsubmit serve` ingests through
// HTTP (POST /v1/events, batches of 500, keep-alive connections), against a
// baseline measured in the same run: the same rows inserted straight into
// SQLite (same schema, WAL, synchronous=FULL, one transaction per 500, one
// prepared INSERT OR IGNORE), no HTTP, no JSON.
//
// Usage: collector_bench IXSUBMIT [EVENTS_PER_CASE] [ROUNDS]
// Prints one Markdown table row per case (medians of ROUNDS).
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBatch = 500;
const std::string kToken = "bench-token-0123456789abcdef0123456789";

// One event as an agent sends it (ix-stepd's `ready`, with sender and node).
std::string EventJson(const std::string& run, int i) {
  return R"({"id":")" + run + "." + std::to_string(i / 1000) + ":" + std::to_string(i % 1000 + 1) +
         R"(","event":"ready","step":")" + run + "." + std::to_string(i / 1000) +
         R"(","time":1764691740.)" + std::to_string(100 + i % 900) +
         R"(,"sweep":"sw-20261202-160900-ab12","entry":)" + std::to_string(i % 1002) +
         R"(,"engine":"vllm","port":8000,"ready_ms":41234.5,"sender":{"pid":)" + std::to_string(4000 + i % 97) +
         R"(,"uid":1000,"gid":1000},"node":"gpu-node-)" + std::to_string(i % 16) + R"("})";
}

std::vector<std::string> Batches(const std::string& run, int events) {
  std::vector<std::string> out;
  for (int start = 0; start < events; start += kBatch) {
    std::string body = "[";
    for (int i = start; i < std::min(events, start + kBatch); ++i) body += (i > start ? "," : "") + EventJson(run, i);
    out.push_back(body + "]");
  }
  return out;
}

struct Server {
  pid_t pid = -1;
  int port = 0;
};

// `ixsubmit serve` on a free port; its stdout line says which.
Server StartServer(const std::string& ixsubmit, const std::string& dir) {
  const std::string token_file = dir + "/token";
  std::ofstream(token_file) << kToken << "\n";
  ::chmod(token_file.c_str(), 0600);
  int out[2];
  if (::pipe(out) != 0) std::exit(1);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  const std::string db = dir + "/ix.db";
  std::vector<std::string> args = {ixsubmit, "serve", "--listen", "127.0.0.1:0", "--db", db, "--token-file",
                                   token_file};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  Server s;
  if (posix_spawn(&s.pid, ixsubmit.c_str(), &fa, nullptr, argv.data(), environ) != 0) std::exit(1);
  ::close(out[1]);
  std::string line;
  char c;
  while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
  ::close(out[0]);
  const size_t colon = line.rfind(':');
  if (line.find("listening on") == std::string::npos || colon == std::string::npos) {
    std::fprintf(stderr, "ixsubmit serve did not start: %s\n", line.c_str());
    std::exit(1);
  }
  s.port = std::atoi(line.c_str() + colon + 1);
  return s;
}

// Events per second through HTTP with `clients` connections at once.
double HttpRate(int port, const std::vector<std::string>& batches, int events, int clients) {
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client client("127.0.0.1", port);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);  // as libcurl, the agent's client, does
      const httplib::Headers auth{{"Authorization", "Bearer " + kToken}};
      for (size_t b = static_cast<size_t>(c); b < batches.size(); b += static_cast<size_t>(clients)) {
        httplib::Result r = client.Post("/v1/events", auth, batches[b], "application/json");
        if (!r || r->status != 200 || r->body.find("\"duplicates\":0") == std::string::npos) {
          std::fprintf(stderr, "POST failed: %s\n", r ? r->body.c_str() : httplib::to_string(r.error()).c_str());
          std::exit(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return events / std::chrono::duration<double>(Clock::now() - start).count();
}

void Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::fprintf(stderr, "sqlite: %s: %s\n", sql, err ? err : "?");
    std::exit(1);
  }
}

// The baseline: the same rows straight into SQLite, one transaction per batch.
double SqliteRate(const std::string& path, const std::string& run, int events) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) std::exit(1);
  sqlite3_busy_timeout(db, 5000);
  Exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;");
  Exec(db, "CREATE TABLE IF NOT EXISTS events(id TEXT PRIMARY KEY, sweep TEXT, entry INTEGER, step TEXT NOT NULL, "
           "event TEXT NOT NULL, node TEXT, time REAL NOT NULL, received REAL NOT NULL, body TEXT NOT NULL);"
           "CREATE INDEX IF NOT EXISTS events_by_sweep ON events(sweep, time, id);");
  std::vector<std::string> rows;
  for (int i = 0; i < events; ++i) rows.push_back(EventJson(run, i));
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO events(id, sweep, entry, step, event, node, time, received, body) "
                         "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", -1, &s, nullptr);
  const auto start = Clock::now();
  for (int i = 0; i < events; ++i) {
    if (i % kBatch == 0) Exec(db, "BEGIN IMMEDIATE");
    const std::string id = run + "." + std::to_string(i / 1000) + ":" + std::to_string(i % 1000 + 1);
    const std::string step = run + "." + std::to_string(i / 1000);
    const std::string node = "gpu-node-" + std::to_string(i % 16);
    sqlite3_reset(s);
    sqlite3_bind_text(s, 1, id.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, "sw-20261202-160900-ab12", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, i % 1002);
    sqlite3_bind_text(s, 4, step.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 5, "ready", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 6, node.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(s, 7, 1764691740.1 + (i % 900) / 1000.0);
    sqlite3_bind_double(s, 8, 1764691741.0);
    sqlite3_bind_text(s, 9, rows[i].c_str(), static_cast<int>(rows[i].size()), SQLITE_STATIC);
    if (sqlite3_step(s) != SQLITE_DONE) std::exit(1);
    if (i % kBatch == kBatch - 1 || i == events - 1) Exec(db, "COMMIT");
  }
  const double rate = events / std::chrono::duration<double>(Clock::now() - start).count();
  sqlite3_finalize(s);
  sqlite3_close(db);
  return rate;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string Thousands(double v) {
  std::string s = std::to_string(static_cast<long long>(v + 0.5));
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: collector_bench IXSUBMIT [EVENTS_PER_CASE] [ROUNDS]\n");
    return 2;
  }
  const std::string ixsubmit = argv[1];
  const int events = argc > 2 ? std::atoi(argv[2]) : 50000;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  char tmpl[] = "/tmp/ix-collector-bench.XXXXXX";
  if (!::mkdtemp(tmpl)) return 1;
  const std::string dir = tmpl;
  const Server server = StartServer(ixsubmit, dir);

  std::vector<double> base;
  std::vector<std::vector<double>> http(2);
  const int clients[] = {1, 4};
  for (int r = 0; r < rounds; ++r) {
    base.push_back(SqliteRate(dir + "/base.db", "b" + std::to_string(r), events));
    for (int c = 0; c < 2; ++c) {
      const std::string run = "h" + std::to_string(r) + "c" + std::to_string(clients[c]);
      http[static_cast<size_t>(c)].push_back(HttpRate(server.port, Batches(run, events), events, clients[c]));
    }
  }
  ::kill(server.pid, SIGTERM);
  int status = 0;
  ::waitpid(server.pid, &status, 0);
  std::filesystem::remove_all(dir);

  const double b = Median(base);
  std::printf("| measure (median of %d, %s events each) | value | baseline in the same run | ratio | target |\n",
              rounds, Thousands(events).c_str());
  std::printf("| --- | --- | --- | --- | --- |\n");
  for (int c = 0; c < 2; ++c) {
    const double h = Median(http[static_cast<size_t>(c)]);
    std::printf("| ingest through HTTP, batches of %d, %d client%s | %s events/s | SQLite alone: %s events/s | %.2f "
                "| >= 5,000 events/s |\n",
                kBatch, clients[c], clients[c] > 1 ? "s" : "", Thousands(h).c_str(), Thousands(b).c_str(), h / b);
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

// ix-fake-client's requests (tests/fakes/README.md, "ix-fake-client"): the
// JSON bodies of the OpenAI chat and completions APIs as the client sends
// them, and one request sent and its answer read (streamed or whole) into a
// Record. Built into the executable only (it needs cpp-httplib's flags).
#pragma once

#include <httplib.h>

#include <memory>
#include <string>
#include <vector>

#include "chat_prompt.h"
#include "client_args.h"
#include "client_result.h"

namespace ixfake::client {

// A client for cfg.url with cfg.timeout_s as its read and write timeouts.
std::unique_ptr<httplib::Client> make_client(const Config& cfg);

// What one request asks besides its prompt. `max_tokens_key` is the name the
// API's client uses ("max_tokens", or benchmark_serving.py's chat client's
// "max_completion_tokens"); `sampling` adds benchmark_serving.py's
// "temperature": 0.0 (and, for completions, "best_of": 1, "logprobs": null).
struct BodyOptions {
  std::string model;
  int max_tokens = 16;
  const char* max_tokens_key = "max_tokens";
  bool ignore_eos = false;
  bool stream = true;  // with stream_options.include_usage
  bool sampling = false;
};

// POST /v1/chat/completions's body.
std::string chat_body(const BodyOptions& o, const std::vector<Message>& messages);
// POST /v1/completions's body.
std::string completion_body(const BodyOptions& o, const std::string& prompt);

// One request. Invariant: path starts with "/" (the base URL's path is
// already in it); session, when not empty, goes out as X-Session-ID.
struct Request {
  std::string path;
  std::string body;
  bool stream = true;
  std::string session;
};

// Sends `req`; fills the record's status, latency, time to first token, rank,
// usage and (on failure) error, and returns the answer's text (a chat
// message's content or a completion's text).
std::string send_request(httplib::Client& cli, const Request& req, Record& rec);

// GET /v1/models: the first model id, or "" with a message in `error`.
std::string discover_model(const Config& cfg, std::string& error);

}  // namespace ixfake::client

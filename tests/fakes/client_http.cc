#include "client_http.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <optional>

#include "fake_common.h"
#include "json_writer.h"

namespace ixfake::client {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

// The members every body ends with: max tokens, ignore_eos, stream; opened
// by the caller, closed here.
void write_common(Writer& w, const BodyOptions& o) {
  w.Key(o.max_tokens_key);
  w.Int(o.max_tokens);
  if (o.ignore_eos) {  // asks vLLM for exactly max_tokens tokens
    w.Key("ignore_eos");
    w.Bool(true);
  }
  w.Key("stream");
  w.Bool(o.stream);
  if (o.stream) {
    w.Key("stream_options");
    w.StartObject();
    w.Key("include_usage");
    w.Bool(true);
    w.EndObject();
  }
  w.EndObject();
}

std::optional<int> rank_of(const rapidjson::Document& d) {
  if (d.IsObject() && d.HasMember("served_by_rank") && d["served_by_rank"].IsInt()) return d["served_by_rank"].GetInt();
  return std::nullopt;
}

void read_usage(const rapidjson::Document& d, Record& rec) {
  if (!d.HasMember("usage") || !d["usage"].IsObject()) return;
  const rapidjson::Value& u = d["usage"];
  if (u.HasMember("completion_tokens") && u["completion_tokens"].IsInt()) rec.completion_tokens = u["completion_tokens"].GetInt();
  if (u.HasMember("prompt_tokens") && u["prompt_tokens"].IsInt()) rec.prompt_tokens = u["prompt_tokens"].GetInt();
}

// The text of a choice: a chat delta's or message's content, or a
// completion's text; "" when it has none.
std::string choice_text(const rapidjson::Value& ch, const char* member) {
  if (!ch.IsObject()) return {};
  if (ch.HasMember("text") && ch["text"].IsString()) return ch["text"].GetString();
  if (!ch.HasMember(member) || !ch[member].IsObject()) return {};
  const auto& m = ch[member];
  return m.HasMember("content") && m["content"].IsString() ? m["content"].GetString() : std::string();
}

// The body of one answer as it arrives: kept whole when not streaming (or
// not 200), else split into SSE events whose texts make the reply. Fills
// the record's rank, time to first token and usage on the way. Invariant:
// t0 is when the request started (steady clock, now_s()).
struct ResponseReader {
  ResponseReader(bool s, Record& r) : stream(s), rec(r), t0(now_s()) {}

  bool stream;
  Record& rec;
  double t0;
  int status = 0;  // from the response handler, before the body
  std::string body;
  std::string reply;
  bool done_marker = false;
  std::string stream_error;
  SseParser sse;

  bool feed(const char* data, std::size_t len) {
    if (!stream || status != 200) {
      body.append(data, len);
      return true;
    }
    for (const std::string& event : sse.feed(std::string_view(data, len))) on_event(event);
    return true;
  }

  void on_event(const std::string& event) {
    if (event == "[DONE]") {
      done_marker = true;
      return;
    }
    rapidjson::Document d;
    d.Parse(event.c_str());
    if (d.HasParseError() || !d.IsObject()) {
      stream_error = "a stream chunk is not JSON: " + event.substr(0, 200);
      return;
    }
    if (d.HasMember("error")) {
      stream_error = "error in stream: " + event.substr(0, 200);
      return;
    }
    if (auto r = rank_of(d)) rec.rank = *r;
    if (d.HasMember("choices") && d["choices"].IsArray()) {
      for (const auto& ch : d["choices"].GetArray()) {
        std::string text = choice_text(ch, "delta");
        if (text.empty()) continue;
        if (!rec.ttft_ms) rec.ttft_ms = (now_s() - t0) * 1000.0;
        reply += text;
      }
    }
    read_usage(d, rec);
  }

  // After a 200: the reply, or "" with rec.error set.
  std::string finish() {
    if (stream) {
      if (!stream_error.empty()) {
        rec.error = stream_error;
      } else if (!done_marker) {
        rec.error = "the stream ended without data: [DONE]";
      }
      return reply;
    }
    rapidjson::Document d;
    d.Parse(body.c_str());
    if (d.HasParseError() || !d.IsObject() || !d.HasMember("choices") || !d["choices"].IsArray() ||
        d["choices"].Empty()) {
      rec.error = "the response is not a completion: " + body.substr(0, 200);
      return {};
    }
    if (auto r = rank_of(d)) rec.rank = *r;
    rec.ttft_ms = rec.latency_ms;
    reply = choice_text(d["choices"][0], "message");
    read_usage(d, rec);
    return reply;
  }
};

}  // namespace

std::unique_ptr<httplib::Client> make_client(const Config& cfg) {
  auto cli = std::make_unique<httplib::Client>(cfg.url.host, cfg.url.port);
  auto secs = static_cast<time_t>(cfg.timeout_s);
  auto usecs = static_cast<time_t>((cfg.timeout_s - static_cast<double>(secs)) * 1e6);
  cli->set_connection_timeout(std::min<time_t>(secs, 10), secs >= 10 ? 0 : usecs);
  cli->set_read_timeout(secs, usecs);
  cli->set_write_timeout(secs, usecs);
  cli->set_keep_alive(true);
  cli->set_tcp_nodelay(true);
  return cli;
}

std::string chat_body(const BodyOptions& o, const std::vector<Message>& messages) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  key_str(w, "model", o.model);
  w.Key("messages");
  w.StartArray();
  for (const auto& m : messages) {
    w.StartObject();
    key_str(w, "role", m.role);
    key_str(w, "content", m.content);
    w.EndObject();
  }
  w.EndArray();
  if (o.sampling) {
    w.Key("temperature");
    w.Double(0.0);
  }
  write_common(w, o);
  return sb.GetString();
}

std::string completion_body(const BodyOptions& o, const std::string& prompt) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  w.Key("model");
  w.String(o.model.c_str());
  w.Key("prompt");
  w.String(prompt.c_str(), static_cast<rapidjson::SizeType>(prompt.size()));
  if (o.sampling) {
    w.Key("temperature");
    w.Double(0.0);
    w.Key("best_of");
    w.Int(1);
    w.Key("logprobs");
    w.Null();
  }
  write_common(w, o);
  return sb.GetString();
}

std::string send_request(httplib::Client& cli, const Request& request, Record& rec) {
  httplib::Request req;
  req.method = "POST";
  req.path = request.path;
  if (!request.session.empty()) req.headers.emplace("X-Session-ID", request.session);
  req.headers.emplace("Content-Type", "application/json");
  if (request.stream) req.headers.emplace("Accept", "text/event-stream");
  req.body = request.body;

  ResponseReader reader(request.stream, rec);
  req.content_receiver = [&](const char* data, std::size_t len, std::uint64_t, std::uint64_t) {
    return reader.feed(data, len);
  };
  req.response_handler = [&](const httplib::Response& r) {
    reader.status = r.status;
    return true;
  };
  httplib::Error err = httplib::Error::Success;
  httplib::Response full;
  bool ok = cli.send(req, full, err);
  rec.latency_ms = (now_s() - reader.t0) * 1000.0;
  if (!ok) {
    rec.status = reader.status > 0 ? reader.status : 0;
    rec.error = "request failed: " + httplib::to_string(err);
    return {};
  }
  rec.status = full.status;
  if (!rec.rank && full.has_header("X-Served-By-Rank")) {
    if (auto r = parse_int(full.get_header_value("X-Served-By-Rank"), 0, 1 << 20)) rec.rank = static_cast<int>(*r);
  }
  if (full.status != 200) {
    rec.error = strprintf("HTTP %d: %s", full.status, reader.body.substr(0, 300).c_str());
    return {};
  }
  return reader.finish();
}

std::string discover_model(const Config& cfg, std::string& error) {
  auto cli = make_client(cfg);
  auto res = cli->Get(cfg.url.base_path + "/v1/models");
  if (!res) {
    error = "GET " + cfg.endpoint + "/v1/models failed: " + httplib::to_string(res.error());
    return {};
  }
  if (res->status != 200) {
    error = strprintf("GET %s/v1/models answered HTTP %d: %s", cfg.endpoint.c_str(), res->status,
                      res->body.substr(0, 200).c_str());
    return {};
  }
  rapidjson::Document d;
  d.Parse(res->body.c_str());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("data") || !d["data"].IsArray() || d["data"].Empty() ||
      !d["data"][0].IsObject() || !d["data"][0].HasMember("id") || !d["data"][0]["id"].IsString()) {
    error = "GET " + cfg.endpoint + "/v1/models lists no model: " + res->body.substr(0, 200);
    return {};
  }
  return d["data"][0]["id"].GetString();
}

}  // namespace ixfake::client

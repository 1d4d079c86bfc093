#include "vllm_responses.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <ctime>

namespace ixfake::vllm {
namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

void write_usage(JsonWriter& w, const Call& c) {
  const Generation& g = c.gen;
  int completion = static_cast<int>(g.tokens.size());
  w.Key("usage");
  w.StartObject();
  w.Key("prompt_tokens");
  w.Int(g.prompt_tokens);
  w.Key("total_tokens");
  w.Int(g.prompt_tokens + completion);
  w.Key("completion_tokens");
  w.Int(completion);
  w.Key("prompt_tokens_details");
  if (c.prompt_tokens_details) {
    // vLLM counts both local and external (connector) hits as cached.
    w.StartObject();
    w.Key("cached_tokens");
    w.Int(c.gpu_hit_tokens + c.cpu_hit_tokens);
    w.EndObject();
  } else {
    w.Null();
  }
  w.EndObject();
}

void write_head(JsonWriter& w, const Call& c, bool chunk) {
  w.Key("id");
  w.String(c.id.c_str());
  w.Key("object");
  w.String(c.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion");
  w.Key("created");
  w.Int64(c.created);
  w.Key("model");
  w.String(c.model.c_str());
}

// The whole answer's message (chat) or text.
void write_full_choice_body(JsonWriter& w, const Call& c, const std::string& text) {
  if (!c.chat) {
    w.Key("text");
    w.String(text.c_str());
    return;
  }
  w.Key("message");
  w.StartObject();
  w.Key("role");
  w.String("assistant");
  w.Key("content");
  w.String(text.c_str());
  w.Key("reasoning_content");
  w.Null();
  w.Key("tool_calls");
  w.StartArray();
  w.EndArray();
  w.EndObject();
}

// A chunk's delta (chat) or text.
void write_chunk_choice_body(JsonWriter& w, const Call& c, const char* role, const std::string* content) {
  if (!c.chat) {
    w.Key("text");
    w.String(content != nullptr ? content->c_str() : "");
    return;
  }
  w.Key("delta");
  w.StartObject();
  if (role != nullptr) {
    w.Key("role");
    w.String(role);
  }
  if (content != nullptr) {
    w.Key("content");
    w.String(content->c_str());
  }
  w.EndObject();
}

void write_rank_and_end(JsonWriter& w, const Call& c) {
  w.Key("served_by_rank");
  w.Int(c.rank);
  w.EndObject();
}

}  // namespace

std::string full_response(const Call& c) {
  std::string text;
  for (const auto& t : c.gen.tokens) text += t;
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  write_head(w, c, false);
  w.Key("choices");
  w.StartArray();
  w.StartObject();
  w.Key("index");
  w.Int(0);
  write_full_choice_body(w, c, text);
  w.Key("logprobs");
  w.Null();
  w.Key("finish_reason");
  w.String(c.gen.finish_reason.c_str());
  w.Key("stop_reason");
  w.Null();
  w.EndObject();
  w.EndArray();
  write_usage(w, c);
  write_rank_and_end(w, c);
  return sb.GetString();
}

std::string sse_chunk(const Call& c, const char* role, const std::string* content, const char* finish,
                      bool usage_only) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  write_head(w, c, true);
  w.Key("choices");
  w.StartArray();
  if (!usage_only) {
    w.StartObject();
    w.Key("index");
    w.Int(0);
    write_chunk_choice_body(w, c, role, content);
    w.Key("logprobs");
    w.Null();
    w.Key("finish_reason");
    if (finish != nullptr) {
      w.String(finish);
    } else {
      w.Null();
    }
    w.EndObject();
  }
  w.EndArray();
  if (usage_only) write_usage(w, c);
  write_rank_and_end(w, c);
  return "data: " + std::string(sb.GetString()) + "\n\n";
}

std::string error_json(int status, const std::string& message, const char* type) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("error");
  w.StartObject();
  w.Key("message");
  w.String(message.c_str());
  w.Key("type");
  w.String(type);
  w.Key("param");
  w.Null();
  w.Key("code");
  w.Int(status);
  w.EndObject();
  w.EndObject();
  return sb.GetString();
}

std::string models_json(const std::vector<std::string>& served_names, const std::string& model_path,
                        long long max_model_len) {
  rapidjson::StringBuffer sb;
  JsonWriter w(sb);
  w.StartObject();
  w.Key("object");
  w.String("list");
  w.Key("data");
  w.StartArray();
  for (const auto& name : served_names) {
    w.StartObject();
    w.Key("id");
    w.String(name.c_str());
    w.Key("object");
    w.String("model");
    w.Key("created");
    w.Int64(static_cast<std::int64_t>(std::time(nullptr)));
    w.Key("owned_by");
    w.String("vllm");
    w.Key("root");
    w.String(model_path.c_str());
    w.Key("parent");
    w.Null();
    w.Key("max_model_len");
    w.Int64(max_model_len);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return sb.GetString();
}

}  // namespace ixfake::vllm

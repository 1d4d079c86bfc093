#include "vllm_generate.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "fake_common.h"

namespace ixfake::vllm {
namespace {

constexpr const char* kBadPrompt = "'prompt' must be a string, an array of strings or an array of token ids";

std::string read_chat_prompt(const rapidjson::Document& doc, std::string& text, int& tokens) {
  if (!doc.HasMember("messages") || !doc["messages"].IsArray() || doc["messages"].Empty()) {
    return "'messages' must be a non-empty array";
  }
  for (const auto& m : doc["messages"].GetArray()) {
    if (!m.IsObject() || !m.HasMember("role") || !m["role"].IsString()) {
      return "each message must be an object with a string 'role'";
    }
    text += m["role"].GetString();
    text += ": ";
    if (m.HasMember("content") && m["content"].IsString()) {
      text += m["content"].GetString();
    } else if (m.HasMember("content") && m["content"].IsArray()) {
      for (const auto& part : m["content"].GetArray()) {
        if (part.IsObject() && part.HasMember("text") && part["text"].IsString()) text += part["text"].GetString();
      }
    }
    text += "\n";
    tokens += 3;
  }
  tokens += count_words(text);
  return {};
}

std::string read_text_prompt(const rapidjson::Document& doc, std::string& text, int& tokens) {
  if (!doc.HasMember("prompt")) return "'prompt' is required";
  const auto& p = doc["prompt"];
  if (p.IsString()) {
    text = p.GetString();
    tokens = count_words(text);
    return {};
  }
  if (!p.IsArray() || p.Empty()) return kBadPrompt;
  for (const auto& e : p.GetArray()) {
    if (e.IsString()) {
      text += e.GetString();
      tokens += count_words(e.GetString());
    } else if (e.IsInt()) {
      text += std::to_string(e.GetInt()) + " ";
      tokens += 1;
    } else {
      return kBadPrompt;
    }
  }
  return {};
}

}  // namespace

int count_words(std::string_view text) {
  int n = 0;
  bool in_word = false;
  for (char c : text) {
    bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

Generation generate(const std::string& prompt, int prompt_tokens, int max_tokens) {
  static const char* const kWords[] = {"the",  "fake", "engine", "answers", "every", "turn", "with", "a",
                                       "short", "steady", "reply", "from",  "one",  "rank", "of",   "many"};
  Generation g;
  g.prompt_tokens = prompt_tokens;
  std::uint64_t h = hash64(prompt);
  int natural = 6 + static_cast<int>(h % 5);
  int n = std::min(max_tokens, natural);
  g.finish_reason = n < natural ? "length" : "stop";
  for (int i = 0; i < n; ++i) {
    std::string word = kWords[hash64(prompt + "#" + std::to_string(i)) % 16];
    if (i == 0) word[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(word[0])));
    g.tokens.push_back(i == 0 ? word : " " + word);
  }
  if (g.finish_reason == "stop" && !g.tokens.empty()) g.tokens.back() += ".";
  return g;
}

std::string read_prompt(const rapidjson::Document& doc, bool chat, std::string& text, int& tokens) {
  tokens = 0;
  return chat ? read_chat_prompt(doc, text, tokens) : read_text_prompt(doc, text, tokens);
}

}  // namespace ixfake::vllm

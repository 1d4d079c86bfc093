#include "vllm_generate.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string_view>

#include "fake_common.h"

namespace ixfake::vllm {
namespace {

// splitmix64's finalizer of h + (i + 1) * golden ratio: the i-th word's hash.
std::uint64_t mix64(std::uint64_t h, std::uint64_t i) {
  std::uint64_t z = h + (i + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Appends one hash per whitespace-separated word of `text` (the token unit,
// token_units.h).
void append_word_hashes(std::string_view text, std::vector<std::uint64_t>* out) {
  if (out == nullptr) return;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])) != 0) ++i;
    const std::size_t start = i;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])) == 0) ++i;
    if (i > start) out->push_back(hash64(text.substr(start, i - start)));
  }
}

constexpr const char* kBadPrompt = "'prompt' must be a string, an array of strings or an array of token ids";

std::string read_chat_prompt(const rapidjson::Document& doc, std::string& text, int& tokens,
                             std::vector<std::uint64_t>* hashes) {
  if (!doc.HasMember("messages") || !doc["messages"].IsArray() || doc["messages"].Empty()) {
    return "'messages' must be a non-empty array";
  }
  for (const auto& m : doc["messages"].GetArray()) {
    if (!m.IsObject() || !m.HasMember("role") || !m["role"].IsString()) {
      return "each message must be an object with a string 'role'";
    }
    std::string content;
    if (m.HasMember("content") && m["content"].IsString()) {
      content = m["content"].GetString();
    } else if (m.HasMember("content") && m["content"].IsArray()) {
      for (const auto& part : m["content"].GetArray()) {
        if (part.IsObject() && part.HasMember("text") && part["text"].IsString()) content += part["text"].GetString();
      }
    }
    const std::string role = m["role"].GetString();
    tokens += chat_message_tokens(role, content);
    const std::string rendered = role + ": " + content + "\n";
    if (hashes != nullptr) {
      // The chat template's framing of a message (e.g. <|im_start|>, the
      // role's header, <|im_end|>): the same 3 tokens for every message.
      for (int f = 0; f < kChatMessageOverhead; ++f) {
        hashes->push_back(mix64(0x6672616d65ULL, static_cast<std::uint64_t>(f)));
      }
      append_word_hashes(rendered, hashes);
    }
    text += rendered;
  }
  return {};
}

std::string read_text_prompt(const rapidjson::Document& doc, std::string& text, int& tokens,
                             std::vector<std::uint64_t>* hashes) {
  if (!doc.HasMember("prompt")) return "'prompt' is required";
  const auto& p = doc["prompt"];
  if (p.IsString()) {
    text = p.GetString();
    tokens = count_words(text);
    append_word_hashes(text, hashes);
    return {};
  }
  if (!p.IsArray() || p.Empty()) return kBadPrompt;
  for (const auto& e : p.GetArray()) {
    if (e.IsString()) {
      text += e.GetString();
      tokens += count_words(e.GetString());
      append_word_hashes(e.GetString(), hashes);
    } else if (e.IsInt()) {
      text += std::to_string(e.GetInt()) + " ";
      tokens += 1;
      if (hashes != nullptr) hashes->push_back(mix64(0x746f6b656e4964ULL, static_cast<std::uint64_t>(e.GetInt())));
    } else {
      return kBadPrompt;
    }
  }
  return {};
}

}  // namespace

Generation generate(const std::string& prompt, int prompt_tokens, int max_tokens, bool ignore_eos) {
  static const char* const kWords[] = {"the",  "fake", "engine", "answers", "every", "turn", "with", "a",
                                       "short", "steady", "reply", "from",  "one",  "rank", "of",   "many"};
  Generation g;
  g.prompt_tokens = prompt_tokens;
  const std::uint64_t h = hash64(prompt);  // once: a prompt may be thousands of words
  const int natural = 6 + static_cast<int>(h % 5);
  const int n = ignore_eos ? max_tokens : std::min(max_tokens, natural);
  g.finish_reason = ignore_eos || n < natural ? "length" : "stop";
  g.tokens.reserve(static_cast<std::size_t>(std::max(n, 0)));
  for (int i = 0; i < n; ++i) {
    std::string word = kWords[mix64(h, static_cast<std::uint64_t>(i)) % 16];
    if (i == 0) word[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(word[0])));
    g.tokens.push_back(i == 0 ? word : " " + word);
  }
  if (g.finish_reason == "stop" && !g.tokens.empty()) g.tokens.back() += ".";
  return g;
}

std::string read_prompt(const rapidjson::Document& doc, bool chat, std::string& text, int& tokens,
                        std::vector<std::uint64_t>* token_hashes) {
  tokens = 0;
  if (token_hashes != nullptr) token_hashes->clear();
  return chat ? read_chat_prompt(doc, text, tokens, token_hashes) : read_text_prompt(doc, text, tokens, token_hashes);
}

}  // namespace ixfake::vllm

#include "core/recipe/template.h"

#include <algorithm>

namespace ix {
namespace {

bool IsNameStart(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

}  // namespace

Result<Template> Template::Parse(std::string_view source) {
  Template t;
  t.source_ = std::string(source);
  std::string literal;
  auto flush = [&] {
    if (!literal.empty()) t.pieces_.push_back({false, std::move(literal)});
    literal.clear();
  };
  for (size_t i = 0; i < source.size(); ++i) {
    char c = source[i];
    if (c != '$') {
      literal += c;
      continue;
    }
    if (i + 1 < source.size() && source[i + 1] == '$') {
      literal += '$';
      ++i;
      continue;
    }
    if (i + 1 >= source.size() || source[i + 1] != '{') {
      return Error{"template \"" + t.source_ + "\": lone '$' at offset " + std::to_string(i) +
                   "; write ${NAME} for a variable or $$ for a literal '$'"};
    }
    size_t close = source.find('}', i + 2);
    if (close == std::string_view::npos) {
      return Error{"template \"" + t.source_ + "\": '${' at offset " + std::to_string(i) +
                   " has no closing '}'"};
    }
    std::string_view name = source.substr(i + 2, close - i - 2);
    if (name.empty() || !IsNameStart(name[0]) ||
        !std::all_of(name.begin(), name.end(), IsNameChar)) {
      return Error{"template \"" + t.source_ + "\": \"${" + std::string(name) +
                   "}\" is not a variable name (letters, digits and '_', not starting with a digit)"};
    }
    flush();
    t.pieces_.push_back({true, std::string(name)});
    i = close;
  }
  flush();
  return t;
}

std::vector<std::string> Template::Variables() const {
  std::vector<std::string> names;
  for (const Piece& p : pieces_) {
    if (p.is_variable && std::find(names.begin(), names.end(), p.text) == names.end()) {
      names.push_back(p.text);
    }
  }
  return names;
}

Result<std::string> Template::Render(
    const std::function<std::optional<std::string>(const std::string&)>& lookup) const {
  std::string out;
  for (const Piece& p : pieces_) {
    if (!p.is_variable) {
      out += p.text;
      continue;
    }
    std::optional<std::string> value = lookup(p.text);
    if (!value) return Error{"template \"" + source_ + "\": unknown variable ${" + p.text + "}"};
    out += *value;
  }
  return out;
}

}  // namespace ix

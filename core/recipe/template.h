// Template: a string with `${NAME}` references, parsed once at recipe load.
// `$$` is a literal `$`; any other `$` is a parse error, so a typo never
// reaches an argv unnoticed. This is not a shell: there is no quoting, no
// word splitting, no command substitution; one template renders to exactly
// one string. Invariant: pieces alternate freely between literal text and
// variable names; names match [A-Za-z_][A-Za-z0-9_]*.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace ix {

class Template {
 public:
  struct Piece {
    bool is_variable;
    std::string text;  // literal text, or the variable name
  };

  // Parses `source`; the error message says which column is wrong and why.
  static Result<Template> Parse(std::string_view source);

  const std::string& source() const { return source_; }
  const std::vector<Piece>& pieces() const { return pieces_; }
  // The variable names referenced, in order of first appearance.
  std::vector<std::string> Variables() const;

  // Renders with `lookup`; a name the lookup does not know is an error naming
  // it (callers validate names at load time, so this is a second line only).
  Result<std::string> Render(
      const std::function<std::optional<std::string>(const std::string&)>& lookup) const;

 private:
  std::string source_;
  std::vector<Piece> pieces_;
};

}  // namespace ix

// Master-config YAML for the matrix tests: one config with the fields every
// config needs (image, model, precision, ...), so that a test writes only the
// part it is about.
#pragma once

#include <string>

namespace ix::test {

// Config `key` on `runner`: image "img", model "org/m", prefix "m", fp4,
// vllm; `scenarios` is the YAML under "  scenarios:" (indented by four).
inline std::string MatrixConfigYaml(const std::string& key, const std::string& runner, const std::string& scenarios,
                                    bool multinode = false) {
  return key + ":\n  image: img\n  model: org/m\n  model-prefix: m\n  runner: " + runner +
         "\n  precision: fp4\n  framework: vllm\n  multinode: " + (multinode ? "true" : "false") + "\n  scenarios:\n" +
         scenarios;
}

}  // namespace ix::test

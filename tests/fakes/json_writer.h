// Members of a JSON object written with rapidjson's Writer or PrettyWriter:
// a string member, several in a row, and a member that is an array of
// strings, one call each (the fakes' request bodies, AIPerf's exports).
#pragma once

#include <rapidjson/rapidjson.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ixfake {

// "key": "value"
template <class JsonWriter>
void key_str(JsonWriter& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
}

// "key1": "value1", "key2": "value2", ... in this order.
template <class JsonWriter>
void key_strs(JsonWriter& w, std::initializer_list<std::pair<const char*, std::string_view>> members) {
  for (const auto& [key, value] : members) {
    w.Key(key);
    w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
  }
}

// "key": ["value", ...]
template <class JsonWriter>
void key_strings(JsonWriter& w, const char* key, const std::vector<std::string>& values) {
  w.Key(key);
  w.StartArray();
  for (const std::string& value : values) w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
  w.EndArray();
}

}  // namespace ixfake

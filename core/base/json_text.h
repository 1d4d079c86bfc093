// JsonText: a JSON document as text, written by one writer function for
// both forms: pretty (two-space indent, for people and files) or compact
// (one line, for machines). `write` is called once with a RapidJSON
// Writer or PrettyWriter over a StringBuffer, so it must be a generic
// lambda or a template.
#pragma once

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string>

namespace ix {

template <class Write>
std::string JsonText(bool pretty, Write&& write) {
  rapidjson::StringBuffer buf;
  if (pretty) {
    rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buf);
    w.SetIndent(' ', 2);
    write(w);
  } else {
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    write(w);
  }
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace ix

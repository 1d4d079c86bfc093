// YamlDoc::Parse: libyaml's event stream turned into a YamlDoc, doing the
// work of PyYAML's composer and constructor in one pass (anchors and
// aliases, `<<` merge keys, duplicate keys, the expansion bound). Scalars
// are typed by yaml_scalar.h.
#include <yaml.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "core/yaml/yaml_document.h"
#include "core/yaml/yaml_scalar.h"

namespace ix {

// YamlBuilder: one parse of one text into a YamlDoc. Invariants while it
// runs: stack_ holds the open collections, innermost last; done_, weight_
// and is_merge_ have one entry per node (weight_: the node's size with
// aliases expanded, known once done_); an anchor names a node already added.
class YamlBuilder {
 public:
  YamlBuilder(std::string_view text, const std::string& name) : text_(text) { doc_.name_ = name; }

  Result<YamlDoc> Run() {
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return Error{doc_.name_ + ": not valid YAML: out of memory"};
    std::unique_ptr<yaml_parser_t, void (*)(yaml_parser_t*)> guard(&parser, yaml_parser_delete);
    yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text_.data()), text_.size());
    doc_.nodes_.reserve(text_.size() / 12 + 16);
    for (;;) {
      yaml_event_t ev;
      if (!yaml_parser_parse(&parser, &ev)) return ParserError(parser);
      std::unique_ptr<yaml_event_t, void (*)(yaml_event_t*)> ev_guard(&ev, yaml_event_delete);
      if (ev.type == YAML_STREAM_END_EVENT) return Finish();
      if (!OnEvent(ev)) return err_;
    }
  }

 private:
  // Where an event starts, 1-based.
  struct Mark {
    uint32_t line, column;
  };

  bool OnEvent(const yaml_event_t& ev) {
    const Mark at{static_cast<uint32_t>(ev.start_mark.line) + 1, static_cast<uint32_t>(ev.start_mark.column) + 1};
    switch (ev.type) {
      case YAML_DOCUMENT_START_EVENT:
        return ++documents_ == 1 || Fail(at, "expected a single document in the stream, but found another document");
      case YAML_ALIAS_EVENT:
        return OnAlias(reinterpret_cast<const char*>(ev.data.alias.anchor), at);
      case YAML_SCALAR_EVENT:
        return OnScalar(ev, at);
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT:
        return OnCollectionStart(ev, at);
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        return OnCollectionEnd();
      default:
        return true;
    }
  }

  // The end of the stream: an empty one is a null document.
  Result<YamlDoc> Finish() {
    if (doc_.root_ == YamlDoc::kNoNode) {
      YNode null_root;
      null_root.line = 1, null_root.column = 1;
      doc_.root_ = Add(std::move(null_root));
    }
    return std::move(doc_);
  }

  bool OnAlias(const std::string& anchor, Mark at) {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) return Fail(at, "found undefined alias '" + anchor + "'");
    if (!done_[it->second]) return Fail(at, "recursive alias '" + anchor + "' is not supported");
    Attach(it->second);
    return true;
  }

  bool OnScalar(const yaml_event_t& ev, Mark at) {
    YNode n;
    n.line = at.line, n.column = at.column;
    n.text.assign(reinterpret_cast<const char*>(ev.data.scalar.value), ev.data.scalar.length);
    const char* tag = reinterpret_cast<const char*>(ev.data.scalar.tag);
    const bool merge = tag == nullptr && ev.data.scalar.plain_implicit && n.text == "<<";
    std::string problem;
    if (merge || (tag == nullptr && !ev.data.scalar.plain_implicit)) {
      n.type = YType::kString;
    } else if (tag == nullptr) {
      ResolvePlainScalar(n);
    } else if (!ResolveTaggedScalar(tag, n, problem)) {
      return Fail(at, problem);
    }
    const uint32_t id = Add(std::move(n));
    if (merge) is_merge_[id] = 1, any_merge_ = true;
    done_[id] = 1;
    weight_[id] = 1;
    Anchor(ev.data.scalar.anchor, id);
    Attach(id);
    return true;
  }

  bool OnCollectionStart(const yaml_event_t& ev, Mark at) {
    const bool is_map = ev.type == YAML_MAPPING_START_EVENT;
    const char* tag = reinterpret_cast<const char*>(is_map ? ev.data.mapping_start.tag : ev.data.sequence_start.tag);
    const char* want = is_map ? "tag:yaml.org,2002:map" : "tag:yaml.org,2002:seq";
    if (tag != nullptr && std::strcmp(tag, "!") != 0 && std::strcmp(tag, want) != 0) {
      return Fail(at, std::string("unsupported tag '") + tag + "'");
    }
    YNode n;
    n.type = is_map ? YType::kMap : YType::kSeq;
    n.line = at.line, n.column = at.column;
    const uint32_t id = Add(std::move(n));
    Anchor(is_map ? ev.data.mapping_start.anchor : ev.data.sequence_start.anchor, id);
    Attach(id);
    stack_.push_back(id);
    return true;
  }

  bool OnCollectionEnd() {
    const uint32_t id = stack_.back();
    stack_.pop_back();
    if (doc_.nodes_[id].type == YType::kMap && !FinishMap(id)) return false;
    uint64_t w = 1;
    for (uint32_t child : doc_.nodes_[id].items) w += weight_[child];
    if (w > YamlDoc::kMaxExpandedNodes) {
      return Fail(MarkOf(id),
                  "aliases expand the document beyond " + std::to_string(YamlDoc::kMaxExpandedNodes) + " nodes");
    }
    weight_[id] = w;
    done_[id] = 1;
    return true;
  }

  uint32_t Add(YNode n) {
    doc_.nodes_.push_back(std::move(n));
    done_.push_back(0);
    is_merge_.push_back(0);
    weight_.push_back(0);
    return static_cast<uint32_t>(doc_.nodes_.size() - 1);
  }

  Mark MarkOf(uint32_t id) const { return Mark{doc_.nodes_[id].line, doc_.nodes_[id].column}; }

  // Records the error "name:line:col: not valid YAML: what"; always false.
  bool Fail(Mark at, const std::string& what) {
    err_ = Error{doc_.name_ + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
                 ": not valid YAML: " + what};
    return false;
  }

  Error ParserError(const yaml_parser_t& p) {
    std::string what = p.problem ? p.problem : "unknown error";
    size_t line = p.problem_mark.line + 1, column = p.problem_mark.column + 1;
    if (p.error == YAML_READER_ERROR) {
      // Reader errors carry a byte offset, not a mark.
      line = 1, column = 1;
      for (size_t k = 0; k < p.problem_offset && k < text_.size(); ++k) {
        if (text_[k] == '\n') {
          ++line, column = 1;
        } else {
          ++column;
        }
      }
      if (p.problem_value != -1) {
        char buf[32];
        std::snprintf(buf, sizeof buf, " (#x%X)", static_cast<unsigned>(p.problem_value));
        what += buf;
      }
    }
    if (p.context) {
      what += std::string(" (") + p.context + " at line " + std::to_string(p.context_mark.line + 1) + ", column " +
              std::to_string(p.context_mark.column + 1) + ")";
    }
    Fail(Mark{static_cast<uint32_t>(line), static_cast<uint32_t>(column)}, what);
    return err_;
  }

  void Anchor(const unsigned char* anchor, uint32_t id) {
    if (anchor != nullptr) anchors_[reinterpret_cast<const char*>(anchor)] = id;
  }

  // Appends node `id` to the open collection, or makes it the root.
  void Attach(uint32_t id) {
    if (stack_.empty()) {
      doc_.root_ = id;
    } else {
      doc_.nodes_[stack_.back()].items.push_back(id);
    }
  }

  // What makes two keys the same key, as PyYAML's dict sees them.
  static std::string KeyIdentity(const YNode& k) {
    switch (k.type) {
      case YType::kString: return "s" + k.text;
      case YType::kInt: return k.overflow ? "I" + k.text : "i" + std::to_string(k.i);
      case YType::kBool: return k.b ? "b1" : "b0";
      case YType::kNull: return "n";
      default: return "o" + k.text;
    }
  }

  // PyYAML's flatten_mapping followed by dict construction: merged keys
  // first, explicit keys override their values; a key written twice
  // explicitly is an error (PyYAML would keep the last one silently).
  bool FinishMap(uint32_t id) {
    std::vector<uint32_t> merged, own;
    if (!SplitMerges(doc_.nodes_[id].items, merged, own) || !CheckKeysOnce(own)) return false;
    if (merged.empty()) {
      doc_.nodes_[id].items = std::move(own);
      return true;
    }
    std::vector<uint32_t> out;
    std::unordered_map<std::string, size_t> pos;
    // The merged pairs, then the own ones, without joining the two lists
    // (GCC 14 warned of an overflow in that vector::insert, wrongly).
    for (const std::vector<uint32_t>* pairs : {&merged, &own}) {
      for (size_t k = 0; k + 1 < pairs->size(); k += 2) {
        const uint32_t key = (*pairs)[k], value = (*pairs)[k + 1];
        auto [it, fresh] = pos.emplace(KeyIdentity(doc_.nodes_[key]), out.size());
        if (fresh) {
          out.push_back(key);
          out.push_back(value);
        } else {
          out[it->second + 1] = value;
        }
      }
    }
    doc_.nodes_[id].items = std::move(out);
    return true;
  }

  // A map's items split into those its merge keys bring (`<<: *a` or
  // `<<: [*a, *b]`, the later ones first) and its own key/value pairs.
  bool SplitMerges(const std::vector<uint32_t>& items, std::vector<uint32_t>& merged, std::vector<uint32_t>& own) {
    for (size_t k = 0; k + 1 < items.size(); k += 2) {
      const uint32_t key = items[k], value = items[k + 1];
      const YNode& kn = doc_.nodes_[key];
      if (!(any_merge_ && is_merge_[key])) {
        if (kn.type == YType::kMap || kn.type == YType::kSeq) {
          return Fail(MarkOf(key), "mapping keys must be scalars, found " + DescribeYaml(kn));
        }
        own.push_back(key);
        own.push_back(value);
        continue;
      }
      const YNode& vn = doc_.nodes_[value];
      if (vn.type == YType::kMap) {
        merged.insert(merged.end(), vn.items.begin(), vn.items.end());
      } else if (vn.type == YType::kSeq) {
        for (auto it = vn.items.rbegin(); it != vn.items.rend(); ++it) {
          const YNode& sub = doc_.nodes_[*it];
          if (sub.type != YType::kMap) {
            return Fail(MarkOf(*it), "expected a mapping for merging, but found " + DescribeYaml(sub));
          }
          merged.insert(merged.end(), sub.items.begin(), sub.items.end());
        }
      } else {
        return Fail(MarkOf(value), "expected a mapping or list of mappings for merging, but found " + DescribeYaml(vn));
      }
    }
    return true;
  }

  // No explicit key given twice (a hash set for big maps, a scan for small).
  bool CheckKeysOnce(const std::vector<uint32_t>& own) {
    std::unordered_map<std::string, size_t> seen;
    const bool big = own.size() > 32;
    for (size_t k = 0; k < own.size(); k += 2) {
      const YNode& kn = doc_.nodes_[own[k]];
      bool dup = false;
      if (big) {
        dup = !seen.emplace(KeyIdentity(kn), k).second;
      } else {
        const std::string ident = KeyIdentity(kn);
        for (size_t j = 0; j < k && !dup; j += 2) dup = KeyIdentity(doc_.nodes_[own[j]]) == ident;
      }
      if (dup) return Fail(MarkOf(own[k]), "mapping key '" + kn.text + "' is given twice");
    }
    return true;
  }

  std::string_view text_;
  YamlDoc doc_;
  Error err_;
  int documents_ = 0;
  std::vector<uint32_t> stack_;
  std::vector<uint8_t> done_;
  std::vector<uint64_t> weight_;
  std::vector<uint8_t> is_merge_;
  bool any_merge_ = false;
  std::unordered_map<std::string, uint32_t> anchors_;
};

Result<YamlDoc> YamlDoc::Parse(std::string_view text, const std::string& name) {
  return YamlBuilder(text, name).Run();
}

}  // namespace ix

// YAML read through yaml-cpp's event interface rather than YAML::Node, so
// every event is seen before anything is built: anchors and aliases are
// refused where they appear (yaml-cpp would otherwise expand them when the
// node is converted -- "billion laughs"), a repeated key is caught (yaml-cpp
// keeps the first silently), and the node and depth caps hold while parsing.
#include "kzoo/format/yaml_json.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <sstream>
#include <vector>

#include <yaml-cpp/emitter.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include "kzoo/format/utf8.hpp"

namespace kzoo::format {
namespace {

using json = nlohmann::json;

std::string at(const YAML::Mark& m) {
  return "line " + std::to_string(m.line + 1) + ", column " + std::to_string(m.column + 1);
}

std::string quoted_excerpt(const std::string& s, std::size_t max = 60) {
  std::string cut = s.size() > max ? s.substr(0, max) + "..." : s;
  return json(cut).dump(-1, ' ', false, json::error_handler_t::replace);
}

bool all_of(std::string_view s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!pred(c)) return false;
  }
  return true;
}
bool is_dec(char c) { return c >= '0' && c <= '9'; }
bool is_oct(char c) { return c >= '0' && c <= '7'; }
bool is_hex(char c) { return is_dec(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?  -- written out by hand,
// because std::regex recurses per character and a long scalar would overflow
// the stack.
bool is_core_float(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  std::size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && is_dec(s[i])) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_dec(s[i])) ++i, ++frac_digits;
    if (int_digits == 0 && frac_digits == 0) return false;
  } else if (int_digits == 0) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    std::size_t exp_digits = 0;
    while (i < s.size() && is_dec(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

// An integer in `digits` (no sign) of base `base`, negated if `negative`, as
// int64 when it fits, else uint64, else nullopt.
std::optional<json> parse_integer(std::string_view digits, int base, bool negative) {
  std::uint64_t u = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), u, base);
  if (ec != std::errc() || p != digits.data() + digits.size()) return std::nullopt;
  if (!negative) {
    if (u <= static_cast<std::uint64_t>(INT64_MAX)) return json(static_cast<std::int64_t>(u));
    return json(u);
  }
  if (u <= static_cast<std::uint64_t>(INT64_MAX)) return json(-static_cast<std::int64_t>(u));
  if (u == static_cast<std::uint64_t>(INT64_MAX) + 1) return json(INT64_MIN);
  return std::nullopt;
}

}  // namespace

// YAML 1.2 core schema resolution of a plain (unquoted) scalar. Deviations,
// all towards "string": .inf/.nan stay strings (JSON cannot hold them), and
// so do integers and floats too large for int64/uint64/double.
nlohmann::json resolve_plain_scalar(std::string_view s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (s.size() > 2 && s[0] == '0' && s[1] == 'o' && all_of(s.substr(2), is_oct)) {
    if (auto v = parse_integer(s.substr(2), 8, false)) return *v;
    return std::string(s);
  }
  if (s.size() > 2 && s[0] == '0' && s[1] == 'x' && all_of(s.substr(2), is_hex)) {
    if (auto v = parse_integer(s.substr(2), 16, false)) return *v;
    return std::string(s);
  }
  const bool sign = s[0] == '+' || s[0] == '-';
  std::string_view body = sign ? s.substr(1) : s;
  if (all_of(body, is_dec)) {
    if (auto v = parse_integer(body, 10, s[0] == '-')) return *v;
    // Too large for 64 bits: fall through and read it as a float.
  }
  if (is_core_float(s)) {
    double d = 0;
    auto [p, ec] = std::from_chars(body.data(), body.data() + body.size(), d);
    if (ec == std::errc() && p == body.data() + body.size() && std::isfinite(d)) return s[0] == '-' ? -d : d;
  }
  return std::string(s);
}

namespace {

// Thrown from the event handler to stop yaml-cpp's parser at the first
// refused event; caught in parse_yaml and returned as a value.
struct Refused {
  Violation violation;
};

class JsonBuilder : public YAML::EventHandler {
 public:
  JsonBuilder(const std::string& file, const YamlLimits& limits) : file_(file), limits_(limits) {}

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > 1) {
      refuse(mark, "yaml.multi-document",
             "a second YAML document starts here ('---'); a kzoo file holds exactly one document");
    }
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { value(mark, json(nullptr), true, ""); }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    refuse(mark, "yaml.alias",
           "aliases (*name) are refused: expanding them lets a small file grow without bound "
           "(\"billion laughs\"); write the value out in full");
  }
  void OnAnchor(const YAML::Mark& mark, const std::string& name) override {
    refuse(mark, "yaml.alias",
           "anchor &" + name + " is refused: kzoo files may not use anchors or aliases "
           "(\"billion laughs\"); write each value out in full");
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t, const std::string& text) override {
    // Escapes such as "\uD800" decode to bytes that are not UTF-8; nothing
    // downstream could print them.
    if (auto bad = find_invalid_utf8(text)) {
      refuse(mark, "yaml.utf8",
             "this scalar's escape sequences decode to invalid UTF-8 (a lone surrogate?); remove the escape");
    }
    // yaml-cpp reports "?" for plain scalars and "!" for quoted or block ones.
    json v;
    if (tag == "?") {
      v = resolve_plain_scalar(text);
    } else if (tag == "!" || tag == "tag:yaml.org,2002:str") {
      v = text;
    } else {
      refuse(mark, "yaml.syntax",
             "tag " + quoted_excerpt(tag) + " is not supported; remove it (only !!str is understood)");
    }
    value(mark, std::move(v), false, text);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    check_container_tag(mark, tag, "tag:yaml.org,2002:seq");
    open(mark, json::array());
  }
  void OnSequenceEnd() override { stack_.pop_back(); }

  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    check_container_tag(mark, tag, "tag:yaml.org,2002:map");
    open(mark, json::object());
  }
  void OnMapEnd() override { stack_.pop_back(); }

  json root_;

 private:
  struct Frame {
    json* value;
    bool expecting_key = true;  // maps: the next event is a key
    std::string key;            // maps: the key whose value comes next
  };

  [[noreturn]] void refuse(const YAML::Mark& mark, const std::string& rule, const std::string& detail) {
    throw Refused{Violation{file_, mark.is_null() ? "" : at(mark), rule, detail}};
  }

  void check_container_tag(const YAML::Mark& mark, const std::string& tag, const char* own) {
    if (tag != "?" && tag != "!" && tag != own) {
      refuse(mark, "yaml.syntax", "tag " + quoted_excerpt(tag) + " is not supported; remove it");
    }
  }

  void count(const YAML::Mark& mark) {
    if (++nodes_ > limits_.max_nodes) {
      refuse(mark, "yaml.too-many-nodes",
             "more than " + std::to_string(limits_.max_nodes) + " values; kzoo metadata files are small");
    }
  }

  // A scalar or null: either a key of the enclosing map or a value.
  void value(const YAML::Mark& mark, json&& v, bool is_null, const std::string& text) {
    count(mark);
    if (!stack_.empty() && stack_.back().value->is_object() && stack_.back().expecting_key) {
      Frame& top = stack_.back();
      if (is_null) {
        refuse(mark, "yaml.key-type",
               "a null (empty or ~) key; every key must be a non-empty name -- quote it if it really is \"null\"");
      }
      // Keys are compared after resolution, so `1` and `"1"`, or `a` and
      // "a", are the same key -- as they will be in the JSON object.
      std::string key = v.is_string() ? v.get<std::string>() : v.dump();
      if (top.value->contains(key)) {
        refuse(mark, "yaml.duplicate-key",
               "key " + quoted_excerpt(key) +
                   " appears twice in the same mapping; YAML readers disagree on which one wins, so "
                   "kzoo refuses both: keep exactly one");
      }
      top.key = std::move(key);
      top.expecting_key = false;
      return;
    }
    place(std::move(v));
  }

  json* place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Frame& top = stack_.back();
    if (top.value->is_array()) {
      top.value->push_back(std::move(v));
      return &top.value->back();
    }
    top.expecting_key = true;
    return &((*top.value)[top.key] = std::move(v));
  }

  void open(const YAML::Mark& mark, json&& container) {
    count(mark);
    if (!stack_.empty() && stack_.back().value->is_object() && stack_.back().expecting_key) {
      refuse(mark, "yaml.key-type",
             "a mapping key that is itself a list or mapping; keys must be plain names");
    }
    if (stack_.size() >= limits_.max_depth) {
      refuse(mark, "yaml.too-deep",
             "nesting deeper than " + std::to_string(limits_.max_depth) + " levels; flatten the document");
    }
    json* where = place(std::move(container));
    stack_.push_back({where, true, {}});
  }

  const std::string& file_;
  const YamlLimits& limits_;
  std::vector<Frame> stack_;
  std::size_t nodes_ = 0;
  int documents_ = 0;
};

// yaml-cpp's message for a tab used as indentation is "illegal map value" or
// similar; say what is actually wrong when the offending line starts with one.
std::string explain_syntax(std::string_view text, const YAML::Mark& mark, const std::string& msg) {
  std::size_t line_start = 0;
  for (int l = 0; l < mark.line && line_start < text.size(); ++l) {
    auto nl = text.find('\n', line_start);
    if (nl == std::string_view::npos) break;
    line_start = nl + 1;
  }
  for (std::size_t i = line_start; i < text.size() && (text[i] == ' ' || text[i] == '\t'); ++i) {
    if (text[i] == '\t') {
      return msg + " -- this line is indented with a tab; YAML indents with spaces only";
    }
  }
  return msg;
}

}  // namespace

tl::expected<nlohmann::json, Violation> parse_yaml(std::string_view text, const std::string& file,
                                                    const YamlLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return tl::unexpected(Violation{file, "", "yaml.too-large",
                                    "the text is " + std::to_string(text.size()) + " bytes; at most " +
                                        std::to_string(limits.max_bytes) + " bytes are accepted"});
  }
  if (auto bad = find_invalid_utf8(text)) {
    return tl::unexpected(Violation{file,
                                    "line " + std::to_string(bad->line) + ", column " + std::to_string(bad->column),
                                    "yaml.utf8",
                                    "byte " + std::to_string(bad->offset) + " is not valid UTF-8; save the file as UTF-8"});
  }
  // YAML forbids raw C0 control characters; yaml-cpp instead takes leading
  // NUL bytes as a sign of UTF-16/32 and decodes the text as such (found by
  // the fuzzer). DEL is let through: yaml-cpp reads it, and writes it raw.
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      const TextPosition p = position_of(text, i);
      char hex[8];
      std::snprintf(hex, sizeof hex, "%02X", c);
      return tl::unexpected(Violation{
          file, "line " + std::to_string(p.line) + ", column " + std::to_string(p.column), "yaml.syntax",
          std::string("control character U+00") + hex +
              " is not allowed in YAML; remove it, or write it as an escape inside a double-quoted string"});
    }
  }
  std::istringstream in{std::string(text)};
  JsonBuilder builder(file, limits);
  try {
    YAML::Parser parser(in);
    // Keep reading: a second document is refused from inside the handler.
    while (parser.HandleNextDocument(builder)) {
    }
  } catch (const Refused& r) {
    return tl::unexpected(r.violation);
  } catch (const YAML::DeepRecursion& e) {
    return tl::unexpected(Violation{file, at(e.mark), "yaml.too-deep",
                                    "nesting deeper than yaml-cpp's own limit; flatten the document"});
  } catch (const YAML::Exception& e) {
    return tl::unexpected(Violation{file, e.mark.is_null() ? "" : at(e.mark), "yaml.syntax",
                                    explain_syntax(text, e.mark, e.msg)});
  }
  return std::move(builder.root_);
}


namespace {

// yaml-cpp writes control characters raw in plain scalars, where a reader
// folds or drops them (a trailing CR, found by the fuzzer); in double quotes
// it escapes them.
bool has_control(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7F) return true;
  }
  return false;
}

// yaml-cpp writes "--- x" plain; at the start of a line a reader takes
// "---" or "..." as a document marker (found by the fuzzer). Quoting any
// string that begins with one is always safe.
bool starts_with_marker(const std::string& s) { return s.starts_with("---") || s.starts_with("..."); }

bool needs_quotes(const std::string& s) {
  return !resolve_plain_scalar(s).is_string() || has_control(s) || starts_with_marker(s);
}

void emit(YAML::Emitter& out, const nlohmann::json& v) {
  switch (v.type()) {
    case json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [k, item] : v.items()) {
        // YAML caps an implicit key at 1024 characters; yaml-cpp writes a longer
        // one implicit anyway, which no reader takes back (found by the fuzzer).
        // An explicit "? key" has no cap; past 256 bytes, escapes included, use it.
        if (k.size() > 256) out << YAML::LongKey;
        out << YAML::Key;
        // A key that would re-read as a number, bool or null is quoted.
        if (needs_quotes(k)) out << YAML::DoubleQuoted;
        out << k << YAML::Value;
        emit(out, item);
      }
      out << YAML::EndMap;
      break;
    case json::value_t::array:
      out << YAML::BeginSeq;
      for (const auto& item : v) emit(out, item);
      out << YAML::EndSeq;
      break;
    case json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      if (needs_quotes(s)) out << YAML::DoubleQuoted;
      out << s;
      break;
    }
    case json::value_t::null:
      out << YAML::Null;
      break;
    case json::value_t::boolean:
      out << v.get<bool>();
      break;
    default:
      // Numbers as nlohmann prints them: shortest round-trip text, and
      // floats always with a '.' or exponent, so they re-read as floats.
      out << v.dump();
      break;
  }
}

}  // namespace

std::string to_yaml(const nlohmann::json& doc) {
  YAML::Emitter out;
  out.SetOutputCharset(YAML::EmitNonAscii);
  out.SetMapFormat(YAML::Block);
  out.SetSeqFormat(YAML::Block);
  emit(out, doc);
  return std::string(out.c_str()) + "\n";
}

}  // namespace kzoo::format

#include "kzoo/format/json_edit.hpp"

#include <optional>

#include "kzoo/format/json_text.hpp"

namespace kzoo::format {
namespace {

// Byte spans of one object's members in text already known to be valid JSON.
struct Member {
  std::string key;
  std::size_t key_begin = 0;    // the opening quote of the key
  std::size_t value_begin = 0;
  std::size_t value_end = 0;    // one past the value
};

struct ObjectSpan {
  std::size_t open = 0;  // '{'
  std::size_t close = 0;  // '}'
  std::vector<Member> members;
};

class Scanner {
 public:
  explicit Scanner(std::string_view t) : t_(t) {}

  std::size_t skip_ws(std::size_t p) const {
    while (p < t_.size() && (t_[p] == ' ' || t_[p] == '\t' || t_[p] == '\n' || t_[p] == '\r')) ++p;
    return p;
  }

  // One past the string starting at the quote at p.
  std::size_t string_end(std::size_t p) const {
    for (++p; p < t_.size(); ++p) {
      if (t_[p] == '\\') ++p;
      else if (t_[p] == '"') return p + 1;
    }
    return t_.size();
  }

  // One past the value starting at p (p at its first byte).
  std::size_t value_end(std::size_t p) const {
    if (p >= t_.size()) return p;
    char c = t_[p];
    if (c == '"') return string_end(p);
    if (c == '{' || c == '[') {
      int depth = 0;
      for (; p < t_.size(); ++p) {
        char d = t_[p];
        if (d == '"') {
          p = string_end(p) - 1;
        } else if (d == '{' || d == '[') {
          ++depth;
        } else if (d == '}' || d == ']') {
          if (--depth == 0) return p + 1;
        }
      }
      return t_.size();
    }
    while (p < t_.size() && t_[p] != ',' && t_[p] != '}' && t_[p] != ']' && t_[p] != ' ' && t_[p] != '\n' &&
           t_[p] != '\r' && t_[p] != '\t')
      ++p;
    return p;
  }

  std::optional<ObjectSpan> object_at(std::size_t p) const {
    if (p >= t_.size() || t_[p] != '{') return std::nullopt;
    ObjectSpan o;
    o.open = p;
    p = skip_ws(p + 1);
    while (p < t_.size() && t_[p] != '}') {
      Member m;
      m.key_begin = p;
      std::size_t key_end = string_end(p);
      // The key was validated by the strict parse; decode escapes through nlohmann.
      m.key = nlohmann::json::parse(t_.substr(p, key_end - p)).get<std::string>();
      p = skip_ws(key_end);
      p = skip_ws(p + 1);  // ':'
      m.value_begin = p;
      m.value_end = value_end(p);
      p = skip_ws(m.value_end);
      if (p < t_.size() && t_[p] == ',') p = skip_ws(p + 1);
      o.members.push_back(std::move(m));
    }
    o.close = p;
    return o;
  }

 private:
  std::string_view t_;
};

}  // namespace

Result<std::string> set_json_member(std::string_view text, const std::vector<std::string>& path, const std::string& key,
                                    const nlohmann::json& value, const std::string& where) {
  auto doc = parse_json(text, where);
  if (!doc) return fail(to_string(doc.error()));
  std::string pointer;
  for (const auto& k : path) pointer += "/" + k;
  Scanner s(text);
  auto obj = s.object_at(s.skip_ws(0));
  for (const auto& k : path) {
    if (!obj) break;
    std::optional<ObjectSpan> next;
    for (const auto& m : obj->members)
      if (m.key == k) next = s.object_at(m.value_begin);
    obj = next;
  }
  if (!obj)
    return fail(where + ": " + (pointer.empty() ? std::string("the document") : pointer) +
                " is not an object, so \"" + key + "\" cannot be set there; fix the file's structure (the schema "
                "says where it goes)");

  const std::string encoded = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out(text);
  for (const auto& m : obj->members)
    if (m.key == key) return out.replace(m.value_begin, m.value_end - m.value_begin, encoded);

  const std::string member = nlohmann::json(key).dump() + ": " + encoded;
  if (obj->members.empty()) return out.insert(obj->open + 1, member);
  const Member& last = obj->members.back();
  // Laid out like the last member: on its own line, indented as it is, or inline.
  std::size_t line_start = text.rfind('\n', last.key_begin);
  bool own_line = line_start != std::string_view::npos && line_start > obj->open &&
                  text.substr(line_start + 1, last.key_begin - line_start - 1).find_first_not_of(" \t") ==
                      std::string_view::npos;
  std::string sep = own_line ? ",\n" + std::string(text.substr(line_start + 1, last.key_begin - line_start - 1)) : ", ";
  return out.insert(last.value_end, sep + member);
}

}  // namespace kzoo::format

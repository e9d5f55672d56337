// SchemaSet: kzoo's schemas checked by valijson 1.0, with its terse errors
// turned into Violations a user can act on.
//
// valijson 1.0 knows drafts 3, 4 and 7 and ignores `$schema`, so every schema
// is parsed as draft 7, including the KBench task schema that declares draft
// 2020-12 (its keywords are all draft-07 ones; `$ref: "#/$defs/x"` resolves
// as a plain JSON pointer). What valijson would silently NOT enforce is
// refused when a schema is loaded (schema_audit.hpp), so a schema can never
// promise a check that does not happen.
#include "kzoo/format/json_schema.hpp"

#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "kzoo/format/json_text.hpp"
#include "kzoo/format/schema_audit.hpp"
#include "kzoo/format/utf8.hpp"
#include "kzoo/util/embedded.hpp"

namespace kzoo::format {
namespace {

using json = nlohmann::json;


std::string value_excerpt(const json& v, std::size_t max = 80) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > max) {
    std::size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // whole code points
    s = s.substr(0, cut) + "...";
  }
  return s;
}

std::string type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    case json::value_t::string: return "string";
    case json::value_t::array: return "array";
    case json::value_t::object: return "object";
    default: return "value";
  }
}

std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string join(const json& items, const char* sep = ", ") {
  std::string out;
  for (const auto& i : items) {
    if (!out.empty()) out += sep;
    out += i.is_string() ? i.get<std::string>() : i.dump();
  }
  return out;
}

// The text between the first and the last single quote of a valijson
// message ("Missing required property 'name'.").
std::string quoted_name(const std::string& msg) {
  auto a = msg.find('\'');
  auto b = msg.rfind('\'');
  if (a == std::string::npos || b <= a) return "";
  return msg.substr(a + 1, b - a - 1);
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// valijson's messages that only say "something below failed"; the leaf
// errors under them are what users need.
bool is_wrapper(const std::string& msg) {
  return starts_with(msg, "Failed to validate against schema associated with") ||
         starts_with(msg, "Failed to validate item #") ||
         starts_with(msg, "Failed to validate against additional properties schema") ||
         starts_with(msg, "Failed to validate against child schema") ||
         starts_with(msg, "Cannot validate item #");
}

// The JSON Schema keyword behind a valijson leaf message.
std::string keyword_of(const std::string& msg) {
  static const std::pair<const char*, const char*> table[] = {
      {"Missing required property", "required"},
      {"Value type not permitted", "type"},
      {"Failed to match against any enum", "enum"},
      {"Failed to match expected value set by 'const'", "const"},
      {"Failed to match regex", "pattern"},
      {"Expected number greater than or equal to", "minimum"},
      {"Expected number greater than", "exclusiveMinimum"},
      {"Expected number less than or equal to", "maximum"},
      {"Expected number less than", "exclusiveMaximum"},
      {"String should be no fewer than", "minLength"},
      {"String should be no more than", "maxLength"},
      {"Array should contain no fewer than", "minItems"},
      {"Array should contain no more than", "maxItems"},
      {"Object should have no fewer than", "minProperties"},
      {"Object should have no more than", "maxProperties"},
      {"Object contains a property that could not be validated", "additionalProperties"},
      {"Elements at indexes", "uniqueItems"},
      {"Value should be a multiple of", "multipleOf"},
  };
  for (const auto& [prefix, keyword] : table) {
    if (starts_with(msg, prefix)) return keyword;
  }
  return "invalid";
}

}  // namespace

struct SchemaSet::Impl {
  struct Entry {
    json doc;
    std::unique_ptr<valijson::Schema> compiled;
  };
  std::map<std::string, Entry, std::less<>> entries;

  const Entry& at(std::string_view name) const {
    auto it = entries.find(name);
    if (it == entries.end()) throw std::out_of_range("no schema named '" + std::string(name) + "'");
    return it->second;
  }
};

SchemaSet::SchemaSet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SchemaSet::SchemaSet(SchemaSet&&) noexcept = default;
SchemaSet& SchemaSet::operator=(SchemaSet&&) noexcept = default;
SchemaSet::~SchemaSet() = default;

Result<SchemaSet> SchemaSet::load(const std::vector<std::pair<std::string, std::string>>& files) {
  auto impl = std::make_unique<Impl>();
  for (const auto& [name, text] : files) {
    const std::string file = name + ".schema.json";
    auto doc = parse_json(text, file);
    if (!doc) return fail("schema '" + name + "': " + to_string(doc.error()));
    if (auto problems = audit_schema(*doc, file); !problems.empty()) {
      std::string msg = "schema '" + name + "' uses what kzoo cannot enforce:";
      for (const auto& v : problems) msg += "\n  " + to_string(v);
      return fail(msg);
    }
    auto compiled = std::make_unique<valijson::Schema>();
    try {
      valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
      valijson::adapters::NlohmannJsonAdapter adapter(*doc);
      parser.populateSchema(adapter, *compiled);
    } catch (const std::exception& e) {
      return fail("schema '" + name + "': valijson refused it: " + e.what());
    }
    if (!impl->entries.emplace(name, Impl::Entry{std::move(*doc), std::move(compiled)}).second) {
      return fail("schema '" + name + "' is given twice");
    }
  }
  return SchemaSet(std::move(impl));
}

const SchemaSet& SchemaSet::bundled() {
  static const SchemaSet set = [] {
    std::vector<std::pair<std::string, std::string>> files;
    constexpr std::string_view suffix = ".schema.json";
    for (const auto& f : embedded_schemas()) {
      std::string name(f.name);
      if (name.size() > suffix.size() && name.ends_with(suffix)) name.resize(name.size() - suffix.size());
      files.emplace_back(std::move(name), std::string(f.content));
    }
    auto loaded = load(files);
    // The bundled schemas are tested at build time; failing here is a bug.
    if (!loaded) throw std::logic_error("bundled schemas: " + loaded.error().message);
    return std::move(*loaded);
  }();
  return set;
}

const json& SchemaSet::schema(std::string_view name) const { return impl_->at(name).doc; }

std::vector<std::string> SchemaSet::names() const {
  std::vector<std::string> out;
  for (const auto& [name, entry] : impl_->entries) out.push_back(name);
  return out;
}

namespace {

// What the schema wants, in words, for the leaf error `keyword` at a value
// governed by schema node `node` (nullptr when it cannot be found).
std::string expected(const std::string& keyword, const json* node) {
  auto get = [&](const char* k) -> const json* {
    return node && node->is_object() && node->contains(k) ? &node->at(k) : nullptr;
  };
  if (keyword == "type") {
    if (const json* t = get("type")) return t->is_array() ? "one of the types " + join(*t) : t->get<std::string>();
  } else if (keyword == "enum") {
    if (const json* e = get("enum")) return "one of: " + join(*e);
  } else if (keyword == "const") {
    if (const json* c = get("const")) return "exactly " + c->dump();
  } else if (keyword == "pattern") {
    if (const json* p = get("pattern")) return "a string matching " + p->get<std::string>();
  } else if (keyword == "minimum" || keyword == "exclusiveMinimum") {
    if (const json* m = get(keyword.c_str())) return std::string("a number ") + (keyword == "minimum" ? ">= " : "> ") + m->dump();
  } else if (keyword == "maximum" || keyword == "exclusiveMaximum") {
    if (const json* m = get(keyword.c_str())) return std::string("a number ") + (keyword == "maximum" ? "<= " : "< ") + m->dump();
  } else if (keyword == "minLength") {
    if (const json* m = get("minLength")) return "at least " + m->dump() + " characters";
  } else if (keyword == "maxLength") {
    if (const json* m = get("maxLength")) return "at most " + m->dump() + " characters";
  } else if (keyword == "minItems") {
    if (const json* m = get("minItems")) return "at least " + m->dump() + " items";
  } else if (keyword == "maxItems") {
    if (const json* m = get("maxItems")) return "at most " + m->dump() + " items";
  } else if (keyword == "minProperties") {
    if (const json* m = get("minProperties")) return "at least " + m->dump() + " properties";
  } else if (keyword == "maxProperties") {
    if (const json* m = get("maxProperties")) return "at most " + m->dump() + " properties";
  } else if (keyword == "multipleOf") {
    if (const json* m = get("multipleOf")) return "a multiple of " + m->dump();
  } else if (keyword == "uniqueItems") {
    return "no two equal items";
  }
  return "";
}

// "found <what>" for the value at the error.
std::string found(const std::string& keyword, const json* value) {
  if (!value) return "found nothing";
  if (keyword == "minLength" || keyword == "maxLength") {
    if (value->is_string()) {
      return "found a string of " + std::to_string(code_points(value->get<std::string>())) + " characters, " +
             value_excerpt(*value);
    }
  }
  if (keyword == "minItems" || keyword == "maxItems") {
    return "found an array of " + std::to_string(value->size()) + " items";
  }
  if (keyword == "minProperties" || keyword == "maxProperties") {
    return "found an object with " + std::to_string(value->size()) + " properties";
  }
  return "found " + type_name(*value) + " " + value_excerpt(*value);
}

}  // namespace

Violations SchemaSet::validate(const json& doc, std::string_view name, const std::string& file) const {
  const Impl::Entry& entry = impl_->at(name);

  // std::regex (inside valijson) recurses per character and overflows the
  // stack on long strings; over-long strings under `pattern` are reported
  // here and blanked out of the copy valijson sees.
  Violations out;
  std::set<std::string> guarded;
  const json* target = &doc;
  json blanked;
  auto long_strings = find_long_patterned_strings(entry.doc, doc);
  if (!long_strings.empty()) {
    blanked = doc;
    for (const auto& ls : long_strings) {
      blanked[json::json_pointer(ls.pointer)] = "";
      guarded.insert(ls.pointer);
      out.push_back({file, ls.pointer, "schema.pattern",
                     "found a string of " + std::to_string(ls.length) + " bytes, " +
                         value_excerpt(doc.at(json::json_pointer(ls.pointer))) + "; expected a string matching " +
                         ls.pattern + " of at most " + std::to_string(kMaxPatternInput) + " bytes"});
    }
    target = &blanked;
  }

  // valijson compiles each `pattern` into a std::regex on first use and keeps
  // it in the Validator; a Validator made per call compiled every pattern of
  // the schema on every validation (a visible share of inspecting a package).
  // One per thread keeps the compiled regexes: the cache is not thread-safe,
  // and it is keyed by the pattern text alone, so sharing it between
  // SchemaSets is correct. It holds the patterns of the schemas this thread
  // validated against: a few dozen.
  thread_local valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter adapter(*target);
  const bool valid = validator.validate(*entry.compiled, adapter, &results);

  std::set<std::tuple<std::string, std::string, std::string>> seen;
  for (const auto& err : results) {
    if (is_wrapper(err.description)) continue;
    std::string pointer;
    for (std::size_t i = 1; i < err.context.size(); ++i) {  // [0] is "<root>"
      std::string token = err.context[i];
      if (token.size() >= 2 && token.front() == '[' && token.back() == ']') token = token.substr(1, token.size() - 2);
      pointer += "/" + json_pointer_token(token);
    }
    if (guarded.count(pointer)) continue;
    const std::string keyword = keyword_of(err.description);
    const json* node = schema_at(entry.doc, pointer);
    const json* value = nullptr;
    if (auto jp = json::json_pointer(pointer); target->contains(jp)) value = &target->at(jp);

    std::string detail;
    if (keyword == "required") {
      const std::string prop = quoted_name(err.description);
      detail = "required property \"" + prop + "\" is missing";
      const json* prop_schema = node ? schema_at(entry.doc, pointer + "/" + json_pointer_token(prop)) : nullptr;
      if (prop_schema && prop_schema->contains("description")) {
        detail += " (" + value_excerpt(prop_schema->at("description"), 160) + ")";
      }
    } else if (keyword == "additionalProperties") {
      // "...'properties' or 'additionalProperties' constraints: 'NAME'."
      std::string prop = err.description;
      if (auto at = prop.find("constraints: '"); at != std::string::npos) prop = prop.substr(at + 14);
      if (auto end = prop.rfind('\''); end != std::string::npos) prop.resize(end);
      pointer += "/" + json_pointer_token(prop);
      detail = "property \"" + prop + "\" is not allowed here";
      if (node && node->contains("properties")) {
        json allowed = json::array();
        for (const auto& [k, v] : node->at("properties").items()) allowed.push_back(k);
        detail += "; expected only: " + join(allowed) + " (check the spelling)";
      }
    } else {
      const std::string want = expected(keyword, node);
      detail = found(keyword, value) + "; expected " + (want.empty() ? err.description : want);
      // `schema_version: 1` in YAML is a number; say how to make it text.
      if (keyword == "type" && value && (value->is_number() || value->is_boolean() || value->is_null()) &&
          want.find("string") != std::string::npos) {
        detail += " (put the value in quotes to make it a string)";
      }
    }
    if (seen.emplace(pointer, keyword, detail).second) {
      out.push_back({file, pointer, "schema." + keyword, std::move(detail)});
    }
  }
  if (!valid && out.empty()) {
    // Only wrapper messages: never report a failed document as clean.
    out.push_back({file, "", "schema.invalid", "the document does not match the " + std::string(name) + " schema"});
  }
  return out;
}

}  // namespace kzoo::format

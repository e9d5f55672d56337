#include "kzoo/format/schema_audit.hpp"

#include <regex>
#include <set>

#include "kzoo/format/utf8.hpp"

namespace kzoo::format {
namespace {

using json = nlohmann::json;


// Keywords draft 2019-09/2020-12 added that valijson 1.0 parses past without
// a word: a schema using them would let bad documents through.
const std::set<std::string> kNotEnforced = {
    "prefixItems",   "dependentRequired", "dependentSchemas", "unevaluatedProperties", "unevaluatedItems",
    "$anchor",       "$dynamicRef",       "$dynamicAnchor",   "$recursiveRef",         "$recursiveAnchor",
    "$vocabulary",   "minContains",       "maxContains",      "contentSchema",         "contentMediaType",
    "contentEncoding"};

// Annotations: carried for people and the docs, never checked.
const std::set<std::string> kAnnotations = {"title",    "description", "default",   "examples",
                                            "$comment", "readOnly",    "writeOnly", "deprecated"};

const std::set<std::string> kTypes = {"null", "boolean", "integer", "number", "string", "array", "object"};

const std::set<std::string> kNonNegativeInts = {"minLength", "maxLength", "minItems",      "maxItems",
                                                "minProperties", "maxProperties"};
const std::set<std::string> kNumbers = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"};

class Auditor {
 public:
  Auditor(const json& root, const std::string& file) : root_(root), file_(file) {}

  void schema(const json& node, const std::string& ptr, bool is_root) {
    if (node.is_boolean()) return;
    if (!node.is_object()) {
      add(ptr, "bad-value", "a schema must be an object or a boolean, found " + node.dump());
      return;
    }
    const bool has_ref = node.contains("$ref");
    for (const auto& [key, value] : node.items()) {
      const std::string at = ptr + "/" + json_pointer_token(key);
      if (kAnnotations.count(key)) continue;
      if (has_ref && key != "$ref") {
        add(at, "not-enforced", "\"" + key + "\" beside $ref is ignored by valijson 1.0; move it into the referenced schema");
        continue;
      }
      if (kNotEnforced.count(key)) {
        add(at, "not-enforced", "\"" + key + "\" is not enforced by valijson 1.0 (draft-07 only): documents that break it would pass");
      } else if (key == "$schema" || key == "$id") {
        if (!is_root) add(at, "unsupported", "\"" + key + "\" is accepted at the schema's root only");
        if (key == "$schema" && !accepted_dialect(value)) {
          add(at, "bad-value", "$schema " + value.dump() + " is not one kzoo reads as draft 7");
        }
      } else if (key == "$defs" || key == "definitions") {
        if (!is_root || !value.is_object()) {
          add(at, "unsupported", "\"" + key + "\" must be an object at the schema's root");
          continue;
        }
        for (const auto& [name, sub] : value.items()) schema(sub, at + "/" + json_pointer_token(name), false);
      } else if (key == "$ref") {
        ref(value, at);
      } else if (key == "properties") {
        if (!value.is_object()) {
          add(at, "bad-value", "\"properties\" must be an object");
          continue;
        }
        for (const auto& [name, sub] : value.items()) schema(sub, at + "/" + json_pointer_token(name), false);
      } else if (key == "additionalProperties" || key == "items") {
        if (key == "items" && value.is_array()) {
          add(at, "unsupported", "tuple-form \"items\" is not supported; use one schema for every item");
          continue;
        }
        schema(value, at, false);
      } else if (key == "type") {
        type(value, at);
      } else if (key == "enum") {
        if (!value.is_array() || value.empty()) add(at, "bad-value", "\"enum\" must be a non-empty array");
      } else if (key == "const") {
        // any value
      } else if (key == "required") {
        bool ok = value.is_array();
        for (const auto& r : value) ok = ok && r.is_string();
        if (!ok) add(at, "bad-value", "\"required\" must be an array of property names");
      } else if (key == "pattern") {
        pattern(value, at);
      } else if (kNonNegativeInts.count(key)) {
        if (!value.is_number_unsigned()) add(at, "bad-value", "\"" + key + "\" must be a non-negative integer");
      } else if (kNumbers.count(key)) {
        if (!value.is_number()) add(at, "bad-value", "\"" + key + "\" must be a number");
      } else if (key == "uniqueItems") {
        if (!value.is_boolean()) add(at, "bad-value", "\"uniqueItems\" must be a boolean");
      } else {
        add(at, "unsupported",
            "\"" + key + "\" is not among the keywords kzoo's validator supports (see docs/formats.md); "
            "express the rule with supported keywords or in code");
      }
    }
  }

  Violations out;

 private:
  static bool accepted_dialect(const json& v) {
    if (!v.is_string()) return false;
    for (const char* d : kAcceptedDialects) {
      if (v == d) return true;
    }
    return false;
  }

  void ref(const json& value, const std::string& at) {
    if (!value.is_string() || value.get<std::string>().rfind("#/", 0) != 0) {
      add(at, "bad-ref", "$ref must be a local JSON pointer like \"#/$defs/name\", found " + value.dump());
      return;
    }
    try {
      json::json_pointer p(value.get<std::string>().substr(1));
      if (!root_.contains(p)) add(at, "bad-ref", "$ref " + value.dump() + " points at nothing");
    } catch (const json::exception&) {
      add(at, "bad-ref", "$ref " + value.dump() + " is not a valid JSON pointer");
    }
  }

  void type(const json& value, const std::string& at) {
    const json list = value.is_array() ? value : json::array({value});
    for (const auto& t : list) {
      if (!t.is_string() || !kTypes.count(t.get<std::string>())) {
        add(at, "bad-value", "unknown type " + t.dump());
      }
    }
  }

  void pattern(const json& value, const std::string& at) {
    if (!value.is_string()) {
      add(at, "bad-value", "\"pattern\" must be a string");
      return;
    }
    // valijson compiles patterns lazily, during validation, where a bad one
    // would throw; compile it now instead.
    try {
      std::regex r(value.get<std::string>());
    } catch (const std::regex_error& e) {
      add(at, "bad-value", "pattern " + value.dump() + " is not a valid ECMAScript regex: " + e.what());
    }
  }

  void add(const std::string& ptr, const std::string& rule, std::string detail) {
    out.push_back({file_, ptr, "schema-audit." + rule, std::move(detail)});
  }

  const json& root_;
  const std::string& file_;
};

const json* deref(const json& root, const json* node) {
  for (int hops = 0; node && node->is_object() && node->contains("$ref"); ++hops) {
    const json& r = node->at("$ref");
    if (hops > 32 || !r.is_string() || r.get<std::string>().rfind("#", 0) != 0) return nullptr;
    try {
      json::json_pointer p(r.get<std::string>().substr(1));
      node = root.contains(p) ? &root.at(p) : nullptr;
    } catch (const json::exception&) {
      return nullptr;
    }
  }
  return node;
}

// The subschema for member `token` of a value governed by `node`.
const json* child(const json& root, const json* node, const std::string& token) {
  node = deref(root, node);
  if (!node || !node->is_object()) return nullptr;
  if (auto p = node->find("properties"); p != node->end() && p->is_object() && p->contains(token)) {
    return &p->at(token);
  }
  if (auto a = node->find("additionalProperties"); a != node->end() && a->is_object()) return &*a;
  if (auto i = node->find("items"); i != node->end() && i->is_object()) return &*i;
  return nullptr;
}

void find_long(const json& root, const json* node, const json& value, const std::string& ptr,
               std::vector<LongString>& out) {
  node = deref(root, node);
  if (!node || !node->is_object()) return;
  if (value.is_string()) {
    auto p = node->find("pattern");
    if (p != node->end() && p->is_string() && value.get_ref<const std::string&>().size() > kMaxPatternInput) {
      out.push_back({ptr, value.get_ref<const std::string&>().size(), p->get<std::string>()});
    }
  } else if (value.is_object()) {
    for (const auto& [k, v] : value.items()) {
      if (const json* c = child(root, node, k)) find_long(root, c, v, ptr + "/" + json_pointer_token(k), out);
    }
  } else if (value.is_array()) {
    auto i = node->find("items");
    if (i == node->end() || !i->is_object()) return;
    for (std::size_t n = 0; n < value.size(); ++n) find_long(root, &*i, value[n], ptr + "/" + std::to_string(n), out);
  }
}

}  // namespace

Violations audit_schema(const json& schema, const std::string& file) {
  Auditor a(schema, file);
  if (!schema.is_object()) {
    a.out.push_back({file, "", "schema-audit.bad-value", "a schema file must hold a JSON object"});
    return a.out;
  }
  if (!schema.contains("$schema")) {
    a.out.push_back({file, "", "schema-audit.bad-value",
                     "no \"$schema\": say which dialect it is written in (draft-07 or 2020-12)"});
  }
  a.schema(schema, "", true);
  return a.out;
}

const json* schema_at(const json& root, const std::string& pointer) {
  const json* node = &root;
  std::size_t pos = 0;
  while (node && pos < pointer.size()) {
    // pointer is "/tok/tok..."; unescape ~1 then ~0 (RFC 6901).
    std::size_t next = pointer.find('/', pos + 1);
    std::string token = pointer.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    std::string plain;
    for (std::size_t i = 0; i < token.size(); ++i) {
      if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
        plain += token[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        plain += token[i];
      }
    }
    node = child(root, node, plain);
    pos = next == std::string::npos ? pointer.size() : next;
  }
  return deref(root, node);
}

std::vector<LongString> find_long_patterned_strings(const json& schema, const json& doc) {
  std::vector<LongString> out;
  find_long(schema, &schema, doc, "", out);
  return out;
}

}  // namespace kzoo::format

// Strict JSON reading through nlohmann's SAX interface: the DOM is built here
// so that a repeated key is an error (nlohmann's own DOM parser keeps the last
// one silently) and nesting is capped before it is built.
#include "kzoo/format/json_text.hpp"

#include <optional>
#include <vector>

#include "kzoo/format/utf8.hpp"

namespace kzoo::format {
namespace {

using json = nlohmann::json;


std::string quoted_excerpt(const std::string& s, std::size_t max = 60) {
  std::string cut = s.size() > max ? s.substr(0, max) + "..." : s;
  return json(cut).dump(-1, ' ', false, json::error_handler_t::replace);
}

class StrictBuilder : public nlohmann::json_sax<json> {
 public:
  StrictBuilder(const std::string& file, std::size_t max_depth) : file_(file), max_depth_(max_depth) {}

  bool null() override { return put(json(nullptr)); }
  bool boolean(bool v) override { return put(json(v)); }
  bool number_integer(number_integer_t v) override { return put(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return put(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return put(json(v)); }
  bool string(string_t& v) override { return put(json(std::move(v))); }
  bool binary(binary_t& v) override { return put(json::binary(std::move(v))); }

  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& k) override {
    Frame& top = stack_.back();
    if (top.value->contains(k)) {
      error_ = Violation{file_, pointer() + "/" + json_pointer_token(k), "json.duplicate-key",
                         "key " + quoted_excerpt(k) +
                             " appears twice in the same object; JSON readers disagree on which one wins, "
                             "so kzoo refuses both: keep exactly one"};
      return false;
    }
    top.key = std::move(k);
    return true;
  }

  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) override {
    syntax_position_ = position;
    syntax_message_ = ex.what();
    // nlohmann prefixes "[json.exception.parse_error.101] parse error at line
    // L, column C: "; keep only the explanation, the position is ours.
    if (auto p = syntax_message_.find(": "); p != std::string::npos &&
                                             syntax_message_.rfind("[json.exception", 0) == 0) {
      syntax_message_ = syntax_message_.substr(p + 2);
    }
    (void)last_token;
    return false;
  }

  std::optional<Violation> error_;
  std::optional<std::size_t> syntax_position_;
  std::string syntax_message_;
  json root_;

 private:
  struct Frame {
    json* value;
    std::string key;  // the key whose value comes next (objects only)
  };

  // The path token of frame f's current member, or (next) of the one to come.
  static std::string child_token(const Frame& f, bool next) {
    if (f.value->is_object()) return json_pointer_token(f.key);
    return std::to_string(f.value->size() - (next ? 0 : 1));
  }

  // The JSON pointer of the innermost open container.
  std::string pointer() const {
    std::string p;
    for (std::size_t i = 0; i + 1 < stack_.size(); ++i) p += "/" + child_token(stack_[i], false);
    return p;
  }

  // The pointer of the value about to be added (for the depth error).
  std::string pointer_of_next() const {
    if (stack_.empty()) return "";
    return pointer() + "/" + child_token(stack_.back(), true);
  }

  // Where the next value goes; returns the slot.
  json* slot(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Frame& top = stack_.back();
    if (top.value->is_array()) {
      top.value->push_back(std::move(v));
      return &top.value->back();
    }
    return &((*top.value)[top.key] = std::move(v));
  }

  bool put(json&& v) {
    slot(std::move(v));
    return true;
  }

  bool open(json&& container) {
    if (stack_.size() >= max_depth_) {
      error_ = Violation{file_, pointer_of_next(), "json.too-deep",
                         "nesting deeper than " + std::to_string(max_depth_) +
                             " levels; kzoo's formats are shallow, so flatten the document"};
      return false;
    }
    json* where = slot(std::move(container));
    stack_.push_back({where, {}});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  const std::string& file_;
  std::size_t max_depth_;
  std::vector<Frame> stack_;
};

std::string line_col(const TextPosition& p) {
  return "line " + std::to_string(p.line) + ", column " + std::to_string(p.column);
}

}  // namespace

tl::expected<nlohmann::json, Violation> parse_json(std::string_view text, const std::string& file,
                                                    const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return tl::unexpected(Violation{file, "", "json.too-large",
                                    "the text is " + std::to_string(text.size()) + " bytes; at most " +
                                        std::to_string(limits.max_bytes) + " bytes are accepted"});
  }
  if (auto bad = find_invalid_utf8(text)) {
    return tl::unexpected(Violation{file, line_col(*bad), "json.utf8",
                                    "byte " + std::to_string(bad->offset) +
                                        " is not valid UTF-8; save the file as UTF-8"});
  }
  StrictBuilder builder(file, limits.max_depth);
  const bool ok = json::sax_parse(text, &builder, json::input_format_t::json, /*strict=*/true,
                                  /*ignore_comments=*/false);
  if (builder.error_) return tl::unexpected(*builder.error_);
  if (!ok) {
    const std::size_t pos = builder.syntax_position_.value_or(0);
    const TextPosition where = position_of(text, pos > 0 ? pos - 1 : 0);
    return tl::unexpected(Violation{file, line_col(where), "json.syntax",
                                    builder.syntax_message_.empty() ? "not valid JSON" : builder.syntax_message_});
  }
  return std::move(builder.root_);
}

}  // namespace kzoo::format

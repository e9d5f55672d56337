// The Python literal reader: a tokenizer that follows Python 3's lexical rules
// closely enough to find where every token ends (strings, numbers, brackets,
// comments, continuations), a recursive-descent parser for the literal subset,
// and a module scanner that checks the one assignment is the only definition.
// The tokenizer never recurses and keeps brackets on a heap stack, so hostile
// nesting cannot exhaust the C++ stack; the parser recurses only up to
// max_depth (clamped) and counts every value against max_items.
#include "kzoo/format/py_literal.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "kzoo/format/py_literal_lex.hpp"

namespace kzoo::format {
namespace {

using json = nlohmann::json;
using Out = tl::expected<json, Violation>;
using namespace py_lex;

const std::string kFix =
    "; the judge reads it without running Python, so write the value itself using only dicts, lists, tuples, "
    "strings, numbers, True, False and None";

bool is_one_of(std::string_view s, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

bool is_digit_of(char c, int base) {
  if (base == 16) return std::isxdigit(static_cast<unsigned char>(c)) != 0;
  return c >= '0' && c < static_cast<char>('0' + base);
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Parses the tokens [begin, end) as exactly one literal (a bare tuple `1, 2`
// included, as ast.literal_eval does); toks[end] is the statement's terminator.
class Parser {
 public:
  Parser(const Source& src, const std::vector<Token>& toks, std::size_t begin, std::size_t end,
         const LiteralLimits& limits)
      : src_(src), toks_(toks), i_(begin), end_(end), limits_(limits),
        // Each level costs a few hundred bytes of stack; past 256 levels the
        // caller's limit is not honoured, so no LiteralLimits can overflow it.
        max_depth_(std::min<std::size_t>(limits.max_depth, 256)) {}

  Out parse_all() {
    auto value = parse_value(0);
    if (!value) return value;
    if (is_op(peek(), ",")) {  // a bare tuple: `1, 2` or `1,`
      json arr = json::array({std::move(*value)});
      while (is_op(peek(), ",")) {
        ++i_;
        if (i_ >= end_) break;
        auto item = parse_value(0);
        if (!item) return item;
        arr.push_back(std::move(*item));
      }
      value = std::move(arr);
    }
    if (i_ < end_) return unexpected_after_value("the end of the literal");
    return value;
  }

 private:
  const Token& peek(std::size_t ahead = 0) const { return toks_[std::min(i_ + ahead, end_)]; }
  std::string_view text(const Token& t) const { return src_.text.substr(t.pos, t.len); }
  bool is_op(const Token& t, std::string_view op) const { return t.kind == Kind::Op && text(t) == op; }
  tl::unexpected<Violation> fail(std::size_t pos, const char* rule, const std::string& what) const {
    return src_.fail(pos, rule, what);
  }
  tl::unexpected<Violation> refuse(const Token& t, const std::string& what) const {
    return fail(t.pos, "literal.not-literal",
                "found " + what + " at " + src_.where(t.pos) + " in " + src_.subject + kFix);
  }
  std::string describe(const Token& t) const {
    if (t.kind == Kind::Newline) return "the end of the line";
    if (t.kind == Kind::End) return "the end of the input";
    if (t.kind == Kind::String) return "a string";
    return "'" + excerpt(text(t)) + "'";
  }

  Out parse_value(std::size_t depth) {
    const Token& t = peek();
    if (++items_ > limits_.max_items)
      return fail(t.pos, "literal.too-large",
                  src_.subject + " holds more than " + std::to_string(limits_.max_items) +
                      " values (the limit); split the test cases or shorten them");
    switch (t.kind) {
      case Kind::String: return parse_strings();
      case Kind::Number: ++i_; return parse_number(t, false);
      case Kind::Name: return parse_name(t);
      case Kind::Op: break;
      default: return fail(t.pos, "literal.syntax", "expected a value, found " + describe(t) + " at " + src_.where(t.pos));
    }
    std::string_view op = text(t);
    if (op == "-" || op == "+") return parse_signed(t);
    if (op == "[" || op == "(" || op == "{") {
      if (depth + 1 > max_depth_)
        return fail(t.pos, "literal.too-deep",
                    "'" + std::string(op) + "' at " + src_.where(t.pos) + " nests deeper than " +
                        std::to_string(max_depth_) + " levels (the limit); flatten " + src_.subject);
      ++i_;
      if (op == "[") return parse_sequence(depth + 1, "]");
      if (op == "(") return parse_parens(depth + 1);
      return parse_dict(depth + 1, t.pos);
    }
    if (op == "*") return refuse(t, "a starred item '*'");
    if (op == "**") return refuse(t, "dict unpacking '**'");
    if (op == "...") return refuse(t, "the Ellipsis '...'");
    if (op == "~") return refuse(t, "the operator '~'");
    return fail(t.pos, "literal.syntax", "expected a value, found " + describe(t) + " at " + src_.where(t.pos));
  }

  // Called where a ',' or a closing bracket was due: names the construct the
  // literal continues into, so the user sees "a call", not "syntax error".
  tl::unexpected<Violation> unexpected_after_value(const std::string& expected) const {
    const Token& t = peek();
    std::string_view x = text(t);
    if (t.kind == Kind::Op) {
      if (x == "(") return refuse(t, "a call '(...)'");
      if (x == ".") return refuse(t, "attribute access '.'");
      if (x == "[") return refuse(t, "a subscript '[...]'");
      if (is_one_of(x, {"+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<<", ">>"}))
        return refuse(t, "the binary operator '" + std::string(x) + "'");
      if (is_one_of(x, {"==", "!=", "<", ">", "<=", ">="})) return refuse(t, "the comparison '" + std::string(x) + "'");
      if (x == ":=") return refuse(t, "the walrus operator ':='");
      if (x == "=" || (x.size() >= 2 && x.back() == '=')) return refuse(t, "an assignment '" + std::string(x) + "'");
    } else if (t.kind == Kind::Name) {
      if (x == "if") return refuse(t, "a conditional expression 'if ... else'");
      if (x == "for" || x == "async") return refuse(t, "a comprehension 'for'");
      if (x == "and" || x == "or") return refuse(t, "the boolean operator '" + std::string(x) + "'");
      if (x == "in" || x == "not" || x == "is") return refuse(t, "the comparison '" + std::string(x) + "'");
    } else if (t.kind == Kind::Newline && i_ < end_) {
      const Token& more = peek(1);
      return fail(more.pos, "literal.syntax",
                  "more code follows the literal at " + src_.where(more.pos) + " (" + describe(more) +
                      "); the text must hold exactly one literal");
    }
    return fail(t.pos, "literal.syntax",
                "expected " + expected + ", found " + describe(t) + " at " + src_.where(t.pos));
  }

  Out parse_sequence(std::size_t depth, std::string_view close) {
    json arr = json::array();
    while (true) {
      if (is_op(peek(), close)) { ++i_; return arr; }
      auto item = parse_value(depth);
      if (!item) return item;
      arr.push_back(std::move(*item));
      if (is_op(peek(), ",")) { ++i_; continue; }
      if (is_op(peek(), close)) { ++i_; return arr; }
      return unexpected_after_value("',' or '" + std::string(close) + "'");
    }
  }

  // `()` and `(1,)` are tuples (JSON arrays); `(1)` is just 1.
  Out parse_parens(std::size_t depth) {
    if (is_op(peek(), ")")) { ++i_; return json::array(); }
    auto first = parse_value(depth);
    if (!first) return first;
    if (is_op(peek(), ")")) { ++i_; return first; }
    if (!is_op(peek(), ",")) return unexpected_after_value("',' or ')'");
    ++i_;
    auto rest = parse_sequence(depth, ")");
    if (!rest) return rest;
    rest->insert(rest->begin(), std::move(*first));
    return rest;
  }

  Out parse_dict(std::size_t depth, std::size_t brace) {
    json obj = json::object();
    for (bool first = true;; first = false) {
      if (is_op(peek(), "}")) { ++i_; return obj; }
      const Token& kt = peek();
      auto key = parse_value(depth);
      if (!key) return key;
      if (!is_op(peek(), ":")) {
        if (first && (is_op(peek(), ",") || is_op(peek(), "}")))
          return fail(brace, "literal.not-literal",
                      "found a set '{...}' at " + src_.where(brace) + " in " + src_.subject +
                          "; JSON has no sets: use a list [...]");
        return unexpected_after_value("':'");
      }
      if (!key->is_string())
        return fail(kt.pos, "literal.key-type",
                    "dict key " + excerpt(key->dump()) + " at " + src_.where(kt.pos) + " is not a string; JSON object " +
                        "keys must be strings: quote it (\"" + excerpt(key->dump()) + "\")");
      ++i_;
      auto value = parse_value(depth);
      if (!value) return value;
      std::string k = key->get<std::string>();
      if (obj.contains(k))
        return fail(kt.pos, "literal.duplicate-key",
                    "dict key \"" + excerpt(k) + "\" at " + src_.where(kt.pos) +
                        " appears twice in one dict (Python keeps the last silently); remove one of them");
      obj.emplace(std::move(k), std::move(*value));
      if (is_op(peek(), ",")) { ++i_; continue; }
      if (!is_op(peek(), "}")) return unexpected_after_value("',' or '}'");
    }
  }

  Out parse_name(const Token& t) {
    std::string_view name = text(t);
    if (name == "True" || name == "False" || name == "None") {
      ++i_;
      return name == "None" ? json(nullptr) : json(name == "True");
    }
    std::string n = "'" + excerpt(name) + "'";
    if (is_one_of(name, {"inf", "nan", "Infinity", "NaN"}))
      return refuse(t, "the name " + n + " (JSON has no infinity or NaN)");
    if (name == "lambda") return refuse(t, "a lambda");
    if (name == "not") return refuse(t, "the operator 'not'");
    if (name == "await" || name == "yield") return refuse(t, "the keyword " + n);
    const Token& next = peek(1);
    if (is_op(next, "(")) return refuse(t, "a call " + n + "(...)");
    if (is_op(next, ".")) return refuse(t, "attribute access " + n + ".");
    if (is_op(next, "[")) return refuse(t, "a subscript " + n + "[...]");
    return refuse(t, "the name " + n + " (a variable; only True, False and None are literal names)");
  }

  Out parse_signed(const Token& sign) {
    ++i_;
    const Token& t = peek();
    if (t.kind == Kind::Number) { ++i_; return parse_number(t, text(sign) == "-"); }
    std::string s = "'" + std::string(text(sign)) + "'";
    if (t.kind == Kind::String) return refuse(sign, "the sign " + s + " applied to a string");
    if (is_op(t, "-") || is_op(t, "+")) return refuse(sign, "repeated signs " + s + " (write one sign)");
    return refuse(sign, "the unary operator " + s + " applied to " + describe(t) + " (signs apply to numbers only)");
  }

  Out parse_number(const Token& t, bool negative) {
    std::string_view s = text(t);
    std::size_t k = 0, n = s.size();
    auto digits = [&](int base) {  // D(_?D)*, Python's underscore rule
      if (k >= n || !is_digit_of(s[k], base)) return false;
      for (++k; k < n;) {
        if (s[k] == '_' && k + 1 < n && is_digit_of(s[k + 1], base)) k += 2;
        else if (is_digit_of(s[k], base)) ++k;
        else break;
      }
      return true;
    };
    auto invalid = [&](const char* kind) {
      return fail(t.pos, "literal.syntax", "invalid " + std::string(kind) + " literal '" + excerpt(s) + "' at " +
                                               src_.where(t.pos) + " (Python would not accept it)");
    };
    int base = 10;
    if (n >= 2 && s[0] == '0' && std::string_view("xXoObB").find(s[1]) != std::string_view::npos) {
      base = (s[1] == 'x' || s[1] == 'X') ? 16 : (s[1] == 'o' || s[1] == 'O') ? 8 : 2;
      k = 2;
      if (k < n && s[k] == '_') ++k;
      const char* kind = base == 16 ? "hexadecimal" : base == 8 ? "octal" : "binary";
      if (!digits(base) || k != n) return invalid(kind);
      return make_int(t, s.substr(2), base, negative);
    }
    bool int_part = digits(10), is_float = false;
    if (k < n && s[k] == '.') {
      is_float = true;
      ++k;
      if (!digits(10) && !int_part) return invalid("decimal");
    }
    if (k < n && (s[k] == 'e' || s[k] == 'E')) {
      is_float = true;
      ++k;
      if (k < n && (s[k] == '+' || s[k] == '-')) ++k;
      if (!digits(10)) return invalid("decimal");
    }
    if (k + 1 == n && (s[k] == 'j' || s[k] == 'J'))
      return refuse(t, "the complex number '" + excerpt(s) + "' (JSON has no complex numbers)");
    if (k != n || (!int_part && !is_float)) return invalid("decimal");
    if (!is_float) {
      std::string_view d = s;
      if (d.size() > 1 && d[0] == '0' && d.find_first_not_of("0_") != std::string_view::npos)
        return fail(t.pos, "literal.syntax", "leading zeros in decimal integer literals are not permitted ('" +
                                                 excerpt(s) + "' at " + src_.where(t.pos) + "); use 0o for octal");
      return make_int(t, s, 10, negative);
    }
    std::string clean;
    for (char c : s)
      if (c != '_') clean += c;
    double v = 0;
    auto r = std::from_chars(clean.data(), clean.data() + clean.size(), v, std::chars_format::general);
    if (r.ec == std::errc::result_out_of_range) {
      if (overflows(clean))
        return fail(t.pos, "literal.float-range", "the float '" + excerpt(s) + "' at " + src_.where(t.pos) +
                                                      " is too large for a double (it would be inf, which JSON "
                                                      "cannot hold)");
      v = 0.0;  // underflow: Python also reads it as 0.0
    } else if (r.ec != std::errc() || r.ptr != clean.data() + clean.size() || !std::isfinite(v)) {
      return invalid("float");
    }
    return json(negative ? -v : v);
  }

  // Only asked after from_chars reported out-of-range: the decimal magnitude
  // tells overflow (refused) from underflow (0.0, as Python reads it).
  static bool overflows(const std::string& clean) {
    std::size_t e = clean.find_first_of("eE");
    std::string_view mant = std::string_view(clean).substr(0, e);
    long long exp10 = 0;
    if (e != std::string::npos) {
      std::string_view ex = std::string_view(clean).substr(e + 1);
      bool neg = !ex.empty() && ex[0] == '-';
      if (!ex.empty() && (ex[0] == '-' || ex[0] == '+')) ex.remove_prefix(1);
      ex = ex.substr(std::min(ex.find_first_not_of('0'), ex.size()));
      exp10 = ex.size() > 15 ? 1000000000000000LL : 0;
      if (ex.size() <= 15) std::from_chars(ex.data(), ex.data() + ex.size(), exp10);
      if (neg) exp10 = -exp10;
    }
    std::size_t dot = std::min(mant.find('.'), mant.size());
    std::size_t nz = mant.find_first_of("123456789");
    if (nz == std::string_view::npos) return false;
    long long lead = nz < dot ? static_cast<long long>(dot - nz) : -static_cast<long long>(nz - dot);
    return lead + exp10 > 0;
  }

  Out make_int(const Token& t, std::string_view digits, int base, bool negative) const {
    std::uint64_t mag = 0;
    const std::uint64_t limit = negative ? (std::uint64_t{1} << 63) : static_cast<std::uint64_t>(INT64_MAX);
    for (char c : digits) {
      if (c == '_') continue;
      int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
      if (mag > (limit - static_cast<std::uint64_t>(d)) / static_cast<std::uint64_t>(base))
        return fail(t.pos, "literal.int-range",
                    "the integer '" + std::string(negative ? "-" : "") + excerpt(text(t)) + "' at " + src_.where(t.pos) +
                        " does not fit a 64-bit signed integer; JSON consumers cannot hold it exactly");
      mag = mag * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
    }
    if (!negative) return json(static_cast<std::int64_t>(mag));
    if (mag == (std::uint64_t{1} << 63)) return json(INT64_MIN);
    return json(-static_cast<std::int64_t>(mag));
  }

  Out parse_strings() {  // adjacent strings concatenate, as in Python
    std::string out;
    while (peek().kind == Kind::String) {
      if (auto ok = decode(peek(), out); !ok) return tl::unexpected(ok.error());
      ++i_;
    }
    return json(std::move(out));
  }

  tl::expected<void, Violation> decode(const Token& t, std::string& out) const {
    std::string_view s = text(t);
    std::size_t p = 0;
    bool raw = false;
    for (; s[p] != '\'' && s[p] != '"'; ++p) {
      char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[p])));
      raw = raw || c == 'r';
      if (c == 'b' || c == 'f')
        return refuse(t, std::string(c == 'b' ? "a bytes literal" : "an f-string") + " '" + excerpt(s) +
                             "' (bytes/f-strings are not literals the judge can read)");
    }
    std::size_t q = (s.size() - p >= 6 && s[p + 1] == s[p] && s[p + 2] == s[p]) ? 3 : 1;
    std::string_view body = s.substr(p + q, s.size() - p - 2 * q);
    std::size_t base = t.pos + p + q;
    for (std::size_t k = 0; k < body.size();) {
      char c = body[k];
      if (c == '\r') {  // Python reads every newline in source as '\n'
        out += '\n';
        k += (k + 1 < body.size() && body[k + 1] == '\n') ? 2 : 1;
        continue;
      }
      if (c != '\\' || raw || k + 1 >= body.size()) { out += c; ++k; continue; }
      char e = body[k + 1];
      std::size_t at = base + k;
      k += 2;
      switch (e) {
        case '\n': break;  // line continuation inside the string
        case '\r': if (k < body.size() && body[k] == '\n') ++k; break;
        case '\\': case '\'': case '"': out += e; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'N':
          return fail(at, "literal.syntax", "the named escape \\N{...} at " + src_.where(at) +
                                                " is not supported by the judge's reader; write the character "
                                                "itself or use \\uXXXX");
        case 'x': case 'u': case 'U': {
          std::size_t want = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          std::uint32_t cp = 0;
          for (std::size_t j = 0; j < want; ++j, ++k) {
            if (k >= body.size() || !std::isxdigit(static_cast<unsigned char>(body[k])))
              return fail(at, "literal.syntax", "truncated \\" + std::string(1, e) + " escape at " + src_.where(at) +
                                                    ": it takes exactly " + std::to_string(want) + " hex digits");
            char h = body[k];
            cp = cp * 16 + static_cast<std::uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(static_cast<unsigned char>(h)) - 'a' + 10));
            if (cp > 0x10FFFF)
              return fail(at, "literal.syntax", "the escape at " + src_.where(at) + " is past U+10FFFF, the last "
                                                    "Unicode code point");
          }
          if (cp >= 0xD800 && cp <= 0xDFFF)
            return fail(at, "literal.utf8", "the escape at " + src_.where(at) + " is a lone surrogate; it has no "
                                                "UTF-8 form, so JSON cannot hold it: write the character itself");
          append_utf8(out, cp);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            std::uint32_t cp = static_cast<std::uint32_t>(e - '0');
            for (int j = 0; j < 2 && k < body.size() && body[k] >= '0' && body[k] <= '7'; ++j, ++k)
              cp = cp * 8 + static_cast<std::uint32_t>(body[k] - '0');
            append_utf8(out, cp);
          } else {
            out += '\\';  // unknown escapes keep their backslash, as Python does
            k -= 1;
          }
      }
    }
    return {};
  }

  const Source& src_;
  const std::vector<Token>& toks_;
  std::size_t i_, end_;
  const LiteralLimits& limits_;
  std::size_t max_depth_;
  std::size_t items_ = 0;
};

}  // namespace

tl::expected<nlohmann::json, Violation> parse_py_literal(std::string_view text, const std::string& file,
                                                          const LiteralLimits& limits) {
  Source src{text, file, "the literal"};
  if (text.size() > limits.max_bytes)
    return src.fail(0, "literal.too-large", "the literal is " + std::to_string(text.size()) + " bytes; the limit is " +
                                                std::to_string(limits.max_bytes));
  auto toks = tokenize(src);
  if (!toks) return tl::unexpected(toks.error());
  std::size_t end = toks->size() - 1;  // the End token
  if (end > 0 && (*toks)[end - 1].kind == Kind::Newline) --end;
  return Parser(src, *toks, 0, end, limits).parse_all();
}

tl::expected<nlohmann::json, Violation> extract_py_assignment(std::string_view source, std::string_view name,
                                                               const std::string& file, const LiteralLimits& limits) {
  Source src{source, file, std::string(name)};
  std::size_t module_cap = limits.max_bytes > SIZE_MAX / 2 ? SIZE_MAX : limits.max_bytes * 2;
  if (source.size() > module_cap)
    return src.fail(0, "literal.too-large", file + " is " + std::to_string(source.size()) +
                                                " bytes; the reader's limit for a module is " + std::to_string(module_cap));
  auto toks = tokenize(src);
  if (!toks) return tl::unexpected(toks.error());
  auto found = find_assignment(src, *toks);
  if (!found) return tl::unexpected(found.error());
  const Assignment& a = *found;
  if (a.rhs_begin == a.rhs_end) {
    const Token& t = (*toks)[a.rhs_end];
    return src.fail(t.pos, "literal.syntax", "expected a value after '" + std::string(name) + " =', found the end of "
                                             "the statement at " + src.where(t.pos));
  }
  const Token& first = (*toks)[a.rhs_begin];
  const Token& last = (*toks)[a.rhs_end - 1];
  std::size_t bytes = last.pos + last.len - first.pos;
  if (bytes > limits.max_bytes)
    return src.fail(first.pos, "literal.too-large", "the literal of " + std::string(name) + " is " +
                                                        std::to_string(bytes) + " bytes; the limit is " +
                                                        std::to_string(limits.max_bytes));
  return Parser(src, *toks, a.rhs_begin, a.rhs_end, limits).parse_all();
}

}  // namespace kzoo::format

#include "kzoo/format/py_literal_lex.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <optional>

namespace kzoo::format::py_lex {
namespace {

constexpr std::size_t npos = std::string_view::npos;

bool is_any(std::string_view s, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

// Non-ASCII bytes count as identifier characters: Python allows Unicode
// letters in names, and the parser refuses every name but True/False/None.
bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}
bool ident_char(char c) { return ident_start(c) || std::isdigit(static_cast<unsigned char>(c)); }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

std::size_t first_invalid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) { ++i; continue; }
    std::size_t n = c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : 0;
    if (n == 0 || i + n >= s.size()) return i;
    std::uint32_t cp = c & (0x3F >> n);
    for (std::size_t j = 1; j <= n; ++j) {
      auto d = static_cast<unsigned char>(s[i + j]);
      if ((d & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
      return i;  // overlong, surrogate or past U+10FFFF
    i += n + 1;
  }
  return npos;
}

std::size_t newline_at(std::string_view t, std::size_t k) {
  if (k >= t.size()) return 0;
  if (t[k] == '\n') return 1;
  if (t[k] == '\r') return k + 1 < t.size() && t[k + 1] == '\n' ? 2 : 1;
  return 0;
}

// Python's string prefixes (any case): r u b f br rb fr rf.
bool string_prefix(std::string_view p) {
  std::string l;
  for (char c : p) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return is_any(l, {"r", "u", "b", "f", "br", "rb", "fr", "rf"});
}

// Extent of a number: Python's shape, plus any identifier characters glued
// to it (`1j`, `1abc`), which the parser then names precisely.
std::size_t number_end(std::string_view t, std::size_t i) {
  std::size_t k = i;
  if (t[k] == '0' && k + 1 < t.size() && std::string_view("xXoObB").find(t[k + 1]) != npos) {
    k += 2;
  } else {
    while (k < t.size() && (digit(t[k]) || t[k] == '_')) ++k;
    if (k < t.size() && t[k] == '.') {
      ++k;
      while (k < t.size() && (digit(t[k]) || t[k] == '_')) ++k;
    }
    if (k < t.size() && (t[k] == 'e' || t[k] == 'E')) {
      std::size_t m = k + 1;
      if (m < t.size() && (t[m] == '+' || t[m] == '-')) ++m;
      if (m < t.size() && digit(t[m])) k = m;
    }
  }
  while (k < t.size() && ident_char(t[k])) ++k;
  return k;
}

std::size_t op_len(std::string_view t, std::size_t i) {
  std::string_view rest = t.substr(i);
  for (std::string_view op : {"**=", "//=", ">>=", "<<=", "..."})
    if (rest.starts_with(op)) return 3;
  for (std::string_view op : {"**", "//", ">>", "<<", "<=", ">=", "==", "!=", "->", ":=", "+=", "-=", "*=", "/=",
                              "%=", "&=", "|=", "^=", "@="})
    if (rest.starts_with(op)) return 2;
  return 1;
}

// Index just past the closing quote of the string whose quote is at q.
tl::expected<std::size_t, Violation> string_end(const Source& src, std::size_t start, std::size_t q) {
  std::string_view t = src.text;
  char quote = t[q];
  bool triple = t.substr(q, 3) == std::string(3, quote);
  for (std::size_t k = q + (triple ? 3 : 1); k < t.size();) {
    char c = t[k];
    if (c == '\\') {  // escapes the next character, a newline included
      k += 1 + std::max<std::size_t>(1, newline_at(t, k + 1));
      continue;
    }
    if (!triple && newline_at(t, k)) break;
    if (c == quote && (!triple || t.substr(k, 3) == std::string(3, quote))) return k + (triple ? 3 : 1);
    ++k;
  }
  return src.fail(start, "literal.syntax", "the string starting at " + src.where(start) + " is never closed (" +
                                               (triple ? "no closing triple quote" : "no closing quote on its line") +
                                               ")");
}

bool is_op(std::string_view text, const Token& t, std::string_view op) {
  return t.kind == Kind::Op && text.substr(t.pos, t.len) == op;
}

bool is_assign_op(std::string_view x) {
  return is_any(x, {"=", "+=", "-=", "*=", "/=", "//=", "%=", "**=", ">>=", "<<=", "&=", "|=", "^=", "@="});
}

}  // namespace

std::string Source::where(std::size_t pos) const {
  pos = std::min(pos, text.size());
  std::size_t line = 1, begin = 0;
  for (std::size_t k = 0; k < pos; ++k) {
    if (text[k] == '\n' || (text[k] == '\r' && (k + 1 >= text.size() || text[k + 1] != '\n'))) {
      ++line;
      begin = k + 1;
    }
  }
  std::size_t col = 1;
  for (std::size_t k = begin; k < pos; ++k)
    if ((static_cast<unsigned char>(text[k]) & 0xC0) != 0x80) ++col;
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

tl::unexpected<Violation> Source::fail(std::size_t pos, const std::string& rule, const std::string& detail) const {
  return tl::unexpected<Violation>(Violation{file, where(pos), rule, detail});
}

std::string excerpt(std::string_view s) {
  std::size_t cut = std::min<std::size_t>(s.size(), 40);
  while (cut < s.size() && cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  std::string out;
  for (char c : s.substr(0, cut)) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[(c >> 4) & 0xF];
      out += hex[c & 0xF];
    } else {
      out += c;
    }
  }
  return cut < s.size() ? out + "..." : out;
}

tl::expected<std::vector<Token>, Violation> tokenize(const Source& src) {
  std::string_view t = src.text;
  if (t.size() >= (std::size_t{1} << 30))
    return src.fail(0, "literal.too-large", src.file + " is over 1 GiB; the reader refuses it");
  if (std::size_t bad = first_invalid_utf8(t); bad != npos) {
    static const char* hex = "0123456789ABCDEF";
    auto b = static_cast<unsigned char>(t[bad]);
    return src.fail(bad, "literal.utf8", std::string("the byte 0x") + hex[b >> 4] + hex[b & 0xF] + " at " +
                                             src.where(bad) + " is not valid UTF-8; save " + src.file + " as UTF-8");
  }
  if (std::size_t nul = t.find('\0'); nul != npos)
    return src.fail(nul, "literal.syntax", "a NUL byte at " + src.where(nul) + "; Python source cannot contain one");
  std::vector<Token> out;
  std::vector<std::size_t> open;  // indices in `out` of unclosed brackets
  std::size_t i = 0, line_begin = 0;
  bool at_start = true;
  if (t.starts_with("\xEF\xBB\xBF")) i = line_begin = 3;  // a UTF-8 BOM, as Python allows
  while (i < t.size()) {
    char c = t[i];
    if (c == ' ' || c == '\t' || c == '\f') { ++i; continue; }
    if (c == '#') {
      while (i < t.size() && !newline_at(t, i)) ++i;
      continue;
    }
    if (std::size_t n = newline_at(t, i)) {
      if (open.empty() && !out.empty() && out.back().kind != Kind::Newline)
        out.push_back(Token{Kind::Newline, false, false, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(n)});
      i += n;
      line_begin = i;
      at_start = at_start || open.empty();
      continue;
    }
    if (c == '\\') {
      std::size_t n = newline_at(t, i + 1);
      if (n == 0)
        return src.fail(i, "literal.syntax", "a backslash at " + src.where(i) +
                                                 " outside a string must end its line (a line continuation)");
      i += 1 + n;
      line_begin = i;
      continue;
    }
    Token tok;
    tok.pos = static_cast<std::uint32_t>(i);
    tok.depth = static_cast<std::uint32_t>(open.size());
    tok.line_start = at_start;
    tok.indented = i > line_begin;
    at_start = false;
    if (ident_start(c)) {
      std::size_t k = i;
      while (k < t.size() && ident_char(t[k])) ++k;
      tok.kind = Kind::Name;
      if (k < t.size() && (t[k] == '"' || t[k] == '\'') && string_prefix(t.substr(i, k - i))) {
        auto end = string_end(src, i, k);
        if (!end) return tl::unexpected(end.error());
        tok.kind = Kind::String;
        k = *end;
      }
      i = k;
    } else if (digit(c) || (c == '.' && i + 1 < t.size() && digit(t[i + 1]))) {
      tok.kind = Kind::Number;
      i = number_end(t, i);
    } else if (c == '"' || c == '\'') {
      auto end = string_end(src, i, i);
      if (!end) return tl::unexpected(end.error());
      tok.kind = Kind::String;
      i = *end;
    } else {
      tok.kind = Kind::Op;
      if (c == '(' || c == '[' || c == '{') open.push_back(out.size());
      if (c == ')' || c == ']' || c == '}') {
        if (open.empty())
          return src.fail(i, "literal.syntax", "'" + std::string(1, c) + "' at " + src.where(i) + " closes nothing");
        Token& opener = out[open.back()];
        char o = t[opener.pos];
        if ((o == '(' && c != ')') || (o == '[' && c != ']') || (o == '{' && c != '}'))
          return src.fail(i, "literal.syntax", "'" + std::string(1, c) + "' at " + src.where(i) +
                                                   " does not match '" + std::string(1, o) + "' at " +
                                                   src.where(opener.pos));
        opener.match = static_cast<std::uint32_t>(out.size());
        open.pop_back();
        tok.depth = static_cast<std::uint32_t>(open.size());
      }
      i += op_len(t, i);
    }
    tok.len = static_cast<std::uint32_t>(i - tok.pos);
    out.push_back(tok);
  }
  if (!open.empty()) {
    std::size_t p = out[open.back()].pos;
    return src.fail(p, "literal.syntax", "'" + std::string(1, t[p]) + "' at " + src.where(p) + " is never closed");
  }
  if (!out.empty() && out.back().kind != Kind::Newline)
    out.push_back(Token{Kind::Newline, false, false, static_cast<std::uint32_t>(t.size()), 0});
  out.push_back(Token{Kind::End, false, false, static_cast<std::uint32_t>(t.size()), 0});
  return out;
}

tl::expected<Assignment, Violation> find_assignment(const Source& src, const std::vector<Token>& toks) {
  std::string_view t = src.text;
  auto text = [&](std::size_t k) { return t.substr(toks[k].pos, toks[k].len); };
  auto is_name = [&](std::size_t k, std::string_view n) { return toks[k].kind == Kind::Name && text(k) == n; };
  const std::string& name = src.subject;
  // Statements: logical lines, split at top-level ';' and after the ':' of a
  // compound statement's header, so `if x: del NAME` is seen as a `del`.
  auto statement_end = [&](std::size_t s) {
    bool compound = toks[s].kind == Kind::Name &&
                    is_any(text(s), {"if", "elif", "else", "while", "for", "with", "try", "except", "finally", "def",
                                     "class", "async", "match", "case"});
    for (std::size_t k = s;; ++k) {
      if (toks[k].kind == Kind::Newline || toks[k].kind == Kind::End) return k;
      if (toks[k].depth == 0 && (is_op(t, toks[k], ";") || (compound && is_op(t, toks[k], ":")))) return k;
    }
  };
  std::optional<Assignment> found;
  bool top = true;
  for (std::size_t s = 0; toks[s].kind != Kind::End;) {
    if (toks[s].kind == Kind::Newline) { ++s; continue; }
    if (toks[s].line_start) top = !toks[s].indented;
    std::size_t e = statement_end(s);
    if (!found && top && is_name(s, name) && e > s + 1) {
      std::size_t eq = s + 1;
      if (is_op(t, toks[eq], ":"))  // NAME: T = value
        while (eq < e && !(toks[eq].depth == 0 && is_op(t, toks[eq], "="))) ++eq;
      if (eq < e && is_op(t, toks[eq], "=")) found = Assignment{s, eq + 1, e};
    }
    if (is_op(t, toks[e], ":")) top = false;  // the rest of this line is a block's body
    s = toks[e].kind == Kind::End ? e : e + 1;
  }
  if (!found)
    return src.fail(0, "literal.missing", src.file + " has no top-level assignment `" + name +
                                              " = [...]` (unindented, outside any block); the judge reads the test "
                                              "cases from that literal, so add it");
  for (std::size_t s = 0; toks[s].kind != Kind::End;) {
    if (toks[s].kind == Kind::Newline) { ++s; continue; }
    std::size_t e = statement_end(s);
    std::string_view first = toks[s].kind == Kind::Name ? text(s) : "";
    std::size_t last_assign = npos;
    for (std::size_t k = s; k < e; ++k)
      if (toks[k].depth == 0 && toks[k].kind == Kind::Op && is_assign_op(text(k))) last_assign = k;
    std::size_t for_depth = npos;  // depth of an open `for` target list
    for (std::size_t k = s; k < e; ++k) {
      if (for_depth != npos && toks[k].depth < for_depth) for_depth = npos;
      if (is_name(k, "for")) for_depth = toks[k].depth;
      if (is_name(k, "in") && toks[k].depth == for_depth) for_depth = npos;
      if (k == found->target || !is_name(k, name)) continue;
      std::string why;
      std::string_view next = toks[k + 1].kind == Kind::Op ? text(k + 1) : "";
      std::string_view prev = k > s && toks[k - 1].kind == Kind::Name ? text(k - 1) : "";
      std::size_t m = k + 1;  // past any subscripts: NAME[0]["k"]
      while (is_op(t, toks[m], "[")) m = toks[m].match + 1;
      if (is_assign_op(next) || next == ":=") why = "assigns to " + name + " ('" + std::string(next) + "')";
      else if (prev == "def" || prev == "class") why = "defines " + std::string(prev) + " " + name;
      else if (prev == "as") why = "binds " + name + " with 'as'";
      else if (is_any(first, {"del", "global", "nonlocal", "import", "from", "case"}))
        why = "names " + name + " in a '" + std::string(first) + "' statement";
      else if (for_depth != npos && toks[k].depth >= for_depth) why = "uses " + name + " as a for-loop target";
      else if (last_assign != npos && k < last_assign) why = "assigns to " + name + " or a part of it";
      else if (k == s && next == ":") why = "re-declares " + name + " with an annotation";
      else if (is_op(t, toks[m], "."))
        why = "mutates " + name + " (through '." + (toks[m + 1].kind == Kind::Name ? excerpt(text(m + 1)) : "") + "')";
      if (!why.empty())
        return src.fail(toks[k].pos, "literal.reassigned",
                        src.file + " " + why + " at " + src.where(toks[k].pos) + "; the judge reads the literal at " +
                            src.where(toks[found->target].pos) + " only, so it must be the only definition of " +
                            name + " and nothing may change it");
    }
    s = toks[e].kind == Kind::End ? e : e + 1;
  }
  return *found;
}

}  // namespace kzoo::format::py_lex

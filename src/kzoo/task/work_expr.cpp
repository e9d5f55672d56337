#include "kzoo/task/work_expr.hpp"

#include "kzoo/task/work_expr_ast.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <utility>

namespace kzoo::task {

using detail::error_at;
using detail::Node;
using detail::Op;
using detail::Unexpected;

// ---------------------------------------------------------------- errors ---

std::string_view to_string(ExprErrorKind kind) {
  switch (kind) {
    case ExprErrorKind::kSyntax: return "syntax";
    case ExprErrorKind::kName: return "name";
    case ExprErrorKind::kType: return "type";
    case ExprErrorKind::kDivisionByZero: return "division-by-zero";
    case ExprErrorKind::kNonFinite: return "non-finite";
    case ExprErrorKind::kEmpty: return "empty";
    case ExprErrorKind::kLimit: return "limit";
  }
  return "unknown";
}

bool parse_error_kind(std::string_view word, ExprErrorKind* out) {
  for (auto k : {ExprErrorKind::kSyntax, ExprErrorKind::kName, ExprErrorKind::kType,
                 ExprErrorKind::kDivisionByZero, ExprErrorKind::kNonFinite, ExprErrorKind::kEmpty,
                 ExprErrorKind::kLimit}) {
    if (to_string(k) == word) {
      *out = k;
      return true;
    }
  }
  return false;
}

std::string ExprError::message() const {
  std::string out = "\"" + expr + "\"";
  if (column > 0) out += ", column " + std::to_string(column);
  return out + ": " + problem;
}

nlohmann::json ExprValue::to_json() const {
  switch (kind) {
    case Kind::kNumber: return number;
    case Kind::kBool: return boolean;
    case Kind::kList: return list ? *list : nlohmann::json::array();
  }
  return nullptr;
}

namespace {

// ----------------------------------------------------------------- lexer ---

enum class Tok { kNumber, kName, kOp, kEnd };

struct Token {
  Tok kind;
  std::string text;
  std::size_t column;
  double value = 0;
};

std::string describe(const Token& t) {
  if (t.kind == Tok::kEnd) return "end of expression";
  return "'" + t.text + "'";
}

tl::expected<std::vector<Token>, ExprError> lex(std::string_view s, const ExprLimits& limits) {
  std::vector<Token> out;
  std::size_t i = 0;
  // Two-character operators first, so "**" is not read as two "*".
  static const char* const kTwo[] = {"**", "//", "==", "!=", "<=", ">=", "&&", "||"};
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++i;
      continue;
    }
    if (out.size() >= limits.max_tokens) {
      return error_at(ExprErrorKind::kLimit, s, i + 1,
                      "more than " + std::to_string(limits.max_tokens) +
                          " tokens; split the work into fewer terms");
    }
    const std::size_t col = i + 1;
    // NUMBER := digits ('.' digits)? ([eE] [+-]? digits)?  -- "1." and ".5"
    // are refused so that both implementations read exactly the same set.
    if (std::isdigit(c)) {
      std::size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      if (j < s.size() && s[j] == '.') {
        ++j;
        if (j >= s.size() || !std::isdigit(static_cast<unsigned char>(s[j]))) {
          return error_at(ExprErrorKind::kSyntax, s, j + 1, "a '.' in a number must be followed by digits");
        }
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        std::size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
          while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) ++k;
          j = k;
        } else {
          return error_at(ExprErrorKind::kSyntax, s, j + 1, "exponent without digits in number");
        }
      }
      if (j < s.size() && (std::isalpha(static_cast<unsigned char>(s[j])) || s[j] == '_' || s[j] == '.')) {
        return error_at(ExprErrorKind::kSyntax, s, j + 1,
                        "unexpected '" + std::string(1, s[j]) + "' after number");
      }
      std::string text(s.substr(i, j - i));
      double v = std::strtod(text.c_str(), nullptr);
      if (!std::isfinite(v)) {
        return error_at(ExprErrorKind::kNonFinite, s, col, "number " + text + " is too large");
      }
      out.push_back({Tok::kNumber, std::move(text), col, v});
      i = j;
      continue;
    }
    if (std::isalpha(c) || c == '_') {
      std::size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Tok::kName, std::string(s.substr(i, j - i)), col});
      i = j;
      continue;
    }
    bool matched = false;
    for (const char* two : kTwo) {
      if (s.substr(i, 2) == two) {
        out.push_back({Tok::kOp, two, col});
        i += 2;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    if (std::string_view("+-*/%<>!?:(),").find(static_cast<char>(c)) != std::string_view::npos) {
      out.push_back({Tok::kOp, std::string(1, static_cast<char>(c)), col});
      ++i;
      continue;
    }
    std::string shown = (c >= 0x20 && c < 0x7f) ? "'" + std::string(1, static_cast<char>(c)) + "'"
                                                  : "byte 0x" + [&] {
                                                      static const char* hex = "0123456789abcdef";
                                                      return std::string{hex[c >> 4], hex[c & 15]};
                                                    }();
    std::string hint = (c == '=' || c == '&' || c == '|')
                           ? " (did you mean '" + std::string(2, static_cast<char>(c)) + "'?)"
                           : (c == '^' ? " (powers are written '**')" : "");
    return error_at(ExprErrorKind::kSyntax, s, col, "unexpected character " + shown + hint);
  }
  out.push_back({Tok::kEnd, "", s.size() + 1});
  return out;
}

// ---------------------------------------------------------------- parser ---

class Parser {
 public:
  Parser(std::string_view text, std::vector<Token> toks, const ExprLimits& limits, WorkExpr::Ast* ast)
      : text_(text), toks_(std::move(toks)), limits_(limits), ast_(ast) {}

  tl::expected<int, ExprError> parse_all() {
    if (peek().kind == Tok::kEnd) {
      return error_at(ExprErrorKind::kSyntax, text_, 1, "empty expression");
    }
    auto e = expr();
    if (!e) return e;
    if (peek().kind != Tok::kEnd) {
      return error_at(ExprErrorKind::kSyntax, text_, peek().column,
                      "unexpected " + describe(peek()) + " after a complete expression");
    }
    return e;
  }

 private:
  using R = tl::expected<int, ExprError>;

  const Token& peek() const { return toks_[pos_]; }
  bool is_op(const char* op) const { return peek().kind == Tok::kOp && peek().text == op; }

  int add(Op op, std::size_t column, std::vector<int> kids = {}) {
    ast_->nodes.push_back(Node{op, column, 0, {}, std::move(kids)});
    return static_cast<int>(ast_->nodes.size() - 1);
  }

  Unexpected unexpected(const std::string& wanted) {
    return error_at(ExprErrorKind::kSyntax, text_, peek().column,
                    "expected " + wanted + ", found " + describe(peek()));
  }

  // One more level of brackets; the cap keeps hostile input from exhausting
  // the stack (with the token cap, recursion is bounded either way).
  tl::expected<void, ExprError> enter(std::size_t column) {
    if (++depth_ > limits_.max_depth) {
      return error_at(ExprErrorKind::kLimit, text_, column,
                      "brackets nested deeper than " + std::to_string(limits_.max_depth));
    }
    return {};
  }

  R expr() {
    auto c = or_();
    if (!c) return c;
    if (!is_op("?")) return c;
    std::size_t col = peek().column;
    ++pos_;
    auto a = expr();
    if (!a) return a;
    if (!is_op(":")) return unexpected("':' of the conditional started at column " + std::to_string(col));
    ++pos_;
    auto b = expr();
    if (!b) return b;
    return add(Op::kCond, col, {*c, *a, *b});
  }

  R or_() {
    auto l = and_();
    if (!l) return l;
    while (is_op("||")) {
      std::size_t col = peek().column;
      ++pos_;
      auto r = and_();
      if (!r) return r;
      l = add(Op::kOr, col, {*l, *r});
    }
    return l;
  }

  R and_() {
    auto l = cmp();
    if (!l) return l;
    while (is_op("&&")) {
      std::size_t col = peek().column;
      ++pos_;
      auto r = cmp();
      if (!r) return r;
      l = add(Op::kAnd, col, {*l, *r});
    }
    return l;
  }

  R cmp() {
    auto l = sum();
    if (!l) return l;
    static const std::pair<const char*, Op> kCmp[] = {{"==", Op::kEq}, {"!=", Op::kNe}, {"<", Op::kLt},
                                                      {"<=", Op::kLe}, {">", Op::kGt},  {">=", Op::kGe}};
    for (auto [text, op] : kCmp) {
      if (is_op(text)) {
        std::size_t col = peek().column;
        ++pos_;
        auto r = sum();
        if (!r) return r;
        for (auto [t2, op2] : kCmp) {
          if (is_op(t2)) {
            return error_at(ExprErrorKind::kSyntax, text_, peek().column,
                            "comparisons do not chain; write 'a < b && b < c'");
          }
        }
        return add(op, col, {*l, *r});
      }
    }
    return l;
  }

  R sum() {
    auto l = prod();
    if (!l) return l;
    while (is_op("+") || is_op("-")) {
      Op op = is_op("+") ? Op::kAdd : Op::kSub;
      std::size_t col = peek().column;
      ++pos_;
      auto r = prod();
      if (!r) return r;
      l = add(op, col, {*l, *r});
    }
    return l;
  }

  R prod() {
    auto l = unary();
    if (!l) return l;
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      Op op = is_op("*") ? Op::kMul : is_op("/") ? Op::kDiv : is_op("//") ? Op::kFloorDiv : Op::kMod;
      std::size_t col = peek().column;
      ++pos_;
      auto r = unary();
      if (!r) return r;
      l = add(op, col, {*l, *r});
    }
    return l;
  }

  R unary() {
    if (is_op("-") || is_op("!")) {
      Op op = is_op("-") ? Op::kNeg : Op::kNot;
      std::size_t col = peek().column;
      ++pos_;
      auto e = unary();
      if (!e) return e;
      return add(op, col, {*e});
    }
    return power();
  }

  R power() {
    auto base = atom();
    if (!base) return base;
    if (!is_op("**")) return base;
    std::size_t col = peek().column;
    ++pos_;
    auto exp = unary();  // right-associative: 2**3**2 == 2**(3**2)
    if (!exp) return exp;
    return add(Op::kPow, col, {*base, *exp});
  }

  R atom() {
    const Token& t = peek();
    if (t.kind == Tok::kNumber) {
      ++pos_;
      int n = add(Op::kNum, t.column);
      ast_->nodes[n].num = t.value;
      return n;
    }
    if (t.kind == Tok::kName) {
      ++pos_;
      if (t.text == "true" || t.text == "false") {
        int n = add(Op::kBool, t.column);
        ast_->nodes[n].num = t.text == "true" ? 1 : 0;
        return n;
      }
      if (is_op("(")) return call(t);
      int n = add(Op::kName, t.column);
      ast_->nodes[n].name = t.text;
      return n;
    }
    if (is_op("(")) {
      std::size_t col = t.column;
      if (auto d = enter(col); !d) return Unexpected(d.error());
      ++pos_;
      auto e = expr();
      if (!e) return e;
      if (!is_op(")")) return unexpected("')' closing the '(' at column " + std::to_string(col));
      ++pos_;
      --depth_;
      return e;
    }
    return unexpected("a number, a name or '('");
  }

  R call(const Token& fn) {
    if (auto d = enter(peek().column); !d) return Unexpected(d.error());
    std::size_t open = peek().column;
    ++pos_;  // '('
    std::vector<int> args;
    if (is_op(")")) {
      return error_at(ExprErrorKind::kSyntax, text_, peek().column, fn.text + "() needs an argument");
    }
    while (true) {
      auto a = expr();
      if (!a) return a;
      args.push_back(*a);
      if (is_op(",")) {
        ++pos_;
        continue;
      }
      if (is_op(")")) break;
      return unexpected("',' or ')' closing the '(' at column " + std::to_string(open));
    }
    ++pos_;
    --depth_;
    int n = add(Op::kCall, fn.column, std::move(args));
    ast_->nodes[n].name = fn.text;
    return n;
  }

  std::string_view text_;
  std::vector<Token> toks_;
  const ExprLimits& limits_;
  WorkExpr::Ast* ast_;
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;
};

}  // namespace

// -------------------------------------------------------------- WorkExpr ---

WorkExpr::WorkExpr(std::shared_ptr<const Ast> ast) : ast_(std::move(ast)) {}
WorkExpr::WorkExpr(const WorkExpr&) = default;
WorkExpr& WorkExpr::operator=(const WorkExpr&) = default;
WorkExpr::WorkExpr(WorkExpr&&) noexcept = default;
WorkExpr& WorkExpr::operator=(WorkExpr&&) noexcept = default;
WorkExpr::~WorkExpr() = default;

tl::expected<WorkExpr, ExprError> WorkExpr::parse(std::string_view text, const ExprLimits& limits) {
  auto toks = lex(text, limits);
  if (!toks) return Unexpected(toks.error());
  auto ast = std::make_shared<Ast>();
  ast->text = std::string(text);
  Parser p(text, std::move(*toks), limits, ast.get());
  auto root = p.parse_all();
  if (!root) return Unexpected(root.error());
  ast->root = *root;
  std::set<std::string> names;
  for (const auto& n : ast->nodes) {
    if (n.op == Op::kName) names.insert(n.name);
  }
  ast->names.assign(names.begin(), names.end());
  return WorkExpr(std::move(ast));
}

tl::expected<ExprValue, ExprError> WorkExpr::evaluate(const nlohmann::json& dims) const {
  return detail::evaluate_ast(*ast_, dims);
}

tl::expected<double, ExprError> WorkExpr::evaluate_work(const nlohmann::json& dims) const {
  auto v = evaluate(dims);
  if (!v) return Unexpected(v.error());
  if (v->kind != ExprValue::Kind::kNumber) {
    return error_at(ExprErrorKind::kType, ast_->text, 0,
                    std::string("work must be a number, the expression gives ") + detail::kind_name(*v));
  }
  if (!(v->number > 0)) {
    return error_at(ExprErrorKind::kType, ast_->text, 0,
                    "work must be > 0, the expression gives " + detail::fmt_number(v->number));
  }
  return v->number;
}

tl::expected<long long, ExprError> WorkExpr::evaluate_extent(const nlohmann::json& dims) const {
  auto v = evaluate(dims);
  if (!v) return Unexpected(v.error());
  if (v->kind != ExprValue::Kind::kNumber) {
    return error_at(ExprErrorKind::kType, ast_->text, 0,
                    std::string("a tensor extent must be a number, the expression gives ") + detail::kind_name(*v));
  }
  const double d = v->number;
  if (d < 0 || std::floor(d) != d || d > 9007199254740992.0) {
    return error_at(ExprErrorKind::kType, ast_->text, 0,
                    "a tensor extent must be an integer >= 0, the expression gives " + detail::fmt_number(d) +
                        (std::floor(d) != d ? " (use cdiv() or // to round)" : ""));
  }
  return static_cast<long long>(d);
}

const std::vector<std::string>& WorkExpr::names() const { return ast_->names; }
const std::string& WorkExpr::text() const { return ast_->text; }

}  // namespace kzoo::task

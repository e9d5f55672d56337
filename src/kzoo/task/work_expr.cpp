#include "kzoo/task/work_expr.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <utility>

namespace kzoo::task {

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

// ------------------------------------------------------------------- AST ---

namespace {

enum class Op {
  kNum, kBool, kName, kNeg, kNot, kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow,
  kEq, kNe, kLt, kLe, kGt, kGe, kAnd, kOr, kCond, kCall,
};

struct Node {
  Op op;
  std::size_t column;    // 1-based; of the operator, name or literal
  double num = 0;        // kNum, and kBool (0/1)
  std::string name;      // kName, kCall
  std::vector<int> kids;
};

}  // namespace

struct WorkExpr::Ast {
  std::string text;
  std::vector<Node> nodes;  // nodes[root] is the whole expression
  int root = -1;
  std::vector<std::string> names;
};

namespace {

// ----------------------------------------------------------------- lexer ---

enum class Tok { kNumber, kName, kOp, kEnd };

struct Token {
  Tok kind;
  std::string text;
  std::size_t column;
  double value = 0;
};

using Unexpected = tl::unexpected<ExprError>;

Unexpected error_at(ExprErrorKind kind, std::string_view expr, std::size_t column, std::string problem) {
  return Unexpected(ExprError{kind, std::string(expr), column, std::move(problem)});
}

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

// ------------------------------------------------------------- evaluator ---

using V = ExprValue;
using EV = tl::expected<V, ExprError>;

V number(double d) { return V{V::Kind::kNumber, d, false, nullptr}; }
V boolean(bool b) { return V{V::Kind::kBool, 0, b, nullptr}; }

const char* kind_name(const V& v) {
  switch (v.kind) {
    case V::Kind::kNumber: return "a number";
    case V::Kind::kBool: return "a boolean";
    case V::Kind::kList: return "a list";
  }
  return "?";
}

std::string fmt_number(double d) {
  if (std::floor(d) == d && std::fabs(d) < 1e15) return std::to_string(static_cast<long long>(d));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

class Evaluator {
 public:
  Evaluator(const WorkExpr::Ast& ast, const nlohmann::json& dims) : ast_(ast), dims_(dims) {}

  EV eval(int index) {
    const Node& n = ast_.nodes[index];
    switch (n.op) {
      case Op::kNum: return number(n.num);
      case Op::kBool: return boolean(n.num != 0);
      case Op::kName: return lookup(n);
      case Op::kNeg: {
        auto v = want_number(n.kids[0], "'-'");
        if (!v) return Unexpected(v.error());
        return number(-*v);
      }
      case Op::kNot: {
        auto v = want_bool(n.kids[0], "'!'");
        if (!v) return Unexpected(v.error());
        return boolean(!*v);
      }
      case Op::kAnd:
      case Op::kOr: {
        const char* what = n.op == Op::kAnd ? "'&&'" : "'||'";
        auto l = want_bool(n.kids[0], what);
        if (!l) return Unexpected(l.error());
        if (n.op == Op::kAnd && !*l) return boolean(false);
        if (n.op == Op::kOr && *l) return boolean(true);
        auto r = want_bool(n.kids[1], what);
        if (!r) return Unexpected(r.error());
        return boolean(*r);
      }
      case Op::kCond: {
        auto c = want_bool(n.kids[0], "the condition of '?:'");
        if (!c) return Unexpected(c.error());
        return eval(n.kids[*c ? 1 : 2]);
      }
      case Op::kEq:
      case Op::kNe: return equality(n);
      case Op::kCall: return call(n);
      default: return arithmetic(n);
    }
  }

 private:
  Unexpected err(ExprErrorKind kind, std::size_t column, std::string problem) const {
    return error_at(kind, ast_.text, column, std::move(problem));
  }

  std::string dim_list() const {
    std::string out;
    if (dims_.is_object()) {
      for (auto it = dims_.begin(); it != dims_.end(); ++it) out += (out.empty() ? "" : ", ") + it.key();
    }
    return out.empty() ? "none" : out;
  }

  EV lookup(const Node& n) const {
    if (!dims_.is_object() || !dims_.contains(n.name)) {
      return err(ExprErrorKind::kName, n.column, "unknown dim '" + n.name + "' (dims are " + dim_list() + ")");
    }
    const auto& v = dims_.at(n.name);
    if (v.is_boolean()) return boolean(v.get<bool>());
    if (v.is_number()) return number(v.get<double>());
    if (v.is_array()) return V{V::Kind::kList, 0, false, &v};
    return err(ExprErrorKind::kType, n.column,
               "dim '" + n.name + "' is " + std::string(v.type_name()) +
                   " " + v.dump() + "; dims must be numbers, booleans or lists");
  }

  tl::expected<double, ExprError> want_number(int index, const std::string& what) {
    auto v = eval(index);
    if (!v) return Unexpected(v.error());
    if (v->kind != V::Kind::kNumber) {
      return err(ExprErrorKind::kType, ast_.nodes[index].column,
                 what + " needs a number, got " + kind_name(*v) +
                     (v->kind == V::Kind::kList ? " (use sum() or len() on a list)" : ""));
    }
    return v->number;
  }

  tl::expected<bool, ExprError> want_bool(int index, const std::string& what) {
    auto v = eval(index);
    if (!v) return Unexpected(v.error());
    if (v->kind != V::Kind::kBool) {
      return err(ExprErrorKind::kType, ast_.nodes[index].column,
                 what + " needs a boolean, got " + kind_name(*v) +
                     (v->kind == V::Kind::kNumber ? " (compare it, e.g. 'x != 0')" : ""));
    }
    return v->boolean;
  }

  EV finite(const Node& n, double d, const char* what) const {
    if (!std::isfinite(d)) return err(ExprErrorKind::kNonFinite, n.column, std::string(what) + " is not finite");
    return number(d);
  }

  EV equality(const Node& n) {
    auto l = eval(n.kids[0]);
    if (!l) return l;
    auto r = eval(n.kids[1]);
    if (!r) return r;
    const char* op = n.op == Op::kEq ? "'=='" : "'!='";
    if (l->kind == V::Kind::kList || r->kind == V::Kind::kList || l->kind != r->kind) {
      return err(ExprErrorKind::kType, n.column,
                 std::string(op) + " compares two numbers or two booleans, got " + kind_name(*l) + " and " +
                     kind_name(*r));
    }
    bool eq = l->kind == V::Kind::kNumber ? l->number == r->number : l->boolean == r->boolean;
    return boolean(n.op == Op::kEq ? eq : !eq);
  }

  EV arithmetic(const Node& n) {
    static const std::pair<Op, const char*> kNames[] = {
        {Op::kAdd, "'+'"}, {Op::kSub, "'-'"}, {Op::kMul, "'*'"}, {Op::kDiv, "'/'"}, {Op::kFloorDiv, "'//'"},
        {Op::kMod, "'%'"}, {Op::kPow, "'**'"}, {Op::kLt, "'<'"}, {Op::kLe, "'<='"}, {Op::kGt, "'>'"},
        {Op::kGe, "'>='"}};
    std::string what = "?";
    for (auto [op, name] : kNames) {
      if (op == n.op) what = name;
    }
    auto l = want_number(n.kids[0], what);
    if (!l) return Unexpected(l.error());
    auto r = want_number(n.kids[1], what);
    if (!r) return Unexpected(r.error());
    double a = *l, b = *r;
    auto nonzero = [&]() -> tl::expected<void, ExprError> {
      if (b == 0) return err(ExprErrorKind::kDivisionByZero, n.column, "division by zero in " + what);
      return {};
    };
    switch (n.op) {
      case Op::kAdd: return finite(n, a + b, "the sum");
      case Op::kSub: return finite(n, a - b, "the difference");
      case Op::kMul: return finite(n, a * b, "the product");
      case Op::kDiv:
        if (auto z = nonzero(); !z) return Unexpected(z.error());
        return finite(n, a / b, "the quotient");
      case Op::kFloorDiv:
        if (auto z = nonzero(); !z) return Unexpected(z.error());
        return finite(n, std::floor(a / b), "the quotient");
      case Op::kMod: {
        if (auto z = nonzero(); !z) return Unexpected(z.error());
        // Python's sign convention: the result takes the divisor's sign.
        double m = std::fmod(a, b);
        if (m != 0 && ((m < 0) != (b < 0))) m += b;
        return finite(n, m, "the remainder");
      }
      case Op::kPow: return finite(n, std::pow(a, b), "the power");
      case Op::kLt: return boolean(a < b);
      case Op::kLe: return boolean(a <= b);
      case Op::kGt: return boolean(a > b);
      case Op::kGe: return boolean(a >= b);
      default: break;
    }
    return err(ExprErrorKind::kSyntax, n.column, "internal: unknown operator");
  }

  // Numbers of a list argument (one level; nested lists are not summed).
  tl::expected<std::vector<double>, ExprError> list_numbers(const Node& fn, const V& list, int arg) const {
    std::vector<double> out;
    for (const auto& item : *list.list) {
      if (!item.is_number()) {
        return err(ExprErrorKind::kType, ast_.nodes[arg].column,
                   fn.name + "() needs a list of numbers, found " + std::string(item.type_name()) + " " +
                       item.dump());
      }
      out.push_back(item.get<double>());
    }
    return out;
  }

  EV call(const Node& n) {
    const std::string& f = n.name;
    const std::size_t argc = n.kids.size();
    auto arity = [&](std::size_t want) -> tl::expected<void, ExprError> {
      if (argc != want) {
        return err(ExprErrorKind::kType, n.column,
                   f + "() takes " + std::to_string(want) + " argument" + (want == 1 ? "" : "s") + ", got " +
                       std::to_string(argc));
      }
      return {};
    };
    if (f == "sum" || f == "len") {
      if (auto a = arity(1); !a) return Unexpected(a.error());
      auto v = eval(n.kids[0]);
      if (!v) return v;
      if (v->kind != V::Kind::kList) {
        return err(ExprErrorKind::kType, ast_.nodes[n.kids[0]].column,
                   f + "() needs a list, got " + kind_name(*v));
      }
      if (f == "len") return number(static_cast<double>(v->list->size()));
      auto xs = list_numbers(n, *v, n.kids[0]);
      if (!xs) return Unexpected(xs.error());
      double s = 0;
      for (double x : *xs) s += x;
      return finite(n, s, "the sum");
    }
    if (f == "ceil" || f == "floor") {
      if (auto a = arity(1); !a) return Unexpected(a.error());
      auto x = want_number(n.kids[0], f + "()");
      if (!x) return Unexpected(x.error());
      return number(f == "ceil" ? std::ceil(*x) : std::floor(*x));
    }
    if (f == "cdiv") {
      if (auto a = arity(2); !a) return Unexpected(a.error());
      auto x = want_number(n.kids[0], "cdiv()");
      if (!x) return Unexpected(x.error());
      auto y = want_number(n.kids[1], "cdiv()");
      if (!y) return Unexpected(y.error());
      if (*y == 0) return err(ExprErrorKind::kDivisionByZero, n.column, "division by zero in cdiv()");
      return finite(n, std::ceil(*x / *y), "cdiv()");
    }
    if (f == "min" || f == "max") {
      const bool is_max = f == "max";
      std::vector<double> xs;
      if (argc == 1) {
        auto v = eval(n.kids[0]);
        if (!v) return v;
        if (v->kind == V::Kind::kList) {
          auto got = list_numbers(n, *v, n.kids[0]);
          if (!got) return Unexpected(got.error());
          xs = std::move(*got);
          if (xs.empty()) return err(ExprErrorKind::kEmpty, n.column, f + "() of an empty list");
        } else if (v->kind == V::Kind::kNumber) {
          xs.push_back(v->number);
        } else {
          return err(ExprErrorKind::kType, ast_.nodes[n.kids[0]].column,
                     f + "() needs numbers or one list, got a boolean");
        }
      } else {
        for (int k : n.kids) {
          auto x = want_number(k, f + "()");
          if (!x) return Unexpected(x.error());
          xs.push_back(*x);
        }
      }
      double best = xs.front();
      for (double x : xs) best = is_max ? std::max(best, x) : std::min(best, x);
      return number(best);
    }
    return err(ExprErrorKind::kName, n.column,
               "unknown function '" + f + "' (functions are sum, len, min, max, ceil, floor, cdiv)");
  }

  const WorkExpr::Ast& ast_;
  const nlohmann::json& dims_;
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
  return Evaluator(*ast_, dims).eval(ast_->root);
}

tl::expected<double, ExprError> WorkExpr::evaluate_work(const nlohmann::json& dims) const {
  auto v = evaluate(dims);
  if (!v) return Unexpected(v.error());
  if (v->kind != ExprValue::Kind::kNumber) {
    return error_at(ExprErrorKind::kType, ast_->text, 0,
                    std::string("work must be a number, the expression gives ") + kind_name(*v));
  }
  if (!(v->number > 0)) {
    return error_at(ExprErrorKind::kType, ast_->text, 0,
                    "work must be > 0, the expression gives " + fmt_number(v->number));
  }
  return v->number;
}

tl::expected<long long, ExprError> WorkExpr::evaluate_extent(const nlohmann::json& dims) const {
  auto v = evaluate(dims);
  if (!v) return Unexpected(v.error());
  if (v->kind != ExprValue::Kind::kNumber) {
    return error_at(ExprErrorKind::kType, ast_->text, 0,
                    std::string("a tensor extent must be a number, the expression gives ") + kind_name(*v));
  }
  const double d = v->number;
  if (d < 0 || std::floor(d) != d || d > 9007199254740992.0) {
    return error_at(ExprErrorKind::kType, ast_->text, 0,
                    "a tensor extent must be an integer >= 0, the expression gives " + fmt_number(d) +
                        (std::floor(d) != d ? " (use cdiv() or // to round)" : ""));
  }
  return static_cast<long long>(d);
}

const std::vector<std::string>& WorkExpr::names() const { return ast_->names; }
const std::string& WorkExpr::text() const { return ast_->text; }

}  // namespace kzoo::task

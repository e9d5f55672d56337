// Evaluation of a parsed canonical_work / shape expression (see work_expr.hpp
// for the semantics the grammar leaves open and the corpus pins).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kzoo/task/work_expr_ast.hpp"

namespace kzoo::task {
namespace detail {

const char* kind_name(const ExprValue& v) {
  switch (v.kind) {
    case ExprValue::Kind::kNumber: return "a number";
    case ExprValue::Kind::kBool: return "a boolean";
    case ExprValue::Kind::kList: return "a list";
  }
  return "?";
}

std::string fmt_number(double d) {
  if (std::floor(d) == d && std::fabs(d) < 1e15) return std::to_string(static_cast<long long>(d));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

namespace {

using V = ExprValue;
using EV = tl::expected<V, ExprError>;

V number_value(double d) { return V{V::Kind::kNumber, d, false, nullptr}; }
V boolean(bool b) { return V{V::Kind::kBool, 0, b, nullptr}; }

class Evaluator {
 public:
  Evaluator(const WorkExpr::Ast& ast, const nlohmann::json& dims) : ast_(ast), dims_(dims) {}

  EV eval(int index) {
    const Node& n = ast_.nodes[index];
    switch (n.op) {
      case Op::kNum: return number_value(n.num);
      case Op::kBool: return boolean(n.num != 0);
      case Op::kName: return lookup(n);
      case Op::kNeg: {
        auto v = want_number(n.kids[0], "'-'");
        if (!v) return Unexpected(v.error());
        return number_value(-*v);
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
    if (v.is_number()) return number_value(v.get<double>());
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
    return number_value(d);
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
      if (f == "len") return number_value(static_cast<double>(v->list->size()));
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
      return number_value(f == "ceil" ? std::ceil(*x) : std::floor(*x));
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
      return number_value(best);
    }
    return err(ExprErrorKind::kName, n.column,
               "unknown function '" + f + "' (functions are sum, len, min, max, ceil, floor, cdiv)");
  }

  const WorkExpr::Ast& ast_;
  const nlohmann::json& dims_;
};


}  // namespace

tl::expected<ExprValue, ExprError> evaluate_ast(const WorkExpr::Ast& ast, const nlohmann::json& dims) {
  return Evaluator(ast, dims).eval(ast.root);
}

}  // namespace detail
}  // namespace kzoo::task

// Internal to the expression language (work_expr.cpp parses, work_expr_eval.cpp
// evaluates): the syntax tree both halves share. Not a public interface.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "kzoo/task/work_expr.hpp"

namespace kzoo::task {
namespace detail {

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

using Unexpected = tl::unexpected<ExprError>;

inline Unexpected error_at(ExprErrorKind kind, std::string_view expr, std::size_t column, std::string problem) {
  return Unexpected(ExprError{kind, std::string(expr), column, std::move(problem)});
}

// "a number" / "a boolean" / "a list", for messages.
const char* kind_name(const ExprValue& v);
// A number as a person writes it: integers without a fraction.
std::string fmt_number(double d);

// Evaluates the parsed tree with a dims binding.
tl::expected<ExprValue, ExprError> evaluate_ast(const WorkExpr::Ast& ast, const nlohmann::json& dims);

}  // namespace detail

struct WorkExpr::Ast {
  std::string text;
  std::vector<detail::Node> nodes;  // nodes[root] is the whole expression
  int root = -1;
  std::vector<std::string> names;
};

}  // namespace kzoo::task

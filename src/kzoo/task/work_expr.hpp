// The expression language of KBench tasks: `grading.reward.canonical_work`
// (e.g. "2*M*N*K", "sum(counts)*N*K*2", "B*H*T*T*D*2 / (causal ? 2 : 1)") and
// the string entries of a tensorSpec's shape (e.g. "cdiv(K, 128)").
//
// The grammar is fixed by docs/ARCHITECTURE.md, and a second implementation
// (Python, in kzoo_judge) reads the same text; catalog/work_expr_cases.json is
// the conformance corpus both run. Anything this file decides that the
// grammar leaves open is pinned by a corpus case, so the two cannot drift:
//   - `&&`, `||` and `?:` short-circuit: `n == 0 ? 0 : x / n` is fine at n = 0;
//   - comparisons do not chain (`a < b < c` is a syntax error);
//   - `%` and `//` follow Python (floor): -7 // 2 == -4, -7 % 2 == 1;
//   - `==`/`!=` compare two numbers or two booleans, `<` etc. two numbers;
//   - `?:`, `!`, `&&`, `||` need booleans (no truthiness of numbers);
//   - nesting depth counts brackets: 32 nested parentheses/calls are fine,
//     33 are not; the token cap counts every operator, bracket, comma,
//     number and name (256 fine, 257 not).
//
// Parse once, evaluate many times: a WorkExpr is immutable and cheap to copy
// around by const reference; evaluate() may run concurrently.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

namespace kzoo::task {

// Why an expression failed, as a stable code shared with the Python judge
// (the corpus's "error" field holds one of these words).
enum class ExprErrorKind {
  kSyntax,          // "syntax": not in the grammar (incl. empty, bad characters)
  kName,            // "name": a name that is not a dim, or an unknown function
  kType,            // "type": list where a number is needed, bool vs number, arity
  kDivisionByZero,  // "division-by-zero": `/`, `//`, `%` or cdiv by 0
  kNonFinite,       // "non-finite": an inf/nan literal or result
  kEmpty,           // "empty": min/max over an empty list
  kLimit,           // "limit": more than 256 tokens or nesting deeper than 32
};

std::string_view to_string(ExprErrorKind kind);

struct ExprError {
  ExprErrorKind kind;
  std::string expr;     // the whole expression text
  std::size_t column;   // 1-based byte column of the offending token
  std::string problem;  // e.g. "unknown dim 'Q' (dims are K, M, N)"

  // `"2*M*Q", column 5: unknown dim 'Q' (dims are K, M, N)`
  std::string message() const;
};

// A value of the language: a number, a boolean or a list (lists only ever come
// from dims; the language cannot build one). Numbers are doubles, integers
// are exact below 2^53.
struct ExprValue {
  enum class Kind { kNumber, kBool, kList } kind = Kind::kNumber;
  double number = 0;
  bool boolean = false;
  const nlohmann::json* list = nullptr;  // points into the dims binding

  nlohmann::json to_json() const;
};

struct ExprLimits {
  std::size_t max_tokens = 256;
  std::size_t max_depth = 32;
};

class WorkExpr {
 public:
  // Parses `text`; a syntax or limit error names the column.
  static tl::expected<WorkExpr, ExprError> parse(std::string_view text, const ExprLimits& limits = {});

  // Evaluates with `dims`, a JSON object mapping dim names to numbers,
  // booleans or (nested) lists. Values of other JSON types are type errors
  // when (and only when) the expression uses them.
  tl::expected<ExprValue, ExprError> evaluate(const nlohmann::json& dims) const;

  // canonical_work: must be a finite number > 0.
  tl::expected<double, ExprError> evaluate_work(const nlohmann::json& dims) const;

  // A tensor-shape entry: must be an integer >= 0 (returned exactly).
  tl::expected<long long, ExprError> evaluate_extent(const nlohmann::json& dims) const;

  // The dim names the expression refers to (not function names), sorted,
  // without duplicates. Lint checks them against the workload's dims.
  const std::vector<std::string>& names() const;

  const std::string& text() const;

  WorkExpr(const WorkExpr&);
  WorkExpr& operator=(const WorkExpr&);
  WorkExpr(WorkExpr&&) noexcept;
  WorkExpr& operator=(WorkExpr&&) noexcept;
  ~WorkExpr();

  struct Ast;  // defined in work_expr.cpp

 private:
  explicit WorkExpr(std::shared_ptr<const Ast> ast);
  std::shared_ptr<const Ast> ast_;
};

// Parses the corpus's error word back into a kind; false if unknown.
bool parse_error_kind(std::string_view word, ExprErrorKind* out);

}  // namespace kzoo::task

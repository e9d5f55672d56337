// Number literals as the evidence detectors read them: how many significant
// digits, and whether the value is exact in binary. Internal to package/.
//
// Measured values look different from authored constants: a timing is
// "412.3" or "0.1783" (three or four significant digits that are not a
// binary fraction), an authored constant is "0.5", "0.015625" (1/64),
// "1e-3", "4096" or a power of two. Neither test is proof on its own; the
// detectors combine it with what surrounds the number.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kzoo::package::evidence_detail {

struct NumberLiteral {
  std::size_t length = 0;  // characters of the literal (0: not a number here)
  bool is_float = false;   // has a '.' or an exponent
  bool hex = false;        // 0x...
  std::size_t sig = 0;     // significant digits: no leading zeros, no trailing zeros
  bool dyadic = true;      // k / 2^n exactly (every integer is)
  std::uint64_t integer = 0;  // the value, for integers below 2^63 (0 otherwise)
};

// The decimal/hex literal at the start of `s` (digits, '_' or ',' thousands
// separators are NOT taken: "1,234" is two numbers here), or length 0.
NumberLiteral read_number(std::string_view s);

// A float with 2+ significant digits that is not a binary fraction (0.18,
// 412.3, 2.61), or an integer with 3+ significant digits that is not a power
// of two (412, 2610): what a measurement prints.
bool looks_measured(const NumberLiteral& n);

// The same, stricter: a float with 3+ significant digits that is not a
// binary fraction (0.4123, 1.207).
bool is_irregular_float(const NumberLiteral& n);

}  // namespace kzoo::package::evidence_detail

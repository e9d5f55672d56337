#include "kzoo/package/evidence_numbers.hpp"

#include "kzoo/package/evidence_lines.hpp"

namespace kzoo::package::evidence_detail {

NumberLiteral read_number(sv s) {
  NumberLiteral n;
  std::size_t i = 0;
  if (s.size() >= 3 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && is_hex(s[2])) {
    i = 2;
    while (i < s.size() && is_hex(s[i])) ++i;
    n.length = i;
    n.hex = true;
    return n;
  }
  // The mantissa's digits without leading zeros (up to 19 kept exactly;
  // longer mantissas are never taken for binary fractions).
  std::uint64_t mantissa = 0;
  std::size_t kept = 0, digits = 0, frac_digits = 0, trailing_zeros = 0;
  bool overflow = false, dot = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.' && !dot) {
      if (i + 1 < s.size() && s[i + 1] == '.') break;  // a range "1..4"
      dot = true;
      continue;
    }
    if (!is_digit(c)) break;
    ++digits;
    if (dot) ++frac_digits;
    if (c == '0') {
      if (kept == 0) continue;  // a leading zero
      ++trailing_zeros;
    } else {
      trailing_zeros = 0;
    }
    if (kept < 19) {
      mantissa = mantissa * 10 + static_cast<std::uint64_t>(c - '0');
      ++kept;
    } else {
      overflow = true;
      ++kept;
    }
  }
  if (digits == 0) return n;
  long exponent = 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    std::size_t j = i + 1;
    bool negative = false;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) negative = s[j++] == '-';
    std::size_t k = j;
    long e = 0;
    while (k < s.size() && is_digit(s[k]) && e < 10000) e = e * 10 + (s[k++] - '0');
    if (k > j) {
      exponent = negative ? -e : e;
      i = k;
      n.is_float = true;
    }
  }
  n.length = i;
  n.is_float = n.is_float || dot;
  n.sig = kept - trailing_zeros;
  // value = core * 10^(scale), core = the significant digits
  long scale = exponent - static_cast<long>(frac_digits) + static_cast<long>(trailing_zeros);
  if (overflow) {
    n.dyadic = false;
    return n;
  }
  std::uint64_t core = mantissa;
  for (std::size_t z = 0; z < trailing_zeros && z < kept; ++z) core /= 10;
  if (core == 0) {
    n.sig = 0;
    n.dyadic = true;
    return n;
  }
  if (scale >= 0) {
    n.dyadic = true;
    if (!n.is_float && scale < 19) {
      unsigned __int128 v = core;
      for (long z = 0; z < scale; ++z) v *= 10;
      if (v < (static_cast<unsigned __int128>(1) << 63)) n.integer = static_cast<std::uint64_t>(v);
    }
    return n;
  }
  // core * 10^-k is k/2^n exactly when 5^k divides core.
  const long k = -scale;
  if (k > 27) {
    n.dyadic = false;
    return n;
  }
  std::uint64_t five = 1;
  for (long z = 0; z < k; ++z) five *= 5;
  n.dyadic = core % five == 0;
  return n;
}

bool looks_measured(const NumberLiteral& n) {
  if (n.length == 0 || n.hex) return false;
  if (n.is_float) return n.sig >= 2 && !n.dyadic;
  if (n.sig < 3 || n.integer == 0) return false;
  return (n.integer & (n.integer - 1)) != 0;  // not a power of two
}

bool is_irregular_float(const NumberLiteral& n) { return n.length > 0 && n.is_float && n.sig >= 3 && !n.dyadic; }

}  // namespace kzoo::package::evidence_detail

#include "kzoo/task/tolerance.hpp"

#include <cmath>
#include <cstdio>

namespace kzoo::task {

std::string tolerance_number(double d) {
  char buf[64];
  if (std::fabs(d) >= 1e15 || (d != 0 && std::fabs(d) < 1e-4)) std::snprintf(buf, sizeof buf, "%.4g", d);
  else if (std::floor(d) == d) std::snprintf(buf, sizeof buf, "%.0f", d);
  else std::snprintf(buf, sizeof buf, "%.4g", d);
  return buf;
}

ToleranceRange tolerance_range(double E, double D, const ToleranceRule& rule) {
  return {E * rule.floor_margin, D / rule.drop_ratio};
}

std::vector<ToleranceFinding> check_tolerance(double value, double E, double D, const ToleranceRule& rule) {
  const auto& n = tolerance_number;
  const ToleranceRange r = tolerance_range(E, D, rule);
  std::vector<ToleranceFinding> out;
  if (!(value > r.low))
    out.push_back({"tolerance-floor", "tolerance " + n(value) + " is not above " + n(rule.floor_margin) +
                                          " x measured_floor_E (" + n(E) +
                                          "): it would reject correct kernels; raise it above " + n(r.low)});
  if (!(value < r.high))
    out.push_back({"tolerance-drop", "tolerance " + n(value) + " is not below measured_drop_D / " +
                                         n(rule.drop_ratio) + " (" + n(r.high) +
                                         "): a kernel that ignores the task's distinguishing feature would pass; "
                                         "lower it, or make the drop variant differ more"});
  return out;
}

}  // namespace kzoo::task

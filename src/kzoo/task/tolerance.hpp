// The one rule a task's tolerance is held to, given its calibration (E, the
// error of an independent correct implementation; D, the error of a variant
// that drops the task's point): it must sit above floor_margin x E, or it
// rejects correct kernels, and below D / drop_ratio, or a kernel that ignores
// the task's feature passes. `kzoo task lint` reports a stored tolerance
// outside the range; `kzoo task calibrate` prints the range it measured and
// refuses to store a calibration whose range is empty. Both call this, so the
// two can never disagree about what a sound tolerance is.
#pragma once

#include <string>
#include <vector>

namespace kzoo::task {

struct ToleranceRule {
  double floor_margin = 2;  // tolerance > floor_margin * E
  double drop_ratio = 10;   // tolerance < D / drop_ratio
};

// The open interval (floor_margin * E, D / drop_ratio).
struct ToleranceRange {
  double low = 0;
  double high = 0;
  bool empty() const { return !(low < high); }
  bool contains(double value) const { return value > low && value < high; }
};

ToleranceRange tolerance_range(double E, double D, const ToleranceRule& rule = {});

// What is wrong with `value` against (E, D): rule "tolerance-floor" and/or
// "tolerance-drop" (lint prefixes "task."), each with a detail that names the
// bound and the fix. Empty when the value is inside the range.
struct ToleranceFinding {
  std::string rule;
  std::string detail;
};
std::vector<ToleranceFinding> check_tolerance(double value, double E, double D, const ToleranceRule& rule = {});

// A number as the rule's messages print it (4 significant digits).
std::string tolerance_number(double d);

}  // namespace kzoo::task

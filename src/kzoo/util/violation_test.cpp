#include "kzoo/util/violation.hpp"

#include <gtest/gtest.h>

namespace kzoo {

TEST(Violation, PrintsPathPointerRuleAndDetail) {
  Violation v{"pkg/.kernel_package/desc.yaml", "/io_signature/0/dtype", "schema.enum",
              "value \"fp7\" is not one of the allowed dtypes"};
  EXPECT_EQ(to_string(v),
            "pkg/.kernel_package/desc.yaml#/io_signature/0/dtype: schema.enum: value \"fp7\" is not "
            "one of the allowed dtypes");
}

TEST(Violation, OmitsEmptyPointerInTextAndJson) {
  Violation v{"a.tar.gz", "", "tar.gzip-only", "not gzip data"};
  EXPECT_EQ(to_string(v), "a.tar.gz: tar.gzip-only: not gzip data");
  auto j = to_json(v);
  EXPECT_FALSE(j.contains("pointer"));
  EXPECT_EQ(j["rule"], "tar.gzip-only");
}

TEST(Violation, HasRuleFindsExactRuleOnly) {
  Violations vs{{"a", "", "tar.symlink", "x"}};
  EXPECT_TRUE(has_rule(vs, "tar.symlink"));
  EXPECT_FALSE(has_rule(vs, "tar.sym"));
}

}  // namespace kzoo

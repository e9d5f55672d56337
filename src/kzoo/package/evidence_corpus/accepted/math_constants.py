import math

LOG2E = 1.4426950408889634  # 1 / ln(2)
LN2 = 0.6931471805599453  # math.log(2)
SQRT_2_OVER_PI = 0.7978845608028654  # math.sqrt(2 / math.pi), for GELU's tanh form
GELU_COEF = 0.044715  # Hendrycks & Gimpel, 2016
assert abs(LOG2E - 1 / math.log(2)) < 1e-15

# Largest finite values of the 8-bit float formats (OCP FP8 spec).
FP8_E4M3_MAX = 448.0
FP8_E5M2_MAX = 57344.0
# Scales are per 128x128 block of the weight, per 1x128 group of the activation.
WEIGHT_BLOCK = (128, 128)
ACT_GROUP = 128


def scale_for(amax: float, fmt_max: float = FP8_E4M3_MAX) -> float:
    return max(amax, 1e-12) / fmt_max

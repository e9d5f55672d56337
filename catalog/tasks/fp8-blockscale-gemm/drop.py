"""The fp8 GEMM that ignores the block scales, for measuring D.

It multiplies the raw fp8 values and never applies A_scale or B_scale: the
shortcut of a kernel that treats the bytes as the numbers and skips the
dequantisation the task exists to grade. (A per-tensor variant -- one scale
for every block -- would be the subtler shortcut, but the judge derives each
block's power-of-two scale from the block's own range, so on its inputs
neighbouring blocks often share a scale and that variant can coincide with
the reference on small shapes; calibration needs a drop that differs at
every correctness shape.)
"""
import torch


def _decode(t):
    if t.dtype == torch.uint8:
        if hasattr(torch, "float8_e4m3fn"):
            return t.view(torch.float8_e4m3fn).float()
        table = []
        for byte in range(256):
            sign = -1.0 if byte & 0x80 else 1.0
            exp, man = (byte >> 3) & 0xF, byte & 0x7
            if exp == 0xF and man == 0x7:
                table.append(float("nan"))
            elif exp == 0:
                table.append(sign * man / 8.0 * 2.0 ** -6)
            else:
                table.append(sign * (1.0 + man / 8.0) * 2.0 ** (exp - 7))
        return torch.tensor(table, device=t.device)[t.long()]
    return t.float()


def drop(A, A_scale, B, B_scale):
    return (_decode(A) @ _decode(B).t()).to(torch.bfloat16)

# CPU solution: the fp8 bytes decoded by table, each operand scaled by
# broadcasting its [rows, blocks, 128] view against the scales (no expanded scale
# matrices), then one float32 matmul.
import torch

BLOCK = 128


def _table():
    values = []
    for byte in range(256):
        sign = -1.0 if byte & 0x80 else 1.0
        exp, man = (byte >> 3) & 0xF, byte & 0x7
        if exp == 0xF and man == 0x7:
            values.append(float("nan"))
        elif exp == 0:
            values.append(sign * man / 8.0 * 2.0 ** -6)
        else:
            values.append(sign * (1.0 + man / 8.0) * 2.0 ** (exp - 7))
    return torch.tensor(values, dtype=torch.float32)


_TABLE = _table()


def _decode(t):
    if t.dtype != torch.uint8:
        t = t.view(torch.uint8)
    return _TABLE[t.long()]


def _scaled(x, scale, row_block):
    rows, K = x.shape
    kb = scale.shape[1]
    pad = kb * BLOCK - K
    if pad:
        x = torch.nn.functional.pad(x, (0, pad))
    s = scale.float().repeat_interleave(row_block, dim=0)[:rows] if row_block > 1 else scale.float()
    return (x.view(rows, kb, BLOCK) * s.unsqueeze(-1)).view(rows, kb * BLOCK)[:, :K]


def fp8_blockscale_gemm(A, A_scale, B, B_scale):
    a = _scaled(_decode(A), A_scale, 1)
    b = _scaled(_decode(B), B_scale, BLOCK)
    return (a @ b.t()).to(torch.bfloat16)

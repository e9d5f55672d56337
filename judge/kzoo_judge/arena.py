"""Arenas: how input sets and outputs cross between judge and child (CPU: both; GPU: outputs).

Why: torch's per-tensor sharing (`share_memory_()` with the file_system
strategy) creates a shared-memory file for every tensor, through torch's
shm manager. That costs milliseconds per tensor on a loaded machine and
varies by as much, and the outputs' share sits inside the judge's clock.
When it dwarfs a fast CPU call, the cross-check (timing.cross_check) cannot
tell harness noise from a lying timer and replaces honest samples with the
judge's noisy figure -- which penalised the faster side of an A/B run.

Instead each child gets two judge-owned arenas, mapped once: the judge
copies every input set into the input arena and the child calls the
submission on views of it; the child copies every output into the output
arena (a memcpy: microseconds, proportional to the bytes, and inside the
timed window, so late work still cannot hide) and sends only descriptors.

On a GPU the inputs still cross as CUDA IPC tensors, but the outputs go
through a judge-owned device arena: the child copies each call's outputs
into it right after the call's window closes (outside the timed window --
a GPU copy of a graded output is a sizeable fraction of the call) and drops
its own tensors, so the next call reuses the memory it would reuse outside
the judge. Why: keeping every output of a batch alive in the child until
the reply pushed each call onto memory the allocator had not just used,
and the judge timed ~1% above a plain loop of the same calls.

The child is untrusted: `unpack` checks every descriptor (dtype, shape,
bounds, alignment, no overlap) before the judge builds a view.
"""

import torch

ALIGN = 64  # bytes: every slot starts on a cache line, so any dtype's view is aligned

# Dtypes an output may claim: every dtype the task schema can name, as torch spells it.
_DTYPES = {
    name: getattr(torch, name)
    for name in ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
                 "float8_e4m3fn", "float8_e5m2", "complex64", "complex128")
    if isinstance(getattr(torch, name, None), torch.dtype)
}


def span(t):
    """(device, first byte, one past the last byte) a tensor's view can reach; None when empty.
    The view's own extent, not its storage's: slots of one arena are distinct memory."""
    if t.numel() == 0:
        return None
    reach = sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    start = t.data_ptr()
    return (t.device.type, start, start + (reach + 1) * t.element_size())


def overlap(a, b):
    return a is not None and b is not None and a[0] == b[0] and a[1] < b[2] and b[1] < a[2]


def aligned(n):
    return (int(n) + ALIGN - 1) // ALIGN * ALIGN


def nbytes(t):
    return t.numel() * t.element_size()


def dtype_name(dt):
    return str(dt).replace("torch.", "")


def new(size):
    """A shared CPU byte arena of at least `size` bytes (never empty). Not zeroed: every
    byte the judge reads was written by a copy in this batch, and descriptors are bounds-checked.
    Made in shared memory from the start: `share_memory_()` on a private tensor copies it into
    a new shared file, touching every page of both, 2.5 s for 400 MB on the 2-core VM
    (1.5 s of a 7.5 s CPU grade of softmax), against 2 ms for the shared storage itself."""
    n = max(aligned(size), ALIGN)
    try:
        return torch.empty(0, dtype=torch.uint8).set_(torch.UntypedStorage._new_shared(n))
    except (AttributeError, TypeError, RuntimeError):  # a torch without it: the copying way
        return torch.empty(n, dtype=torch.uint8).share_memory_()


def new_on_device(size, device="cuda"):
    """A GPU output arena: one judge-owned allocation, handed to the child once (CUDA IPC).
    Not zeroed, for the same reason as new()."""
    return torch.empty(max(aligned(size), ALIGN), dtype=torch.uint8, device=device)


def view(arena, offset, dtype, shape):
    n = 1
    for d in shape:
        n *= d
    size = n * torch.empty((), dtype=dtype).element_size()
    return arena[offset:offset + size].view(dtype).view(tuple(shape))


def _slots(arena, layout, offset):
    """Consecutive aligned slots from `offset` for [(dtype, shape)]: [(offset, view)], next offset.
    A tensor that does not fit raises ValueError (the caller sized the arena)."""
    placed = []
    for dtype, shape in layout:
        n = 1
        for d in shape:
            n *= int(d)
        size = n * torch.empty((), dtype=dtype).element_size()
        if offset + size > arena.numel():
            raise ValueError("%d bytes (%s %s) at offset %d do not fit in the arena's %d"
                             % (size, dtype_name(dtype), list(shape), offset, arena.numel()))
        placed.append((offset, view(arena, offset, dtype, list(shape))))
        offset += aligned(size)
    return placed, offset


def _copy_in(arena, tensors, offset):
    """Copy `tensors` into consecutive aligned slots from `offset`: [(offset, view)], next offset."""
    placed, end = _slots(arena, [(t.dtype, list(t.shape)) for t in tensors], offset)
    for (_, v), t in zip(placed, tensors):
        v.copy_(t)
    return placed, end


def slots(arena, layout, offset=0):
    """The judge's side: views of the slots `place` would copy tensors of `layout` ([(dtype,
    shape)]) into, for the judge to fill in place (inputs.make_inputs' `out`): (views, next offset)."""
    placed, end = _slots(arena, layout, offset)
    return [v for _, v in placed], end


def place(arena, tensors, offset=0):
    """The judge's side: copies of `tensors` in the arena. Returns (views, next offset)."""
    placed, end = _copy_in(arena, tensors, offset)
    return [v for _, v in placed], end


def pack(arena, outputs, offset=0):
    """The child's side: one call's outputs copied into the arena, and their descriptors.
    Returns (descriptors, next offset) or raises ValueError when they do not fit."""
    try:
        placed, end = _copy_in(arena, outputs, offset)
    except ValueError as e:
        raise ValueError("the outputs are larger than the task declares: %s" % e)
    return [(off, dtype_name(v.dtype), [int(d) for d in v.shape]) for off, v in placed], end


def unpack(arena, descs, taken):
    """The judge's side: views of the arena for one call's descriptors, every field checked.
    `taken` is a list of (start, end) byte ranges already handed out in this batch (updated).
    Returns (views, None) or (None, reason)."""
    if not isinstance(descs, list):
        return None, "the outputs' descriptors are not a list"
    out = []
    for j, d in enumerate(descs):
        if not (isinstance(d, tuple) and len(d) == 3):
            return None, "output %d: malformed descriptor" % j
        off, dname, shape = d
        if type(off) is not int or off < 0 or off % ALIGN:
            return None, "output %d: bad arena offset %r" % (j, off)
        if dname not in _DTYPES:
            return None, "output %d: dtype %r is not one kzoo knows" % (j, dname)
        if not isinstance(shape, list) or len(shape) > 16 or any(type(s) is not int or s < 0 for s in shape):
            return None, "output %d: bad shape %r" % (j, shape)
        n = 1
        for s in shape:
            n *= s
        size = n * torch.empty((), dtype=_DTYPES[dname]).element_size()
        if off + size > arena.numel():
            return None, "output %d: %d bytes at offset %d run past the arena (%d bytes)" % (j, size, off, arena.numel())
        if size and any(off < e and s < off + size for s, e in taken):
            return None, "output %d overlaps another output in the arena (aliasing is refused)" % j
        if size:
            taken.append((off, off + size))
        out.append(view(arena, off, _DTYPES[dname], shape))
    return out, None

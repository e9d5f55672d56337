"""The expression language of canonical_work and symbolic tensor shapes.

Grammar, value types and error rules are fixed by docs/ARCHITECTURE.md and
shared with the C++ implementation (src/kzoo/task/work_expr) through the
conformance corpus catalog/work_expr_cases.json. This is a hand-written
tokenizer and recursive-descent parser: the language is not Python (`?:`,
`&&`, `!`), so neither eval nor the ast module may read it.
"""

import math
import re

MAX_TOKENS = 256
MAX_DEPTH = 32


class ExprError(ValueError):
    """An expression that does not parse or does not evaluate."""


_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>\*\*|//|==|!=|<=|>=|&&|\|\||[-+*/%<>!?:(),]))"
)


def tokenize(text):
    if not isinstance(text, str):
        raise ExprError("expression must be a string, got %r" % (text,))
    tokens = []
    pos = 0
    end = len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ExprError("unexpected character %r at offset %d in %r" % (text[pos:pos + 1] or text[pos:], pos, text))
        pos = m.end()
        if m.group("num") is not None:
            value = float(m.group("num"))
            if not math.isfinite(value):
                raise ExprError("number %s at offset %d is not finite" % (m.group("num"), m.start("num")))
            tokens.append(("num", value))
        elif m.group("name") is not None:
            tokens.append(("name", m.group("name")))
        else:
            tokens.append(("op", m.group("op")))
        if len(tokens) > MAX_TOKENS:
            raise ExprError("expression has more than %d tokens" % MAX_TOKENS)
    if not tokens:
        raise ExprError("empty expression")
    return tokens


def _is_num(v):
    return isinstance(v, float)


def _need_num(v, what):
    if not _is_num(v):
        raise ExprError("%s needs a number, got %s" % (what, _type_name(v)))
    return v


def _need_bool(v, what):
    if not isinstance(v, bool):
        raise ExprError("%s needs a boolean, got %s" % (what, _type_name(v)))
    return v


def _type_name(v):
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, float):
        return "number"
    if isinstance(v, list):
        return "list"
    return type(v).__name__


def _finite(v):
    if isinstance(v, float) and not math.isfinite(v):
        raise ExprError("non-finite result")
    return v


def _numbers_of(args, fname):
    """max/min take numbers or exactly one list of numbers."""
    if len(args) == 1 and isinstance(args[0], list):
        vals = _flatten(args[0])
        if not vals:
            raise ExprError("%s() of an empty list" % fname)
        return [_need_num(v, fname + "()") for v in vals]
    return [_need_num(v, fname + "()") for v in args]


def _flatten(v):
    out = []
    for x in v:
        if isinstance(x, list):
            out.extend(_flatten(x))
        else:
            out.append(x)
    return out


def _fn_sum(args):
    if len(args) != 1 or not isinstance(args[0], list):
        raise ExprError("sum() takes one list")
    # Like the C++ evaluator (catalog/work_expr_cases.json): sum() adds the
    # numbers of one flat list; a nested list is a type error, not flattened.
    return float(sum(_need_num(v, "sum()") for v in args[0]))


def _fn_len(args):
    if len(args) != 1 or not isinstance(args[0], list):
        raise ExprError("len() takes one list")
    return float(len(args[0]))


def _fn_one(name, f):
    def g(args):
        if len(args) != 1:
            raise ExprError("%s() takes one number" % name)
        return float(f(_need_num(args[0], name + "()")))
    return g


def _fn_cdiv(args):
    if len(args) != 2:
        raise ExprError("cdiv() takes two numbers")
    a = _need_num(args[0], "cdiv()")
    b = _need_num(args[1], "cdiv()")
    if b == 0:
        raise ExprError("division by zero in cdiv()")
    return float(math.ceil(a / b))


FUNCTIONS = {
    "sum": _fn_sum,
    "len": _fn_len,
    "max": lambda a: max(_numbers_of(a, "max")),
    "min": lambda a: min(_numbers_of(a, "min")),
    "ceil": _fn_one("ceil", math.ceil),
    "floor": _fn_one("floor", math.floor),
    "cdiv": _fn_cdiv,
}


def _convert_dim(name, v):
    """Dims arrive as JSON values: ints, floats, bools, nested lists."""
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, (list, tuple)):
        return [_convert_dim(name, x) for x in v]
    raise ExprError("dim %s has unsupported value %r" % (name, v))


class _Parser:
    def __init__(self, tokens, dims):
        self.toks = tokens
        self.i = 0
        self.dims = dims
        # The top-level expression is depth 0: the cap counts nested brackets
        # (and unary chains), 32 allowed, as in the C++ evaluator.
        self.depth = -1

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, op=None):
        t = self.peek()
        if t[0] is None:
            raise ExprError("unexpected end of expression")
        if op is not None and t != ("op", op):
            raise ExprError("expected %r, found %r" % (op, t[1]))
        self.i += 1
        return t

    def at(self, *ops):
        t = self.peek()
        return t[0] == "op" and t[1] in ops

    def enter(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExprError("expression nested deeper than %d" % MAX_DEPTH)

    # Each rule parses now and returns a thunk that evaluates later, so that
    # '&&', '||' and '?:' short-circuit exactly like the C++ evaluator: an
    # untaken branch is parsed (syntax errors still count) but never evaluated.
    def expr(self):
        self.enter()
        try:
            c = self.or_()
            if self.at("?"):
                self.take("?")
                a = self.expr()
                self.take(":")
                b = self.expr()
                return lambda: a() if _need_bool(c(), "'?:' condition") else b()
            return c
        finally:
            self.depth -= 1

    def or_(self):
        v = self.and_()
        while self.at("||"):
            self.take()
            r = self.and_()
            v = (lambda l, r: lambda: _need_bool(l(), "'||'") or _need_bool(r(), "'||'"))(v, r)
        return v

    def and_(self):
        v = self.cmp()
        while self.at("&&"):
            self.take()
            r = self.cmp()
            v = (lambda l, r: lambda: _need_bool(l(), "'&&'") and _need_bool(r(), "'&&'"))(v, r)
        return v

    def cmp(self):
        v = self.sum()
        if self.at("==", "!=", "<", "<=", ">", ">="):
            op = self.take()[1]
            r = self.sum()
            return lambda: _compare(op, v(), r())
        return v

    def sum(self):
        v = self.prod()
        while self.at("+", "-"):
            op = self.take()[1]
            r = self.prod()
            v = (lambda op, l, r: lambda: _arith(op, l(), r()))(op, v, r)
        return v

    def prod(self):
        v = self.unary()
        while self.at("*", "/", "//", "%"):
            op = self.take()[1]
            r = self.unary()
            v = (lambda op, l, r: lambda: _arith(op, l(), r()))(op, v, r)
        return v

    def unary(self):
        if self.at("-", "!"):
            op = self.take()[1]
            self.enter()
            try:
                v = self.unary()
            finally:
                self.depth -= 1
            if op == "-":
                return lambda: -_need_num(v(), "unary '-'")
            return lambda: not _need_bool(v(), "'!'")
        return self.power()

    def power(self):
        v = self.atom()
        if self.at("**"):
            self.take()
            self.enter()
            try:
                r = self.unary()
            finally:
                self.depth -= 1
            return lambda: _arith("**", v(), r())
        return v

    def atom(self):
        kind, val = self.take()
        if kind == "num":
            return lambda: val
        if kind == "name":
            if val == "true":
                return lambda: True
            if val == "false":
                return lambda: False
            if self.at("("):
                fn = FUNCTIONS.get(val)
                if fn is None:
                    raise ExprError("unknown function %r (known: %s)" % (val, ", ".join(sorted(FUNCTIONS))))
                self.take("(")
                args = [self.expr()]
                while self.at(","):
                    self.take()
                    args.append(self.expr())
                self.take(")")
                return lambda: _finite(fn([a() for a in args]))
            if val not in self.dims:
                raise ExprError("unknown name %r (dims: %s)" % (val, ", ".join(sorted(self.dims)) or "none"))
            # A dim's value is checked only when used: unrelated dims may hold anything.
            return lambda: _convert_dim(val, self.dims[val])
        if (kind, val) == ("op", "("):
            v = self.expr()
            self.take(")")
            return v
        raise ExprError("unexpected %r" % (val,))


def _compare(op, v, r):
    if op in ("==", "!="):
        if _type_name(v) != _type_name(r) or isinstance(v, list):
            raise ExprError("'%s' compares a %s with a %s" % (op, _type_name(v), _type_name(r)))
        return (v == r) if op == "==" else (v != r)
    a, b = _need_num(v, "'%s'" % op), _need_num(r, "'%s'" % op)
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _arith(op, v, r):
    a, b = _need_num(v, "'%s'" % op), _need_num(r, "'%s'" % op)
    if op == "**":
        try:
            return _finite(math.pow(a, b))
        except (OverflowError, ValueError, ZeroDivisionError):
            raise ExprError("'**' has no finite result for %g ** %g" % (a, b))
    if op == "+":
        return _finite(a + b)
    if op == "-":
        return _finite(a - b)
    if op == "*":
        return _finite(a * b)
    if b == 0:
        raise ExprError("division by zero")
    if op == "/":
        return _finite(a / b)
    if op == "//":
        return _finite(float(math.floor(a / b)))
    return _finite(a - b * math.floor(a / b))


def evaluate(text, dims):
    """Value of `text` with `dims` bound: float, bool or list."""
    bound = dict(dims)
    p = _Parser(tokenize(text), bound)
    thunk = p.expr()
    if p.i != len(p.toks):
        raise ExprError("unexpected %r after the end of the expression" % (p.toks[p.i][1],))
    return thunk()


def work(text, dims):
    """canonical_work: a finite number > 0."""
    v = evaluate(text, dims)
    if not _is_num(v) or not v > 0:
        raise ExprError("canonical_work %r must be a number > 0, got %r" % (text, v))
    return v


def shape_entry(entry, dims):
    """One entry of a tensorSpec shape: an int, or an expression giving an integer >= 0."""
    if isinstance(entry, bool):
        raise ExprError("shape entry %r is a boolean" % (entry,))
    if isinstance(entry, int):
        v = float(entry)
    else:
        v = evaluate(entry, dims)
    if not _is_num(v) or v < 0 or v != math.floor(v):
        raise ExprError("shape entry %r must be an integer >= 0, got %r" % (entry, v))
    return int(v)

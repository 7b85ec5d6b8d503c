# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the blocktune authors
"""A Triton launch grid as spec expressions (docs/spec.md#expressions), for the spec the
decorator generates: the user's grid (a tuple, or a callable of META as Triton takes) becomes one
expression per dimension over the config's parameters and the problem variables, so that the
engine computes each config's grid itself.

First the callable is evaluated with symbols in META (Sym: arithmetic and Triton's cdiv work on
them); the expressions are then checked against the callable's own numbers for every config. A
grid that symbols cannot follow (a comparison, next_power_of_2, int()) is written as a table
instead: `BLOCK_M == 64 && BLOCK_N == 128 ? 64 : ...` with this call's numbers."""


class Sym:
    """An integer expression: its text and a function of the environment that evaluates it."""
    __slots__ = ("text", "f")

    def __init__(self, text, f):
        self.text, self.f = text, f

    @staticmethod
    def var(name):
        return Sym(name, lambda env: env[name])

    @staticmethod
    def of(x):
        if isinstance(x, Sym):
            return x
        if isinstance(x, bool) or not isinstance(x, int):
            raise TypeError("not an integer")
        return Sym(str(x) if x >= 0 else f"({x})", lambda env: x)

    def _op(self, other, op, fn, swap=False):
        o = Sym.of(other)
        a, b = (o, self) if swap else (self, o)
        return Sym(f"({a.text} {op} {b.text})", lambda env: fn(a.f(env), b.f(env)))

    def __add__(self, o): return self._op(o, "+", lambda x, y: x + y)
    def __radd__(self, o): return self._op(o, "+", lambda x, y: x + y, True)
    def __sub__(self, o): return self._op(o, "-", lambda x, y: x - y)
    def __rsub__(self, o): return self._op(o, "-", lambda x, y: x - y, True)
    def __mul__(self, o): return self._op(o, "*", lambda x, y: x * y)
    def __rmul__(self, o): return self._op(o, "*", lambda x, y: x * y, True)
    def __floordiv__(self, o): return self._op(o, "//", lambda x, y: x // y)
    def __rfloordiv__(self, o): return self._op(o, "//", lambda x, y: x // y, True)

    def __bool__(self):
        raise TypeError("a symbol has no truth value")

    __index__ = __int__ = __bool__


def _dims(g):
    g = tuple(g) if isinstance(g, (tuple, list)) else (g,)
    if not 1 <= len(g) <= 3:
        raise ValueError(f"a grid has 1 to 3 dimensions, not {len(g)}")
    return g + (1,) * (3 - len(g))


def concrete(grid, meta):
    """The grid (x, y, z) of one launch, as Triton computes it."""
    g = _dims(grid(meta) if callable(grid) else grid)
    for v in g:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"a grid dimension must be an int, not {type(v).__name__} ({v!r})")
    return g


def expressions(grid, metas, params, scalars):
    """The grid's three expressions. metas: one META dict per config (the call's arguments and
    the config's values); params: the config parameter names; scalars: the scalar arguments that
    are problem variables (name -> value)."""
    wants = [concrete(grid, m) for m in metas]
    if not callable(grid):
        return [str(v) for v in wants[0]]
    try:
        sym_meta = dict(metas[0])
        for n in params:
            sym_meta[n] = Sym.var(n)
        for n in scalars:
            sym_meta[n] = Sym.var(n)
        syms = [Sym.of(v) for v in _dims(grid(sym_meta))]
        for m, want in zip(metas, wants):
            env = dict(scalars)
            env.update({n: m[n] for n in params})
            if tuple(s.f(env) for s in syms) != want:
                raise ValueError("the symbols disagree with the grid")
        return [s.text for s in syms]
    except (TypeError, ValueError, ArithmeticError, KeyError):
        pass
    out = []
    for d in range(3):
        vals = [w[d] for w in wants]
        if len(set(vals)) == 1:
            out.append(str(vals[0]))
            continue
        text = str(vals[-1])
        for m, v in reversed(list(zip(metas[:-1], vals[:-1]))):
            cond = " && ".join(f"{n} == {m[n]}" for n in params)
            text = f"({cond}) ? {v} : ({text})"
        out.append(text)
    return out

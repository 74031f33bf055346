"""Formulas and numbers in a learner's answer, checked as formulas and numbers (issue 47): find the arithmetic in a
sentence, parse it without recursion (shunting-yard over a bounded token list), and compare two formulas by
evaluating both at sample values of their variables. Understands the usual ways of writing the speedup formulas:
(1 - a^(K+1))/(1 - a), (1-a**(K+1))/(1-a), \\frac{1 - a^{K+1}}{1 - a}, 1 + a + a^2 + ... + a^K, sum_{i=0}^K a^i,
implicit products ((1 - a)(Kc + 1)), α/γ for a/K, unicode minus and times signs."""
from __future__ import annotations

import math
import re

MAX_TEXT = 400  # characters of one formula: longer is not a formula a learner says aloud
MAX_TOKENS = 200
# the variables of the project's formulas; W, N, G: lookahead's window, n-gram size and guesses per step
VARS = {"a", "K", "c", "v", "n", "B", "L", "T", "W", "N", "G"}
SAMPLES = [dict(a=a, K=K, c=c, v=v, n=K, B=8, L=12, T=1.0, W=W, N=N, G=G) for a, K, c, v, W, N, G in
           ((0.3, 2, 0.05, 1.0, 5, 4, 5), (0.55, 3, 0.2, 1.3, 3, 2, 7), (0.8, 5, 0.1, 1.1, 7, 5, 2),
            (0.7, 4, 0.02, 1.0, 4, 3, 3))]

_UNICODE = {"−": "-", "–": "-", "×": "*", "·": "*", "⋅": "*", "÷": "/", "α": "a", "γ": "K", "²": "^2", "³": "^3",
            "…": "...", "\u2009": " ", "\u00a0": " "}
_SERIES = re.compile(r"^1\s*\+\s*a\s*\+(?:\s*a\s*\^\s*2\s*\+)?\s*(?:\.\.\.|\\cdots|\\dots|\\ldots)\s*"
                     r"\+\s*a\s*\^\s*\(?\s*([^()]+?)\s*\)?\s*$")
_SUM_FROM_0 = re.compile(r"(?:\\sum|sum|Σ|∑)\s*_\s*[{(]?\s*i\s*=\s*0\s*[})]?")  # -> SUMI0, before any '=' split
_SUM = re.compile(r"^SUMI0\s*\^\s*[{(]?\s*([^{}()]+?)\s*[})]?\s*a\s*\^\s*[{(]?\s*i\s*[})]?$")
_BRACED_POWER = re.compile(r"\^\s*\{([^{}]*)\}")
_FRAC = re.compile(r"\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?|\.\d+)|([A-Za-z])|(\*\*|[-+*/^()]))")
_PREC = {"+": 1, "-": 1, "*": 2, "/": 2, "u-": 3, "^": 4}


def normalize(text: str) -> str:
    """Unicode signs, LaTeX fractions and braces to plain arithmetic (iteratively: innermost \\frac first)."""
    s = str(text)[:MAX_TEXT]
    for k, v in _UNICODE.items():
        s = s.replace(k, v)
    s = s.replace("\\alpha", "a").replace("\\gamma", "K").replace("\\left", "").replace("\\right", "")
    s = _SUM_FROM_0.sub("SUMI0", s)
    s = s.replace("\\cdot", "*").replace("\\times", "*").replace("**", "^")
    for _ in range(8):  # bounded: exponents in braces first (innermost), so \frac sees brace-free arguments
        s, n = _BRACED_POWER.subn(r"^(\1)", s)
        if not n:
            break
    for _ in range(8):  # bounded: a learner's formula nests a few fractions at most
        s, n = _FRAC.subn(r"((\1)/(\2))", s)
        if not n:
            break
    return s


def _tokens(s: str) -> list[str] | None:
    out, i = [], 0
    while i < len(s):
        if s[i].isspace():
            i += 1
            continue
        m = _TOKEN.match(s, i)
        if not m or m.end() == i:
            return None
        num, var, op = m.groups()
        out.append(num if num else var if var else op)
        i = m.end()
        if len(out) > MAX_TOKENS:
            return None
    return out


def _with_products(tokens: list[str]) -> list[str]:
    """Implicit multiplication: 'Kc' -> K*c, '(1 - a)(Kc + 1)' -> (1 - a)*(Kc + 1), '2a' -> 2*a."""
    out: list[str] = []
    for t in tokens:
        operand_start = t == "(" or t[0].isdigit() or t[0] == "." or t.isalpha()
        if out and operand_start and (out[-1] == ")" or out[-1][0].isdigit() or out[-1].isalpha()):
            out.append("*")
        out.append(t)
    return out


def compile_formula(text: str):
    """The formula as a postfix token list, or None when it is not arithmetic in the known variables."""
    s = normalize(text).strip().rstrip(".,;:")
    m = _SERIES.match(s) or _SUM.match(s)
    if m:  # the geometric series written out: sum_{i=0}^{E} a^i = (1 - a^(E+1)) / (1 - a)
        s = f"(1 - a^(({m.group(1)}) + 1))/(1 - a)"
    s = s.replace("{", "(").replace("}", ")")
    tokens = _tokens(s)
    if not tokens or any(t.isalpha() and t not in VARS for t in tokens):
        return None
    tokens = _with_products(tokens)
    out, ops, prev = [], [], None
    for t in tokens:  # shunting-yard: no recursion, at most MAX_TOKENS steps
        if t[0].isdigit() or t[0] == "." or t.isalpha():
            out.append(t)
        elif t == "(":
            ops.append(t)
        elif t == ")":
            while ops and ops[-1] != "(":
                out.append(ops.pop())
            if not ops:
                return None
            ops.pop()
        else:
            op = "u-" if t == "-" and (prev is None or prev in _PREC or prev == "(") else t
            if op == "+" and (prev is None or prev in _PREC or prev == "("):  # a unary plus changes nothing
                prev = t
                continue
            if op == "u-":  # a prefix operator pops nothing: a^-1 is a^(-1), -a^2 is -(a^2)
                ops.append(op)
                prev = t
                continue
            while ops and ops[-1] != "(" and (_PREC[ops[-1]] > _PREC[op] or
                                              _PREC[ops[-1]] == _PREC[op] and op != "^" and op != "u-"):
                out.append(ops.pop())
            ops.append(op)
        prev = t
    while ops:
        if ops[-1] == "(":
            return None
        out.append(ops.pop())
    return out if evaluate(out, SAMPLES[0]) is not None else None


def evaluate(postfix, env: dict) -> float | None:
    stack: list[float] = []
    try:
        for t in postfix:
            if t[0].isdigit() or t[0] == ".":
                stack.append(float(t))
            elif t.isalpha():
                stack.append(float(env[t]))
            elif t == "u-":
                stack.append(-stack.pop())
            else:
                y, x = stack.pop(), stack.pop()
                if t == "^" and abs(y) > 64:
                    return None
                stack.append(x + y if t == "+" else x - y if t == "-" else x * y if t == "*" else
                             x / y if t == "/" else x ** y)
    except (IndexError, ZeroDivisionError, OverflowError, KeyError, TypeError):
        return None
    if len(stack) != 1 or isinstance(stack[0], complex) or not math.isfinite(stack[0]):
        return None
    return stack[0]


def variables(postfix) -> set[str]:
    return {t for t in postfix if t.isalpha() and t != "u-"}


def same_formula(a, b) -> bool:
    """Two compiled formulas agree at every sample point (to 1e-9 relative)."""
    for env in SAMPLES:
        x, y = evaluate(a, env), evaluate(b, env)
        if x is None or y is None or not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12):
            return False
    return True


# ---------------------------------------------------------------- finding formulas and numbers in prose
_SPAN = re.compile(r"(?:SUMI0|\\frac|\d+(?:\.\d+)?|(?<![A-Za-z])[aiKcvnBLTWNG](?![A-Za-z])|[().+\-*/^{}_=\\\s])+")
_NUMBER = re.compile(r"(?<![\w.])[-−]?\d+(?:\.\d+)?(?![\w.]*[A-Za-z])")
_ASSIGN = re.compile(r"\b([aKcvWNGαγ]|alpha|gamma)\s*=\s*(\d+(?:\.\d+)?)")
_RESULT = re.compile(r"(?:\bgives?\b|\bgiving\b|\byields?\b|[=→≈:])\s*(\d+\.\d+)")


def formulas_in(text: str) -> list:
    """Compiled formulas found in a sentence: spans of arithmetic holding a variable and an operator that make
    a whole formula (each side of an '=' tried on its own)."""
    found = []
    for m in _SPAN.finditer(normalize(text)):
        for part in m.group(0).split("="):
            part = part.strip(" .,;:")
            # a formula holds an operator beyond + and - (or a series), or adds or subtracts two variables
            # ("W + N + G"); a bare number is not one, nor "K + 1" (prose says "the K + 1 positions"), nor two
            # operands apart with nothing between them ("a K of 4": the article a, not a times K)
            if len(part) < 3:
                continue
            f = compile_formula(part)
            if f is not None and (re.search(r"[\^/*(]|\.\.\.", part) or (
                    len(variables(f)) >= 2 and re.search(r"[+-]", part)
                    and not re.search(r"[A-Za-z0-9)]\s+[A-Za-z0-9(]", part))):
                found.append(f)
    return found


def numbers_in(text: str) -> list[str]:
    """The numbers a sentence states, as written (their decimals say how precisely)."""
    return [x.replace("−", "-") for x in _NUMBER.findall(normalize(text))]


def results(text: str) -> list[float]:
    """The results a rubric point states: a decimal right after 'gives', '=', '→', '≈' or ':' that is not a
    parameter being set (a = 0.7) and not inside a given tuple (p = (0.51, 0.49))."""
    text = normalize(text)
    params = {m.start(2) for m in _ASSIGN.finditer(text)}
    return [float(m.group(1)) for m in _RESULT.finditer(text) if m.start(1) not in params]


def assignments(text: str) -> dict[str, float]:
    """'a = 0.7, K = 4' -> {'a': 0.7, 'K': 4.0}: the parameters a point or an answer sets."""
    out = {}
    for name, value in _ASSIGN.findall(normalize(text)):
        out[{"alpha": "a", "gamma": "K"}.get(name.strip(), name.strip())] = float(value)
    return out


def matches(stated: str | float, target: float) -> bool:
    """A stated number matches a rubric's number to the stated number's own precision, and that precision is at
    least two decimals where the rubric's has them: 2.77 and 2.773 match 2.7731, 2.8 does not."""
    text = stated if isinstance(stated, str) else f"{stated:.6g}"
    try:
        value = float(text)
    except ValueError:
        return False
    decimals = len(text.split(".")[1]) if "." in text else 0
    tdecimals = len(f"{target:g}".split(".")[1]) if "." in f"{target:g}" else 0
    if decimals < min(2, tdecimals):
        return False
    return abs(value - target) <= 0.5 * 10 ** -min(decimals, max(tdecimals, decimals)) + 1e-9

"""A `medusa_choices` list typed by a person: parsed and checked, with a message that says what is wrong.

Medusa's trees are lists of paths: (i_1, ..., i_d) is the node holding head d's i_d-th most likely token
under the node (i_1, ..., i_{d-1}); (0,) is head 1's top-1, (1,) its runner-up, (0, 0) head 2's top-1 under
(0,). Every path's parent must be in the list too (the tree needs it to hang from), anywhere in the list.

The text comes from a text box or a shared link, so it is hostile until parsed: its length is bounded first,
and it is read by a flat scanner over a two-level grammar (a list of paths, a path of digits), never by
ast.literal_eval, whose parser recurses once per nested operator ('-' * 5000 + '1' overflowed the stack,
'-' * 100000 ran out of memory) and builds whatever Python value it is given."""
from __future__ import annotations

from specviz.errors import SpecVizError

MAX_CHARS = 4000  # 64 paths of four 1-digit indices written "(0, 0, 0, 0), " take ~900: room for spaces
MAX_DIGITS = 4  # an index is a rank among a head's top-k (k <= 10 here): longer numbers are refused unread
EXAMPLE = "[(0,), (1,), (0, 0)]"
CLOSE = {"[": "]", "(": ")"}


def _fail(what: str) -> SpecVizError:
    return SpecVizError(f"medusa_choices must be a list of paths such as {EXAMPLE}: {what}.")


def _shown(c: str) -> str:
    return repr(c) if c.isprintable() else f"U+{ord(c):04X}"


def _tokens(text: str) -> list[tuple[str, int | None, int]]:
    """(kind, value, position): kind one of '[', ']', '(', ')', ',' and 'int'. Whitespace is skipped;
    anything else is refused where it stands (a '-' gets its own message: ranks are never negative)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "[](),":
            out.append((c, None, i))
            i += 1
        elif "0" <= c <= "9":
            j = i
            while j < n and "0" <= text[j] <= "9":
                j += 1
            if j - i > MAX_DIGITS:
                raise _fail(f"the number at character {i + 1} has {j - i} digits (an index is a rank such as 0 or 3)")
            out.append(("int", int(text[i:j]), i))
            i = j
        elif c in "-+":
            raise _fail(f"'{c}' at character {i + 1}: an index is a rank, a whole number 0 or more, with no sign")
        else:
            raise _fail(f"unexpected {_shown(c)} at character {i + 1}")
    return out


def _read(tokens: list[tuple[str, int | None, int]], length: int) -> list[tuple[int, ...]]:
    """The two-level grammar  list := open (path (',' path)* ','?)? close,  path := open int (',' int)* ','?
    close, with '[' / '(' matched by their own closer; one pass, no recursion."""
    end = ("end", None, length)
    at = 0

    def peek():
        return tokens[at] if at < len(tokens) else end

    def where(tok) -> str:
        return "the end" if tok[0] == "end" else f"'{tok[0] if tok[0] != 'int' else tok[1]}' at character {tok[2] + 1}"

    first = peek()
    if first[0] not in CLOSE:
        raise _fail(f"expected '[' to open the list, found {where(first)}")
    closer, at = CLOSE[first[0]], at + 1
    paths: list[tuple[int, ...]] = []
    while True:
        tok = peek()
        if tok[0] == closer:
            at += 1
            break
        if tok[0] not in CLOSE:
            what = "a number outside any path (write (0,) for a one-token path)" if tok[0] == "int" else where(tok)
            raise _fail(f"expected a path such as (0, 1), found {what}")
        inner, at = CLOSE[tok[0]], at + 1
        path: list[int] = []
        while True:
            tok = peek()
            if tok[0] == "int":
                path.append(tok[1])
                at += 1
                tok = peek()
                if tok[0] == ",":
                    at += 1
                    continue
            if tok[0] == inner:
                at += 1
                break
            if tok[0] in CLOSE:
                raise _fail(f"a path holds numbers only, found {where(tok)} inside one "
                            f"(one level of brackets per path)")
            raise _fail(f"expected a number, ',' or '{inner}' in a path, found {where(tok)}")
        if not path:
            raise _fail(f"an empty path ends at character {tok[2] + 1} (a path names at least one candidate)")
        paths.append(tuple(path))
        tok = peek()
        if tok[0] == ",":
            at += 1
        elif tok[0] != closer:
            raise _fail(f"expected ',' or '{closer}' after a path, found {where(tok)}")
    if at < len(tokens):
        raise _fail(f"text after the list's closing '{closer}': {where(tokens[at])}")
    return paths


def parse_paths(text: str) -> list[tuple[int, ...]]:
    """'[(0,), (1,), (0, 0)]' -> [(0,), (1,), (0, 0)]: the syntax only (lists or tuples, either bracket, trailing
    commas allowed). Raises SpecVizError with one line on anything else, on text over MAX_CHARS before reading it."""
    if len(text) > MAX_CHARS:
        raise _fail(f"{len(text):,} characters, at most {MAX_CHARS:,}")
    tokens = _tokens(text)
    if not tokens:
        raise SpecVizError(f"medusa_choices must be a non-empty list of paths such as {EXAMPLE}.")
    return _read(tokens, len(text))


def parse_choices(text: str, num_heads: int, top_k: int = 10, max_nodes: int = 64) -> tuple[tuple[int, ...], ...]:
    """'[(0,), (1,), (0, 0)]' -> ((0,), (1,), (0, 0)). Raises SpecVizError on anything else: not a list of
    tuples of non-negative ints, an index outside [0, top_k), a path longer than num_heads, a duplicate, a path
    whose parent is missing, more than max_nodes paths."""
    paths = parse_paths(text)
    if not paths:
        raise SpecVizError(f"medusa_choices must be a non-empty list of paths such as {EXAMPLE}.")
    if len(paths) > max_nodes:
        raise SpecVizError(f"{len(paths)} paths: at most {max_nodes} (each is a node the target verifies).")
    seen: set[tuple[int, ...]] = set()
    for path in paths:
        if any(not 0 <= i < top_k for i in path):
            raise SpecVizError(f"{path}: every index must be in 0..{top_k - 1} (the i-th most likely candidate).")
        if len(path) > num_heads:
            raise SpecVizError(f"{path} is {len(path)} deep, but there are only {num_heads} heads.")
        if path in seen:
            raise SpecVizError(f"{path} appears twice.")
        seen.add(path)
    missing = [p for p in paths if len(p) > 1 and p[:-1] not in seen]
    if missing:
        raise SpecVizError(f"{missing[0]} hangs from {missing[0][:-1]}, which is not in the list: add the parent.")
    return tuple(paths)

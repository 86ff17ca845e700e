"""The shape of a `query:` export's SELECT, read without a database: its result columns and the
relations they come from, so rivet's type of each can be derived from the trusted catalog. A
query a pull request wrote is only ever parsed here — it never reaches a source.

Deliberately narrow: one `SELECT [DISTINCT] <items> FROM <tables and joins> [WHERE ...]`.
An item is read when it is `*`, `t.*`, a column (`c`, `t.c`), a cast of one (`c::T`,
`CAST(c AS T)`) or `count(...)`, each with an optional alias; anything else (another function,
arithmetic, a literal, a subquery) is an `Other` item, whose type rivet-ci does not derive. A
query this module cannot read at all (`WITH`, `UNION`, a derived table with `*`, ...) is None.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

Dialect = Literal["postgres", "mysql"]

# --- tokens ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Token:
    kind: Literal["word", "quoted", "string", "number", "punct"]
    text: str  # a quoted identifier without its quotes; a word as written
    start: int
    end: int

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.lower() in words


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_PUNCT = ("::", "<=", ">=", "<>", "!=", "||", "(", ")", ",", ".", "*", ";", "+", "-", "/", "=",
          "<", ">", "[", "]", "%", ":", "|", "&", "^", "~", "!", "@", "?")
_PUNCT_AT = re.compile("|".join(re.escape(p) for p in _PUNCT))  # the longest first


class _UnreadableError(Exception):
    """A query this module does not read."""


def tokenize(sql: str, dialect: Dialect) -> list[Token]:
    """The tokens of one statement (comments skipped). Raises _UnreadableError on text it does not
    know how a server would read (a dollar-quoted string, an unterminated literal)."""
    tokens: list[Token] = []
    i, n = 0, len(sql)
    ident_quote = '"' if dialect == "postgres" else "`"
    while i < n:
        c = sql[i]
        if c.isspace():
            i += 1
        elif sql.startswith("--", i) or (dialect == "mysql" and c == "#"):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            if end < 0:
                raise _UnreadableError("an unterminated comment")
            i = end + 2
        elif c == ident_quote:
            j, text = _quoted(sql, i, c)
            tokens.append(Token("quoted", text, i, j))
            i = j
        elif c == "'" or (dialect == "mysql" and c == '"'):
            j, text = _quoted(sql, i, c, backslash=dialect == "mysql")
            tokens.append(Token("string", text, i, j))
            i = j
        elif c == "$" and dialect == "postgres":
            raise _UnreadableError("a dollar-quoted string or a parameter")
        elif (match := _WORD.match(sql, i)) is not None:
            if dialect == "postgres" and match.group().lower() in ("e", "u&", "b", "x") and \
                    sql.startswith("'", match.end()):
                raise _UnreadableError("an escaped string literal")
            tokens.append(Token("word", match.group(), i, match.end()))
            i = match.end()
        elif (match := _NUMBER.match(sql, i)) is not None:
            tokens.append(Token("number", match.group(), i, match.end()))
            i = match.end()
        elif (match := _PUNCT_AT.match(sql, i)) is not None:
            tokens.append(Token("punct", match.group(), i, match.end()))
            i = match.end()
        else:
            raise _UnreadableError(f"the character {c!r}")
    return tokens


def _quoted(sql: str, i: int, quote: str, *, backslash: bool = False) -> tuple[int, str]:
    out: list[str] = []
    j = i + 1
    while j < len(sql):
        c = sql[j]
        if backslash and c == "\\" and j + 1 < len(sql):
            out.append(sql[j + 1])
            j += 2
            continue
        if c == quote:
            if sql.startswith(quote, j + 1):
                out.append(quote)
                j += 2
                continue
            return j + 1, "".join(out)
        out.append(c)
        j += 1
    raise _UnreadableError("an unterminated quoted text")


def _at_top(tokens: Sequence[Token], wanted: Callable[[Token], bool]) -> list[int]:
    """The positions of the tokens `wanted` picks outside every parenthesis and bracket."""
    found: list[int] = []
    depth = 0
    for j, tok in enumerate(tokens):
        if tok.kind == "punct" and tok.text in "([":
            depth += 1
        elif tok.kind == "punct" and tok.text in ")]":
            depth -= 1
        elif depth == 0 and wanted(tok):
            found.append(j)
    return found


def _last_at_top(tokens: Sequence[Token], wanted: Callable[[Token], bool]) -> int | None:
    found = _at_top(tokens, wanted)
    return found[-1] if found else None


def _punct(text: str) -> Callable[[Token], bool]:
    return lambda tok: tok.kind == "punct" and tok.text == text


def _word(word: str) -> Callable[[Token], bool]:
    return lambda tok: tok.is_word(word)


# --- the parse ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Name:
    """An identifier as the server reads it: `text` as written, `quoted` when it was."""

    text: str
    quoted: bool


@dataclass(frozen=True)
class TableRef:
    schema: Name | None
    name: Name
    alias: Name | None


@dataclass(frozen=True)
class Star:
    qualifier: Name | None  # `t.*`: t; `*`: None


@dataclass(frozen=True)
class ColumnRef:
    qualifier: tuple[Name, ...]  # `t.c`: (t,); `s.t.c`: (s, t); `c`: ()
    column: Name


@dataclass(frozen=True)
class Cast:
    operand: ColumnRef | Cast | Other
    type_words: tuple[str, ...]  # the target type, lowercased words and punctuation


@dataclass(frozen=True)
class Count:
    pass


@dataclass(frozen=True)
class Other:
    pass


Expression = ColumnRef | Cast | Count | Other


@dataclass(frozen=True)
class Item:
    """One select-list item: its expression, its alias and its text as written."""

    expression: Expression
    alias: Name | None
    text: str


@dataclass(frozen=True)
class Select:
    items: tuple[Item | Star, ...]
    tables: tuple[TableRef, ...]
    # The FROM clause also reads something that is not a named relation (a derived table, a
    # function): an unqualified column may come from it.
    opaque_from: bool
    merges_columns: bool  # a join `USING (...)` or NATURAL: `*` merges the joined columns


_CLAUSES = frozenset({"where", "group", "having", "order", "limit", "offset", "fetch",
                      "window", "for", "lock", "into", "procedure", "returning"})
_SET_OPERATIONS = frozenset({"union", "intersect", "except", "minus"})
_JOIN_WORDS = frozenset({"join", "inner", "left", "right", "full", "outer", "cross", "natural",
                         "straight_join"})
_NOT_ALIAS = _CLAUSES | _SET_OPERATIONS | _JOIN_WORDS | frozenset(
    {"on", "using", "as", "from", "select", "and", "or", "not", "is", "null", "then", "else",
     "end", "when", "case", "distinct", "all", "only", "lateral"})


def parse_select(sql: str, dialect: Dialect) -> Select | None:
    """The select list and FROM clause of a plain SELECT, or None when it is not one this
    module reads (see the module)."""
    try:
        tokens = tokenize(sql, dialect)
        while tokens and tokens[-1].kind == "punct" and tokens[-1].text == ";":
            tokens.pop()
        return _Parser(sql, tokens, dialect).select()
    except _UnreadableError:
        return None


class _Parser:
    def __init__(self, sql: str, tokens: list[Token], dialect: Dialect) -> None:
        self.sql, self.tokens, self.dialect = sql, tokens, dialect

    def select(self) -> Select:
        t = self.tokens
        if not t or not t[0].is_word("select"):
            raise _UnreadableError("not a SELECT")
        if any(tok.kind == "punct" and tok.text == ";" for tok in t):
            raise _UnreadableError("more than one statement")
        if _at_top(t, lambda tok: tok.kind == "word" and tok.text.lower() in _SET_OPERATIONS):
            raise _UnreadableError("a set operation")
        i = 1
        if i < len(t) and t[i].is_word("all"):
            i += 1
        elif i < len(t) and t[i].is_word("distinct"):
            i += 1
            if self.dialect == "postgres" and i < len(t) and t[i].is_word("on"):
                i = _close(t, i + 1)
        from_at = self._top_level(i, lambda tok: tok.is_word("from"))
        if from_at is None:
            raise _UnreadableError("no FROM")
        items = tuple(self._item(part) for part in self._split(i, from_at))
        end = self._top_level(from_at + 1, lambda tok: tok.kind == "word" and
                              tok.text.lower() in _CLAUSES) or len(t)
        tables, opaque, merges = self._from(from_at + 1, end)
        return Select(items, tables, opaque, merges)

    # -- helpers over the token list --

    def _top_level(self, start: int, wanted: Callable[[Token], bool]) -> int | None:
        found = _at_top(self.tokens[start:], wanted)
        return start + found[0] if found else None

    def _split(self, start: int, end: int) -> list[list[Token]]:
        tokens = self.tokens[start:end]
        cuts = [-1, *_at_top(tokens, _punct(",")), len(tokens)]
        parts = [tokens[a + 1:b] for a, b in pairwise(cuts)]
        if any(not p for p in parts):
            raise _UnreadableError("an empty select item")
        return parts

    # -- the select list --

    def _item(self, tokens: list[Token]) -> Item | Star:
        if len(tokens) == 1 and tokens[0].kind == "punct" and tokens[0].text == "*":
            return Star(None)
        if (len(tokens) == 3 and tokens[2].kind == "punct" and tokens[2].text == "*"
                and tokens[1].text == "." and tokens[0].kind in ("word", "quoted")):
            return Star(_name(tokens[0]))
        body, alias = _split_alias(tokens)
        text = self.sql[body[0].start:body[-1].end]
        return Item(_expression(body, self.dialect), alias, text)

    # -- the FROM clause --

    def _from(self, start: int, end: int) -> tuple[tuple[TableRef, ...], bool, bool]:
        t = self.tokens[start:end]
        tables: list[TableRef] = []
        opaque = merges = False
        i = 0
        expect_item = True
        while i < len(t):
            tok = t[i]
            if expect_item:
                if tok.is_word("only", "lateral"):
                    i += 1
                    continue
                if tok.kind == "punct" and tok.text == "(":
                    close = _close(t, i)
                    opaque = True
                    i = _skip_alias(t, close)
                elif tok.kind in ("word", "quoted"):
                    parts = [tok]
                    i += 1
                    while i + 1 < len(t) and t[i].text == "." and t[i].kind == "punct":
                        parts.append(t[i + 1])
                        i += 2
                    if i < len(t) and t[i].kind == "punct" and t[i].text == "(":
                        opaque = True  # a function in FROM
                        i = _skip_alias(t, _close(t, i))
                    else:
                        if len(parts) > 2 or any(p.kind not in ("word", "quoted") for p in parts):
                            raise _UnreadableError("a relation name")
                        alias, i = _alias_at(t, i)
                        schema = _name(parts[0]) if len(parts) == 2 else None
                        tables.append(TableRef(schema, _name(parts[-1]), alias))
                else:
                    raise _UnreadableError("a FROM item")
                expect_item = False
                continue
            if tok.kind == "punct" and tok.text == ",":
                expect_item, i = True, i + 1
            elif tok.kind == "word" and tok.text.lower() in _JOIN_WORDS:
                merges = merges or tok.is_word("natural")
                while i < len(t) and t[i].kind == "word" and t[i].text.lower() in _JOIN_WORDS:
                    i += 1
                expect_item = True
            elif tok.is_word("using"):
                merges = True
                i = _close(t, i + 1)
            elif tok.is_word("on"):
                i += 1  # the condition: skipped to the next join or comma
                depth = 0
                while i < len(t):
                    x = t[i]
                    if x.kind == "punct" and x.text == "(":
                        depth += 1
                    elif x.kind == "punct" and x.text == ")":
                        depth -= 1
                    elif depth == 0 and ((x.kind == "punct" and x.text == ",") or (
                            x.kind == "word" and x.text.lower() in _JOIN_WORDS)):
                        break
                    i += 1
            else:
                raise _UnreadableError("a FROM clause")
        if expect_item:
            raise _UnreadableError("an empty FROM item")
        return tuple(tables), opaque, merges


def _close(t: list[Token], i: int) -> int:
    if i >= len(t) or t[i].kind != "punct" or t[i].text != "(":
        raise _UnreadableError("expected (")
    depth = 0
    for j in range(i, len(t)):
        if t[j].kind == "punct" and t[j].text == "(":
            depth += 1
        elif t[j].kind == "punct" and t[j].text == ")":
            depth -= 1
            if depth == 0:
                return j + 1
    raise _UnreadableError("unbalanced parentheses")


def _alias_at(t: list[Token], i: int) -> tuple[Name | None, int]:
    if i < len(t) and t[i].is_word("as"):
        if i + 1 >= len(t) or t[i + 1].kind not in ("word", "quoted"):
            raise _UnreadableError("an alias")
        return _name(t[i + 1]), i + 2
    if i < len(t) and (t[i].kind == "quoted" or (
            t[i].kind == "word" and t[i].text.lower() not in _NOT_ALIAS)):
        return _name(t[i]), i + 1
    return None, i


def _skip_alias(t: list[Token], i: int) -> int:
    _, i = _alias_at(t, i)
    if i < len(t) and t[i].kind == "punct" and t[i].text == "(":  # column aliases
        i = _close(t, i)
    return i


def _name(tok: Token) -> Name:
    return Name(tok.text, tok.kind == "quoted")


def _split_alias(tokens: list[Token]) -> tuple[list[Token], Name | None]:
    """An item's expression and its alias (`expr AS a`, `expr a`)."""
    as_at = _last_at_top(tokens, _word("as"))
    if as_at is not None:
        if as_at != len(tokens) - 2 or tokens[-1].kind not in ("word", "quoted", "string"):
            raise _UnreadableError("an alias")
        if as_at == 0:
            raise _UnreadableError("an empty item")
        return tokens[:as_at], Name(tokens[-1].text, tokens[-1].kind != "word")
    last = tokens[-1]
    if len(tokens) >= 2 and (last.kind == "quoted" or (
            last.kind == "word" and last.text.lower() not in _NOT_ALIAS)):
        before = tokens[-2]
        ends_expression = (before.kind in ("word", "quoted", "number", "string") or
                           (before.kind == "punct" and before.text in (")", "]", "*")))
        # `x::timestamp with time zone` ends in words that are the type, not an alias
        if ends_expression and not (before.kind == "punct" and before.text == "*"
                                    and len(tokens) == 2) and not _in_cast_type(tokens):
            return tokens[:-1], _name(last)
    return tokens, None


def _in_cast_type(tokens: list[Token]) -> bool:
    """The item's last word belongs to a `::` cast's type name (`::double precision`)."""
    for j in range(len(tokens) - 1, -1, -1):
        tok = tokens[j]
        if tok.kind == "punct" and tok.text == "::":
            words = tuple(x.text.lower() for x in tokens[j + 1:])
            return any(words == form for form in _MULTIWORD_TYPES)
        if tok.kind != "word":
            return False
    return False


_MULTIWORD_TYPES = (("double", "precision"), ("character", "varying"),
                    ("timestamp", "with", "time", "zone"), ("timestamp", "without", "time",
                                                           "zone"),
                    ("time", "with", "time", "zone"), ("time", "without", "time", "zone"),
                    ("bit", "varying"))


def _expression(tokens: list[Token], dialect: Dialect) -> Expression:
    # a `::` cast (PostgreSQL): the operand before the last top-level `::`
    cast_at = _last_at_top(tokens, _punct("::"))
    if cast_at is not None and dialect == "postgres":
        operand = _expression(tokens[:cast_at], dialect) if cast_at else Other()
        return Cast(operand if not isinstance(operand, Count) else Other(),
                    _type_words(tokens[cast_at + 1:]))
    column = _column_ref(tokens)
    if column is not None:
        return column
    if (len(tokens) >= 6 and tokens[0].is_word("cast") and tokens[1].text == "("
            and tokens[-1].text == ")"):
        inner = tokens[2:-1]
        as_at = _last_at_top(inner, _word("as"))
        if as_at is not None and as_at > 0:
            operand = _expression(inner[:as_at], dialect)
            return Cast(operand if not isinstance(operand, Count) else Other(),
                        _type_words(inner[as_at + 1:]))
    if (len(tokens) >= 3 and tokens[0].is_word("count") and tokens[1].text == "("
            and tokens[1].kind == "punct" and _close(tokens, 1) == len(tokens)):
        return Count()
    return Other()


def _column_ref(tokens: list[Token]) -> ColumnRef | None:
    if len(tokens) % 2 == 0 or len(tokens) > 5:
        return None
    names = tokens[0::2]
    dots = tokens[1::2]
    if any(n.kind not in ("word", "quoted") for n in names):
        return None
    if any(d.kind != "punct" or d.text != "." for d in dots):
        return None
    if names[-1].kind == "word" and names[-1].text.lower() in _NOT_ALIAS:
        return None
    return ColumnRef(tuple(_name(n) for n in names[:-1]), _name(names[-1]))


def _type_words(tokens: list[Token]) -> tuple[str, ...]:
    if not tokens:
        raise _UnreadableError("a cast without a type")
    return tuple(tok.text.lower() if tok.kind != "quoted" else f'"{tok.text}"'
                 for tok in tokens)


# --- rivet's own single-table parse (PostgreSQL numeric precision) ----------------------------

def single_table(sql: str) -> tuple[Name | None, Name] | None:
    """The relation of `SELECT ... FROM [ONLY] [schema.]table [[AS] alias] [WHERE ...]`, read as
    rivet 0.32.2 reads it to look up a numeric column's precision: the first top-level FROM
    (outside parentheses and single-quoted text), one relation, no join or comma after it.
    None when rivet finds none — then no numeric column of the query has a precision."""
    text = sql
    at = _outer_from(text)
    if at is None:
        return None
    rest = text[at + 4:].lstrip(" \t\r\n")
    if _keyword_at(rest, "only"):
        rest = rest[4:].lstrip(" \t\r\n")
    first = _ident_piece(rest)
    if first is None:
        return None
    name1, rest = first
    rest = rest.lstrip(" \t\r\n")
    schema: Name | None = None
    name = name1
    if rest.startswith("."):
        second = _ident_piece(rest[1:].lstrip(" \t\r\n"))
        if second is None:
            return None
        schema, (name, rest) = name1, second
    rest = rest.lstrip(" \t\r\n")
    after_alias = _skip_table_alias(rest)
    if after_alias is None:
        return None
    if _join_or_comma(after_alias.lstrip(" \t\r\n")):
        return None
    return schema, name


_CLAUSE_AFTER_TABLE = ("where", "group", "having", "order", "limit", "offset", "fetch", "union",
                       "intersect", "except", "window", "for")
_JOINS_AFTER_TABLE = ("inner", "left", "right", "full", "cross", "natural", "join")


def _is_ident_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "_")


def _keyword_at(text: str, word: str, at: int = 0) -> bool:
    end = at + len(word)
    if text[at:end].lower() != word:
        return False
    before_ok = at == 0 or not _is_ident_char(text[at - 1])
    after_ok = end >= len(text) or not _is_ident_char(text[end])
    return before_ok and after_ok


def _outer_from(text: str) -> int | None:
    depth = 0
    quoted = False
    i = 0
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "'":
                if text.startswith("'", i + 1):
                    i += 2
                    continue
                quoted = False
            i += 1
            continue
        if c == "'":
            quoted = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth = max(depth - 1, 0)
        elif depth == 0 and _keyword_at(text, "from", i):
            return i
        i += 1
    return None


def _ident_piece(text: str) -> tuple[Name, str] | None:
    text = text.strip(" \t\r\n")
    if not text:
        return None
    if text.startswith('"'):
        out: list[str] = []
        j = 1
        while j < len(text):
            if text[j] == '"':
                if text.startswith('"', j + 1):
                    out.append('"')
                    j += 2
                    continue
                return Name("".join(out), True), text[j + 1:]
            out.append(text[j])
            j += 1
        return None
    if not (text[0].isascii() and (text[0].isalpha() or text[0] == "_")):
        return None
    j = 1
    while j < len(text) and _is_ident_char(text[j]):
        j += 1
    return Name(text[:j], False), text[j:]


def _join_or_comma(text: str) -> bool:
    return text.startswith(",") or any(_keyword_at(text, w) for w in _JOINS_AFTER_TABLE)


def _skip_table_alias(text: str) -> str | None:
    text = text.strip(" \t\r\n")
    if (not text or any(_keyword_at(text, w) for w in _CLAUSE_AFTER_TABLE)
            or _join_or_comma(text)):
        return text
    if _keyword_at(text, "as"):
        text = text[2:].strip(" \t\r\n")
    piece = _ident_piece(text)
    if piece is None:
        return None
    tail = piece[1].strip(" \t\r\n")
    return None if _join_or_comma(tail) else tail

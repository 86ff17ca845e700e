"""Safety of live preflight: vetting untrusted SQL and names, and keeping secrets out of output.

A pull request's config is untrusted and the source is usually a production replica, so nothing
from a config reaches the database unless it passed this module:

* :func:`vet_query` accepts exactly one read-only ``SELECT`` / ``WITH`` statement. It lexes the
  text the way the target database does (comments, string literals, quoted identifiers and, for
  PostgreSQL, dollar quotes and nested comments), returns the text *without comments* — which is
  what preflight sends, so the server sees exactly what was vetted — and refuses more than one
  statement, data-modifying CTEs, ``INTO``, locking clauses, executable MySQL comments, functions
  with side effects, and backslash-escaped quotes whose meaning depends on server settings.
* :func:`parse_table_name` / :func:`check_column_name` accept ``ident`` / ``schema.ident`` only;
  quoting is then SQLAlchemy's job.
* A vetted query is never *run*: min/max only ever reads a base table a `table:` export names.
* Passwords in driver messages are masked by the output boundary's one redactor
  (`rivet_ci.output.redaction.Redactor`): the userinfo of any URL in a message, and every known
  secret verbatim (drivers sometimes echo parts of the DSN, or a table name equal to a password).

Vetting is one layer; the others (read-only transactions, statement timeouts, EXPLAIN without
ANALYZE) live in the dialect modules, so a gap here is not enough to write to a source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["Dialect", "UnsafeQueryError", "VettedQuery", "check_column_name", "parse_table_name",
           "vet_query"]

Dialect = Literal["postgresql", "mysql", "sqlite"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]{0,62}$")
# Words that make a SELECT write or lock. `INTO` covers SELECT INTO / INTO OUTFILE / INTO @var;
# INSERT/UPDATE/DELETE/MERGE cover PostgreSQL's data-modifying CTEs.
_MODIFYING_WORDS = frozenset({"insert", "update", "delete", "merge", "upsert", "into"})
_STATEMENT_WORDS = frozenset({
    "copy", "truncate", "drop", "alter", "create", "grant", "revoke", "call", "do", "exec",
    "execute", "prepare", "deallocate", "set", "reset", "lock", "load", "handler", "listen",
    "notify", "vacuum", "analyze", "analyse", "refresh", "reindex", "cluster", "comment",
    "explain", "show", "use", "begin", "start", "commit", "rollback", "savepoint", "release",
    "replace", "table", "values", "attach", "detach", "pragma", "import",
} | _MODIFYING_WORDS)
# Builtins with side effects or unbounded cost. EXPLAIN does not run them, but a planner may fold
# a stable call, and a clear refusal beats a surprise; also they never belong in an export query.
_SIDE_EFFECT_FUNCTIONS = frozenset({
    # PostgreSQL
    "pg_sleep", "pg_sleep_for", "pg_sleep_until", "pg_terminate_backend", "pg_cancel_backend",
    "pg_reload_conf", "pg_rotate_logfile", "set_config", "nextval", "setval", "lo_import",
    "lo_export", "lo_unlink", "lo_create", "lo_creat", "lo_from_bytea", "lo_put",
    "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_stat_file", "pg_notify",
    "pg_switch_wal", "pg_promote", "pg_create_restore_point", "pg_advisory_lock",
    "pg_advisory_xact_lock", "pg_try_advisory_lock", "pg_try_advisory_xact_lock",
    "pg_advisory_lock_shared", "pg_advisory_xact_lock_shared", "pg_try_advisory_lock_shared",
    "pg_try_advisory_xact_lock_shared", "dblink", "dblink_exec", "dblink_connect",
    "dblink_send_query", "query_to_xml", "query_to_xml_and_xmlschema", "cursor_to_xml",
    "table_to_xml", "table_to_xml_and_xmlschema", "schema_to_xml", "database_to_xml", "ts_stat",
    "txid_current", "pg_current_xact_id", "pg_create_physical_replication_slot",
    "pg_create_logical_replication_slot", "pg_drop_replication_slot",
    "pg_logical_emit_message", "pg_replication_origin_create",
    # MySQL / MariaDB
    "sleep", "benchmark", "get_lock", "release_lock", "release_all_locks", "load_file",
    "master_pos_wait", "source_pos_wait", "sys_exec", "sys_eval",
    # SQLite
    "load_extension", "writefile", "edit",
})
# Words that are followed by `(` without being function calls.
_NOT_CALLS = frozenset({
    "in", "exists", "any", "all", "some", "as", "over", "filter", "within", "using", "on",
    "and", "or", "not", "from", "join", "select", "where", "when", "then", "else", "case",
    "array", "row", "values", "with", "lateral", "by", "having", "union", "intersect",
    "except", "is", "like", "ilike", "between", "distinct", "partition", "rows", "range",
    "recursive", "materialized", "tablesample", "limit", "offset", "fetch", "returning",
    "group", "order", "window", "set", "into",
})


class UnsafeQueryError(ValueError):
    """The query is refused; the message says why, in words a config author can act on."""


@dataclass(frozen=True)
class VettedQuery:
    """One vetted statement: the text to send (comments and the final `;` removed), the
    functions it calls (lower-case), and the words that follow FROM/JOIN (candidate relations).
    """

    text: str
    functions: frozenset[str]
    relations: tuple[tuple[str | None, str], ...]


@dataclass(frozen=True)
class _Token:
    kind: Literal["word", "quoted", "string", "punct", "space"]
    text: str


def vet_query(sql: str, dialect: Dialect) -> VettedQuery:
    """Accept one read-only SELECT/WITH statement, or raise :class:`UnsafeQueryError`."""
    tokens = _lex(sql, dialect)
    code = [t for t in tokens if t.kind != "space"]
    # One statement: whatever follows the first `;` must be nothing (or more `;`).
    for i, token in enumerate(code):
        if token.kind == "punct" and token.text == ";":
            if any(not (t.kind == "punct" and t.text == ";") for t in code[i + 1:]):
                raise UnsafeQueryError(
                    "only one statement is allowed: found more SQL after `;`")
            tokens = tokens[: tokens.index(token)]
            code = code[:i]
            break
    if not code:
        raise UnsafeQueryError("the query is empty")
    first = next((t for t in code if not (t.kind == "punct" and t.text == "(")), code[0])
    first_word = first.text.lower() if first.kind == "word" else ""
    if first_word not in ("select", "with"):
        if first_word in _STATEMENT_WORDS:
            raise UnsafeQueryError(
                f"only SELECT or WITH queries are planned; this is a {first_word.upper()} "
                f"statement")
        raise UnsafeQueryError("only SELECT or WITH queries are planned")
    words = [t.text.lower() if t.kind == "word" else "" for t in code]
    for i, word in enumerate(words):
        if word in _MODIFYING_WORDS:
            what = "SELECT ... INTO" if word == "into" else f"{word.upper()} (data-modifying)"
            raise UnsafeQueryError(f"{what} is not allowed in an export query")
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if word == "for" and nxt in ("update", "share", "no", "key"):
            raise UnsafeQueryError("locking clauses (FOR UPDATE / FOR SHARE) are not allowed")
        if word == "lock" and nxt == "in":
            raise UnsafeQueryError("LOCK IN SHARE MODE is not allowed")
    functions = _called_functions(code)
    bad = sorted(functions & _SIDE_EFFECT_FUNCTIONS)
    if bad:
        raise UnsafeQueryError(
            f"the query calls {', '.join(bad)}, which has side effects or unbounded cost")
    text = "".join(t.text for t in tokens).strip()
    return VettedQuery(text=text, functions=frozenset(functions),
                       relations=tuple(_relations(code, dialect)))


def parse_table_name(name: str) -> tuple[str | None, str]:
    """`ident` or `schema.ident` → (schema, table); anything else is refused."""
    parts = name.strip().split(".")
    if len(parts) > 2 or not all(_IDENT.match(p) for p in parts):
        raise UnsafeQueryError(
            f"table {name!r} is not a plain name: use `name` or `schema.name` (letters, digits, "
            f"`_`, `$`)")
    return (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])


def check_column_name(name: str, field: str) -> str:
    """A range/cursor column must be a plain identifier: it is quoted by SQLAlchemy."""
    if not _IDENT.match(name):
        raise UnsafeQueryError(
            f"{field} {name!r} is not a plain column name (letters, digits, `_`, `$`)")
    return name


# --- lexer -------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$")


def _lex(sql: str, dialect: Dialect) -> list[_Token]:
    """Tokens of `sql` as `dialect` lexes it; comments become a single space."""
    out: list[_Token] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        two = sql[i:i + 2]
        if ch.isspace():
            j = i
            while j < n and sql[j].isspace():
                j += 1
            out.append(_Token("space", sql[i:j]))
            i = j
        elif two == "--" and (dialect != "mysql" or i + 2 >= n or sql[i + 2] in " \t\r\n\f\v"):
            # MySQL needs whitespace after `--` (otherwise `1--1` is arithmetic).
            j = sql.find("\n", i)
            i = n if j < 0 else j
            out.append(_Token("space", " "))
        elif ch == "#" and dialect == "mysql":
            j = sql.find("\n", i)
            i = n if j < 0 else j
            out.append(_Token("space", " "))
        elif two == "/*":
            if dialect == "mysql" and (sql[i + 2:i + 3] == "!" or sql[i:i + 4] == "/*M!"):
                # MySQL and MariaDB *run* the text of /*! ... */; stripping it would change
                # the query, keeping it would hide SQL from vetting.
                raise UnsafeQueryError("MySQL executable comments (/*! ... */) are not allowed")
            i = _end_of_block_comment(sql, i, nested=dialect == "postgresql")
            out.append(_Token("space", " "))
        elif ch in "'\"`" or (ch == "[" and dialect == "sqlite"):
            j = _end_of_quoted(sql, i, dialect)
            literal = sql[i:j]
            close = "]" if ch == "[" else ch
            if "\\" + close in literal[1:] and not _is_pg_escape_string(sql, i, dialect):
                # Whether `\'` ends the literal depends on server settings
                # (standard_conforming_strings, NO_BACKSLASH_ESCAPES): refuse rather than guess.
                raise UnsafeQueryError(
                    "a quoted literal contains a backslash before a quote, whose meaning "
                    "depends on server settings; double the quote instead ('')")
            is_string = ch == "'" or (ch == '"' and dialect == "mysql")
            out.append(_Token("string" if is_string else "quoted", literal))
            i = j
        elif ch == "$" and dialect == "postgresql" and (dollar := _DOLLAR_TAG.match(sql, i)):
            tag = dollar.group(0)
            j = sql.find(tag, i + len(tag))
            if j < 0:
                raise UnsafeQueryError("unterminated dollar-quoted string")
            out.append(_Token("string", sql[i:j + len(tag)]))
            i = j + len(tag)
        elif word_match := _WORD.match(sql, i):
            word = word_match.group(0)
            # E'...' (PostgreSQL escape string), N'...', X'...', B'...', U&'...': a prefix word
            # glued to a string literal stays a word; the literal is lexed next.
            out.append(_Token("word", word))
            i += len(word)
        else:
            out.append(_Token("punct", ch))
            i += 1
    return out


def _is_pg_escape_string(sql: str, start: int, dialect: Dialect) -> bool:
    return (dialect == "postgresql" and sql[start] == "'" and start > 0
            and sql[start - 1] in "eE" and (start < 2 or not sql[start - 2].isalnum()))


def _end_of_block_comment(sql: str, start: int, *, nested: bool) -> int:
    depth, i = 0, start
    while i < len(sql):
        two = sql[i:i + 2]
        if two == "/*" and (nested or depth == 0):
            depth += 1
            i += 2
        elif two == "*/":
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    raise UnsafeQueryError("unterminated /* comment")


def _end_of_quoted(sql: str, start: int, dialect: Dialect) -> int:
    open_ch = sql[start]
    close = "]" if open_ch == "[" else open_ch
    backslash = open_ch in "'\"" and (dialect == "mysql" or _is_pg_escape_string(sql, start,
                                                                                  dialect))
    i = start + 1
    while i < len(sql):
        ch = sql[i]
        if backslash and ch == "\\":
            i += 2
            continue
        if ch == close:
            if close != "]" and sql[i + 1:i + 2] == close:  # doubled quote
                i += 2
                continue
            return i + 1
        i += 1
    raise UnsafeQueryError("unterminated quoted string or identifier")


def _called_functions(code: list[_Token]) -> set[str]:
    out: set[str] = set()
    for i, token in enumerate(code[:-1]):
        nxt = code[i + 1]
        if token.kind == "word" and nxt.kind == "punct" and nxt.text == "(":
            word = token.text.lower()
            prev = code[i - 1] if i else None
            # `schema.func(` counts as `func`; `AS name (` in a CTE is not a call.
            if word not in _NOT_CALLS and not (prev and prev.kind == "word"
                                               and prev.text.lower() == "as"):
                out.add(word)
        elif token.kind == "quoted" and nxt.kind == "punct" and nxt.text == "(":
            out.add(token.text[1:-1].lower())  # a quoted function name: never a known builtin
    return out


def _unquote(token: _Token) -> str:
    if token.kind == "quoted":
        body = token.text[1:-1]
        close = token.text[-1]
        return body.replace(close * 2, close)
    return token.text


def _relations(code: list[_Token], dialect: Dialect) -> list[tuple[str | None, str]]:
    """Names after FROM / JOIN (and comma lists after FROM): candidate relations of the query.

    A heuristic used only to look up indexes; a miss means "unknown", never a wrong "indexed".
    """
    out: list[tuple[str | None, str]] = []
    i = 0
    while i < len(code):
        token = code[i]
        word = token.text.lower() if token.kind == "word" else ""
        if word in ("from", "join"):
            i += 1
            while i < len(code):
                name, i = _read_name(code, i)
                if name is None:
                    break
                if dialect == "postgresql":
                    name = (name[0] and name[0].lower(), name[1].lower())
                if name not in out:
                    out.append(name)
                # skip an alias, then continue after a comma (only in a FROM list)
                while i < len(code) and code[i].kind in ("word", "quoted") and (
                        code[i].text.lower() not in _CLAUSE_WORDS):
                    i += 1
                if word == "from" and i < len(code) and code[i].text == ",":
                    i += 1
                    continue
                break
        else:
            i += 1
    return out


_CLAUSE_WORDS = frozenset({
    "where", "join", "inner", "left", "right", "full", "cross", "natural", "on", "using",
    "group", "order", "having", "limit", "offset", "union", "except", "intersect", "window",
    "fetch", "for", "lateral", "straight_join", "outer",
})


def _read_name(code: list[_Token], i: int) -> tuple[tuple[str | None, str] | None, int]:
    if i >= len(code) or code[i].kind not in ("word", "quoted"):
        return None, i
    if code[i].kind == "word" and code[i].text.lower() in _CLAUSE_WORDS | {"select", "lateral"}:
        return None, i
    first = _unquote(code[i])
    if (i + 2 < len(code) and code[i + 1].text == "." and code[i + 2].kind in ("word", "quoted")):
        if i + 3 < len(code) and code[i + 3].text == "(":
            return None, i + 3  # schema.function(...): a table function, not a relation
        return (first, _unquote(code[i + 2])), i + 3
    if i + 1 < len(code) and code[i + 1].text == "(":
        return None, i + 1  # a table function
    return (None, first), i + 1

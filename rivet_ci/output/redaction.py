"""Keeping secrets out of everything rivet-ci writes: the redactor of the output boundary.

A pull request's config is untrusted, and CI runs with secrets in its environment. Every byte
rivet-ci writes (stdout, stderr, logging, plan.json, the comment, the summary, annotations, step
outputs) passes one :class:`Redactor` (see :mod:`rivet_ci.output.sink`), which masks:

* the password of any ``scheme://user:password@`` URL, always;
* every value of an environment variable whose *name* looks secret (:func:`is_secret_name`),
  every value passed through the ``add-mask`` input, every credential that placeholder
  substitution put into a connection URL, and every secret a caller adds;
* in every form an output may carry it: raw, percent-encoded and decoded, HTML-escaped (named,
  decimal and hex entities, the Markdown cell and code-span escapes), JSON-escaped, ``repr``-
  escaped, backslash-escaped Markdown punctuation, and the pieces YAML splits a value into at
  flow indicators, commas and whitespace (pieces of at least :data:`MIN_SECRET_LENGTH`) —
  each also all lower-case and all upper-case, since a database may echo a secret case-folded
  (a re-casing of single letters is not caught).

Cost is proportional to the text, not to the number of secrets or variables: all forms are
compiled into one Aho-Corasick automaton over UTF-8 bytes (``ahocorasick_rs``, built once per
set of secrets) and a text is scanned once (measured: ~60 ms for a 20 MB plan.json, encoding
included); URL passwords are looked for only around ``://``. With no secret known, only the
``://`` check runs (over bytes, itself a one-pattern automaton scan). The same text redacted
twice in a row (plan.json to a file and to stdout) is scanned once.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar
from urllib.parse import quote, quote_plus, unquote

import ahocorasick_rs

MASK = "***"
MIN_SECRET_LENGTH = 6  # shorter environment values ("true", "1") would mask ordinary words

# Names that hold a secret: any of these words as a part of the name (split at `_`, `-`, `.`),
# or glued at the end (`GITHUB_TOKEN`, `DBPASS`, `MYAPIKEY`), plus every `INPUT_*TOKEN*`.
_SECRET_WORDS = (
    "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "PWD", "KEY", "PAT", "WEBHOOK", "AUTH",
    "CRED", "CREDS", "CREDENTIAL", "CREDENTIALS", "PRIVATE", "SIGNATURE", "DSN", "APIKEY",
    "COOKIE",
)
_SECRET_NAME = re.compile(
    r"(?:^|[_.\-])(?:" + "|".join(_SECRET_WORDS) + r")(?:[_.\-]|$)"
    r"|(?:TOKEN|SECRET|PASSWORD|PASSWD|APIKEY|WEBHOOK|CREDENTIALS?|PRIVATE|SIGNATURE)"
    r"|^INPUT_.*TOKEN|(?:^|_)URL$|^INPUT_STATE-URL$",
    re.IGNORECASE,
)
# Variables that match the pattern but are public on any machine: the shell's working
# directories (`PWD` is not a password). A forge's runner sets more (`GITHUB_SERVER_URL`):
# each forge declares its own, and the caller passes those of the forge the run is on
# (`rivet_ci.adapters.runners.public_names`).
SHELL_NAMES = frozenset({"PWD", "OLDPWD"})
# The `add-mask` input: values to mask, one per line (or comma-separated).
ADD_MASK_INPUT = "INPUT_ADD-MASK"

# `scheme://user:password@` anywhere in a message; the password ends at the last `@` before the
# host, so a password containing `@` or `:` is masked whole.
_URL_USERINFO = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@'\"]*:)(?P<pw>[^\s'\"]*)(?P<at>@)"
    r"(?=[^\s@'\"]*(?:[\s'\"]|$))"
)
_SCHEME_CHARS = frozenset(string.ascii_letters + string.digits + "+.-")
_MAX_SCHEME = 32
# The one-pattern automaton that answers `b"://" in data` for `redact_bytes`: its prefilter
# scans a 50 MB plan.json in a few milliseconds, where `bytes.__contains__` takes ~40 ms.
_URL_MARK = ahocorasick_rs.BytesAhoCorasick([b"://"])
_YAML_SPLIT = re.compile(r"[,\[\]{}]|:\s|\s#|\s+")
_ENTITY_CHARS = "&<>\"'@`|[]!*_\\"
_T = TypeVar("_T")


def is_secret_name(name: str, public: frozenset[str] = SHELL_NAMES) -> bool:
    """Whether an environment variable of this name is treated as holding a secret (`public`:
    the names known to be public where it is set; by default only the shell's)."""
    return name not in public and _SECRET_NAME.search(name) is not None


def environment_secrets(environ: Mapping[str, str], *, public: frozenset[str]) -> list[str]:
    """Values of the secret-looking variables (those named in `public` left out: the public
    names of the forge `environ` runs on), and of the `add-mask` input."""
    out = [value for name, value in environ.items()
           if is_secret_name(name, public) and len(value) >= MIN_SECRET_LENGTH]
    out += [v.strip() for v in re.split(r"[\n,]", environ.get(ADD_MASK_INPUT, "")) if v.strip()]
    return out


def param_secrets(items: Iterable[str] | None) -> list[str]:
    """The values of `--param KEY=VALUE` items, masked like secret environment values (the
    same length floor): every value the operator hands in is a secret until shown otherwise."""
    values = (item.partition("=")[2] for item in items or ())
    return [value for value in values if len(value) >= MIN_SECRET_LENGTH]


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # lone surrogates: undecodable file names


def secret_forms(secret: str) -> set[str]:
    """Every spelling of `secret` an output of rivet-ci may carry (see the module docstring)."""
    # Imported here, when there is a secret: `html` (its entity tables) is ~8 M instructions
    # of every run's start-up, and nothing else a run without secrets does needs it.
    import html

    base = {secret, quote(secret, safe=""), quote(secret), quote_plus(secret), unquote(secret)}
    forms = set(base)
    for value in base:
        forms.add(html.escape(value, quote=True))
        forms.add(html.escape(value, quote=False))
        # The comment's own escaping: &amp; &lt; &gt; &#64;, `|` -> `\|`, backtick -> quote.
        markdown = (value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                    .replace("@", "&#64;"))
        forms.update({markdown, markdown.replace("|", "\\|"), value.replace("`", "'")})
        forms.add("".join(f"&#{ord(c)};" if c in _ENTITY_CHARS else c for c in value))
        forms.add("".join(f"&#x{ord(c):x};" if c in _ENTITY_CHARS else c for c in value))
        forms.add("".join("\\" + c if c in string.punctuation else c for c in value))
        forms.add(json.dumps(value)[1:-1])
        forms.add(json.dumps(value, ensure_ascii=False)[1:-1])
        forms.add(repr(value)[1:-1])
        forms.add(value.encode("unicode_escape").decode("ascii"))
    for value in list(forms):
        forms.update(p for p in _YAML_SPLIT.split(value) if len(p) >= MIN_SECRET_LENGTH)
    forms |= {f.lower() for f in forms} | {f.upper() for f in forms}
    forms.discard("")
    return forms


class Redactor:
    """Masks secrets in text: URL passwords always, plus every secret it was told about.

    Mutable on purpose: the output boundary is built first, and secrets learnt later (a state
    URL, the credential of a resolved source) are added to the same instance.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        self._automaton: ahocorasick_rs.BytesAhoCorasick | None = None
        self._last: tuple[str, str] | None = None
        self.add(*secrets)

    def add(self, *secrets: str | None) -> None:
        new = {s for s in secrets if s and s not in self._secrets}
        if not new:
            return
        self._secrets |= new
        forms = sorted({_utf8(f) for s in self._secrets for f in secret_forms(s)})
        self._automaton = ahocorasick_rs.BytesAhoCorasick(
            forms, matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_LONGEST)
        self._last = None

    @property
    def secrets(self) -> frozenset[str]:
        return frozenset(self._secrets)

    def _spans(self, text: str) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        if self._automaton is not None:
            data = _utf8(text)
            found = self._automaton.find_matches_as_indexes(data)
            if found:  # rare: map byte offsets back to character offsets
                def chars(offset: int) -> int:
                    return len(data[:offset].decode("utf-8", "surrogatepass"))
                spans = [(chars(start), chars(end)) for _, start, end in found]
        if "://" in text:
            spans += _url_password_spans(text)
        return spans

    def __call__(self, text: str) -> str:
        last = self._last  # read once: preflight workers redact from several threads
        if last is not None and last[0] is text:
            return last[1]
        result = self._redact(text)
        self._last = (text, result)
        return result

    def _redact(self, text: str) -> str:
        spans = self._spans(text)
        if not spans:
            return text
        spans.sort()
        out, pos = [], 0
        for start, end in spans:
            if end <= pos:
                continue
            out.append(text[pos:max(start, pos)])
            out.append(MASK)
            pos = end
        out.append(text[pos:])
        return "".join(out)

    def redact_bytes(self, data: bytes) -> bytes:
        """`data` (UTF-8 text, whole lines) redacted: scanned once as it is, and decoded only
        when something is found or a URL may hold a password — a document written in chunks
        is never decoded and re-encoded just to be checked."""
        if self._automaton is not None and self._automaton.find_matches_as_indexes(data):
            hit = True
        elif _URL_MARK.find_matches_as_indexes(data):  # `b"://" in data`, ~15× faster
            hit = bool(_url_password_spans(data.decode("utf-8", "surrogatepass")))
        else:
            hit = False
        if not hit:
            return data
        return _utf8(self._redact(data.decode("utf-8", "surrogatepass")))

    def found(self, text: str) -> bool:
        """Whether `text` holds anything this redactor would mask."""
        return bool(self._spans(text))

    def scrub(self, value: _T) -> _T:
        """`value` (str, list, tuple, dict or pydantic model, nested) with every string redacted.

        Used before data is rendered or escaped, so a secret is masked while it is still in
        its plain form. One scan of all strings together decides whether anything must change.
        """
        strings = list(_strings(value))
        if not strings or not self.found("\0".join(strings)):
            return value
        rebuilt: _T = self._rebuild(value)
        return rebuilt

    def _rebuild(self, value: Any) -> Any:
        from pydantic import BaseModel  # only views are models; start-up needs no pydantic

        if isinstance(value, str):
            return self(value)
        if isinstance(value, BaseModel):
            update = {}
            for name, item in value.__dict__.items():
                new = self._rebuild(item)
                if new is not item:
                    update[name] = new
            return value.model_copy(update=update) if update else value
        if isinstance(value, dict):
            return {self._rebuild(k): self._rebuild(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._rebuild(v) for v in value]
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            return tuple(self._rebuild(v) for v in value)
        if isinstance(value, set | frozenset):
            return type(value)(self._rebuild(v) for v in value)
        return value


def _strings(value: Any) -> Iterator[str]:
    from pydantic import BaseModel  # only views are models; start-up needs no pydantic

    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, BaseModel):
            stack.extend(item.__dict__.values())
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)


def _url_password_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    at = text.find("://")
    while at >= 0:
        start = at
        while start > 0 and at - start < _MAX_SCHEME and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        match = _URL_USERINFO.match(text, start)
        if match is not None:
            spans.append((match.start("pw"), match.end("pw")))
        at = text.find("://", at + 3)
    return spans


def redactor_for(environ: Mapping[str, str], extra: Iterable[str | None] = (), *,
                 public: frozenset[str]) -> Redactor:
    redact = Redactor(environment_secrets(environ, public=public))
    redact.add(*extra)
    return redact

r"""Credential redaction: secret values become ``[redacted:<kind>]`` before indexing.

The rules, their order, the gates and the conformance tables live in
``redaction-rules.md`` (sections 2-4); this module ports the upstream (Go,
RE2) redactor and reproduces its output, including the known limits of 4.3.
``sanitize_display`` (section 3.4) is separate: it makes text safe to print.

Speed. Python's regex engine costs ~10 ns per character just to scan, so
running ten patterns over every message is far too slow for the index path.
Two layers keep the exact Python rules off most text, neither changing what
is redacted:

* Per text (``redact``): one Aho-Corasick pass over the lowered text finds
  every rule's trigger literals at once (``_scan``); a rule none of whose
  literals occur returns at once, and the others try their regex only where a
  match can *begin* (occurrences of a keyword or prefix; ``_anchored_sub``). ``regex.sub`` takes the
  leftmost position where the pattern matches after the previous match, so if
  every possible start is an anchor, trying anchors in order gives the same
  matches and groups (``match(text, pos)`` still sees the character before
  ``pos`` for ``\b``). Case-insensitive rules take anchors from
  ``text.lower()``, position-aligned with ``text`` unless it holds U+0130
  (whose lowercase is two code points); then the rule uses plain
  ``regex.sub``, the same reference path ``anchored=False`` selects for the
  differential tests.
* Per batch (``redact_many``): each rule has a prefilter, patterns in Rust's
  regex syntax that match every text on which the rule could change
  anything; the Python rule runs only on the texts they flag. Polars runs all
  the patterns at once as two alternations over the batch (``_Gate``), then
  each rule's own patterns over the few texts those flagged.
"""

from __future__ import annotations

import functools
import math
import os
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable

__all__ = ["MARKER", "redact", "redact_many", "sanitize_display"]

MARKER = "[redacted:"

# No rule can match fewer code points than this ("a://:b@c" is the shortest
# url-credentials hit), so shorter texts skip every rule.
_MIN_MATCH_LEN = 8

# RE2's \s is [\t\n\f\r ] (no \v); spelled out so whitespace matches upstream
# exactly rather than Python's wider ASCII \s.
_S = r"[\t\n\f\r ]"
_NS = r"[^\t\n\f\r ]"


class _lazy:  # noqa: N801  (stands where ``re.compile`` stood)
    """A pattern compiled on its first use. Search and the hooks show a few
    lines, which need a few of these rules, and compiling all of them cost
    ~17 ms of a 150 ms budget before the first line was shown; the index uses
    them all, and pays once. After the first use the compiled pattern's
    methods sit on the instance: a call costs what it did."""

    _METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "scanner",
                "groups", "groupindex")

    def __init__(self, pattern, flags: int = 0):
        self.pattern, self._flags = pattern, flags

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        compiled = re.compile(self.pattern, self._flags)
        for method in self._METHODS:
            setattr(self, method, getattr(compiled, method))
        self.flags = compiled.flags
        return getattr(compiled, name)


_Counts = dict[str, int]
# A replacement builder returns (replacement text, kind to count), and may
# add how many redactions it made (a cookie line has several values).
_Build = Callable[[re.Match[str]], tuple]


def _bump(counts: _Counts, kind: str, n: int = 1) -> None:
    # A builder that declines a match (a placeholder, a marker already there)
    # returns the match unchanged with kind "": nothing is counted.
    if kind:
        counts[kind] = counts.get(kind, 0) + n


def _marker(kind: str) -> str:
    return f"{MARKER}{kind}]"


def _find_all(hay: str, needle: str, out: list[int]) -> None:
    """Append every (overlapping) index of ``needle`` in ``hay``."""
    i = hay.find(needle)
    while i != -1:
        out.append(i)
        i = hay.find(needle, i + 1)


def _anchored_sub(
    text: str, regex: re.Pattern[str], starts: Iterable[int], build: _Build, counts: _Counts
) -> str:
    """``regex.sub(build, text)`` for a regex whose matches can only begin at ``starts``."""
    pieces: list[str] = []
    last = 0  # end of the previous match; the next one cannot start before it
    for s in sorted(set(starts)):
        if s < last:
            continue
        m = regex.match(text, s)
        if m is None:
            continue
        replacement, kind, *n = build(m)
        pieces.append(text[last:s])
        pieces.append(replacement)
        _bump(counts, kind, n[0] if n else 1)
        last = m.end()
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def _full_sub(text: str, regex: re.Pattern[str], build: _Build, counts: _Counts) -> str:
    """Plain ``regex.sub``: the reference semantics the anchored path must equal."""

    def repl(m: re.Match[str]) -> str:
        replacement, kind, *n = build(m)
        _bump(counts, kind, n[0] if n else 1)
        return replacement

    return regex.sub(repl, text)


def _aligned(text: str, lower: str) -> bool:
    # lower() maps every character to one character except U+0130.
    return len(lower) == len(text)


# ── one pass for every rule's literals ──────────────────────────────────────

# Where each trigger literal (_TRIGGERS, lower-case) occurs in the lowered
# text, overlapping, in text order; a literal that does not occur has no key.
# Rules gate on and anchor at these instead of each searching the text for
# its own literals (one str.find per literal per text added up to most of
# redaction's cost). Positions are the text's own: the scan lowers the text
# with U+0130 taken as 'i', the one character whose lower() is two.
class _Hits(dict[str, list[int]]):
    __slots__ = ("fold_same",)  # see _fold_same

    def __init__(self) -> None:
        super().__init__()
        self.fold_same: bool | None = None


_SURROGATE = _lazy("[\ud800-\udfff]")
_matcher = None  # built on first use: the search and hook paths import this module


def _scan(text: str, lower: str) -> _Hits:
    global _matcher
    if _matcher is None:
        import ahocorasick_rs

        _matcher = ahocorasick_rs.AhoCorasick(_TRIGGERS)
    hay = lower if len(lower) == len(text) else text.replace("\u0130", "i").lower()
    try:
        found = _matcher.find_matches_as_indexes(hay, overlapping=True)
    except UnicodeEncodeError:  # lone surrogates: no literal holds one
        found = _matcher.find_matches_as_indexes(_SURROGATE.sub("\ufffd", hay), overlapping=True)
    hits = _Hits()
    for i, start, _ in found:
        lit = _TRIGGERS[i]
        if lit in hits:
            hits[lit].append(start)
        else:
            hits[lit] = [start]
    return hits


def _cased(text: str, hits: _Hits, literal: str) -> list[int]:
    """Where a case-sensitive ``literal`` occurs in ``text``."""
    return [p for p in hits.get(literal.lower(), ()) if text.startswith(literal, p)]


def _hit_anchors(hits: _Hits, literals: Iterable[str]) -> list[int]:
    starts: list[int] = []
    for lit in literals:
        starts += hits.get(lit, ())
    return starts


def _any_hit(hits: _Hits, literals: Iterable[str]) -> bool:
    return not hits.keys().isdisjoint(literals)  # (in C: every text asks this of several rules)


def _fold_same(text: str, lower: str, hits: _Hits) -> bool:
    """casefold() equals lower() here (always for ASCII), so the scan of the
    lowered text stands for a search of the casefolded one."""
    if hits.fold_same is None:
        hits.fold_same = text.isascii() or (len(lower) == len(text) and text.casefold() == lower)
    return hits.fold_same


# ── values: what is a secret once a rule has found where one would sit ──────

# A value that names or stands for a secret instead of being one: templates,
# environment and code references, masks, types, empty and boolean values.
# The conformance table PLACEHOLDERS in tests/test_redact.py lists them.
_PLACEHOLDER_WORDS = frozenset(
    "changeme change_me change-me changeit none null nil undefined true false yes no "
    "string str bytes int number bool boolean any object optional required redacted hidden "
    "placeholder example dummy todo tbd fixme env secret_here password_here".split()
)  # fmt: skip
_MASK = _lazy(r"[xX*•.#_-]+|\.\.\.|…")
_REFERENCE = _lazy(
    r"\$\{.*|\$\(.*|\$[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_][A-Za-z0-9_]*%|\{\{.*|<[^<>]*>"
    # code: os.environ[...], os.getenv(...), process.env.X, self.password, config.get(...),
    # cut at a space (`makeToken({`) but not with more after its last bracket ("Pa55w0rd[prod]!")
    r"|[A-Za-z_]+(?:\.[A-Za-z_][A-Za-z0-9_]*)+|[A-Za-z_][A-Za-z0-9_.]*[\[(](?:.*[\])]|[^\])]*)"
    r"|your[-_ ].*"
    # format verbs and type annotations: "Token = %v", `token: &str`, `key: Option<String>`
    r"|%[-+ #0-9.]*[A-Za-z]|\{\w*\}|&(?:'\w+ *)?(?:mut +)?[A-Za-z_][\w:<>]*|[A-Za-z_]\w*<.*"
    # a file that holds the secret is not the secret: ~/.pgpass, ./key.pem
    r"|(?:~|\.{1,2})?/[^\s]*",
    re.IGNORECASE | re.DOTALL,
)


# What a reference's name never is: a run that reads as random (a token's
# body: "SG.<22>.<43>", "hvs.<90>"), with digits in three places, or a digit
# and few vowels (a name's words have theirs: "oauth2ClientSecret",
# "getUserAccountById"); or a shell variable named in mixed case with a
# digit ("$uperS3cret2024" is a password that starts with '$').
_SHELL_NAME = _lazy(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_DIGITS = _lazy(r"\d+")


def _random_run(part: str) -> bool:
    if len(part) < 16:
        return False
    digit_runs = len(_DIGITS.findall(part))
    if digit_runs >= 3:
        return True
    letters = [c for c in part if c.isalpha()]
    vowels = sum(c in "aeiouAEIOU" for c in letters)
    return digit_runs >= 1 and vowels * 4 < len(letters)


def _placeholder(value: str) -> bool:
    """An obvious placeholder or reference, not a secret (or a marker already)."""
    v = value.strip()
    if not v or MARKER in v:
        return True
    if v.lower() in _PLACEHOLDER_WORDS:
        return True
    if _MASK.fullmatch(v) is not None:
        return True
    if _REFERENCE.fullmatch(v) is None:
        return False
    name = _SHELL_NAME.fullmatch(v)
    if name is not None:
        n = name[1]
        return not (n != n.upper() and n != n.lower() and any(c.isdigit() for c in n))
    if v[0].isalpha() and "." in v and not any(c in v for c in "[(\"'"):
        return not any(_random_run(part) for part in v.split("."))
    return True


_WORDISH = _lazy(r"[^\W\d_]+")  # letters only, any script
_IDENT = _lazy(r"[^\W\d]+")  # letters and '_': a word or a name in code


def _prose_gate(value: str) -> bool:
    """The prose form of a secret: it holds a digit or a symbol, and is not a
    small count ("the password is 12 characters")."""
    if _WORDISH.fullmatch(value) or not value:
        return False
    return not (value.isdigit() and len(value) <= 3)


# An unquoted value ends at whitespace; inside it, ';' '&' ',' before another
# `name=` start the next pair (connection strings, query strings), and
# closing brackets or separators at its end belong to the code around it.
_NEXT_PAIR = _lazy(r"[;&,][\w.-]+=")
_TRAILING = ",;)]}>"


def _trim_unquoted(raw: str) -> tuple[str, str]:
    """(value, what follows it inside the raw token)."""
    cut = _NEXT_PAIR.search(raw)
    value = raw[: cut.start()] if cut else raw
    end = len(value)
    while end and value[end - 1] in _TRAILING:
        end -= 1
    return value[:end], raw[end:]


def _rest_of_line_empty(text: str, pos: int) -> bool:
    nl = text.find("\n", pos)
    return not text[pos : nl if nl != -1 else len(text)].strip(" \t\r,;}]\"'")


# ── rule 1: private-key ─────────────────────────────────────────────────────

_PEM_BEGIN = _lazy(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-----")
_PEM_END = _lazy(r"-----END [A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-----")
# The one-regex form (reference path). `.*?` before a literal is quadratic in
# Python when many headers lack an END, hence the two-step scan below.
_PEM_RE = _lazy(_PEM_BEGIN.pattern + r".*?" + _PEM_END.pattern, re.S)


# A block with no END (a `head` of the file, a Read tool's first lines, a JSON
# string cut short) is its header and the body lines after it: base64 lines,
# with the line numbers a Read or `cat -n` puts before them, or run together
# with escaped newlines; encrypted keys' "Proc-Type:" lines among them.
_PEM_LINE_END = r"(?:\r?\n|\\r\\n|\\n)"
_PEM_OPEN_RE = _lazy(
    _PEM_BEGIN.pattern
    + rf"(?:{_PEM_LINE_END}(?:[ \t]*\d+(?:→|\t))?[ \t]*(?:[A-Za-z0-9+/=]{{16,}}|[A-Za-z-]+: [^\n\\]+))+"
)
# A key base64-encoded whole (a Kubernetes Secret's tls.key, a CI variable):
# "-----BEGIN" and then "PRIVATE KEY" at one of base64's three alignments.
_PEM_B64_RE = _lazy(
    r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{0,40}?(?:UFJJVkFURSBLRV|BSSVZBVEUgS0VZ|QUklWQVRFIEtFW)[A-Za-z0-9+/]*={0,2}"
)
_PEM_B64 = "LS0tLS1CRUdJTi"


def _private_key(text: str, lower: str, counts: _Counts, anchored: bool, hits: _Hits) -> str:
    if not ("-----begin" in hits and "-----BEGIN" in text):
        if _PEM_B64.lower() in hits and _PEM_B64 in text:
            return _full_sub(text, _PEM_B64_RE, _build_private_key, counts)
        return text
    text = _pem_blocks(text, counts, anchored)
    if "-----BEGIN" in text:
        text = _full_sub(text, _PEM_OPEN_RE, _build_private_key, counts)
    if _PEM_B64 in text:
        text = _full_sub(text, _PEM_B64_RE, _build_private_key, counts)
    return text


def _build_private_key(m: re.Match[str]) -> tuple[str, str]:
    return _marker("private-key"), "private-key"


def _pem_blocks(text: str, counts: _Counts, anchored: bool) -> str:
    if not anchored:
        return _full_sub(text, _PEM_RE, _build_private_key, counts)
    # A header's end is fixed ([A-Z0-9 ] cannot contain '-'), and the shortest
    # body is "up to the first END at or after it". If a header has no END
    # after it, no later header does either, so the scan can stop.
    pieces: list[str] = []
    last = 0
    while (head := _PEM_BEGIN.search(text, last)) is not None:
        end = _PEM_END.search(text, head.end())
        if end is None:
            break
        pieces += (text[last : head.start()], _marker("private-key"))
        _bump(counts, "private-key")
        last = end.end()
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


# ── rule 2: url-credentials ─────────────────────────────────────────────────

# The password may hold '@' (R35: "p@ss@w0rd" goes whole) but not '/', '?' or
# '#', which end a URL's authority: a query's "notify=ops@example.com" is no
# password (L11, resolved). A password with a raw '/', '?' or '#' (invalid in
# a URL, but pasted) still goes up to the first '@' when it is no port.
_URL_RE = _lazy(
    rf"\b([A-Za-z][A-Za-z0-9+.-]*://)([^\t\n\f\r /@:]*):"
    rf"(?:([^\t\n\f\r /?#]+)@|(?![0-9]+[/?])([^\t\n\f\r @]+?)@)({_NS}+)",
    re.ASCII,
)
_SCHEME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _build_url(m: re.Match[str]) -> tuple[str, str]:
    if (m[3] or m[4]) == _marker("url-credentials"):
        return m[0], ""  # already redacted: text passing the redactor twice stays as it is
    return f"{m[1]}{m[2]}:{_marker('url-credentials')}@{m[5]}", "url-credentials"


def _url_starts(text: str, seps: list[int]) -> list[int]:
    """Every position a scheme could start at: a letter at a word boundary
    inside the run of scheme characters that ends at a '://' (at ``seps``)."""
    starts: list[int] = []
    for sep in seps:
        run = sep
        while run > 0 and text[run - 1] in _SCHEME_CHARS:
            run -= 1
        for i in range(run, sep):
            if text[i] in _LETTERS and (i == 0 or text[i - 1] not in _WORD):
                starts.append(i)
    return starts


# user:password@host with no scheme (L4, resolved): `mysql -h user:pw@db`,
# `redis user:pw@cache`. The user is a whole token (nothing URL-like before
# it); the password (which may hold '@': the last one ends it) holds no
# brackets, quotes or separators, so slices and
# code stay; the host is a hostname with a letter. Mail headers
# ("to:bob@example.com"), npm aliases and image digests (`nginx:1.25@sha256`)
# are not credentials.
_USERINFO_RE = _lazy(
    r"(?<![\w.:/@%+\\-])([A-Za-z0-9][\w.+-]{0,63}):([^\s/:'\"`()\[\]{}<>,;]{1,128})"
    r"@([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*)",
    re.ASCII,
)
_USERINFO_NOT_USERS = frozenset(
    "mailto to from cc bcc email e-mail mail reply-to sender contact npm git github gitlab link "
    "file workspace http https ssh author committer by name".split()
)  # fmt: skip
_IPV4 = _lazy(r"\d{1,3}(?:\.\d{1,3}){3}")  # a version (react@18.2.0) has three parts
_DIGEST_HOSTS = frozenset("sha1 sha256 sha384 sha512 md5 blake2b".split())
_USERINFO_CHARS = _WORD | {".", "+", "-"}


def _build_userinfo(m: re.Match[str]) -> tuple[str, str]:
    user, host = m[1], m[3]
    if (
        user.lower() in _USERINFO_NOT_USERS
        or user.isdigit()
        or host.lower() in _DIGEST_HOSTS
        or not (any(c.isalpha() for c in host) or _IPV4.fullmatch(host))
        or _placeholder(m[2])
    ):
        return m[0], ""
    return f"{user}:{_marker('url-credentials')}@{host}", "url-credentials"


def _userinfo_starts(text: str, ats: list[int]) -> list[int]:
    """For each '@' (at ``ats``): back over the password to a ':', then to the user's start."""
    starts: list[int] = []
    for at in ats:
        colon = text.rfind(":", max(0, at - 129), at)
        if colon > 0:
            u = colon
            while u > 0 and colon - u < 64 and text[u - 1] in _USERINFO_CHARS:
                u -= 1
            if u < colon:
                starts.append(u)
    return starts


def _url_credentials(text: str, lower: str, counts: _Counts, anchored: bool, hits: _Hits) -> str:
    if "@" not in hits or ":" not in text:
        return text
    ats = hits["@"]
    if "://" in hits:
        before = text
        if anchored:
            text = _anchored_sub(text, _URL_RE, _url_starts(text, hits["://"]), _build_url, counts)
        else:
            text = _full_sub(text, _URL_RE, _build_url, counts)
        if text is not before:  # the '@'s moved
            ats = []
            _find_all(text, "@", ats)
    if not anchored:
        return _full_sub(text, _USERINFO_RE, _build_userinfo, counts)
    return _anchored_sub(text, _USERINFO_RE, _userinfo_starts(text, ats), _build_userinfo, counts)


# ── rules 3 and 4: aws-secret, aws-access-key ───────────────────────────────

# `aws configure set aws_secret_access_key <secret>` puts it after a space.
_AWS_SECRET_RE = _lazy(
    rf"\b(aws[_-]?secret[_-]?access[_-]?key)({_S}*['\"]?{_S}*[:=]{_S}*|[ \t]+)(['\"]?)"
    r"([A-Za-z0-9/+=_-]{32,})(['\"]?)",
    re.ASCII | re.IGNORECASE,
)
_AWS_ACCESS_RE = _lazy(r"A(?:KIA|SIA)[0-9A-Z]{16}")


def _closing(opening: str, closing: str) -> str:
    # A closing quote is given back only if the value had an opening one.
    return closing if opening else ""


def _build_assignment(kind: str) -> _Build:
    """Keep key, delimiter and quotes; replace the value (groups 1-5)."""
    marker = _marker(kind)

    def build(m: re.Match[str]) -> tuple[str, str]:
        return f"{m[1]}{m[2]}{m[3]}{marker}{_closing(m[3], m[5])}", kind

    return build


_build_aws_secret = _build_assignment("aws-secret")


def _aws_secret(text: str, lower: str, counts: _Counts, anchored: bool, hits: _Hits) -> str:
    # "secret" is implied by the key and makes the check much rarer than "aws".
    if "aws" not in hits or "secret" not in hits:
        return text
    if not (anchored and _aligned(text, lower)):
        return _full_sub(text, _AWS_SECRET_RE, _build_aws_secret, counts)
    starts = hits["aws"]
    return _anchored_sub(text, _AWS_SECRET_RE, starts, _build_aws_secret, counts)


def _aws_access_key(text: str, lower: str, counts: _Counts, anchored: bool, hits: _Hits) -> str:
    if "akia" not in hits and "asia" not in hits:
        return text
    starts = _cased(text, hits, "AKIA") + _cased(text, hits, "ASIA")
    if not starts:
        return text
    build: _Build = lambda m: (_marker("aws-access-key"), "aws-access-key")  # noqa: E731
    if not anchored:
        return _full_sub(text, _AWS_ACCESS_RE, build, counts)
    return _anchored_sub(text, _AWS_ACCESS_RE, starts, build, counts)


# ── seed rules: cli-credential, netrc, cookie ────────────────────────────────

# A value on a command line: double-quoted, single-quoted, or up to whitespace.
_CLI_VALUE = r"""(?:"(?P<dq>[^"\n]*)"|'(?P<sq>[^'\n]*)'|(?P<v>[^\s"'`]\S*))"""


def _cli_value(m: re.Match[str]) -> tuple[str, bool, int, int]:
    """(value, quoted, start, end) of the _CLI_VALUE groups."""
    for group, quoted in (("dq", True), ("sq", True), ("v", False)):
        if m[group] is not None:
            return m[group], quoted, m.start(group), m.end(group)
    raise AssertionError("a _CLI_VALUE group always matches")


def _replace_span(m: re.Match[str], start: int, end: int, kind: str) -> str:
    base = m.start()
    return m[0][: start - base] + _marker(kind) + m[0][end - base :]


# --password X, --password=X and the siblings (--db-password, --api-token,
# --client-secret, -storepass…). With '=' any value that is not a placeholder
# goes; with a space the value must hold a digit or a symbol, so
# `--token refresh` or `--secret generic` stay (the seed's gate).
_CLI_FLAG_WORDS = ("password", "passwd", "passphrase", "pass", "token", "secret", "api-key", "apikey")
_CLI_LONG_RE = _lazy(
    r"(?<![\w-])(?P<flag>--?[A-Za-z0-9-]{0,40}?"
    r"(?:password|passwd|passphrase|pass(?:in|out)?|token|secret|api-?key))"
    rf"(?P<sep>=|[ \t]+){_CLI_VALUE}",
    re.ASCII | re.IGNORECASE,
)
_FLAG_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-")
_PASS_FLAG_HEADS = ("", "store", "key", "srcstore", "deststore", "srckey", "destkey")


def _build_cli_long(m: re.Match[str]) -> tuple[str, str]:
    flag = m["flag"].lower().lstrip("-")
    if flag.endswith("pass"):
        head = flag[:-4]
        if not (head in _PASS_FLAG_HEADS or head.endswith("-")):
            return m[0], ""  # --bypass, --compass
    if flag.startswith("no-"):
        return m[0], ""
    value, quoted, start, end = _cli_value(m)
    if not quoted:
        if value.startswith("pass:"):  # openssl -passin pass:SECRET
            start += 5
            value = value[5:]
        if _placeholder(value):
            return m[0], ""
        value, _ = _trim_unquoted(value)
        end = start + len(value)
        if m["sep"] != "=" and (value.startswith("-") or not _prose_gate(value)):
            return m[0], ""
    if _placeholder(value) or value.lower().startswith(("env:", "file:", "fd:", "stdin")):
        return m[0], ""
    return _replace_span(m, start, end, "cli-credential"), "cli-credential"


def _cli_long_starts(text: str, hits: _Hits) -> list[int]:
    """The dash that starts each flag ending in a flag word."""
    starts: list[int] = []
    for word in _CLI_FLAG_WORDS:
        for k in hits.get(word, ()):
            lo, floor = k, max(0, k - 42)
            while lo > floor and text[lo - 1] in _FLAG_CHARS:
                lo -= 1
            if text[lo] == "-":
                starts.append(lo)
    return starts


# Short flags mean a password only for some programs, on the same command
# (up to a newline, ';', '|' or '&'): (programs, flag, value after a space is
# gated, the command must say "login", the value is user:password / user%password).
_CLI_PROGRAMS: tuple[tuple[tuple[str, ...], str, bool, bool, str], ...] = (
    (("sshpass",), "-p", False, False, ""),
    (("mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck", "mysqlsh",
      "mariadb", "mariadb-dump"), "-p", True, False, ""),
    (("docker", "podman", "buildah", "nerdctl", "skopeo", "helm", "oras"), "-p", False, True, ""),
    (("redis-cli",), "-a", False, False, ""),
    (("zip", "unzip"), "-P", False, False, ""),
    (("7z", "7za", "7zr", "rar", "unrar"), "-p", False, False, ""),
    (("ldapsearch", "ldapmodify", "ldapadd", "ldapdelete", "ldapwhoami", "ldappasswd"), "-w", False, False, ""),
    (("mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport"), "-p", False, False, ""),
    (("sqlcmd", "bcp"), "-P", False, False, ""),
    (("psexec", "psexec.py"), "-p", False, False, ""),
    (("curl",), "(?:-u|-U|--user|--proxy-user)", False, False, ":"),
    (("http", "https"), "(?:-a|--auth)", False, False, ":"),
    (("smbclient", "rpcclient"), "-U", False, False, "%"),
)  # fmt: skip
_CLI_PROGRAM_RES = tuple(
    (
        progs,
        _lazy(
            rf"(?<![\w.-])(?:{'|'.join(re.escape(p) for p in progs)})(?![\w.-])"
            rf"(?P<mid>[^\n;|&]*?)[ \t]{flag}(?P<sep>[ \t=]*){_CLI_VALUE}",
            re.ASCII,
        ),
        gated,
        login,
        split,
    )
    for progs, flag, gated, login, split in _CLI_PROGRAMS
)


def _program_builder(gated: bool, login: bool, split: str) -> _Build:
    def build(m: re.Match[str]) -> tuple[str, str]:
        value, quoted, start, end = _cli_value(m)
        if login and "login" not in m["mid"]:
            return m[0], ""
        if split:
            cut = value.find(split)
            if cut == -1:
                return m[0], ""  # `curl -u user` asks for the password
            start, value = start + cut + 1, value[cut + 1 :]
        if not quoted:
            value, _ = _trim_unquoted(value)
            end = start + len(value)
            if gated and m["sep"] and not _prose_gate(value):
                return m[0], ""  # `mysql -p dbname`: the password is asked for
        if _placeholder(value) or value.startswith("-"):
            return m[0], ""
        return _replace_span(m, start, end, "cli-credential"), "cli-credential"

    return build


_CLI_PROGRAM_BUILDS = tuple(_program_builder(g, lg, sp) for _, _, g, lg, sp in _CLI_PROGRAM_RES)


# Every short flag the programs take, after a blank: a command needs one
# before its program can matter, and the program is on the flag's line.
_SHORT_FLAGS = (" -p", " -P", " -a", " -w", " -u", " -U", " --user", " --proxy-user", " --auth")
_SHORT_FLAGS_LOWER = tuple(dict.fromkeys(f.lower() for f in _SHORT_FLAGS))


def _program_starts(text: str, hits: _Hits, progs: tuple[str, ...]) -> list[int]:
    """Where one of ``progs`` sits on a line part before a short flag (the
    ends are the flags' positions); anywhere when a tab precedes a dash (rare:
    the flags are looked for after spaces)."""
    anywhere = "\t-" in hits
    # The flags lowered: a superset of their cased spellings' positions.
    ends = [] if anywhere else sorted(set(_hit_anchors(hits, _SHORT_FLAGS_LOWER)))
    starts: list[int] = []
    for prog in progs:
        for p in _cased(text, hits, prog):
            if anywhere:
                starts.append(p)
                continue
            i = bisect_left(ends, p + len(prog))
            if i < len(ends) and text.find("\n", p, ends[i]) == -1:
                starts.append(p)
    return starts


def _cli_credential(text: str, lower: str, counts: _Counts, anchored: bool, hits: _Hits) -> str:
    if "-" not in text:
        return text
    if _any_hit(hits, _CLI_FLAG_WORDS):
        before = text
        if anchored and _aligned(text, lower):
            starts = _cli_long_starts(text, hits)
            text = _anchored_sub(text, _CLI_LONG_RE, starts, _build_cli_long, counts)
        else:
            text = _full_sub(text, _CLI_LONG_RE, _build_cli_long, counts)
        if text is not before:
            hits = _scan(text, text.lower())
    if "\t-" not in hits and not _any_hit(hits, _SHORT_FLAGS_LOWER):
        return text
    for (progs, regex, *_), build in zip(_CLI_PROGRAM_RES, _CLI_PROGRAM_BUILDS):
        starts = _program_starts(text, hits, progs)
        if not starts:
            continue
        before = text
        if anchored:
            text = _anchored_sub(text, regex, starts, build, counts)
        else:
            text = _full_sub(text, regex, build, counts)
        if text is not before:
            hits = _scan(text, text.lower())
    return text


# netrc: `machine HOST login USER password SECRET` on one line or several;
# a `login` is required, so "the machine learning password manager" stays.
_NETRC_RE = _lazy(
    r"(?<![\w-])(?:machine[ \t]+\S+|default)(?:\s+(?:login|account|port)[ \t]+\S+)*"
    r"\s+login[ \t]+\S+(?:\s+(?:account|port)[ \t]+\S+)*\s+password[ \t]+(?P<v>\S+)",
    re.ASCII,
)


def _build_netrc(m: re.Match[str]) -> tuple[str, str]:
    if _placeholder(m["v"]):
        return m[0], ""
    return m[0][: m.start("v") - m.start()] + _marker("netrc"), "netrc"


def _netrc(text: str, lower: str, counts: _Counts, anchored: bool, hits: _Hits) -> str:
    if "password" not in hits or "login" not in hits or "password" not in text or "login" not in text:
        return text
    if not anchored:
        return _full_sub(text, _NETRC_RE, _build_netrc, counts)
    starts = _cased(text, hits, "machine") + _cased(text, hits, "default")
    return _anchored_sub(text, _NETRC_RE, starts, _build_netrc, counts)


# Cookie: every value; Set-Cookie: the cookie's own value, not its attributes
# (Path, Expires…). Names stay searchable.
_COOKIE_RE = _lazy(
    r"\b(?P<head>(?P<set>set-)?cookie(?:\\?[\"'])?[ \t]*:[ \t]*(?:\\?[\"'])?)(?P<body>[^\n\"'\\]*)",
    re.ASCII | re.IGNORECASE,
)
_COOKIE_PAIR = _lazy(r"([!#$%&*+.^`|~\w-]+)=([^;\s,\"'\\]+)", re.ASCII)


def _build_cookie(m: re.Match[str]) -> tuple:
    n = 0

    def one(p: re.Match[str]) -> str:
        nonlocal n
        if _placeholder(p[2]):
            return p[0]
        n += 1
        return f"{p[1]}={_marker('cookie')}"

    new = _COOKIE_PAIR.sub(one, m["body"], count=1 if m["set"] else 0)
    if not n:
        return m[0], ""
    return m["head"] + new, "cookie", n


def _cookie(text: str, lower: str, counts: _Counts, anchored: bool, hits: _Hits) -> str:
    if "cookie" not in hits:
        return text
    if not (anchored and _aligned(text, lower)):
        return _full_sub(text, _COOKIE_RE, _build_cookie, counts)
    starts = hits["cookie"] + [k - 4 for k in hits["cookie"] if k >= 4 and lower.startswith("set-", k - 4)]
    return _anchored_sub(text, _COOKIE_RE, starts, _build_cookie, counts)


# ── seed rule: prose-password ───────────────────────────────────────────────

# "the admin password is hunter2Secret!9": no delimiter, so the gate is the
# value's shape: it ends at the first space and holds a digit or a symbol,
# so "the password is wrong" and "the password is the same as staging" stay.
# Connectors and key words in the Latin-script languages people write in,
# and Russian.
_PROSE_WORDS = (
    "password", "passwd", "passphrase", "passcode", "mot de passe", "passwort", "kennwort",
    "wachtwoord", "contraseña", "contrasenya", "senha", "hasło", "haslo", "heslo", "şifre",
    "sifre", "parola", "lösenord", "losenord", "passord", "adgangskode", "salasana", "jelszó",
    "lozinka", "geslo", "parool", "kata sandi", "mật khẩu", "пароль",
)  # fmt: skip
_FOR = r"\s+(?i:for|of|für|pour|de|para|do|dla|voor|för|til|untuk)(?:\s+[^\s\"'`:]{1,64}){1,4}?"
_CONNECTOR = r"\s+(?i:is|was|ist|war|est|était|es|era|é|è|jest|je|är|var|er|on|adalah|là|это|—|–)"
# a value that holds a digit or a symbol (_prose_gate), looked for before it
# is taken, so "for" may take another word where the first try found a word
_SHAPED = r"(?=[^\s\"'`]*(?:\d|_|[^\w\s\"'`]))"
_PROSE_RE = _lazy(
    rf"(?<!\w)(?P<head>(?i:{'|'.join(_PROSE_WORDS)})"
    rf"(?:(?:{_FOR})?{_CONNECTOR}:?"
    # "the password for the staging db: X", "пароль от сервера X" (Russian leaves the verb out)
    rf"|{_FOR}:(?=\s+{_SHAPED})|\s+(?i:для|от)(?:\s+[^\s\"'`:]{{1,64}}){{1,2}}?(?=\s+{_SHAPED}))"
    r"\s+(?:(?i:now|still|just|currently|set to|actually|jetzt|maintenant|ahora|agora)\s+)?)"
    r"(?P<v>[^\s\"'`]\S*)"
)
# Chinese, Japanese and Korean say "the password is" with a particle, no space.
_PROSE_CJK_WORDS = ("密码", "密碼", "口令", "パスワード", "비밀번호")
_PROSE_CJK_RS = r"(?:密码|密碼|口令)(?:是|为|為)|パスワード(?:は|が)|비밀번호(?:는|은|가)"
_PROSE_CJK_RE = _lazy(rf"(?P<head>(?:{_PROSE_CJK_RS})\s*)(?P<v>[^\s\"'`]\S*)")
_PROSE_TRAILING = ".,;:)"


def _build_prose(m: re.Match[str]) -> tuple[str, str]:
    value = m["v"].rstrip(_PROSE_TRAILING)
    core = value.rstrip("!?")
    if not _prose_gate(core) or _placeholder(value) or _placeholder(m["v"]):
        return m[0], ""
    return m["head"] + _marker("prose-password") + m["v"][len(value) :], "prose-password"


def _prose_password(text: str, lower: str, counts: _Counts, anchored: bool, hits: _Hits) -> str:
    if _any_hit(hits, _PROSE_CJK_WORDS):
        text = _full_sub(text, _PROSE_CJK_RE, _build_prose, counts)
        lower = text.lower()
        hits = _scan(text, lower)
    # casefold, as in _credential: re's case folding is wider than lower()'s.
    if _fold_same(text, lower, hits):
        if not _any_hit(hits, _PROSE_WORDS):
            return text
    else:
        folded = text.casefold()
        if not any(w in folded for w in _PROSE_WORDS):
            return text
    if not (anchored and text.isascii()):
        return _full_sub(text, _PROSE_RE, _build_prose, counts)
    return _anchored_sub(text, _PROSE_RE, _hit_anchors(hits, _PROSE_WORDS), _build_prose, counts)


# ── rule 5: quoted-secret ───────────────────────────────────────────────────

# Any quoted value is deliberate, so short ones count (L3, resolved: "token
# 'abc'"). "for" is no longer a connector: "the secret for \"staging-east\""
# quotes whose secret it is, not the secret (L7, resolved).
_QUOTED_RE = _lazy(
    rf"\b(password|passwd|passphrase|pwd|secret|token|api[_-]?key)({_S}+(?:is{_S}+|was{_S}+)?)"
    r"([\"'`])([^\"'`\n]{1,80})([\"'`])",
    re.ASCII | re.IGNORECASE,
)
# The spec's pre-check lists "api key", which the pattern cannot match, and
# omits "api-key", which it can; the literals here are exactly the keywords.
_QUOTED_WORDS = (
    "password", "passwd", "passphrase", "pwd", "secret", "token", "api_key", "api-key", "apikey",
)  # fmt: skip


def _build_quoted(m: re.Match[str]) -> tuple[str, str]:
    if _placeholder(m[4]):
        return m[0], ""
    return f"{m[1]}{m[2]}{m[3]}{_marker('quoted-secret')}{m[5]}", "quoted-secret"


def _quoted_secret(text: str, lower: str, counts: _Counts, anchored: bool, hits: _Hits) -> str:
    if not _any_hit(hits, _QUOTED_WORDS):
        return text
    if not (anchored and _aligned(text, lower)):
        return _full_sub(text, _QUOTED_RE, _build_quoted, counts)
    starts = _hit_anchors(hits, _QUOTED_WORDS)
    return _anchored_sub(text, _QUOTED_RE, starts, _build_quoted, counts)


# ── rule 6: bearer-token ────────────────────────────────────────────────────

# Okta's SSWS anywhere; "Token", "Bot" and "Api-Key" only as the scheme of an
# Authorization header (Django REST framework, Discord), where they cannot be prose.
_AUTH_SCHEME = r"Authorization\\?['\"]?[ \t]*[:=][ \t]*\\?['\"]?(?:Token|Bot|Api-?Key)"
_BEARER_RE = _lazy(
    rf"\b(Bearer|Basic|SSWS|{_AUTH_SCHEME})({_S}+)([A-Za-z0-9._~+/=-]{{16,}})", re.ASCII | re.IGNORECASE
)
_BEARER_WORDS = ("bearer", "basic", "ssws", "authorization")


def _build_bearer(m: re.Match[str]) -> tuple[str, str]:
    return f"{m[1]}{m[2]}{_marker('bearer-token')}", "bearer-token"


def _bearer_token(text: str, lower: str, counts: _Counts, anchored: bool, hits: _Hits) -> str:
    # The spec's pre-check is "basic " with a space; "basic" is used because
    # the pattern also accepts a tab or newline after the scheme word.
    if not _any_hit(hits, _BEARER_WORDS):
        return text
    if not (anchored and _aligned(text, lower)):
        return _full_sub(text, _BEARER_RE, _build_bearer, counts)
    starts = _hit_anchors(hits, _BEARER_WORDS)
    return _anchored_sub(text, _BEARER_RE, starts, _build_bearer, counts)


# ── rule 7: jwt ─────────────────────────────────────────────────────────────

_JWT_RE = _lazy(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\b", re.ASCII)


def _jwt(text: str, lower: str, counts: _Counts, anchored: bool, hits: _Hits) -> str:
    starts = _cased(text, hits, "eyJ")
    if not starts:
        return text
    build: _Build = lambda m: (_marker("jwt"), "jwt")  # noqa: E731
    if not anchored:
        return _full_sub(text, _JWT_RE, build, counts)
    return _anchored_sub(text, _JWT_RE, starts, build, counts)


# ── rule 8: credential (a value assigned to a secret-named key) ──────────────

# Values, not lengths: whatever follows `key =`, `key: `, `"key": `, `key := `
# or `'key' => ` is the secret, to its closing quote or, unquoted, to
# whitespace, unless it is a placeholder or a reference (_placeholder).
# Unquoted values of letters only are the one place prose and code look like
# an assignment ("password: it expired", `password = password`); they count
# where a shell or a config file would put them (`PASSWORD=hunter`, or alone
# at the end of the line).
_KV_DELIM = r"([ \t]*(?:\\?['\"])?[ \t]*(?::=|=>|==|:(?!:)|[=：])[ \t]*)"  # '::' is a path
_KV_VALUE = (
    r"(?:(?P<q>\\?[\"'`])(?P<qv>(?:\\.|[^\n\\])*?)(?P=q)"
    r"|(?P<v>[^\t\n\f\r \"'`\\][^\t\n\f\r ]*))"
)
_KV_TAIL = _KV_DELIM + _KV_VALUE
# Key words that make a key secret-named whatever comes before them, and the
# short ones that count only as their own part of a name (DB_PASS, dbPass,
# SIGNING_SALT, SENTRY_DSN; not bypass, basalt, monkey).
_KV_KEYWORDS = (
    "password", "passwd", "passphrase", "secret", "token", "authorization",
    "private_key_id", "private-key-id", "privatekeyid",
    # Latin-script languages (L5 and its siblings): Dutch, German, Portuguese,
    # Czech/Slovak, Polish (ASCII spelling), Turkish (ASCII), Italian/Turkish,
    # Norwegian, Danish, Finnish, Croatian/Serbian, Slovenian, Estonian,
    # Catalan, Spanish, Swedish (ASCII).
    "wachtwoord", "kennwort", "passwort", "senha", "heslo", "haslo", "sifre", "parola",
    "passord", "adgangskode", "salasana", "lozinka", "geslo", "parool", "contrasenya", "clave",
    "losenord",
)  # fmt: skip
_KV_SHORT = ("key", "salt", "dsn", "pass", "pwd")
_KV_WORDS = "|".join(re.escape(w) for w in _KV_KEYWORDS + _KV_SHORT)
_KV_RE = _lazy(rf"\b([\w.-]{{0,64}}?(?:{_KV_WORDS})){_KV_TAIL}", re.ASCII | re.IGNORECASE)
# No \b: RE2's \b is ASCII-only, so it could never sit before a Cyrillic or
# CJK word. Only the key words fold case (Unicode folding, as RE2's (?i)).
_KV_INTL_WORDS = (
    "парол[ьяею]", "токен[ауы]?", "секрет[ауы]?", "ключ[аеиуом]?", "contraseña", "mot de passe",
    "mot_de_passe", "hasło", "şifre", "lösenord", "parola d'ordine", "kata sandi", "mật khẩu",
    "jelszó", "parolă", "slaptažodis", "κωδικός", "密码", "密碼", "パスワード", "비밀번호",
)  # fmt: skip
_KV_INTL_RE = _lazy(rf"((?i:{'|'.join(_KV_INTL_WORDS)})){_KV_TAIL}")
_KV_TAIL_RE = _lazy(_KV_TAIL)
_KV_TAIL_FIRST = frozenset(" \t'\"\\:=：")  # what a tail can start with
# Literal spellings of _KV_WORDS, to find where a key word ends.
_KV_LITERALS = _KV_KEYWORDS + _KV_SHORT
_KV_LITERAL_SET = frozenset(_KV_LITERALS)
_KEY_PREFIX_CHARS = _WORD | {".", "-"}

# `*_KEY` is a secret in an environment variable (STRIPE_KEY, SECRET_KEY)
# unless it names a data key; in code only after the words that make it one.
_KEY_NOT_SECRET = frozenset(
    "primary sort partition foreign cache routing public pub publishable idempotency lookup "
    "hash shard row object s3 map dict index unique composite group lock dedup order search "
    "i18n translation message config setting hot short shortcut sort range cursor page".split()
)  # fmt: skip
_KEY_SECRET = frozenset(
    "api secret private access signing sign encryption encrypt decryption crypto cipher master "
    "client auth app license licence account service webhook session deploy hmac jwt aes gpg pgp "
    "consumer subscription admin root shared server openai anthropic stripe aws gcp azure "
    "sendgrid mailgun twilio github gitlab google maps firebase storage wrapping kms mac enc "
    "secure security personal cloud ingest write read license_".split()
)  # fmt: skip
_NAME_PARTS = _lazy(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_CODE_WORDS = ("pass", "pwd", "secret", "token", "key", "salt", "auth", "cred")


def _secret_key(key: str) -> bool:
    """A key named for a secret (see _KV_KEYWORDS and _KV_SHORT)."""
    low = key.lower()
    if low.endswith(_KV_KEYWORDS):
        return True
    word = next(w for w in _KV_SHORT if low.endswith(w))
    head = key[: -len(word)]
    if not head:
        return word in ("salt", "dsn")
    if head[-1] in "_-.":
        part = re.split(r"[_.\-]", head[:-1].lower())[-1] if head[:-1] else ""
    elif head[-1].islower() and key[-len(word)].isupper():  # camelCase: apiKey, dbPass
        parts = _NAME_PARTS.findall(head)
        part = parts[-1].lower() if parts else ""
    else:
        return word == "key" and low.endswith("apikey")
    if word != "key":
        return True
    if key.isupper():
        return part not in _KEY_NOT_SECRET
    return part in _KEY_SECRET


# Upstream's floor: a value this long is a secret even made of letters only.
_KV_FLOOR = 16


_COMPARED_NAME = _lazy(r"[A-Za-z_][\w.]*[:)`]*")


def _kv_value(m: re.Match[str], key_ok: bool) -> tuple[str, str]:
    key, delim = m[1], m[2]
    if not key_ok:
        return m[0], ""
    if "==" in delim and m["q"] is None and _COMPARED_NAME.fullmatch(m["v"]):
        return m[0], ""  # `if password == confirm_password:` compares two names
    marker = _marker("credential")
    if m["q"] is not None:
        if _placeholder(m["qv"]):
            return m[0], ""
        return f"{key}{delim}{m['q']}{marker}{m['q']}", "credential"
    value, tail = _trim_unquoted(m["v"])
    if not value or _placeholder(value) or _placeholder(m["v"]):
        return m[0], ""
    at_end = _rest_of_line_empty(m.string, m.end())
    if len(value) < _KV_FLOOR and _IDENT.fullmatch(value):
        low = value.lower()
        if any(w in low for w in _CODE_WORDS):
            return m[0], ""  # `password = password`, `{token: accessToken}`
        tight = delim in ("=", ":=") or delim.endswith(("='", '="', "=\\'", '=\\"'))
        if not (tight or at_end):
            return m[0], ""
    elif not at_end and value.isdigit() and len(value) <= 3:
        return m[0], ""  # "password: 12 characters minimum"
    return f"{key}{delim}{marker}{tail}", "credential"


def _build_credential(m: re.Match[str]) -> tuple[str, str]:
    return _kv_value(m, _secret_key(m[1]))


def _build_credential_intl(m: re.Match[str]) -> tuple[str, str]:
    return _kv_value(m, True)


# Section 3.1 hint words, split by the pattern they can lead to; casefolded,
# as the text they are looked for in.
_HINTS_EN = (
    "key", "secret", "token", "pass", "pwd", "salt", "dsn", "authorization", "wachtwoord",
    "kennwort", "senha", "heslo", "haslo", "sifre", "parola", "adgangskode", "salasana",
    "lozinka", "geslo", "parool", "contrasenya", "clave", "losenord",
)  # fmt: skip
_HINTS_INTL = tuple(
    h.casefold()
    for h in (
        "пароль", "парол", "токен", "секрет", "ключ", "contraseña", "mot de passe",
        "mot_de_passe", "hasło", "şifre", "lösenord", "parola d'ordine", "kata sandi",
        "mật khẩu", "jelszó", "parolă", "slaptažodis", "κωδικός", "密码", "密碼", "パスワード",
        "비밀번호",
    )
)  # fmt: skip
# From the end of a hint: the rest of an identifier (ASCII word chars, any
# non-ASCII, '.', '-'), whitespace, quotes and backslashes, then ':' or '='
# (or a full-width colon).
_GATE_AFTER_HINT = _lazy(
    r"[\w.\-\u0080-\U0010ffff]*[\t\n\v\f\r '\"\\]*[:=：]",
    re.ASCII,
)


@functools.lru_cache(maxsize=None)
def _frozen(words: tuple[str, ...]) -> frozenset[str]:
    return frozenset(words)


def _assignment_gate(hay: str, hints: tuple[str, ...], hits: _Hits | None = None) -> bool:
    """Section 3.1: some hint word is followed by an assignment. The hints'
    positions come from ``hits`` when those are positions in ``hay``."""
    if hits is not None:  # the text's few hits, not every hint: this runs for every text
        hints = hits.keys() & _frozen(hints)
    for hint in hints:
        if hits is None:
            where: list[int] = []
            _find_all(hay, hint, where)
        else:
            where = hits[hint]
        for i in where:
            if _GATE_AFTER_HINT.match(hay, i + len(hint)):
                return True
    return False


def _kv_starts(text: str, hits: _Hits) -> list[int]:
    """Every position a generic credential match can start at.

    A match needs a key word at k directly followed by the delimiter/value
    tail, and starts at a word boundary s with k-64 <= s <= k and only
    [A-Za-z0-9_.-] between s and k (the lazy identifier prefix).
    """
    starts: list[int] = []
    for lit in hits.keys() & _KV_LITERAL_SET:  # (the order is free: the caller sorts the starts)
        for k in hits[lit]:
            j = k + len(lit)
            if j < len(text) and text[j] in _KV_TAIL_FIRST and _KV_TAIL_RE.match(text, j):
                lo, floor = k, max(0, k - 64)
                while lo > floor and text[lo - 1] in _KEY_PREFIX_CHARS:
                    lo -= 1
                for s in range(lo, k + 1):
                    before = s > 0 and text[s - 1] in _WORD
                    if before != (text[s] in _WORD):
                        starts.append(s)
    return starts


def _credential(text: str, lower: str, counts: _Counts, anchored: bool, hits: _Hits) -> str:
    # The anchors are themselves the gate when lower() is aligned: no key
    # word followed by a delimiter, no anchor.
    aligned = _aligned(text, lower)
    out = text
    if anchored and aligned:
        starts = _kv_starts(text, hits)
        if starts:
            out = _anchored_sub(text, _KV_RE, starts, _build_credential, counts)
    elif _assignment_gate(lower, _HINTS_EN, hits if aligned else None):
        out = _full_sub(text, _KV_RE, _build_credential, counts)
    if out is not text:
        text, lower = out, out.lower()
        hits = _scan(text, lower)
    # Python's re folds case more widely than lower() does ('ſ' matches 's',
    # 'ᲂ' matches 'о'); casefold() covers those, so the gate stays a
    # necessary condition. (Upstream's ToLower gate misses them.) For ASCII
    # text the two are the same.
    if _fold_same(text, lower, hits):
        gate = _assignment_gate(lower, _HINTS_INTL, hits)
    else:
        gate = _assignment_gate(text.casefold(), _HINTS_INTL)
    if gate:
        # Rare (a non-English key word with an assignment): plain regex.
        text = _full_sub(text, _KV_INTL_RE, _build_credential_intl, counts)
    return text


# ── rule 9: provider prefixes ───────────────────────────────────────────────

# One named group per kind, in upstream's alternation order.
_PROVIDER_RE = _lazy(
    r"\b(?:"
    r"(?P<github>gh[opsur]_[A-Za-z0-9_]{20,}|github_pat_[A-Za-z0-9_]{20,})"
    r"|(?P<gitlab>glpat-[A-Za-z0-9_-]{20,})"
    r"|(?P<stripe>(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})"
    # Internal hyphens allowed (sk-proj-, sk-ant-…), but it must end in 20
    # alphanumerics so kebab-case slugs survive (N29). A key of a named kind
    # goes whole, whatever '_' or '-' falls near its end (a random body has
    # them anywhere: the first form alone left a sixth of Anthropic's keys
    # whole and cut a quarter short).
    r"|(?P<sk>sk-(?:ant-[a-z]+[0-9]*-|proj-|svcacct-|admin-)[A-Za-z0-9_-]{20,}"
    r"|sk-[A-Za-z0-9_-]*[A-Za-z0-9]{20,})"
    r"|(?P<groq>gsk_[A-Za-z0-9]{20,})"
    r"|(?P<xai>xai-[A-Za-z0-9]{20,})"
    r"|(?P<hf>hf_[A-Za-z0-9]{20,})"
    r"|(?P<npm>npm_[A-Za-z0-9]{30,})"
    r"|(?P<slack>xox[abceprs]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})"
    r"|(?P<google>AIza[0-9A-Za-z_-]{30,})"
    # Beyond the spec's list: tokens people paste from a CLI's output or a
    # provider's console, each with a prefix nothing else has.
    r"|(?P<vault>hv[sbr]\.[A-Za-z0-9_-]{20,})"
    r"|(?P<gcp_oauth>ya29\.[A-Za-z0-9_-]{20,})"
    r"|(?P<pypi>pypi-AgE[A-Za-z0-9_-]{40,})"
    r"|(?P<sendgrid>SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{20,})"
    r"|(?P<doppler>dp\.(?:st|pt|sa|ct|scim|audit)\.[A-Za-z0-9_.-]{20,})"
    r"|(?P<shopify>shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})"
    r"|(?P<digitalocean>do[opr]_v1_[a-f0-9]{64})"
    r"|(?P<stripe_webhook>whsec_[A-Za-z0-9]{24,})"
    r"|(?P<sentry>sntr[ysu]_[A-Za-z0-9+/=_-]{40,})"
    r"|(?P<linear>lin_api_[A-Za-z0-9]{32,})"
    r"|(?P<grafana>glsa_[A-Za-z0-9_]{32,}|glc_[A-Za-z0-9+/=_-]{32,})"
    r"|(?P<atlassian>ATATT3[A-Za-z0-9_=-]{100,})"
    r"|(?P<age>AGE-SECRET-KEY-1[0-9A-Z]{58})"
    # A webhook's URL is its credential: the host and route stay searchable.
    r"|(?P<slack_webhook>hooks\.slack\.com/(?:services|workflows|triggers)/(?P<hook>[A-Za-z0-9_/-]{20,}))"
    r"|(?P<discord_webhook>discord(?:app)?\.com/api/webhooks/(?P<dhook>[0-9]{5,}/[A-Za-z0-9_-]{20,}))"
    r")\b",
    re.ASCII,
)
_PROVIDER_KINDS = {
    "github": "github-token",
    "gitlab": "gitlab-token",
    "stripe": "stripe-key",
    "groq": "groq-key",
    "xai": "xai-key",
    "hf": "huggingface-token",
    "npm": "npm-token",
    "slack": "slack-token",
    "google": "google-api-key",
    "vault": "vault-token",
    "gcp_oauth": "google-oauth-token",
    "pypi": "pypi-token",
    "sendgrid": "sendgrid-key",
    "doppler": "doppler-token",
    "shopify": "shopify-token",
    "digitalocean": "digitalocean-token",
    "stripe_webhook": "stripe-key",
    "sentry": "sentry-token",
    "linear": "linear-key",
    "grafana": "grafana-token",
    "atlassian": "atlassian-token",
    "age": "age-key",
    "slack_webhook": "slack-webhook",
    "discord_webhook": "discord-webhook",
}
# Every alternative starts with one of these. Bare "gh" is not a hint: it is
# inside "through", "right", "enough".
_PROVIDER_HINTS = (
    "ghp_", "gho_", "ghs_", "ghu_", "ghr_", "github_pat_",
    "glpat-", "sk_", "rk_", "sk-", "gsk_", "xai-", "hf_", "npm_", "xox", "AIza",
    "xapp-", "hvs.", "hvb.", "hvr.", "ya29.", "pypi-", "SG.", "dp.", "shpat_", "shpca_", "shppa_",
    "shpss_", "doo_v1_", "dop_v1_", "dor_v1_", "whsec_", "sntrys_", "sntryu_", "sntrus_", "lin_api_",
    "glsa_", "glc_", "ATATT3", "AGE-SECRET-KEY-", "hooks.slack.com/", "discord.com/api/webhooks/",
    "discordapp.com/api/webhooks/",
)  # fmt: skip


_PROVIDER_BY_LOWER: dict[str, tuple[str, ...]] = {}
for _h in _PROVIDER_HINTS:
    _PROVIDER_BY_LOWER[_h.lower()] = _PROVIDER_BY_LOWER.get(_h.lower(), ()) + (_h,)


# A webhook URL's kinds: the group of its token (the part before it is the route)
_ROUTE_TOKENS = {"slack_webhook": "hook", "discord_webhook": "dhook"}


def _build_provider(m: re.Match[str]) -> tuple[str, str]:
    group = m.lastgroup
    if group == "sk":
        kind = "anthropic-key" if m[0].startswith("sk-ant-") else "openai-key"
    else:
        kind = _PROVIDER_KINDS[group]  # type: ignore[index]
    token = _ROUTE_TOKENS.get(group)
    if token:  # the route stays: "hooks.slack.com/services/[redacted:slack-webhook]"
        return m[0][: m.start(token) - m.start()] + _marker(kind), kind
    return _marker(kind), kind


def _provider(text: str, lower: str, counts: _Counts, anchored: bool, hits: _Hits) -> str:
    # a text's few hits, not every hint, are walked: this rule sees every text
    starts = [p for low, at in hits.items() for h in _PROVIDER_BY_LOWER.get(low, ()) for p in at
              if text.startswith(h, p)]
    if not starts:
        return text
    if not anchored:
        return _full_sub(text, _PROVIDER_RE, _build_provider, counts)
    return _anchored_sub(text, _PROVIDER_RE, starts, _build_provider, counts)


# ── after rule 9: secrets a URL carries in its query or percent-encoded ────

# A signed URL's signature or session token (Azure SAS `sig=`, S3 and GCS
# presigned URLs) is its credential; a percent-encoded connection string
# ("postgres%3A%2F%2Fapp%3Apw%40db") hides its password from rule 2.
_URL_SECRET_RE = _lazy(
    r"(?P<sigk>[?&](?i:sig|signature|x-amz-signature|x-goog-signature|x-amz-security-token)=)"
    r"(?P<sigv>[A-Za-z0-9%+/=_.~-]{16,})"
    r"|(?P<dsn>\b[A-Za-z][A-Za-z0-9+.-]*%3[Aa]%2[Ff]%2[Ff][^\s%/@:?#]*%3[Aa])(?P<pw>[^\s@/]+?)(?P<at>%40)",
    re.ASCII,
)
_URL_SECRET_HINTS = ("sig=", "signature=", "security-token=", "%3a%2f%2f")


def _build_url_secret(m: re.Match[str]) -> tuple[str, str]:
    if m["sigk"] is not None:
        return m["sigk"] + _marker("url-signature"), "url-signature"
    if MARKER in m["pw"]:
        return m[0], ""
    return m["dsn"] + _marker("url-credentials") + m["at"], "url-credentials"


def _url_secrets(text: str, lower: str, counts: _Counts, anchored: bool, hits: _Hits) -> str:
    if not _any_hit(hits, _URL_SECRET_HINTS):
        return text
    return _full_sub(text, _URL_SECRET_RE, _build_url_secret, counts)


# ── rule 10: entropy (last resort) ──────────────────────────────────────────

# Works on the UTF-8 bytes of the text, as upstream: runs, keys and blanks are
# all ASCII, and entropy is defined over bytes. Lone surrogates round-trip
# through "surrogatepass".
_ENTROPY_MIN_BITS = 4.5
_ENTROPY_MIN_ASSIGN = 20
_ENTROPY_MIN_STANDALONE = 28
_ENTROPY_MAX_LEN = 256
# Entropy is at most log2(number of distinct bytes), so 4.5 bits needs 23
# distinct bytes: a shorter token, or a run (padding adds at most '=') of
# fewer than 22 characters, can never qualify. Skipping them changes nothing.
_ENTROPY_MIN_TOKEN = 23
_ENTROPY_MIN_RUN = 22
_ENTROPY_MIN_DISTINCT = 23

# Reference scan: every run, as the spec words it.
_ENTROPY_RUN = _lazy(rb"[A-Za-z0-9+/_-]{20,}={0,2}")
_HEXISH = _lazy(rb"[0-9a-fA-F-]+")
_DIGIT = _lazy(rb"[0-9]")
_ASSIGN_PAD = frozenset(b"\"' \t")
_DELIMS = frozenset(b"=:")
_ENTROPY_KEY_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_LINE_PAD = frozenset(b" \t\r")
_NEWLINE = ord("\n")
_PAD_BYTE = ord("=")


def _entropy_table() -> bytes:
    """Byte classes for the fast scan of section 3.3 positions."""
    table = bytearray(b"." * 256)  # anything else
    for c in b"ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ+/_":
        table[c] = ord("a")  # run byte that is not hex-ish
    for c in b"0123456789abcdefABCDEF-":
        table[c] = ord("h")  # hex-ish run byte
    table[ord("=")] = table[ord(":")] = ord("=")
    table[ord("\n")] = ord("n")
    table[ord(" ")] = table[ord("\t")] = ord(" ")
    table[ord('"')] = table[ord("'")] = ord("q")
    table[ord("\r")] = ord("r")
    return bytes(table)


_ENTROPY_TABLE = _entropy_table()


def _spot_run(min_len: int) -> bytes:
    # A run long enough to qualify that is not all hex-ish (digests, SHAs,
    # UUIDs), unless '=' padding follows, which makes the token not hex-ish.
    return rb"(?=[ah]{%d})h*a[ah]*|h{%d,}(?==)" % (min_len, min_len)


# Over the translated bytes. Assignment: '=' or ':', quotes/blanks, the run.
# Standalone: a line holding only blanks, the run and its padding. Both start
# with a literal so the regex engine can skip ahead with a fast byte search.
_ASSIGN_SPOT = _lazy(rb"=[q ]*+(" + _spot_run(_ENTROPY_MIN_RUN) + rb")")
_LINE_BODY = rb"[ r]*+(" + _spot_run(_ENTROPY_MIN_STANDALONE - 2) + rb")=?=?[ r]*+(?=n|\Z)"
_LINE_SPOT = _lazy(rb"n" + _LINE_BODY)
_FIRST_LINE_SPOT = _lazy(_LINE_BODY)


# Keys that are prose, not names: "copied from: <blob>", "moved to: <hash>".
_STOP_WORDS_EN = frozenset(
    "a an and are as at be before but by did do does for from dealt have how in is it of on or "
    "that the this to was we what when where which who with".split()
)
# Russian filler words. Keys are ASCII by construction ([A-Za-z0-9_.-]), so
# these can only matter if the key class ever widens; kept for parity with
# upstream's shared stop list.
_STOP_WORDS_RU = frozenset(
    "и в во на с со к у о об от до из за по при для без под над про как что это то так там тут "
    "где когда если или но а же ли бы да нет не ни уже еще ещё вот был была было были".split()
)
_STOP_WORDS = frozenset(w.encode() for w in _STOP_WORDS_EN | _STOP_WORDS_RU)


def _assignment_key(buf: bytes, start: int) -> bytes | None:
    """The key when the run at ``start`` is the value of ``key = …`` / ``key: …``."""
    i = start - 1
    while i >= 0 and buf[i] in _ASSIGN_PAD:
        i -= 1
    if i < 0 or buf[i] not in _DELIMS:
        return None
    i -= 1
    while i >= 0 and buf[i] in _ASSIGN_PAD:
        i -= 1
    end = i + 1
    while i >= 0 and buf[i] in _ENTROPY_KEY_CHARS:
        i -= 1
    key = buf[i + 1 : end]
    if key.isdigit() or not key:
        # Telegram bot tokens are "<bot id>:<secret>": a numeric key counts
        # only when it is id-sized.
        return key if len(key) >= 6 else None
    return key if len(key) >= 3 and key.lower() not in _STOP_WORDS else None


def _assignment_value(buf: bytes, start: int) -> bool:
    return _assignment_key(buf, start) is not None


# Keys whose random-looking values are identifiers or digests, not secrets
# (L10 and L8, resolved): build_id=…, "integrity": "sha512-…", etag: ….
_ID_KEY = _lazy(
    rb"(?:^|[_.-]|(?<=[a-z0-9])(?=[A-Z]))(?i:ids?|uuid|guid|hash|sha\d*|md5|digest|checksum|integrity"
    rb"|etag|commit|revision|rev|version|build|trace|span|cursor|fingerprint|resolved)$"
)
# Keys that name a secret: their values go even below 4.5 bits (base64 of
# readable text, L6, resolved).
_SECRETISH_KEY = _lazy(rb"(?i)secret|private|passw|token|salt|credential|api_?key|cookie|session")
# A lock file's subresource-integrity hash ("sha512-…").
_SRI = _lazy(rb"sha(?:1|256|384|512)-")
# A label that says the line below is a digest (L9, resolved).
_DIGEST_LABEL = _lazy(
    rb"(?i)(?:digest|checksum|sha1|sha256|sha384|sha512|md5|hash|integrity|fingerprint)s?[ \t]*[:=]?$"
)


def _after_digest_label(buf: bytes, start: int) -> bool:
    nl = buf.rfind(b"\n", 0, start)
    if nl < 0:
        return False
    prev = buf[buf.rfind(b"\n", 0, nl) + 1 : nl].rstrip(b"\r \t")
    return _DIGEST_LABEL.search(prev) is not None


def _standalone_line(buf: bytes, start: int, end: int) -> bool:
    """Only blanks between the run and the surrounding newlines: a pasted key."""
    i = start - 1
    while i >= 0 and buf[i] != _NEWLINE:
        if buf[i] not in _LINE_PAD:
            return False
        i -= 1
    j, n = end, len(buf)
    while j < n and buf[j] != _NEWLINE:
        if buf[j] not in _LINE_PAD:
            return False
        j += 1
    return True


def _shannon_bits(tok: bytes) -> float:
    n = len(tok)
    return -sum(c / n * math.log2(c / n) for c in Counter(tok).values())


def _high_entropy(tok: bytes, min_bits: float = _ENTROPY_MIN_BITS) -> bool:
    # Entropy is at most log2(distinct bytes): a set() rules out most
    # tokens (hashes with a prefix, words) before counting.
    return len(set(tok)) >= _ENTROPY_MIN_DISTINCT and _shannon_bits(tok) >= min_bits


def _looks_like_path(tok: bytes) -> bool:
    # Rooted, at least two separators, and none of the '=' / ':' that a
    # credential or URL brings along.
    return (
        tok.startswith((b"/", b"~/", b"./", b"../"))
        and tok.count(b"/") >= 2
        and b"=" not in tok
        and b":" not in tok
    )


def _entropy_candidate(tok: bytes, min_bits: float = _ENTROPY_MIN_BITS) -> bool:
    """Section 3.3 candidate conditions 1-6, cheapest first."""
    if not _ENTROPY_MIN_TOKEN <= len(tok) <= _ENTROPY_MAX_LEN or _HEXISH.fullmatch(tok):
        return False  # cannot reach 4.5 bits, too long, or a digest / git SHA / UUID
    lower = tok.lower()
    classes = (
        (tok != lower)  # has upper
        + (tok != tok.upper())  # has lower
        + (_DIGIT.search(tok) is not None)
        + (not tok.isalnum())  # '+', '/', '_', '-', '='
    )
    if classes < 3:
        return False
    if b"/" in tok and tok == lower:
        return False  # lower-case path segments; base64 with slashes mixes case
    if _looks_like_path(tok):
        return False
    return min_bits <= 0 or _high_entropy(tok, min_bits)


def _secret_shaped(buf: bytes, start: int, end: int) -> bool:
    """Position (assignment value or standalone line), then candidate.

    Position goes first: it rejects most runs after a byte or two. A run can
    never contain the marker ('[' and ':' are not run bytes), so the spec's
    "skip runs holding a marker" needs no check.
    """
    tok = buf[start:end]
    key = _assignment_key(buf, start)
    if key is not None:
        if _ID_KEY.search(key) or _SRI.match(tok):
            return False
        return _entropy_candidate(tok, min_bits=0.0 if _SECRETISH_KEY.search(key) else _ENTROPY_MIN_BITS)
    if end - start < _ENTROPY_MIN_STANDALONE or not _standalone_line(buf, start, end):
        return False
    return not (_SRI.match(tok) or _after_digest_label(buf, start)) and _entropy_candidate(tok)


def _with_padding(buf: bytes, run_end: int) -> int:
    """A token is its run plus up to two trailing '=' (base64 padding)."""
    end = run_end
    while end < len(buf) and end - run_end < 2 and buf[end] == _PAD_BYTE:
        end += 1
    return end


def _entropy_spans(buf: bytes, anchored: bool) -> list[tuple[int, int]]:
    if not anchored:
        return [m.span() for m in _ENTROPY_RUN.finditer(buf)]
    # Fast path: only runs in a secret-shaped position, and not runs that
    # cannot pass the candidate test (too short, all hex-ish). The spans are
    # maximal runs, as in the reference scan; the exact checks still follow.
    tr = buf.translate(_ENTROPY_TABLE)
    runs = [m.span(1) for m in _ASSIGN_SPOT.finditer(tr)]
    first = _FIRST_LINE_SPOT.match(tr)
    if first:
        runs.append(first.span(1))
    runs += [m.span(1) for m in _LINE_SPOT.finditer(tr)]
    # An assignment value is never alone on its line, so the lists are
    # disjoint; sorting restores text order.
    runs.sort()
    return [(start, _with_padding(buf, run_end)) for start, run_end in runs]


def _entropy(text: str, lower: str, counts: _Counts, anchored: bool, hits: _Hits) -> str:
    if len(text) < _ENTROPY_MIN_ASSIGN:
        return text
    buf = text.encode("utf-8", "surrogatepass")
    pieces: list[bytes] = []
    last = 0
    for start, end in _entropy_spans(buf, anchored):
        if not _secret_shaped(buf, start, end):
            continue
        pieces += (buf[last:start], b"[redacted:entropy]")
        _bump(counts, "entropy")
        last = end
    if not pieces:
        return text
    pieces.append(buf[last:])
    return b"".join(pieces).decode("utf-8", "surrogatepass")


# Batch prefilter for the entropy rule (see redact_many). A run in either
# secret-shaped position, in Rust regex syntax: after '=' or ':' and
# quotes/blanks, or after a line start and blanks. Runs, keys and blanks are
# ASCII, so matching on characters here equals matching on bytes.
_ENTROPY_BATCH_SPOTS = r"(?:[=:][\"' \t]*|(?m:^)[ \t\r]*)[A-Za-z0-9+/_-]{%d,}" % _ENTROPY_MIN_RUN
# A secret-named key's value needs no entropy (_SECRETISH_KEY), only a run.
_ENTROPY_BATCH_SECRETISH = (
    r"(?i)(?:secret|private|passw|token|salt|credential|api_?key|cookie|session)"
    r"[A-Za-z0-9_.-]*[\"' \t]*[=:][\"' \t]*[A-Za-z0-9+/_-]{%d}" % _ENTROPY_MIN_RUN
)
# A token needs 23 distinct bytes and padding adds at most one ('=').
_ENTROPY_MIN_RUN_DISTINCT = _ENTROPY_MIN_DISTINCT - 1


def _entropy_batch_prefilter(series, gate: _Gate) -> list[int]:  # noqa: ANN001 (a polars Series)
    """Indices of texts with a positioned run varied enough to reach 4.5 bits.

    Extraction is leftmost and non-overlapping, and never consumes the
    character after a run, so every positioned run is extracted whole. The
    distinct count includes the lead characters, which only lets more through.
    """
    flagged = gate.contains(series, _ENTROPY_BATCH_SECRETISH)
    for i, spots in enumerate(series.str.extract_all(_ENTROPY_BATCH_SPOTS).to_list()):
        for spot in spots or ():
            if len(set(spot)) >= _ENTROPY_MIN_RUN_DISTINCT:
                flagged.add(i)
                break
    return sorted(flagged)


# ── driver ──────────────────────────────────────────────────────────────────

# Section 2 order: the first rule that matches decides the kind. Each rule is
# paired with a batch prefilter (Rust regex syntax, run by polars over a
# whole batch in redact_many): a pattern that matches every text on which the
# rule could change anything, so texts it rejects skip the rule.
_S_RS = r"[\t\n\f\r ]"
_RS_TAIL = r"[ \t]*(?:\\?['\"])?[ \t]*[:=：][ \t]*[^\t\n\f\r ]"
_Rule = Callable[[str, str, _Counts, bool, _Hits], str]
# A prefilter is a pattern, several patterns (any may match), or a function
# from the batch Series to the flagged indices.
_Prefilter = str | tuple[str, ...] | Callable[..., list[int]]
_PROSE_WORDS_RS = rf"(?i)(?:{'|'.join(_PROSE_WORDS)})"
# _KV_RE's matches that _secret_key can accept: a short key word (key, pass,
# pwd) only after a character of the name ("--- PASS: TestX" is no key), and
# ':' not followed by ':' (a path, as in _KV_DELIM).
_KV_PREFILTER = (
    rf"(?i)(?:{'|'.join(re.escape(w) for w in _KV_KEYWORDS)}|[A-Za-z0-9_.-](?:key|pass|pwd)|salt|dsn)"
    r"[ \t]*(?:\\?['\"])?[ \t]*(?::[ \t]*[^\t\n\f\r :]|:[ \t]+[^\t\n\f\r ]|[=：][ \t]*[^\t\n\f\r ])"
)
_PROSE_CONNECTORS_RS = r"is|was|ist|war|est|était|es|era|é|è|jest|je|är|var|er|on|adalah|là|это|—|–"
# _PROSE_RE's three heads, each let through by a wider pattern: a connector
# within the four words a "for" clause may hold, "for <words>:", and Russian's
# "от"/"для" with no verb; and the CJK particles.
_PROSE_PREFILTER = (
    rf"{_PROSE_WORDS_RS}(?:[\s\S]{{0,120}}?\s(?:{_PROSE_CONNECTORS_RS}):?\s+\S"
    r"|\s+(?:for|of|für|pour|de|para|do|dla|voor|för|til|untuk)\s[^:\n]{0,120}:\s|\s+(?:для|от)\s)",
    _PROSE_CJK_RS,
)
_RULES: tuple[tuple[_Rule, _Prefilter], ...] = (
    (_private_key, (r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY", _PEM_B64)),
    (
        _url_credentials,
        (
            r"://[^\t\n\f\r /@:]*:[^\t\n\f\r ]+@",
            r"[A-Za-z0-9][A-Za-z0-9_.+-]*:[^\s/:'\"`()\[\]{}<>,;]+@[A-Za-z0-9]",
        ),
    ),
    (_aws_secret, r"(?i)aws[_-]?secret[_-]?access[_-]?key"),
    (_aws_access_key, r"A(?:KIA|SIA)[0-9A-Z]{16}"),
    (
        _cli_credential,
        (
            r"(?i)-[a-z0-9-]*(?:pass[a-z]*|token|secret|api-?key)(?:=|[ \t]+)[^\s]",
            r"(?:sshpass|mysql|mariadb|docker|podman|buildah|nerdctl|skopeo|helm|oras|redis-cli|zip"
            r"|7z|rar|ldap|mongo|sqlcmd|bcp|psexec|curl|http|smbclient|rpcclient)[^\n;|&]*[ \t]"
            r"-(?:[pPawuU]|-user|-proxy-user|-auth)",
        ),
    ),
    (_netrc, r"(?s)(?:machine|default).*login[ \t].*password[ \t]+\S"),
    (_cookie, r"(?i)cookie(?:\\?[\"'])?[ \t]*:[ \t]*(?:\\?[\"'])?[^\n\"'\\]*="),
    (
        _quoted_secret,
        rf"(?i)(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key)"
        rf"{_S_RS}+(?:(?:is|was){_S_RS}+)?[\"'`]",
    ),
    (_bearer_token, rf"(?i)(?:bearer|basic|ssws|{_AUTH_SCHEME}){_S_RS}+[A-Za-z0-9._~+/=-]{{16}}"),
    (_jwt, r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4}"),
    (_prose_password, _PROSE_PREFILTER),
    (
        _credential,
        # Two patterns: Rust's Unicode case folding makes the non-Latin words
        # costly, and alone they are cheap to rule out. (?i) in Rust folds
        # case at least as widely as Python's re does for these words, so the
        # prefilter never rejects a real match.
        (
            _KV_PREFILTER,
            rf"(?i)(?:{'|'.join(_KV_INTL_WORDS)}){_RS_TAIL}",
        ),
    ),
    (
        _provider,
        r"(?:gh[opsur]_|github_pat_)[A-Za-z0-9_]{20}|glpat-[A-Za-z0-9_-]{20}"
        r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16}|sk-[A-Za-z0-9_-]*[A-Za-z0-9]{20}"
        r"|(?:gsk_|xai-|hf_)[A-Za-z0-9]{20}|npm_[A-Za-z0-9]{30}|xox[abceprs]-[A-Za-z0-9-]{10}"
        r"|AIza[0-9A-Za-z_-]{30}"
        r"|sk-(?:ant-[a-z]+[0-9]*-|proj-|svcacct-|admin-)[A-Za-z0-9_-]{20}|xapp-[0-9]-[A-Za-z0-9-]{10}"
        r"|hv[sbr]\.[A-Za-z0-9_-]{20}|ya29\.[A-Za-z0-9_-]{20}|pypi-AgE[A-Za-z0-9_-]{40}"
        r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{20}|dp\.(?:st|pt|sa|ct|scim|audit)\.[A-Za-z0-9_.-]{20}"
        r"|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|do[opr]_v1_[a-f0-9]{64}|whsec_[A-Za-z0-9]{24}"
        r"|sntr[ysu]_[A-Za-z0-9+/=_-]{40}|lin_api_[A-Za-z0-9]{32}|glsa_[A-Za-z0-9_]{32}|glc_[A-Za-z0-9+/=_-]{32}"
        r"|ATATT3[A-Za-z0-9_=-]{100}|AGE-SECRET-KEY-1[0-9A-Z]{58}"
        r"|hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20}"
        r"|discord(?:app)?\.com/api/webhooks/[0-9]{5,}/[A-Za-z0-9_-]{20}",
    ),
    (
        _url_secrets,
        (
            r"(?i)[?&](?:sig|signature|x-amz-signature|x-goog-signature|x-amz-security-token)=[A-Za-z0-9%+/=_.~-]{16}",
            r"(?i)%3A%2F%2F[^\s%/@:?#]*%3A[^\s@/]+%40",
        ),
    ),
    (_entropy, _entropy_batch_prefilter),
)


# Every literal a rule gates on or anchors at, lowered (casefolded for the
# international hints), for _scan.
_TRIGGERS: tuple[str, ...] = tuple(
    dict.fromkeys(
        (
            "-----begin", _PEM_B64.lower(), "://", "@", "aws", "secret", "akia", "asia", "\t-", "machine", "default",
            "password", "login", "cookie", "bearer", "basic", "ssws", "authorization", "eyj",
            *_CLI_FLAG_WORDS, *_SHORT_FLAGS_LOWER, *(p.lower() for progs, *_ in _CLI_PROGRAMS for p in progs),
            *_PROSE_WORDS, *_PROSE_CJK_WORDS, *_QUOTED_WORDS, *_KV_LITERALS, *_HINTS_EN, *_HINTS_INTL,
            *(h.lower() for h in _PROVIDER_HINTS), *_URL_SECRET_HINTS,
        )
    )
)  # fmt: skip


def _redact_text(text: str, counts: _Counts, anchored: bool = True) -> str:
    """Run every rule in order; each sees the previous rules' output."""
    if len(text) < _MIN_MATCH_LEN:
        return text
    lower = text.lower()
    hits = _scan(text, lower)
    for rule, _ in _RULES:
        out = rule(text, lower, counts, anchored, hits)
        if out is not text:
            text, lower = out, out.lower()
            hits = _scan(text, lower)
    return text


def _disabled() -> bool:
    return os.environ.get("DEJA_NO_REDACT") == "1"


def redact(text: str) -> tuple[str, dict[str, int]]:
    """Replace secret values in ``text``; return the new text and per-kind counts.

    ``DEJA_NO_REDACT=1`` (read at call time) returns the text unchanged.
    """
    counts: _Counts = {}
    if not text or _disabled():
        return text, counts
    return _redact_text(text, counts), counts


def redact_many(texts: list[str], vectorized: bool = True) -> tuple[list[str], dict[str, int]]:
    """Batch form of :func:`redact`: one output per input, counts summed.

    The output equals :func:`redact` applied to each text; large batches just
    get there faster through the polars prefilters (see the module notes).
    ``vectorized=False`` keeps polars out of the process (index worker
    processes, where its memory costs more than its speed gains).
    """
    counts: _Counts = {}
    if _disabled():
        return list(texts), counts
    if vectorized and sum(map(len, texts)) >= _BATCH_MIN_CHARS:
        try:
            import polars as pl
        except ImportError:
            pass
        else:
            return _redact_batch(pl, texts, counts), counts
    return [_redact_text(t, counts) if t else t for t in texts], counts


# ── batch path ──────────────────────────────────────────────────────────────

# Below this many characters (about ten typical messages) a batch is cheaper
# to redact text by text than to hand to polars.
_BATCH_MIN_CHARS = 32 * 1024
# The one rule that looks for no literal, so needs neither the lowered text nor its scan.
_NO_LITERALS = _entropy
_NO_HITS = _Hits()


def _redact_batch(pl, texts: list[str], counts: _Counts) -> list[str]:  # noqa: ANN001
    """Rule by rule over the batch, so each prefilter sees the current texts
    (a redaction can create a match for a later rule: a PEM block inside a
    URL's password, for one)."""
    out = list(texts)
    scanned = out
    if not all(t.isascii() for t in out):
        # polars holds UTF-8, which lone surrogates are not: such texts take
        # the per-text path and are blanked in the scan.
        scanned = list(out)
        for i, t in enumerate(out):
            if not t.isascii() and _has_surrogate(t):
                out[i] = _redact_text(t, counts)
                scanned[i] = ""
    series = pl.Series(scanned, dtype=pl.String)
    gate = _Gate(series)
    # A text's scan, kept while the text is unchanged: several rules flag the same texts.
    scans: dict[int, tuple[str, str, _Hits]] = {}
    for rule, prefilter in _RULES:
        changed: list[int] = []
        for i in _flagged(series, prefilter, gate):
            text = out[i]
            if len(text) < _MIN_MATCH_LEN:
                continue
            if rule is _NO_LITERALS:
                new = rule(text, "", counts, True, _NO_HITS)
            else:
                scan = scans.get(i)
                if scan is None or scan[0] is not text:
                    lower = text.lower()
                    scan = scans[i] = (text, lower, _scan(text, lower))
                new = rule(text, scan[1], counts, True, scan[2])
            if new is not text:
                out[i] = new
                changed.append(i)
        if changed:
            series = series.scatter(changed, [out[i] for i in changed])
            gate.changed.update(changed)
    return out


# Every prefilter pattern, as two alternations: Rust's regex runs one in a
# single pass over the batch, where a pass per pattern costs a scan each. The
# case-insensitive and the case-sensitive ones apart: one alternation of all
# is slower than the two (its automaton's states multiply).
# In the alternation, the prose prefilters stand as their key words alone: a
# superset, and the bounded gaps after them are what make them costly.
_GATE_FORM = {_PROSE_PREFILTER[0]: _PROSE_WORDS_RS}
_PREFILTER_PATTERNS = tuple(
    dict.fromkeys(
        _GATE_FORM.get(q, q)
        for q in (
            *(q for _, pf in _RULES if not callable(pf) for q in ((pf,) if isinstance(pf, str) else pf)),
            _ENTROPY_BATCH_SECRETISH,
        )
    )
)
_ANY_PREFILTER = tuple(
    "|".join(f"(?:{p})" for p in _PREFILTER_PATTERNS if p.startswith("(?i)") == folding)
    for folding in (True, False)
)


class _Gate:
    """The texts any prefilter pattern matches, found in one pass over the
    batch as it came in (_ANY_PREFILTER), plus those a rule has changed since. A text neither
    of these is as scanned and no pattern matches it, so running each rule's
    patterns on the gate's texts alone flags exactly what running them on
    the whole batch would."""

    def __init__(self, series) -> None:  # noqa: ANN001 (a polars Series)
        self.series = series
        self.changed: set[int] = set()
        self._where: set[int] | None = None

    def contains(self, series, pattern: str) -> set[int]:  # noqa: ANN001
        """Indices of the texts of ``series`` (the batch now) ``pattern`` matches."""
        if self._where is None:
            self._where = set()
            for any_of in _ANY_PREFILTER:
                self._where.update(self.series.str.contains(any_of).arg_true().to_list())
        where = sorted(self._where | self.changed)
        if not where:
            return set()
        found = series.gather(where).str.contains(pattern).to_list()
        return {i for i, f in zip(where, found) if f}


def _flagged(series, prefilter: _Prefilter, gate: _Gate) -> list[int]:  # noqa: ANN001
    """Indices of the texts a rule's prefilter lets through, in order."""
    if callable(prefilter):
        return prefilter(series, gate)
    patterns = (prefilter,) if isinstance(prefilter, str) else prefilter
    hits: set[int] = set()
    for pattern in patterns:
        hits |= gate.contains(series, pattern)
    return sorted(hits)


def _has_surrogate(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False


# The display sanitiser (section 3.4) lives in stages/display.py, light enough
# for the hooks; re-exported here for callers that have redaction loaded anyway.
from .display import sanitize_display  # noqa: E402,F401

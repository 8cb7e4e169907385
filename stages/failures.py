"""Failure lines: which lines a tool printed are errors (cli-contract §5.4).

One rule, shared by ``friction``, ``fix``, the error tier of search and the
hooks, so every reader agrees on what "the same error" is:

* ``failure_line(line)`` is the line's error part when it qualifies, else None.
  The error part (``normalize``) is what a person would paste: the line
  trimmed, a location before it dropped (``zsh:1: ``, ``(eval):2: `` or a
  compiler's ``path/to/file.go:42:17: ``), a pytest summary cut to its message
  (``FAILED test_x.py::t - TimeoutError: …`` → ``TimeoutError: …``) and
  pytest's ``E   `` marker dropped. It qualifies at 20–120 characters, with no
  bare generic head (``Traceback (most recent``, ``FAIL<TAB>``), no
  source-code marker, and either one of the error needles or the form of an
  error (a compiler diagnostic ``error: …``, an errno head ``EISDIR: …``, an
  exception head ``TimeoutError: …``, a pytest summary) — and not prose
  *about* an error (``is_prose``), in English, Russian, German, French or
  Spanish. ``fix``, ``friction`` and the hooks all ask this one function.
* ``signature(line)`` is a 64-bit FNV-1a hash of ``signature_key(line)``:
  the normalised line with what changes between two runs of the same error
  masked (line and column numbers, other numbers, hex ids, the directories of
  a path), so the error on a moved line or in another checkout is one
  signature.

Pure functions over strings; only ``re`` is imported.
"""

from __future__ import annotations

import re

MIN_LEN, MAX_LEN = 20, 120
MAX_SIGNATURES = 256  # per session

# Heads that say nothing by themselves; ``Error: `` and ``error: `` are heads of a
# message (``error: unknown type name 'X'``) and are judged by what follows them.
GENERIC_PREFIXES = ("Traceback (most recent", "FAIL\t", "--- FAIL")
CODE_MARKERS = ("echo ", '"', "$(", "=~", "print(")
COMMENT_PREFIXES = ("//", "#", "/*", "*", "--")

# §5.4 rule 5, then the same messages as glibc/bash print them under a Russian,
# German, French or Spanish locale (a superset: the contract's list is English).
NEEDLES = (
    "command not found", "modulenotfounderror", "no module named", "not found: ", "cannot find",
    "no such file or directory", "undefined:", "connection refused", "permission denied", "panic:",
    "segmentation fault", "exception in thread", "nullpointerexception", "index out of range",
    "stack overflow", "typeerror:", "referenceerror:", "keyerror:", "attributeerror:", "fatal:",
    "npm err!", "rpc failed", "timeout expired", "statement timeout", "connection reset",
    "connection timed out", "] error ", "build failed", "compilation failed", "cannot be resolved",
)
LOCALE_NEEDLES = (
    # ru
    "команда не найдена", "нет такого файла или каталога", "отказано в доступе", "в соединении отказано",
    "ошибка сегментирования",
    # de
    "befehl nicht gefunden", "datei oder verzeichnis nicht gefunden", "keine berechtigung",
    "verbindungsaufbau abgelehnt", "speicherzugriffsfehler",
    # fr
    "commande introuvable", "aucun fichier ou dossier de ce type", "permission non accordée", "connexion refusée",
    # es
    "orden no encontrada", "no existe el archivo o el directorio", "permiso denegado", "conexión rehusada",
)
NEEDLE_RE = re.compile("|".join(re.escape(n) for n in NEEDLES + LOCALE_NEEDLES))

# a shell's ``<where>:<n>: `` (``zsh:1: ``, ``(eval):2: ``) is dropped from the line (§5.4 rule 1);
# a file's location (``./internal/conv/conv.go:42:17: ``, ``C:\\src\\x.c:3: ``) stays in the
# line, whose signature keeps the file's name, and is left out of its error part
_WHERE_PREFIX = re.compile(r"^([^\s:]{1,16}):\d+: ")
_LOCATION = re.compile(r"^(?:[A-Za-z]:)?[^\s:]+:\d+(?::\d+)?: ")
# pytest's short summary: ``FAILED test_x.py::test_y - TimeoutError: …`` (the message is the error)
_PYTEST_SUMMARY = re.compile(r"^(?:FAILED|ERROR) (\S+?\.py(?:::\S+)?)(?: - (.+))?$")
_PYTEST_E = re.compile(r"^E {2,}")
# the forms of an error, needle or not: a compiler diagnostic, an errno head, an exception head
_ERROR_FORM = re.compile(
    r"^(?:(?i:(?:fatal )?error)(?:\[[A-Z]*\d+\])?: \S"
    r"|(?:Error: )?E[A-Z]{2,}[A-Z0-9]*: \S"
    r"|(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?:: \S|$))"
)
_ERROR_HEAD = re.compile(r"^error: ", re.I)  # the signature of ``Error: EISDIR: …`` is that of ``EISDIR: …``
_OWN_REPORT = re.compile(r"^\d+ sessions? {2}")

# --- prose about an error is not an error --------------------------------------
# A machine message has a head (``bash: ``, ``fatal: ``, ``KeyError: ``); a
# sentence narrates (``the error was that``, ``Ошибка была в том, что``,
# ``Der Fehler lag daran, dass``). Narration wins even after a head
# (``Note: the problem is that …``).
_NARRATION = re.compile(
    r"\b(?:"
    # en
    r"the (?:error|problem|issue|bug|fix|cause|reason|failure)s? (?:was|is|were|are|came|comes|seems|turned)|"
    r"(?:was|is) that\b|because\b|turned out|it (?:seems|looks like)|this means|which means|that's why|"
    r"caused by|we (?:got|get|saw|see|had|have|hit|need|should|fixed|kept)\b|"
    r"i (?:got|get|saw|see|think|fixed|ran|kept)\b|you (?:get|got|see|need|should|will)\b|"
    # ru
    r"ошибк[аиу] (?:был|в том|заключал|возник|связан)|проблем[аы] (?:был|в том|заключал|оказал|связан)|"
    r"дело в том|в том, что|потому что|из-за того|оказалось|это значит|это означает|причин[аой]\b|"
    r"мы (?:получ|увид|исправ|поймал)|я (?:получ|увид|исправ|дума|поймал)|"
    # de
    r"der fehler (?:lag|war|ist|kam|liegt|entsteht)|das problem (?:lag|war|ist|liegt)|lag daran|liegt daran|"
    r"stellte sich heraus|das bedeutet|die ursache|deshalb|deswegen|weil\b|"
    r"wir (?:haben|hatten|bekamen|bekommen|sahen)|ich (?:habe|hatte|denke|bekam)|"
    # fr / es
    r"parce que|l'erreur (?:était|vient|est)|le problème (?:était|vient|est)|"
    r"el error (?:era|fue|es|estaba)|el problema (?:era|fue|es|estaba)|porque\b"
    r")",
    re.I,
)
_SUBORDINATE = re.compile(r",\s*(?:that|which|because|что|чтобы|потому|поэтому|dass|weil|sodass|que|porque|donc)\b", re.I)
_FUNCTION_WORDS = frozenset(
    "the a an was were is are that this it we i you our to of in on for with and but so when which because "
    "был была было были это что в на и но мы я не из-за потому когда который которая "
    "der die das ein eine war ist sind dass weil wir ich es und aber wenn mit von zu bei "
    "le la les un une était est que qui et mais nous je el los las una era fue es y pero nosotros".split()
)
_HEAD = re.compile(r"^[^\s:]{1,40}(?: [^\s:]{1,24}){0,2}: ")
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


def normalize(line: str) -> str:
    """§5.4 rule 1, widened: trimmed, a pytest summary cut to its message, pytest's
    ``E`` marker and a shell's ``<where>:<n>: `` of ≤16 characters dropped."""
    s = line.strip()
    m = _PYTEST_SUMMARY.match(s)
    if m:
        return (m.group(2) or m.group(1)).strip()
    s = _PYTEST_E.sub("", s)
    m = _WHERE_PREFIX.match(s)
    if m:
        s = s[m.end():].lstrip()
    return s


def split_location(line: str) -> tuple[str, str]:
    """(``path:line[:col]: `` or "", the error part) of a normalised line: the
    error part is what a person pastes, the message without where it happened."""
    m = _LOCATION.match(line)
    return (line[:m.end()], line[m.end():].lstrip()) if m else ("", line)


def error_part(line: str) -> str:
    return split_location(normalize(line))[1]


def is_prose(line: str) -> bool:
    """A sentence about an error (a note, a summary, a chat line), not the error itself."""
    s = line.strip()
    if _NARRATION.search(s) or _SUBORDINATE.search(s):
        return True
    if _HEAD.match(s):
        return False
    words = _WORD.findall(s)
    if len(words) < 6 or not s[:1].isupper():
        return False
    fn = sum(1 for w in words if w.lower() in _FUNCTION_WORDS)
    return fn >= 3 and fn / len(words) >= 0.3


def failure_line(line: str) -> str | None:
    """The normalised line when its error part qualifies as a failure line, else None."""
    full = normalize(line)
    summary = _PYTEST_SUMMARY.match(line.strip()) is not None  # pytest said FAILED: the form is the evidence
    s = split_location(full)[1]
    if not MIN_LEN <= len(s) <= MAX_LEN:
        return None
    if s.startswith(GENERIC_PREFIXES) or s.startswith(COMMENT_PREFIXES):
        return None
    if any(m in s for m in CODE_MARKERS) or _OWN_REPORT.match(s):
        return None
    if not (summary or _ERROR_FORM.match(s) or NEEDLE_RE.search(s.lower())):
        return None
    if is_prose(s):
        return None
    return full


# A superset of what can hold a failure line, for SQL to narrow the records read
# (lower-cased text, RE2): the needles, the words of the error forms, errno heads.
SCAN_PATTERN = "|".join(re.escape(n) for n in NEEDLES + LOCALE_NEEDLES) + r"|error|exception|failed|\be[a-z]{2,}[a-z0-9]*: "


def probe(line: str) -> str:
    """A lower-case piece of a failure line that every text holding it holds too:
    its longest word (for SQL to find the records worth reading)."""
    words = re.findall(r"[^\W_]{3,}", line.lower())
    return max(words, key=len) if words else line.lower()


def failure_lines(text: str) -> list[str]:
    """Every qualifying line of a text, in order (normalised, duplicates kept)."""
    if not text:
        return []
    return [f for ln in text.splitlines() if (f := failure_line(ln))]


def first_failure(text: str) -> str | None:
    for ln in (text or "").splitlines():
        f = failure_line(ln)
        if f:
            return f
    return None


# --- signatures --------------------------------------------------------------------
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)
_HEX = re.compile(r"\b0x[0-9a-f]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b", re.I)
# a path with at least one directory: keep its last component only
_PATH = re.compile(r"(?<![\w.])(?:[A-Za-z]:)?(?:~|\.{1,2})?(?:[/\\][\w.@+-]+)+|(?<![\w/.])[\w.@+-]+(?:[/\\][\w.@+-]+)+")
_LINE_COL = re.compile(r":\d+(?::\d+)?\b")
_LINE_WORD = re.compile(r"\b(line|строка|zeile|ligne|línea)\s+\d+", re.I)
_NUMBER = re.compile(r"\b\d+(?:\.\d+)*\b")
_SPACES = re.compile(r"\s+")


def _last_component(m: re.Match) -> str:
    p = m.group(0).rstrip("/\\")
    tail = re.split(r"[/\\]", p)[-1]
    return "…/" + tail if tail else "…/"


def signature_key(line: str, located: bool = True) -> str:
    """What stays the same between two runs of one error: the normalised line with
    line/column numbers, other numbers, ids and a path's directories masked, a
    bare ``error: `` head left out. ``located=False``: its error part only."""
    where, s = split_location(normalize(line))
    s = (where if located else "") + _ERROR_HEAD.sub("", s)
    s = _UUID.sub("<id>", s)
    s = _PATH.sub(_last_component, s)
    s = _LINE_WORD.sub(lambda m: m.group(1) + " N", s)
    s = _LINE_COL.sub(":N", s)
    s = _HEX.sub("<hex>", s)
    s = _NUMBER.sub("N", s)
    return _SPACES.sub(" ", s).strip().lower()


_FNV_OFFSET, _FNV_PRIME, _MASK = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1


def fnv1a64(data: bytes) -> int:
    h = _FNV_OFFSET
    for b in data:
        h = ((h ^ b) * _FNV_PRIME) & _MASK
    return h


def signature(line: str, located: bool = True) -> int:
    """64-bit FNV-1a of the signature key (cli-contract §5.4); ``located=False``:
    of the error part alone, to find a pasted message wherever it happened."""
    return fnv1a64(signature_key(line, located).encode("utf-8"))


def signatures(text: str, cap: int = MAX_SIGNATURES) -> list[int]:
    """Distinct signatures of a text's failure lines, first seen first, at most ``cap``."""
    out: dict[int, None] = {}
    for f in failure_lines(text):
        out.setdefault(signature(f), None)
        if len(out) >= cap:
            break
    return list(out)


# --- commands never offered as a fix -----------------------------------------------
_DESTRUCTIVE = re.compile(
    r"\bgit\s+push\b[^|;&]*(?:\s--force\b|\s--force-with-lease\b|\s-f\b|\s\+\S)|"
    r"\bgit\s+reset\b[^|;&]*--hard\b|"
    r"\bgit\s+clean\b[^|;&]*\s-[a-z]*f|"
    r"\bgit\s+(?:merge|rebase)\b|"
    r"\bgit\s+checkout\b[^|;&]*\s(?:--\s+\.|\.)(?:\s|$)|\bgit\s+checkout\s+-f\b|"
    r"\bgit\s+restore\b|\bgit\s+stash\s+(?:drop|clear)\b|\bgit\s+branch\s+-D\b|"
    r"\bgit\s+filter-(?:branch|repo)\b|\bgit\s+update-ref\s+-d\b|"
    r"\brm\s+(?:-[a-z]*\s+)*-[a-z]*(?:r[a-z]*f|f[a-z]*r)|\brm\s+(?:-[a-z]*\s+)*--recursive\b|"
    r"\bdrop\s+(?:table|database|schema|index)\b|\btruncate\s+(?:table\s+)?\w|\bdelete\s+from\b|"
    r"\bdropdb\b|\bmkfs\b|\bdd\s+[^|;&]*of=/dev/|\bchmod\s+-R\s+777\b|"
    r"\bkubectl\s+delete\b|\bhelm\s+(?:uninstall|delete)\b|\bterraform\s+destroy\b|"
    r"\bdocker\s+(?:system|volume|image|container)\s+prune\b|\bdocker\s+rm\b|\bdocker-compose\s+down\s+-v\b|"
    r"\bdocker\s+compose\s+down\s+-v\b|\bnpm\s+unpublish\b|\bgh\s+repo\s+delete\b|\bgh\s+release\s+delete\b",
    re.I,
)


def destructive(command: str) -> bool:
    """Commands that lose work or data: never offered as what fixed an error."""
    return bool(_DESTRUCTIVE.search(command or ""))

"""Property tests for the redactor: secrets of every class inside random prose,
code and JSON in several scripts are redacted and the words around them stay
searchable; benign look-alikes (hashes, UUIDs, paths, identifiers, base64
images, lock-file integrity, versions, timestamps) are left alone.

Derandomized and small here, so CI is fast and repeatable; bench/fuzz_redact.py
runs the same properties for as many examples as asked (``--examples N``).
"""

from __future__ import annotations

import os
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deja.stages.redact import MARKER, redact, redact_many

EXAMPLES = int(os.environ.get("DEJA_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

ALNUM = string.ascii_letters + string.digits
SYMBOLS = "!#%&*+?@^~"

# Words around a secret, in Latin, Cyrillic and CJK scripts: each stays
# searchable after redaction.
WORDS = {
    "latin": ["deploy", "staging", "cache", "worker", "rotate", "migration", "fehler", "réseau", "señal"],
    "cyrillic": ["сервер", "база", "деплой", "ошибка", "кластер", "проверка"],
    "cjk": ["服务器", "数据库", "部署", "設定", "接続", "배포"],
}


@st.composite
def words(draw):
    script = draw(st.sampled_from(sorted(WORDS)))
    return draw(st.lists(st.sampled_from(WORDS[script]), min_size=1, max_size=4))


def _password(draw, min_size=6, max_size=18):
    """A human password: letters with at least one digit and one symbol."""
    body = draw(st.text(ALNUM, min_size=min_size, max_size=max_size))
    return body + draw(st.sampled_from(string.digits)) + draw(st.sampled_from(SYMBOLS))


@st.composite
def secret_in_context(draw):
    """(text holding a secret, the secret value) for one class of the rules."""
    pw = _password(draw)
    token = draw(st.text(ALNUM, min_size=20, max_size=40)) + "A1z"
    env_key = draw(st.sampled_from(["DB_PASSWORD", "API_TOKEN", "APP_SECRET", "STRIPE_KEY", "SIGNING_SALT", "SENTRY_DSN"]))
    user = draw(st.sampled_from(["alice", "deploy", "ci", "root"]))
    host = draw(st.sampled_from(["db.internal", "cache.example.com", "10.0.0.5"]))
    forms = [
        (f"{env_key}={pw}", pw),
        (f'{env_key}="{pw}"', pw),
        (f'{{"password": "{pw}", "user": "{user}"}}', pw),
        (f"password: {pw}", pw),
        (f"пароль: {pw}", pw),
        (f"密码: {pw}", pw),
        (f"mot de passe: {pw}", pw),
        (f"Passwort = {pw}", pw),
        (f"the admin password is {pw} now", pw),
        (f"sshpass -p {pw} ssh {user}@{host}", pw),
        (f"mysql -u {user} -p{pw} shop", pw),
        (f"curl -u {user}:{pw} https://{host}/v1", pw),
        (f"tool --password={pw} --verbose", pw),
        (f"tool --token {pw} --verbose", pw),
        (f"machine {host} login {user} password {pw}", pw),
        (f"Cookie: session={token}; theme=dark", token),
        (f"postgres://{user}:{pw}@{host}:5432/app", pw),
        (f"{user}:{pw}@{host}", pw),
        (f"Authorization: Bearer {token}", token),
        (f"push with ghp_{token}", token),
        (f"api_key = '{pw}'", pw),
        # ordinary shapes a review found leaking (session 24)
        (f"vault login hvs.{token}", token),
        (f"gcloud auth print-access-token\nya29.{token}", token),
        (f"SENDGRID_API_KEY=SG.{token[:22]}.{token}", token),
        (f"Authorization: Token {token}", token),
        (f"https://hooks.slack.com/services/T0{user.upper()}/B0{token}", token),
        (f"https://{host}/f.zip?sv=2022-11-02&sig={token}%3D", token),
        (f"the password for the {user} db is {pw}", pw),
        (f"数据库密码是 {pw}", pw),
        (f"STAGING_PASSWORD=${pw}", pw),
    ]
    return draw(st.sampled_from(forms))


@st.composite
def surrounding(draw):
    """A shape for the text around a secret: prose, code, JSON or a log line."""
    return draw(
        st.sampled_from(
            [
                "{a} {s} {b}",
                "{a}\n{s}\n{b}",
                "```\n# {a}\n{s}\n```\n{b}",
                '{{"note": "{a}", "env": "see below"}}\n{s}\n{b}',
                "2024-05-01T12:00:00Z INFO {a}: {s}\n{b}",
            ]
        )
    )


@FUZZ
@given(secret_in_context(), words(), words(), surrounding())
def test_secrets_are_redacted_and_words_stay_searchable(found, before, after, shape):
    text_with_secret, value = found
    text = shape.format(a=" ".join(before), s=text_with_secret, b=" ".join(after))
    out, counts = redact(text)
    assert value not in out, (text, out)
    assert counts and MARKER in out
    for word in before + after:
        assert word in out, (word, out)


@st.composite
def benign(draw):
    hexd = "0123456789abcdef"
    sha1 = draw(st.text(hexd, min_size=40, max_size=40))
    sha256 = draw(st.text(hexd, min_size=64, max_size=64))
    uuid = "-".join(draw(st.text(hexd, min_size=n, max_size=n)) for n in (8, 4, 4, 4, 12))
    ident = draw(st.sampled_from(["getUserAccountById", "handle_request_timeout", "HandlerFactoryImpl"]))
    seg = draw(st.text(string.ascii_lowercase, min_size=3, max_size=10))
    b64 = draw(st.text(ALNUM + "+/", min_size=40, max_size=80))
    ver = ".".join(str(draw(st.integers(0, 40))) for _ in range(3))
    return draw(
        st.sampled_from(
            [
                f"commit {sha1} reverted the cache",
                f"author=Alice commit={sha1}",
                f"sha256: {sha256}",
                f"sha256:{sha256}",
                f"session {uuid} resumed",
                f"id: {uuid}",
                f"/Users/alice/src/{seg}/{ident}.py",
                f"~/Code/{seg}/{ident}.java",
                f"the function {ident} retries",
                f'"integrity": "sha512-{b64}=="',
                f"integrity sha512-{b64}==",
                f"![img](data:image/png;base64,{b64})",
                f"upgraded to v{ver} yesterday",
                f"version: {ver}",
                f"2024-05-01T12:{draw(st.integers(10, 59))}:00.123Z build finished",
                f"build_id={b64[:24]}",
                f"requestId: {b64[:24]}",
                f"digest:\n{b64[:43]}=\n",
                f"git clone git@github.com:acme/{seg}.git",
                f"the password is {seg}",
                f"the password for {seg} is {seg}",
                f"token = self.{ident}",
                f"if password == {ident}:",
            ]
        )
    )


@FUZZ
@given(benign(), words())
def test_benign_look_alikes_are_untouched(shape, around):
    text = f"{' '.join(around)} {shape}"
    assert redact(text) == (text, {})


@settings(max_examples=max(10, EXAMPLES // 10), derandomize=True, deadline=None, database=None)
@given(st.lists(st.tuples(secret_in_context(), words()), min_size=1, max_size=30))
def test_batch_path_agrees_with_per_text(items):
    texts = [f"{' '.join(w)} {t}" for (t, _), w in items] * 40  # past the batch threshold
    outs, _ = redact_many(texts)
    assert outs == [redact(t)[0] for t in texts]

"""Tests for deja.stages.redact against redaction-rules.md.

Tables 4.1-4.3 are copied verbatim as JSON string literals (decoded with
json.loads) so a row can be diffed against the spec by eye.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter

import pytest

from deja.stages import redact as redact_mod
from deja.stages.redact import MARKER, redact, redact_many, sanitize_display

# ── 4.1 MUST be redacted: (id, input, expected output, kind) ────────────────
MUST_REDACT = [
    ('R1', r'"creds for ci: AKIAIOSFODNN7EXAMPLE"', r'"creds for ci: [redacted:aws-access-key]"', 'aws-access-key'),
    ('R2', r'"temp key ASIAFAKEFAKEFAKE0000 expires soon"', r'"temp key [redacted:aws-access-key] expires soon"', 'aws-access-key'),
    ('R3', r'"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"', r'"aws_secret_access_key = [redacted:aws-secret]"', 'aws-secret'),
    ('R4', r'''"export AWS_SECRET_ACCESS_KEY='wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'"''', r'''"export AWS_SECRET_ACCESS_KEY='[redacted:aws-secret]'"''', 'aws-secret'),
    ('R5', r'"api_key=Zx9Qw8Er7Ty6Ui5Op4"', r'"api_key=[redacted:credential]"', 'credential'),
    ('R6', r'"DATABASE_PASSWORD=Tr0ub4dor-and-3-horses"', r'"DATABASE_PASSWORD=[redacted:credential]"', 'credential'),
    ('R7', r'"{\"client_secret\": \"fake-client-secret-0123456789\"}"', r'"{\"client_secret\": \"[redacted:credential]\"}"', 'credential'),
    ('R8', r'"X-Api-Key: 0123456789abcdefFAKE"', r'"X-Api-Key: [redacted:credential]"', 'credential'),
    ('R9', r'"secret: abcdefghijklmnopqrst"', r'"secret: [redacted:credential]"', 'credential'),
    ('R10', r'"\"password\":\"aaaaaaaaaaaaaaaa\""', r'"\"password\":\"[redacted:credential]\""', 'credential'),
    ('R11', r'"пароль: Qwerty123456Qwerty"', r'"пароль: [redacted:credential]"', 'credential'),
    ('R12', r'"Passwort = KorrektPferdBatterie42"', r'"Passwort = [redacted:credential]"', 'credential'),
    ('R13', r'"密码: Abcdefgh12345678"', r'"密码: [redacted:credential]"', 'credential'),
    ('R14', r'"api_key=sk-ant-abcdefghijklmnopqrstuvwxyz0123456789"', r'"api_key=[redacted:credential]"', 'credential'),
    ('R15', r'''"curl -H 'Authorization: Bearer abcdefghijklmnop1234' https://api.example.com"''', r'''"curl -H 'Authorization: Bearer [redacted:bearer-token]' https://api.example.com"''', 'bearer-token'),
    ('R16', r'"Authorization: Basic dXNlcjpodW50ZXIyaHVudGVyMg=="', r'"Authorization: Basic [redacted:bearer-token]"', 'bearer-token'),
    ('R17', r'"bearer abcdefghijklmnopqrstu"', r'"bearer [redacted:bearer-token]"', 'bearer-token'),
    ('R18', r'"cookie jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmYWtlIn0.c2lnbmF0dXJlLWZha2U end"', r'"cookie jwt [redacted:jwt] end"', 'jwt'),
    ('R19', r'"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAFAKE\n-----END OPENSSH PRIVATE KEY-----"', r'"[redacted:private-key]"', 'private-key'),
    ('R20', r'"-----BEGIN PRIVATE KEY-----\nMIIEvFAKEFAKE\n-----END PRIVATE KEY-----"', r'"[redacted:private-key]"', 'private-key'),
    ('R21', r'"push with ghp_x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2"', r'"push with [redacted:github-token]"', 'github-token'),
    ('R22', r'"GH_TOKEN_X github_pat_x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2"', r'"GH_TOKEN_X [redacted:github-token]"', 'github-token'),
    ('R23', r'"gitlab: glpat-x1Y2x1Y2x1Y2x1Y2x1Y2"', r'"gitlab: [redacted:gitlab-token]"', 'gitlab-token'),
    ('R24', r'"OPENAI_KEY sk-proj-x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2"', r'"OPENAI_KEY [redacted:openai-key]"', 'openai-key'),
    ('R25', r'"the key is sk-ant-api03-x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2 use it"', r'"the key is [redacted:anthropic-key] use it"', 'anthropic-key'),
    ('R26', r'"charge with sk_test_x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2"', r'"charge with [redacted:stripe-key]"', 'stripe-key'),
    ('R27', r'"groq gsk_x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2"', r'"groq [redacted:groq-key]"', 'groq-key'),
    ('R28', r'"model key xai-x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2"', r'"model key [redacted:xai-key]"', 'xai-key'),
    ('R29', r'"hub hf_x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1"', r'"hub [redacted:huggingface-token]"', 'huggingface-token'),
    ('R30', r'"registry npm_x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2"', r'"registry [redacted:npm-token]"', 'npm-token'),
    ('R31', r'"slack xoxb-not-a-real-token-000"', r'"slack [redacted:slack-token]"', 'slack-token'),
    ('R32', r'"maps AIzax1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y"', r'"maps [redacted:google-api-key]"', 'google-api-key'),
    ('R33', r'"DSN postgres://app:s3cretPass@db.internal:5432/prod"', r'"DSN postgres://app:[redacted:url-credentials]@db.internal:5432/prod"', 'url-credentials'),
    ('R34', r'"redis://:hunter2hunter2@cache.local:6379/0"', r'"redis://:[redacted:url-credentials]@cache.local:6379/0"', 'url-credentials'),
    ('R35', r'"mysql://root:p@ss@w0rd@10.0.0.5:3306/app"', r'"mysql://root:[redacted:url-credentials]@10.0.0.5:3306/app"', 'url-credentials'),
    ('R36', r'"https://x-access-token:ghp_x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2@github.com/org/repo"', r'"https://x-access-token:[redacted:url-credentials]@github.com/org/repo"', 'url-credentials'),
    ('R37', r'"the password is \"correct horse\""', r'"the password is \"[redacted:quoted-secret]\""', 'quoted-secret'),
    ('R38', r'''"login failed with password 'Winter2024!'"''', r'''"login failed with password '[redacted:quoted-secret]'"''', 'quoted-secret'),
    ('R39', r'"api_key `abc123def456`"', r'"api_key `[redacted:quoted-secret]`"', 'quoted-secret'),
    # Upstream counts R40 as entropy; a *_SALT key is secret-named here (issue 14), so the
    # credential rule takes it first, whatever the value's entropy.
    ('R40', r'"SIGNING_SALT=Gh7Lq2Vx9Rt4Mz8Kp3Wn6Yb1"', r'"SIGNING_SALT=[redacted:credential]"', 'credential'),
    ('R41', r'"\"private_blob\": \"Zk3Qp9Wm2Xr7Tn4Vb8Ly1Hc6Jd5Gs0Fa\""', r'"\"private_blob\": \"[redacted:entropy]\""', 'entropy'),
    ('R42', r'"key: 8f3Kq9Lm2Np7Rt5Vw1Xz4Bc6Dd0Ef"', r'"key: [redacted:entropy]"', 'entropy'),
    ('R43', r'"here it is:\n  Tq7Wm2Zx9Kv4Lp8Rn3Yh6Bc1Fd5Gs0J\nthanks"', r'"here it is:\n  [redacted:entropy]\nthanks"', 'entropy'),
    ('R44', r'"bot 7719283746:AAF3kQ9zX1mR7vT2wY5pL8nB4cD6eG0hJ"', r'"bot 7719283746:[redacted:entropy]"', 'entropy'),
]

# ── 4.2 MUST NOT be touched: (id, input) ────────────────────────────────────
MUST_NOT_TOUCH = [
    ('N1', r'"the password is wrong"'),
    ('N2', r'"password authentication failed for user admin"'),
    ('N3', r'"the password policy requires 12 characters"'),
    ('N4', r'"we should rotate the api key next sprint"'),
    ('N5', r'"please reset your password: it expired"'),
    ('N6', r'"Authorization: pending review from the security team"'),
    ('N7', r'"Bearer of bad news: the build is red"'),
    ('N8', r'"the secret to a fast index is fewer allocations"'),
    ('N9', r'"the token is valid for 3600 seconds"'),
    ('N10', r'"token expired, run `gh auth login` again"'),
    ('N11', r'"set TOKEN_TTL=3600 in the config"'),
    ('N12', r'"API_KEY=${OPENAI_API_KEY}"'),
    ('N13', r'"GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}"'),
    ('N14', r'"{\"token\": null, \"secret\": \"\"}"'),
    ('N15', r'"sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"'),
    ('N16', r'"commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904 reverted the cache"'),
    ('N17', r'"author=Alice commit=4b825dc642cb6eb9a060e54bf8d69288fbee4904"'),
    ('N18', r'"session 123e4567-e89b-12d3-a456-426614174000 resumed"'),
    ('N19', r'"id: 550e8400-e29b-41d4-a716-446655440000"'),
    ('N20', r'"/Users/Alice/Projects/Acme-Gateway/internal/db/pool.go"'),
    ('N21', r'"/private/var/folders/xy/-Users-Bob/7d3e1f20-aaaa-4bbb-8ccc-0123456789ab/scratch/notes.md"'),
    ('N22', r'"~/Code/MyService/src/HandlerFactoryImpl.java"'),
    ('N23', r'"C:\\Users\\Alice\\AppData\\Roaming\\Code\\User\\globalStorage"'),
    ('N24', r'"see https://github.com/acme/widgets/releases/download/v1.2.3/widgets-linux-amd64.tar.gz"'),
    ('N25', r'"postgres://localhost:5432/app_dev"'),
    ('N26', r'"git clone git@github.com:acme/widgets.git"'),
    ('N27', r'"mail dev@example.org about the outage"'),
    ('N28', r'"rebase the xai-oauth-retry-loop-cleanup branch first"'),
    ('N29', r'"feature/sk-refactor-the-entire-parser-module"'),
    ('N30', r'"AKIA prefixes mark long-lived access keys"'),
    ('N31', r'"ghp_ is the prefix of classic GitHub PATs"'),
    ('N32', r'"eyJhbGciOiJIUzI1NiJ9 is just a header"'),
    ('N33', r'"the function getUserAccountByIdentifierAndTenant retries"'),
    ('N34', r'"copied from: Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0"'),
    ('N35', r'"upgraded to v0.18.0 yesterday"'),
    ('N36', r'''"Error: Cannot find module 'express'"'''),
    ('N37', r'"pwd was /home/alice/src"'),
    ('N38', r'"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFAKEFAKEFAKEFAKEFAKEFAKE alice@laptop"'),
]

# ── 4.3 known upstream limits, reproduced on purpose: (id, input, upstream
# output, kind counted or None) ─────────────────────────────────────────────
KNOWN_LIMITS = [
    ('L1', r'"password=hunter2"', r'"password=hunter2"', None),
    ('L2', r'"password: `hunter2`"', r'"password: `hunter2`"', None),
    ('L3', r'''"token 'abc'"''', r'''"token 'abc'"''', None),
    ('L4', r'"user:hunter2@db.internal"', r'"user:hunter2@db.internal"', None),
    ('L5', r'"mot de passe: MonSecretTresLong2024"', r'"mot de passe: MonSecretTresLong2024"', None),
    ('L6', r'"\"private_blob\": \"Qm9yZGVyQ29sbGllUnVsZXMyMDI0IUFGQUtF\""', r'"\"private_blob\": \"Qm9yZGVyQ29sbGllUnVsZXMyMDI0IUFGQUtF\""', None),
    ('L7', r'"rotate the secret for \"staging-east\" tonight"', r'"rotate the secret for \"[redacted:quoted-secret]\" tonight"', 'quoted-secret'),
    ('L8', r'"\"integrity\": \"sha512-Ab3dEf9hIjKlMnOpQrStUvWxYz0123456789+/AbCdEf==\""', r'"\"integrity\": \"[redacted:entropy]\""', 'entropy'),
    ('L9', r'"digest:\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"', r'"digest:\n[redacted:entropy]\n"', 'entropy'),
    ('L10', r'"build_id=Kx7Pq2Wr9Tz4Mn8Vb3Lc6Yh1"', r'"build_id=[redacted:entropy]"', 'entropy'),
    ('L11', r'"https://bob:pw1234@host.example/path?notify=ops@example.com and more"', r'"https://bob:[redacted:url-credentials]@example.com and more"', 'url-credentials'),
    ('L12', r'"SIGNING_SALT=abcdefghijklmnopqrstuvwx"', r'"SIGNING_SALT=abcdefghijklmnopqrstuvwx"', None),
]


def _ids(rows):
    return [r[0] for r in rows]


@pytest.mark.parametrize(("row", "inp", "expected", "kind"), MUST_REDACT, ids=_ids(MUST_REDACT))
def test_must_redact(row, inp, expected, kind):
    text, want = json.loads(inp), json.loads(expected)
    out, counts = redact(text)
    assert out == want
    assert counts == {kind: 1}
    assert out.count(MARKER) == 1


@pytest.mark.parametrize(("row", "inp"), MUST_NOT_TOUCH, ids=_ids(MUST_NOT_TOUCH))
def test_must_not_touch(row, inp):
    text = json.loads(inp)
    out, counts = redact(text)
    assert out == text
    assert out.encode("utf-8") == text.encode("utf-8")
    assert counts == {}


@pytest.mark.parametrize(("row", "inp", "upstream", "kind"), KNOWN_LIMITS, ids=_ids(KNOWN_LIMITS))
def test_known_limits_match_upstream(row, inp, upstream, kind):
    # These document upstream behaviour (under- and over-redaction alike);
    # flip a row here if the port ever chooses a stricter rule.
    text, want = json.loads(inp), json.loads(upstream)
    out, counts = redact(text)
    assert out == want
    assert counts == ({kind: 1} if kind else {})


# ── the same tables through the fallback (unaligned lower()) path ───────────
# "İ".lower() is two code points, which switches the case-insensitive rules
# from anchored matching to plain regex.sub; results must not change.
_UNALIGNED = "İ\n"


@pytest.mark.parametrize(("row", "inp", "expected", "kind"), MUST_REDACT, ids=_ids(MUST_REDACT))
def test_must_redact_unaligned_lowercase(row, inp, expected, kind):
    out, counts = redact(_UNALIGNED + json.loads(inp))
    assert out == _UNALIGNED + json.loads(expected)
    assert counts == {kind: 1}


@pytest.mark.parametrize(("row", "inp"), MUST_NOT_TOUCH, ids=_ids(MUST_NOT_TOUCH))
def test_must_not_touch_unaligned_lowercase(row, inp):
    text = _UNALIGNED + json.loads(inp)
    assert redact(text) == (text, {})


# ── contract ────────────────────────────────────────────────────────────────


def test_empty_and_tiny_texts():
    assert redact("") == ("", {})
    assert redact("a") == ("a", {})
    assert redact_many([]) == ([], {})
    assert redact_many(["", "x"]) == (["", "x"], {})


def test_shortest_possible_match_is_not_skipped():
    # 8 code points: the length floor below which redaction skips a text.
    assert redact("a://:b@c") == ("a://:[redacted:url-credentials]@c", {"url-credentials": 1})


def test_no_redact_env_returns_input_unchanged(monkeypatch):
    secret = "api_key=Zx9Qw8Er7Ty6Ui5Op4"
    monkeypatch.setenv("DEJA_NO_REDACT", "1")
    assert redact(secret) == (secret, {})
    assert redact_many([secret, secret]) == ([secret, secret], {})
    # Read at call time, not import time.
    monkeypatch.setenv("DEJA_NO_REDACT", "0")
    assert redact(secret) == ("api_key=[redacted:credential]", {"credential": 1})
    monkeypatch.delenv("DEJA_NO_REDACT")
    assert redact(secret)[1] == {"credential": 1}


def test_redact_many_sums_counts_and_keeps_order():
    texts = [
        "creds AKIAIOSFODNN7EXAMPLE and ASIAFAKEFAKEFAKE0000",
        "nothing to see here",
        "",
        "api_key=Zx9Qw8Er7Ty6Ui5Op4",
        "push with ghp_x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2",
        "aws again AKIAIOSFODNN7EXAMPLE",
    ]
    outs, counts = redact_many(texts)
    assert outs == [redact(t)[0] for t in texts]
    assert outs[1] == texts[1] and outs[2] == ""
    assert counts == {"aws-access-key": 3, "credential": 1, "github-token": 1}


def test_secret_straddling_64k_storage_cut_is_masked():
    # Redaction runs on the full message before the 64 KiB cut, so a secret
    # spanning the cut leaves no fragment on either side of it.
    cut = 64 * 1024
    secret_value = "Zx9Qw8Er7Ty6Ui5Op4Lk3Jh2Gf1Ds0Ap9"
    secret = f" api_key={secret_value} "
    filler = "the quick brown fox jumps over the lazy dog. " * 3000
    start = cut - 20  # the value begins before the cut and ends after it
    text = (filler[:start] + secret + filler)[: 100 * 1024]
    assert text.index(secret_value) < cut < text.index(secret_value) + len(secret_value)
    out, counts = redact(text)
    assert counts == {"credential": 1}
    chunks = {secret_value[i : i + 6] for i in range(len(secret_value) - 5)}
    assert not any(c in out for c in chunks)
    assert not any(c in out[:cut] for c in chunks)
    assert "api_key=[redacted:credential]" in out


def test_first_rule_decides_kind():
    out, counts = redact("api_key=sk-ant-abcdefghijklmnopqrstuvwxyz0123456789")
    assert counts == {"credential": 1} and out.count(MARKER) == 1


def test_several_kinds_in_one_text():
    text = (
        "DSN postgres://app:s3cretPass@db.internal:5432/prod\n"
        "then AKIAIOSFODNN7EXAMPLE and token 'abcdef123'\n"
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEFAKE\n-----END RSA PRIVATE KEY-----\n"
        "hf_x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1 done"
    )
    out, counts = redact(text)
    assert counts == {
        "url-credentials": 1,
        "aws-access-key": 1,
        "quoted-secret": 1,
        "private-key": 1,
        "huggingface-token": 1,
    }
    assert out.count(MARKER) == 5


def test_private_key_edges():
    block = "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----"
    assert redact(f"a\n{block}\nb\n{block}\nc") == (
        "a\n[redacted:private-key]\nb\n[redacted:private-key]\nc",
        {"private-key": 2},
    )
    pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\nxx\n-----END PGP PRIVATE KEY BLOCK-----"
    assert redact(pgp) == ("[redacted:private-key]", {"private-key": 1})
    # Unterminated blocks and public material are left to the other rules.
    for text in (
        "-----BEGIN RSA PRIVATE KEY-----\nAAAA truncated",
        "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----",
    ):
        assert redact(text) == (text, {})


def test_international_keys_fold_case():
    for key, sep in (("ПАРОЛЬ", ": "), ("токен", "="), ("Ключа", " = "), ("パスワード", ": ")):
        text = f"{key}{sep}Qwerty123456Qwerty"
        assert redact(text) == (f"{key}{sep}[redacted:credential]", {"credential": 1}), key


def test_closing_quote_only_with_opening_quote():
    counted = {"credential": 1}
    assert redact('password=abcdefghijklmnop1"') == ("password=[redacted:credential]", counted)
    assert redact("password='abcdefghijklmnop1'") == ("password='[redacted:credential]'", counted)


def test_entropy_stop_word_and_short_keys():
    blob = "Zk3Qp9Wm2Xr7Tn4Vb8Ly1Hc6Jd5Gs0Fa"
    for key in ("at", "to", "from", "which", "12345"):
        text = f"{key}: {blob}"
        assert redact(text) == (text, {}), key
    assert redact(f"blob: {blob}") == ("blob: [redacted:entropy]", {"entropy": 1})


def test_odd_unicode_does_not_crash():
    weird = [
        "\udcff\udc80 api_key=Zx9Qw8Er7Ty6Ui5Op4 \ud800",  # lone surrogates
        "\x00\x01\x02 password 'S3cr3t!!' \x7f\x9b",
        "İİİ token = abcdefghijklmnopqrstu İ",
        "\u202e\u2066 ghp_x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2 \u200b\ufeff",
        "e\u0301" * 50 + " 🙂" * 50 + "\U000e0041",
        "\ufffd" * 100,
        "K" + "ſecret=abcdefghijklmnopqrst",  # Kelvin sign, long s
        "\r\n".join(["Tq7Wm2Zx9Kv4Lp8Rn3Yh6Bc1Fd5Gs0J"] * 3),
        "a" * 5000 + "://" + "b" * 5000,
        "-----BEGIN RSA PRIVATE KEY-----" * 200,
    ]
    outs, counts = redact_many(weird)
    assert len(outs) == len(weird)
    assert "Zx9Qw8Er7Ty6Ui5Op4" not in outs[0] and outs[0].endswith("\ud800")
    assert "S3cr3t" not in outs[1]
    assert "abcdefghijklmnopqrstu" not in outs[2]
    assert "ghp_" not in outs[3]
    assert outs[4] == weird[4] and outs[5] == weird[5]
    assert outs[7] == "\r\n".join(["[redacted:entropy]"] * 3)
    assert outs[8] == weird[8] and outs[9] == weird[9]
    for text in weird:
        sanitize_display(text)


# ── display sanitiser (3.4) ─────────────────────────────────────────────────


def test_display_plain_text_is_returned_as_is():
    text = "line one\n\tindented — ünïcode 🙂 中文"
    assert sanitize_display(text) is text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\x1b[31mred\x1b[0m plain", "red plain"),  # CSI colour
        ("\x1b[2J\x1b[1;1Hclear", "clear"),  # CSI with parameters
        ("\x1b]0;evil title\x07after", "after"),  # OSC ended by BEL
        ("\x1b]8;;http://x.test\x1b\\link\x1b]8;;\x1b\\", "link"),  # OSC ended by ST
        ("\x1b[31", ""),  # unterminated CSI runs to the end
        ("keep\x1b]2;never ends", "keep"),  # unterminated OSC too
        ("a\x1bMb", "ab"),  # two-character escape
        ("end\x1b", "end"),
        ("one\r\ntwo\r\n", "one\ntwo\n"),  # CRLF -> LF
        ("progress 10%\rprogress 99%", "progress 10% progress 99%"),  # lone CR
        ("tab\tand\nnewline", "tab\tand\nnewline"),
        ("bell\x07back\x08nul\x00del\x7fc1\x85", "bell back nul del c1 "),
        ("abc\u202edcba\u202c", "abc dcba "),  # bidi override (Trojan Source)
        ("\u2066iso\u2069 \u200emark\u200f", " iso   mark "),
        ("zero\u200bwidth\u2060joiner\ufeffbom", "zero width joiner bom"),
        ("soft\u00adhyphen\u061carabic", "soft hyphen arabic"),
        ("tag\U000e0041\U000e007fs", "tag  s"),
        ("emoji 👩\u200d💻 stays", "emoji 👩\u200d💻 stays"),  # ZWJ is not listed
    ],
)
def test_display_sanitiser(text, expected):
    assert sanitize_display(text) == expected


def test_display_cr_before_escape_is_not_a_line_ending():
    # One left-to-right pass, as upstream: CR followed by ESC is a lone CR.
    assert sanitize_display("a\r\x1b[0m\nb") == "a \nb"


# ── the fast paths equal the plain-regex reference ──────────────────────────

_FRAGMENTS = [  # fmt: skip
    ' ', '  ', '\t', '\n', '\r\n', '=', ':', ': ', ' = ', '"', "'", '`', '@', '/', '//', '.', '-',
    '_', 'api_key', 'API-KEY', 'apikey', 'x-api-key', 'secret', 'client_secret', 'SeCrEt', 'token',
    'secretoken', 'tokens', 'passwd', 'PASSWORD', 'pwd', 'authorization', 'key', 'KEY', 'is ',
    'was ', 'for ', 'Bearer', 'basic', 'BASIC ', 'aws_secret_access_key', 'AWS-SECRET-ACCESS-KEY',
    'AKIA', 'ASIA', 'IOSFODNN7EXAMPLE', 'eyJ', 'hbGciOiJIUzI1NiJ9', '.', 'c2lnbmF0', 'ghp_', 'gho_',
    'github_pat_', 'glpat-', 'sk_live_', 'rk_test_', 'sk-', 'sk-ant-', 'sk-proj-', 'gsk_', 'xai-',
    'hf_', 'npm_', 'xoxb-', 'AIza', 'https://', 'postgres://', 'git+ssh://', 'a://', 'user', 'p@ss',
    'host.example', '-----BEGIN RSA PRIVATE KEY-----', '-----END RSA PRIVATE KEY-----',
    '-----BEGIN PRIVATE KEY-----', '-----END PRIVATE KEY-----', 'пароль', 'ПАРОЛЯ', 'токен', 'ключ',
    '密码', 'senha', 'Passwort', 'İ', 'ſ', 'K', 'é', 'abcdefgh', 'ABCDEFGH', '01234567',
    'x1Y2x1Y2x1Y2x1Y2x1Y2', 'Zk3Qp9Wm2Xr7Tn4Vb8Ly1Hc6Jd5Gs0Fa', '4b825dc642cb6eb9a060e54bf8d69288',
    'a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8', '/usr/local/lib/', '==', '+/', '7719283746',
    'eyJhbGciOiJIUzI1NiJ9.eyJzdWIi', '.c2lnbmF0dXJl', "'abcdef12'", '"correct horse"', '`S3cr3t!`',
    'ſenha', 'SENHA', 'ТОКЕН', '\x0b', '\r', '===', 'from:', '12345678:', 'sha512-', '\udcff',
]


def _random_text(rng: random.Random) -> str:
    return "".join(rng.choice(_FRAGMENTS) for _ in range(rng.randint(1, 40)))


def test_anchored_paths_equal_plain_regex_reference():
    rng = random.Random(20240611)
    for _ in range(4000):
        text = _random_text(rng)
        fast_counts: dict[str, int] = {}
        ref_counts: dict[str, int] = {}
        fast = redact_mod._redact_text(text, fast_counts)
        ref = redact_mod._redact_text(text, ref_counts, anchored=False)
        assert (fast, fast_counts) == (ref, ref_counts), repr(text)


def _naive_redact(text):
    """Section 2 read literally: every rule's regex over the whole text, in
    order, with no pre-checks, gates or anchors; then section 3.3."""
    m = redact_mod
    counts: dict[str, int] = {}
    whole = lambda kind: lambda _: (f"[redacted:{kind}]", kind)  # noqa: E731
    for regex, build in (
        (m._PEM_RE, whole("private-key")),
        (m._URL_RE, m._build_url),
        (m._AWS_SECRET_RE, m._build_aws_secret),
        (m._AWS_ACCESS_RE, whole("aws-access-key")),
        (m._QUOTED_RE, m._build_quoted),
        (m._BEARER_RE, m._build_bearer),
        (m._JWT_RE, whole("jwt")),
        (m._KV_RE, m._build_credential),
        (m._KV_INTL_RE, m._build_credential),
        (m._PROVIDER_RE, m._build_provider),
    ):
        text = m._full_sub(text, regex, build, counts)
    buf = text.encode("utf-8", "surrogatepass")
    pieces, last = [], 0
    for run in re.finditer(rb"[A-Za-z0-9+/_-]{20,}={0,2}", buf):
        start, end = run.span()
        tok = buf[start:end]
        positioned = m._assignment_value(buf, start) or (
            len(tok) >= 28 and m._standalone_line(buf, start, end)
        )
        lower = tok.lower()
        has_digit = any(48 <= c <= 57 for c in tok)
        classes = (tok != lower) + (tok != tok.upper()) + has_digit + (not tok.isalnum())
        entropy = -sum(c / len(tok) * math.log2(c / len(tok)) for c in Counter(tok).values())
        if (
            positioned
            and len(tok) <= 256
            and not re.fullmatch(rb"[0-9a-fA-F-]+", tok)
            and classes >= 3
            and not (b"/" in tok and tok == lower)
            and not m._looks_like_path(tok)
            and entropy >= 4.5
        ):
            pieces += [buf[last:start], b"[redacted:entropy]"]
            counts["entropy"] = counts.get("entropy", 0) + 1
            last = end
    if pieces:
        text = b"".join(pieces + [buf[last:]]).decode("utf-8", "surrogatepass")
    return text, counts


def test_redact_equals_naive_reading_of_the_spec():
    # Pre-checks, gates, anchors and the fast entropy scan are speed-ups
    # only: none of them may change a result.
    rng = random.Random(4242)
    for _ in range(3000):
        text = _random_text(rng)
        assert redact(text) == _naive_redact(text), repr(text)


def test_assignment_gate_never_hides_a_match():
    # The gate is a pure speed-up: whenever a credential pattern could match,
    # it must say yes.
    rng = random.Random(7)
    hits = 0
    for _ in range(6000):
        text = _random_text(rng)
        if redact_mod._KV_RE.search(text):
            hits += 1
            assert redact_mod._assignment_gate(text.lower(), redact_mod._HINTS_EN), repr(text)
        if redact_mod._KV_INTL_RE.search(text):
            hits += 1
            assert redact_mod._assignment_gate(text.casefold(), redact_mod._HINTS_INTL), repr(text)
    assert hits > 50  # the generator does produce matches


# ── the batch path (polars prefilters) equals redact() text by text ─────────


@pytest.fixture
def batch_path(monkeypatch):
    """Force redact_many onto the polars path even for small batches."""
    pytest.importorskip("polars")
    monkeypatch.setattr(redact_mod, "_BATCH_MIN_CHARS", 0)


def _per_text(texts):
    outs, total = [], {}
    for text in texts:
        out, counts = redact(text)
        outs.append(out)
        for kind, n in counts.items():
            total[kind] = total.get(kind, 0) + n
    return outs, total


def test_batch_path_reproduces_the_tables(batch_path):
    texts = [json.loads(r[1]) for r in MUST_REDACT + MUST_NOT_TOUCH + KNOWN_LIMITS]
    expected = (
        [json.loads(r[2]) for r in MUST_REDACT]
        + [json.loads(r[1]) for r in MUST_NOT_TOUCH]
        + [json.loads(r[2]) for r in KNOWN_LIMITS]
    )
    outs, counts = redact_many(texts)
    assert outs == expected
    assert (outs, counts) == _per_text(texts)


def test_batch_path_equals_per_text_on_random_batches(batch_path):
    rng = random.Random(99)
    for _ in range(20):
        texts = [_random_text(rng) for _ in range(300)]
        assert redact_many(texts) == _per_text(texts)


def test_batch_prefilters_see_earlier_redactions(batch_path):
    # The PEM block holds spaces, so the original text has no URL credential;
    # once the block is a marker, the URL rule matches. Going rule by rule,
    # the batch path sees that too.
    text = "x://a:-----BEGIN RSA PRIVATE KEY-----\nAAA\n-----END RSA PRIVATE KEY-----@host"
    expected = ("x://a:[redacted:url-credentials]@host", {"private-key": 1, "url-credentials": 1})
    assert redact(text) == expected
    assert redact_many([text, "plain text"]) == ([expected[0], "plain text"], expected[1])


def test_batch_path_with_lone_surrogates(batch_path):
    texts = [
        "\udcff api_key=Zx9Qw8Er7Ty6Ui5Op4",
        "ok ghp_x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2x1Y2",
        "\ud800",
    ]
    outs, counts = redact_many(texts)
    assert outs == ["\udcff api_key=[redacted:credential]", "ok [redacted:github-token]", "\ud800"]
    assert counts == {"credential": 1, "github-token": 1}


def test_large_batch_uses_default_threshold():
    pytest.importorskip("polars")
    filler = "ordinary prose about the index and its cache " * 40
    texts = [f"{filler}\nSIGNING_SALT=Gh7Lq2Vx9Rt4Mz8Kp3Wn6Yb1\n{i}" for i in range(100)]
    assert sum(map(len, texts)) >= redact_mod._BATCH_MIN_CHARS
    outs, counts = redact_many(texts)
    assert counts == {"entropy": 100}
    assert all("SIGNING_SALT=[redacted:entropy]" in o for o in outs)

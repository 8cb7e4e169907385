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

# ── 4.3 known upstream limits, resolved (issue 14): (id, input, output, kind
# counted or None). Upstream's output is in redaction-rules.md; ours differs on
# purpose, and README's "Secrets" section says why, row by row. ──────────────
KNOWN_LIMITS = [
    ('L1', r'"password=hunter2"', r'"password=[redacted:credential]"', 'credential'),
    ('L2', r'"password: `hunter2`"', r'"password: `[redacted:credential]`"', 'credential'),
    ('L3', r'"token \u0027abc\u0027"', r'"token \u0027[redacted:quoted-secret]\u0027"', 'quoted-secret'),
    ('L4', r'"user:hunter2@db.internal"', r'"user:[redacted:url-credentials]@db.internal"', 'url-credentials'),
    ('L5', r'"mot de passe: MonSecretTresLong2024"', r'"mot de passe: [redacted:credential]"', 'credential'),
    ('L6', r'"\"private_blob\": \"Qm9yZGVyQ29sbGllUnVsZXMyMDI0IUFGQUtF\""', r'"\"private_blob\": \"[redacted:entropy]\""', 'entropy'),
    ('L7', r'"rotate the secret for \"staging-east\" tonight"', r'"rotate the secret for \"staging-east\" tonight"', None),
    ('L8', r'"\"integrity\": \"sha512-Ab3dEf9hIjKlMnOpQrStUvWxYz0123456789+/AbCdEf==\""', r'"\"integrity\": \"sha512-Ab3dEf9hIjKlMnOpQrStUvWxYz0123456789+/AbCdEf==\""', None),
    ('L9', r'"digest:\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"', r'"digest:\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"', None),
    ('L10', r'"build_id=Kx7Pq2Wr9Tz4Mn8Vb3Lc6Yh1"', r'"build_id=Kx7Pq2Wr9Tz4Mn8Vb3Lc6Yh1"', None),
    ('L11', r'"https://bob:pw1234@host.example/path?notify=ops@example.com and more"', r'"https://bob:[redacted:url-credentials]@host.example/path?notify=ops@example.com and more"', 'url-credentials'),
    ('L12', r'"SIGNING_SALT=abcdefghijklmnopqrstuvwx"', r'"SIGNING_SALT=[redacted:credential]"', 'credential'),
    # L1-L12's neighbours: the same limit in its other spellings.
    ('L1b', r'"passwd: x9"', r'"passwd: [redacted:credential]"', 'credential'),
    ('L2b', r'"token = `abc`"', r'"token = `[redacted:credential]`"', 'credential'),
    ('L3b', r'"secret \"k9\""', r'"secret \"[redacted:quoted-secret]\""', 'quoted-secret'),
    ('L4b', r'"redis-cli -u admin:S3cr3t@cache.internal:6379"', r'"redis-cli -u admin:[redacted:url-credentials]@cache.internal:6379"', 'url-credentials'),
    ('L5-it', r'"parola d\u0027ordine: Segreto2024"', r'"parola d\u0027ordine: [redacted:credential]"', 'credential'),
    ('L5-nl', r'"wachtwoord = Geheim2024"', r'"wachtwoord = [redacted:credential]"', 'credential'),
    ('L5-pl', r'"hasło: Tajne2024"', r'"hasło: [redacted:credential]"', 'credential'),
    ('L5-tr', r'"şifre: Gizli2024"', r'"şifre: [redacted:credential]"', 'credential'),
    ('L5-tr2', r'"parola=Gizli2024"', r'"parola=[redacted:credential]"', 'credential'),
    ('L5-cs', r'"heslo: Tajne2024"', r'"heslo: [redacted:credential]"', 'credential'),
    ('L5-sv', r'"lösenord: Hemligt2024"', r'"lösenord: [redacted:credential]"', 'credential'),
    ('L5-no', r'"passord=Hemmelig2024"', r'"passord=[redacted:credential]"', 'credential'),
    ('L5-da', r'"adgangskode: Hemmelig2024"', r'"adgangskode: [redacted:credential]"', 'credential'),
    ('L5-pt', r'"senha: Segredo24"', r'"senha: [redacted:credential]"', 'credential'),
    ('L5-es', r'"contraseña: Secreto24"', r'"contraseña: [redacted:credential]"', 'credential'),
    ('L5-es2', r'"clave: Secreto24"', r'"clave: [redacted:credential]"', 'credential'),
    ('L5-de', r'"Kennwort: Geheim24"', r'"Kennwort: [redacted:credential]"', 'credential'),
    ('L5-id', r'"kata sandi: Rahasia24"', r'"kata sandi: [redacted:credential]"', 'credential'),
    ('L5-vi', r'"mật khẩu: BiMat2024"', r'"mật khẩu: [redacted:credential]"', 'credential'),
    ('L5-fi', r'"salasana: Salainen24"', r'"salasana: [redacted:credential]"', 'credential'),
    ('L5-zh', r'"密码：Abc12345"', r'"密码：[redacted:credential]"', 'credential'),
    ('L12b', r'"APP_SECRET=aaaa"', r'"APP_SECRET=[redacted:credential]"', 'credential'),
    ('L12c', r'"STRIPE_KEY=abc"', r'"STRIPE_KEY=[redacted:credential]"', 'credential'),
    ('L12d', r'"SENTRY_DSN=https://abc@o1.ingest.example.io/2"', r'"SENTRY_DSN=[redacted:credential]"', 'credential'),
    ('L12e', r'"GITHUB_TOKEN=abc"', r'"GITHUB_TOKEN=[redacted:credential]"', 'credential'),
    ('L8b', r'"resolution: {integrity: sha512-Ab3dEf9hIjKlMnOpQrStUvWxYz0123456789+/AbCdEf==}"', r'"resolution: {integrity: sha512-Ab3dEf9hIjKlMnOpQrStUvWxYz0123456789+/AbCdEf==}"', None),
    ('L9b', r'"SHA256 checksum:\n  Zk3Qp9Wm2Xr7Tn4Vb8Ly1Hc6Jd5Gs0Fa9Kq=\n"', r'"SHA256 checksum:\n  Zk3Qp9Wm2Xr7Tn4Vb8Ly1Hc6Jd5Gs0Fa9Kq=\n"', None),
    ('L10b', r'"requestId: Kx7Pq2Wr9Tz4Mn8Vb3Lc6Yh1"', r'"requestId: Kx7Pq2Wr9Tz4Mn8Vb3Lc6Yh1"', None),
    ('L11b', r'"https://api.example.com:8443/v1?email=bob@example.com"', r'"https://api.example.com:8443/v1?email=bob@example.com"', None),
]

# ── the seed's classes (seed "Secret redaction"): (id, input, output, kind) ──
SEED_REDACT = [
    ('S1', r'"sshpass -p hunter2 ssh deploy@web1"', r'"sshpass -p [redacted:cli-credential] ssh deploy@web1"', 'cli-credential'),
    ('S2', r'"sshpass -p\u0027Xy9!z\u0027 scp a b:"', r'"sshpass -p\u0027[redacted:cli-credential]\u0027 scp a b:"', 'cli-credential'),
    ('S3', r'"mysql -u root -pSecret db"', r'"mysql -u root -p[redacted:cli-credential] db"', 'cli-credential'),
    ('S4', r'"mysqldump -h db -u app -p s3cret! shop > shop.sql"', r'"mysqldump -h db -u app -p [redacted:cli-credential] shop > shop.sql"', 'cli-credential'),
    ('S5', r'"curl -u alice:pa55w0rd https://api.example.com/v1"', r'"curl -u alice:[redacted:cli-credential] https://api.example.com/v1"', 'cli-credential'),
    ('S6', r'"curl --user bob:hunter2 -X POST https://x.test"', r'"curl --user bob:[redacted:cli-credential] -X POST https://x.test"', 'cli-credential'),
    ('S7', r'"psql-wrap --password=hunter2 --host db"', r'"psql-wrap --password=[redacted:cli-credential] --host db"', 'cli-credential'),
    ('S8', r'"tool --password Hunter2 --verbose"', r'"tool --password [redacted:cli-credential] --verbose"', 'cli-credential'),
    ('S9', r'"deploy --api-key=abc --region eu"', r'"deploy --api-key=[redacted:cli-credential] --region eu"', 'cli-credential'),
    ('S10', r'"gh-cli --token ghx-77aa --repo acme/w"', r'"gh-cli --token [redacted:cli-credential] --repo acme/w"', 'cli-credential'),
    ('S11', r'"auth --client-secret=\"s3 cr3t\" --id 12"', r'"auth --client-secret=\"[redacted:cli-credential]\" --id 12"', 'cli-credential'),
    ('S12', r'"ftp-sync --passwd=pw --secret=k1"', r'"ftp-sync --passwd=[redacted:cli-credential] --secret=[redacted:cli-credential]"', 'cli-credential'),
    ('S13', r'"docker login -u ci -p Dock3r! registry.example.com"', r'"docker login -u ci -p [redacted:cli-credential] registry.example.com"', 'cli-credential'),
    ('S14', r'"redis-cli -h cache -a r3dis!pw ping"', r'"redis-cli -h cache -a [redacted:cli-credential] ping"', 'cli-credential'),
    ('S15', r'"openssl pkcs12 -export -passout pass:Expo7! -out a.p12"', r'"openssl pkcs12 -export -passout pass:[redacted:cli-credential] -out a.p12"', 'cli-credential'),
    ('S16', r'"keytool -list -storepass changeit2 -keystore ks.jks"', r'"keytool -list -storepass [redacted:cli-credential] -keystore ks.jks"', 'cli-credential'),
    ('S17', r'"machine api.example.com login alice password s3cret"', r'"machine api.example.com login alice password [redacted:netrc]"', 'netrc'),
    ('S18', r'"machine git.example.com\n  login bob\n  password hunter2\n"', r'"machine git.example.com\n  login bob\n  password [redacted:netrc]\n"', 'netrc'),
    ('S19', r'"default login anonymous password guest@"', r'"default login anonymous password [redacted:netrc]"', 'netrc'),
    ('S20', r'"Cookie: sessionid=38afes7a8"', r'"Cookie: sessionid=[redacted:cookie]"', 'cookie'),
    ('S21', r'"Set-Cookie: sid=31d4d96e407aad42; Path=/; Secure; HttpOnly"', r'"Set-Cookie: sid=[redacted:cookie]; Path=/; Secure; HttpOnly"', 'cookie'),
    ('S22', r'"{\"Cookie\": \"auth=xyz789\"}"', r'"{\"Cookie\": \"auth=[redacted:cookie]\"}"', 'cookie'),
    ('S23', r'"the admin password is hunter2Secret!9"', r'"the admin password is [redacted:prose-password]"', 'prose-password'),
    ('S24', r'"The password is now Summer2024! so log in again."', r'"The password is now [redacted:prose-password] so log in again."', 'prose-password'),
    ('S25', r'"the wifi password was tr0ub4dor."', r'"the wifi password was [redacted:prose-password]."', 'prose-password'),
    ('S26', r'"password for bob is 8812"', r'"password for bob is [redacted:prose-password]"', 'prose-password'),
    ('S27', r'"das Passwort ist Geheim#42"', r'"das Passwort ist [redacted:prose-password]"', 'prose-password'),
    ('S28', r'"le mot de passe est azerty123"', r'"le mot de passe est [redacted:prose-password]"', 'prose-password'),
]
SEED_NOT_TOUCH = [
    ('SN1', r'"the password is wrong"'),
    ('SN2', r'"the password is the same as staging"'),
    ('SN3', r'"the password is 12 characters long"'),
    ('SN4', r'"the password is stored in the vault"'),
    ('SN5', r'"the password is correct!"'),
    ('SN6', r'"mysql -u root -p mydb"'),
    ('SN7', r'"mysql -u root -p"'),
    ('SN8', r'"docker run -p 8080:80 nginx"'),
    ('SN9', r'"mkdir -p build/out"'),
    ('SN10', r'"curl -u alice https://api.example.com"'),
    ('SN11', r'"tool --token refresh --secret generic"'),
    ('SN12', r'"docker login --password-stdin registry.example.com"'),
    ('SN13', r'"deploy --password=$DEPLOY_PASSWORD --token=${TOKEN}"'),
    ('SN14', r'"git push --no-verify --force-with-lease"'),
    ('SN15', r'"the machine learning password manager"'),
    ('SN16', r'"use the default password policy"'),
    ('SN17', r'"Cookie: chocolate chip, please"'),
    ('SN18', r'"the cookie jar is empty"'),
    ('SN19', r'"passwords are hashed with bcrypt"'),
    ('SN20', r'"the password is $DB_PASSWORD"'),
    ('SN21', r'"mail to:bob@example.com and cc:carol@example.org"'),
    ('SN22', r'"nginx:1.25@sha256 pinned"'),
    ('SN23', r'"npm:react@18.2.0 alias"'),
    ('SN24', r'"ssh -p 2222 deploy@host"'),
    ('SN25', r'"password = password"'),
    ('SN26', r'"token = self.token"'),
    ('SN27', r'"password: string;"'),
    ('SN28', r'"sort_key = name"'),
    ('SN29', r'"PRIMARY_KEY=id"'),
    ('SN30', r'"monkey=banana"'),
    ('SN31', r'"bypass=true"'),
    ('SN32', r'"secrets: inherit"'),
    ('SN33', r'"max_tokens: 4096"'),
    ('SN34', r'"f(password=hashed_password)"'),
    ('SN35', r'"zip -r out.zip dir"'),
    # code seen in the bench corpus: paths, format verbs, type annotations
    ('SN36', r'"Ok(Token::new(kind, text))"'),
    ('SN37', r'"t.Errorf(\"Sync() MinToken = %v, want %v\", got, want)"'),
    ('SN38', r'"pub fn rotate(&mut self, token: &str) -> Result<()>"'),
    ('SN39', r'"let secret: Option<String> = None;"'),
]

# ── the issue's leaking examples: (id, input, output, counts) ───────────────
ISSUE_LEAKS = [
    ('I1', r'"the admin password is hunter2Secret!9"', r'"the admin password is [redacted:prose-password]"', {'prose-password': 1}),
    ('I2', r'"password=kX9#mQ2"', r'"password=[redacted:credential]"', {'credential': 1}),
    ('I3', r'"password=Summer2024!"', r'"password=[redacted:credential]"', {'credential': 1}),
    ('I4', r'"DB_PASSWORD=\"P@ssw0rd!2024-prod\""', r'"DB_PASSWORD=\"[redacted:credential]\""', {'credential': 1}),
    ('I5', r'"\"password\": \"hunter2\""', r'"\"password\": \"[redacted:credential]\""', {'credential': 1}),
    ('I6', r'"SECRET_KEY=django-insecure-9x#k2@p!v7m$w3q&z8r"', r'"SECRET_KEY=[redacted:credential]"', {'credential': 1}),
    ('I7', r'"пароль: Vx7$pLq2wZ"', r'"пароль: [redacted:credential]"', {'credential': 1}),
    ('I8', r'"{\"type\": \"service_account\", \"project_id\": \"acme-prod\", \"private_key_id\": \"4c2f0a8e9b1d3f5a7c9e0b2d4f6a8c0e1b3d5f7a\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----\\n\", \"client_email\": \"ci@acme-prod.iam.gserviceaccount.com\", \"client_id\": \"109876543210987654321\"}"', r'"{\"type\": \"service_account\", \"project_id\": \"acme-prod\", \"private_key_id\": \"[redacted:credential]\", \"private_key\": \"[redacted:private-key]\\n\", \"client_email\": \"ci@acme-prod.iam.gserviceaccount.com\", \"client_id\": \"109876543210987654321\"}"', {'private-key': 1, 'credential': 1}),
    # (a header and its body lines with no END: the key's first lines, cut short)
    ('I9', r'"\"private_key\": \"-----BEGIN RSA PRIVATE KEY-----\\nMIIEpAIBAAKCAQEA\\n(cut)\""', r'"\"private_key\": \"[redacted:private-key]\\n(cut)\""', {'private-key': 1}),
]

# ── found by a review of ordinary shapes in session 24: (id, input, output, counts) ──
QA_LEAKS = [
    ('Q1', r'"SENDGRID_API_KEY=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"', r'"SENDGRID_API_KEY=[redacted:credential]"', {'credential': 1}),
    ('Q2', r'"VAULT_TOKEN=hvs.CAESIJx7Kq2mP9vR4tW8yZ1bN5cL3hF6sD0gA2eUiOk"', r'"VAULT_TOKEN=[redacted:credential]"', {'credential': 1}),
    ('Q3', r'"STAGING_PASSWORD=$uperS3cret2024"', r'"STAGING_PASSWORD=[redacted:credential]"', {'credential': 1}),
    ('Q4', r'"{\"password\": \"Pa55w0rd[prod]!\"}"', r'"{\"password\": \"[redacted:credential]\"}"', {'credential': 1}),
    ('Q5', r'"vault login hvs.CAESIKz8Kq2mP9vR4tW8yZ1bN5cL3hF6sD0gA2eUiOkQwErTyGh4"', r'"vault login [redacted:vault-token]"', {'vault-token': 1}),
    ('Q6', r'"token                hvs.CAESIGx9Kq2mP9vR4tW8yZ1bN5cL3hF6sD0gA2eUiOkQwErTyGh4KHh2cy5xyzAbC"', r'"token                [redacted:vault-token]"', {'vault-token': 1}),
    ('Q7', r'"$ gcloud auth print-access-token\nya29.a0AfB_byC7xK2mQ9vR4tW8yZ1bN5cL3hP6sD0gA2eUiOkQwErTyGh4KHh2cy5abGNk0171"', r'"$ gcloud auth print-access-token\n[redacted:google-oauth-token]"', {'google-oauth-token': 1}),
    ('Q8', r'"twine upload -u __token__ -p pypi-AgEIcHlwaS5vcmcCJDQ5YjYzN2NlLTE3NmYtNGQ3Yy1hYjE0LTAyMmE5ZDM4ZjA2NQACKlszLCIxMzM4 dist/*"', r'"twine upload -u __token__ -p [redacted:pypi-token] dist/*"', {'pypi-token': 1}),
    ('Q9', r'"curl -H \u0027Authorization: SSWS 00Xq9Lm2Np7Rt5Vw1Xz4Bc6Dd0Ef8Gh2Jk4Lm6Np\u0027 https://acme.okta.com/api/v1/users"', r'"curl -H \u0027Authorization: SSWS [redacted:bearer-token]\u0027 https://acme.okta.com/api/v1/users"', {'bearer-token': 1}),
    ('Q10', r'"curl -H \u0027Authorization: Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b\u0027 http://localhost:8000/api/"', r'"curl -H \u0027Authorization: Token [redacted:bearer-token]\u0027 http://localhost:8000/api/"', {'bearer-token': 1}),
    ('Q11', r'"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/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"', r'"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/[redacted:slack-webhook]"', {'slack-webhook': 1}),
    ('Q12', r'"discord_webhook: https://discord.com/api/webhooks/1234567890123456789/Xq9Lm2Np7Rt5Vw1Xz4Bc6Dd0Ef8Gh2Jk4Lm6Np8Qr0sT2uV4wX6yZ8aB0cD2eF4gH6jK8"', r'"discord_webhook: https://discord.com/api/webhooks/[redacted:discord-webhook]"', {'discord-webhook': 1}),
    ('Q13', r'"az storage blob upload --blob-url \u0027https://acct.blob.core.windows.net/c/f.zip?sv=2022-11-02&sp=rwdlac&se=2027-01-01T00:00:00Z&spr=https&sig=Qm9yZGVy%2BQ29sbGll%2FUnVsZXM%2FMjAyNCFBRkFLRQxyz%3D\u0027 --file f.zip"', r'"az storage blob upload --blob-url \u0027https://acct.blob.core.windows.net/c/f.zip?sv=2022-11-02&sp=rwdlac&se=2027-01-01T00:00:00Z&spr=https&sig=[redacted:url-signature]\u0027 --file f.zip"', {'url-signature': 1}),
    ('Q14', r'"export DATABASE_URL=postgres%3A%2F%2Fapp%3AUrlEnc0dedPw2024%40db.internal%3A5432%2Fprod"', r'"export DATABASE_URL=postgres%3A%2F%2Fapp%3A[redacted:url-credentials]%40db.internal%3A5432%2Fprod"', {'url-credentials': 1}),
    ('Q15', r'"Anthropic(\"sk-ant-api03-1SaQ6dDwxlGejkc5bJFIoxSLivuGvIL6P_8odNXR1yHnGA3cCcYseu52C5CdYP2hMqBgNjjNMu1GqbeB6veWzSmA3y_nXAA\")"', r'"Anthropic(\"[redacted:anthropic-key]\")"', {'anthropic-key': 1}),
    ('Q16', r'"rotate sk-ant-api03-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90Uv12Wx34-Yz5AbCdAA now"', r'"rotate [redacted:anthropic-key] now"', {'anthropic-key': 1}),
    ('Q17', r'"aws configure set aws_secret_access_key Wq7Er8Ty9Ui0Op1As2Df3Gh4Jk5Lz6Xc7Vb8Nm9Q"', r'"aws configure set aws_secret_access_key [redacted:aws-secret]"', {'aws-secret': 1}),
    ('Q18', r'"     1→-----BEGIN RSA PRIVATE KEY-----\n     2→MIIEowIBAAKCAQEA7Xq9Lm2Np7Rt5Vw1Xz4Bc6\n     3→4wX6yZ8aB0cD2eF4gH6jK8lM0nP2qR4sT6uV8"', r'"     1→[redacted:private-key]"', {'private-key': 1}),
    ('Q19', r'"  tls.key: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVBN1hxOQ==\n  tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"', r'"  tls.key: [redacted:private-key]\n  tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"', {'private-key': 1}),
    ('Q20', r'"数据库密码是 Hunter2024!zh"', r'"数据库密码是 [redacted:prose-password]"', {'prose-password': 1}),
    ('Q21', r'"DBのパスワードは Hunter2024!ja です"', r'"DBのパスワードは [redacted:prose-password] です"', {'prose-password': 1}),
    ('Q22', r'"пароль от сервера Qwerty2024!ru"', r'"пароль от сервера [redacted:prose-password]"', {'prose-password': 1}),
    ('Q23', r'"Das Passwort für die Datenbank ist Sommer2024!de"', r'"Das Passwort für die Datenbank ist [redacted:prose-password]"', {'prose-password': 1}),
    ('Q24', r'"the password for the staging db is StagingPw2024!"', r'"the password for the staging db is [redacted:prose-password]"', {'prose-password': 1}),
    ('Q25', r'"ssh password for the box: BoxPassw0rd! thanks"', r'"ssh password for the box: [redacted:prose-password] thanks"', {'prose-password': 1}),
    ('Q26', r'"https://bucket.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"', r'"https://bucket.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=[redacted:url-signature]"', {'url-signature': 1}),
]
QA_NOT_TOUCH = [
    ('QN1', r'"token = self.encryptionKeyProvider2"'),
    ('QN2', r'"SECRET_KEY=settings.SECRET_KEY"'),
    ('QN3', r'"password = $DB_PASSWORD"'),
    ('QN4', r'"Fixed: `if password == confirm_password:` now uses hmac"'),
    ('QN5', r'"the password for user admin2 is wrong"'),
    ('QN6', r'"Reset password for user: alice"'),
    ('QN7', r'"密码是什么"'),
    ('QN8', r'"пароль от сервера изменился"'),
    ('QN9', r'"the signature=valid check"'),
    ('QN10', r'"-----BEGIN RSA PRIVATE KEY-----\nAAAA truncated"'),
    ('QN11', r'"tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"'),
    ('QN12', r'"the aws_secret_access_key is in the vault"'),
    ('QN13', r'"please pass a token to it"'),
    ('QN14', r'"SG.cache.lookup(key)"'),
]

# ── placeholders and references: never a secret, whatever the key ───────────
PLACEHOLDERS = [
    '<password>', '${DB_PASSWORD}', '$DB_PASSWORD', 'changeme', 'xxx', 'XXXXXXXX', '***', '********',
    'os.environ["DB_PASSWORD"]', "os.getenv('TOKEN')", 'process.env.API_TOKEN', 'settings.SECRET_KEY',
    'None', 'null', 'nil', 'undefined', 'true', 'false', '{{ secrets.TOKEN }}',
    '%DB_PASSWORD%', 'your-api-key-here', '...', '[redacted:credential]', '~/.pgpass', '/run/secrets/db',
]
EMPTY_VALUES = ['password=""', "password=''", '"api_key": ""', "token: ''"]


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


@pytest.mark.parametrize(("row", "inp", "expected", "kind"), KNOWN_LIMITS, ids=_ids(KNOWN_LIMITS))
def test_known_limits_are_resolved(row, inp, expected, kind):
    # Each row differs from upstream's output on purpose (README, "Secrets").
    text, want = json.loads(inp), json.loads(expected)
    out, counts = redact(text)
    assert out == want
    assert counts == ({kind: 1} if kind else {})


@pytest.mark.parametrize(("row", "inp", "expected", "kind"), SEED_REDACT, ids=_ids(SEED_REDACT))
def test_seed_classes_are_redacted(row, inp, expected, kind):
    text, want = json.loads(inp), json.loads(expected)
    out, counts = redact(text)
    assert out == want
    assert counts == {kind: out.count(MARKER)}


@pytest.mark.parametrize(("row", "inp"), SEED_NOT_TOUCH, ids=_ids(SEED_NOT_TOUCH))
def test_seed_gates_leave_look_alikes(row, inp):
    text = json.loads(inp)
    assert redact(text) == (text, {})


@pytest.mark.parametrize(("row", "inp", "expected", "kinds"), ISSUE_LEAKS, ids=_ids(ISSUE_LEAKS))
def test_issue_leaks_are_redacted(row, inp, expected, kinds):
    text, want = json.loads(inp), json.loads(expected)
    assert redact(text) == (want, kinds)


@pytest.mark.parametrize(("row", "inp", "expected", "kinds"), QA_LEAKS, ids=_ids(QA_LEAKS))
def test_ordinary_shapes_a_review_found_leaking_are_redacted(row, inp, expected, kinds):
    text, want = json.loads(inp), json.loads(expected)
    assert redact(text) == (want, kinds)


@pytest.mark.parametrize(("row", "inp"), QA_NOT_TOUCH, ids=_ids(QA_NOT_TOUCH))
def test_code_and_prose_beside_those_shapes_are_left_alone(row, inp):
    text = json.loads(inp)
    assert redact(text) == (text, {})


@pytest.mark.parametrize("value", PLACEHOLDERS)
@pytest.mark.parametrize(
    "template",
    ["password={v}", "DB_PASSWORD: {v}", '"api_key": "{v}"', "token = {v}", "--password={v}", "the password is {v}"],
)
def test_placeholders_are_not_secrets(template, value):
    text = template.format(v=value)
    assert redact(text) == (text, {})


@pytest.mark.parametrize("text", EMPTY_VALUES)
def test_empty_values_are_not_secrets(text):
    assert redact(text) == (text, {})


def _all_rows():
    return [(r[1], r[2]) for r in MUST_REDACT + KNOWN_LIMITS + SEED_REDACT + ISSUE_LEAKS + QA_LEAKS] + [
        (r[1], r[1]) for r in MUST_NOT_TOUCH + SEED_NOT_TOUCH + QA_NOT_TOUCH
    ]


@pytest.mark.parametrize(("inp", "expected"), _all_rows())
def test_redacting_twice_changes_nothing(inp, expected):
    # Every way out re-redacts stored text: a second pass must neither
    # change it nor count anything.
    once = json.loads(expected)
    assert redact(once) == (once, {})


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
    # issue 14's rules
    'sshpass', ' -p', ' -P ', 'mysql', 'curl', ' -u ', '--password', '--token=', ' -storepass ',
    'pass:', 'docker login', 'machine h', ' login ', ' password ', 'default', 'Cookie:', 'Set-Cookie: ',
    'is ', 'was ', 'the password is ', 'mot de passe', 'hasło', 'şifre', '：', 'user:pw@host', 'to:',
    '$X', '${X}', '<x>', 'x9!', 'Xy9#', '\\"', '=>', ':=', '==', 'SALT', '_KEY', 'apiKey', 'dsn',
    'build_id', 'integrity', 'digest:\n', 'private_blob', 'Qm9yZGVyQ29sbGllUnVsZXMyMDI0', ';', '&',
    ')', 'None', 'self.token', 'hunter2',
    # session 24's shapes
    'hvs.', 'SG.', 'ya29.', 'pypi-AgE', 'dp.st.', 'sk-ant-api03-', 'sk-proj-', '_x-', 'Authorization: ',
    'Token ', 'SSWS ', 'hooks.slack.com/services/', 'discord.com/api/webhooks/123456/', '&sig=', '?X-Amz-Signature=',
    '%3A%2F%2F', 'u%3A', '%40', 'LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVkt', 'UFJJVkFURSBLRV', '\n', '→', ' 2→',
    'aws_secret_access_key ', 'password for the ', ' db ', '密码是 ', 'パスワードは ',
    'пароль от ', '$uperS3c', '[prod]!', 'Q9zX1mR7vT2wY5pL', ' == ', 'name:',
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
    order, with no pre-checks, gates or anchors; then section 3.3 over every
    run the spec's scan finds."""
    m = redact_mod
    counts: dict[str, int] = {}
    whole = lambda kind: lambda _: (f"[redacted:{kind}]", kind)  # noqa: E731
    steps = [
        (m._PEM_RE, whole("private-key")),
        (m._PEM_OPEN_RE, whole("private-key")),
        (m._PEM_B64_RE, whole("private-key")),
        (m._URL_RE, m._build_url),
        (m._USERINFO_RE, m._build_userinfo),
        (m._AWS_SECRET_RE, m._build_aws_secret),
        (m._AWS_ACCESS_RE, whole("aws-access-key")),
        (m._CLI_LONG_RE, m._build_cli_long),
        *((regex, build) for (_, regex, *_), build in zip(m._CLI_PROGRAM_RES, m._CLI_PROGRAM_BUILDS)),
        (m._NETRC_RE, m._build_netrc),
        (m._COOKIE_RE, m._build_cookie),
        (m._QUOTED_RE, m._build_quoted),
        (m._BEARER_RE, m._build_bearer),
        (m._JWT_RE, whole("jwt")),
        (m._PROSE_CJK_RE, m._build_prose),
        (m._PROSE_RE, m._build_prose),
        (m._KV_RE, m._build_credential),
        (m._KV_INTL_RE, m._build_credential_intl),
        (m._PROVIDER_RE, m._build_provider),
        (m._URL_SECRET_RE, m._build_url_secret),
    ]
    for regex, build in steps:
        text = m._full_sub(text, regex, build, counts)
    buf = text.encode("utf-8", "surrogatepass")
    pieces, last = [], 0
    for run in re.finditer(rb"[A-Za-z0-9+/_-]{20,}={0,2}", buf):
        start, end = run.span()
        if m._secret_shaped(buf, start, end):
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
    texts = [f"{filler}\nBLOB_REF=Gh7Lq2Vx9Rt4Mz8Kp3Wn6Yb1\n{i}" for i in range(100)]
    assert sum(map(len, texts)) >= redact_mod._BATCH_MIN_CHARS
    outs, counts = redact_many(texts)
    assert counts == {"entropy": 100}
    assert all("BLOB_REF=[redacted:entropy]" in o for o in outs)

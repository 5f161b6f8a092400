"""Writes corpus.jsonl: texts labelled with the secrets (kind, value) a scan must find.

Run from the repository root: ``python tests/secrets/make_corpus.py``.  Seeded, so it
writes the same file every time.  Every key here is FAKE: random characters in the
shape of a provider's key (prefix, length, alphabet), never a real credential.  The one
exception by design is AWS's documented example pair (AKIAIOSFODNN7EXAMPLE /
wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY): it has a key's shape, so it is a positive
(docs/secrets.md says why).

Each row: ``text``, ``expect`` (a list of [kind, value] pairs, empty for a negative),
``why`` (what the row is about).  Rows are scanned with ``pii=True``.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from pathlib import Path

OUT = Path(__file__).with_name("corpus.jsonl")
rng = random.Random(27)

ALNUM = string.ascii_letters + string.digits
UPPER_B32 = string.ascii_uppercase + "234567"
B64 = string.ascii_letters + string.digits + "+/"
URLSAFE = string.ascii_letters + string.digits + "_-"
HEX = "0123456789abcdef"


def pick(alphabet: str, n: int) -> str:
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(n))
        # a generated body has what a real one has: more than one character class
        classes = sum(
            any(c in group for c in value)
            for group in (string.ascii_lowercase, string.ascii_uppercase, string.digits)
        )
        if classes >= 2 or alphabet in (HEX, string.ascii_lowercase):
            return value


rows: list[dict[str, object]] = []


def pos(text: str, *expect: tuple[str, str], why: str) -> None:
    for _, value in expect:
        assert value in text, (value, text)
    rows.append({"text": text, "expect": [list(e) for e in expect], "why": why})


def neg(text: str, why: str) -> None:
    rows.append({"text": text, "expect": [], "why": why})


# -- fake keys, one maker per kind -----------------------------------------------------------


def aws_id() -> str:
    return rng.choice(["AKIA", "ASIA"]) + pick(UPPER_B32, 16)


def aws_secret() -> str:
    return pick(B64, 40)


def github() -> str:
    return rng.choice(["ghp_", "gho_", "ghs_", "ghu_"]) + pick(ALNUM, 36)


def github_pat() -> str:
    return "github_pat_" + pick(ALNUM, 22) + "_" + pick(ALNUM, 59)


def gitlab() -> str:
    return "glpat-" + pick(URLSAFE.replace("-", ""), 20)


def slack() -> str:
    digits = "".join(rng.choice(string.digits) for _ in range(11))
    more = "".join(rng.choice(string.digits) for _ in range(13))
    return f"xox{rng.choice('bpa')}-{digits}-{more}-{pick(ALNUM, 24)}"


def slack_webhook() -> str:
    return (
        f"https://hooks.slack.com/services/T{pick(UPPER_B32, 8)}/B{pick(UPPER_B32, 10)}/"
        f"{pick(ALNUM, 24)}"
    )


def stripe() -> str:
    return rng.choice(["sk_live_", "rk_live_", "sk_test_"]) + pick(ALNUM, 24)


def openai() -> str:
    return rng.choice(["sk-", "sk-proj-"]) + pick(URLSAFE, rng.choice([48, 64, 100]))


def anthropic() -> str:
    return "sk-ant-api03-" + pick(URLSAFE, 93) + "AA"


def google() -> str:
    return "AIza" + pick(URLSAFE, 35)


def azure_key() -> str:
    return pick(B64, 86) + "=="


def twilio() -> str:
    return "SK" + pick(HEX, 32)


def sendgrid() -> str:
    return "SG." + pick(URLSAFE, 22) + "." + pick(URLSAFE, 43)


def npm() -> str:
    return "npm_" + pick(ALNUM, 36)


def pypi() -> str:
    return "pypi-AgEIcHlwaS5vcmc" + pick(URLSAFE, 60)


def huggingface() -> str:
    return "hf_" + pick(ALNUM, 34)


def jwt() -> str:
    def seg(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    head = seg({"alg": rng.choice(["HS256", "RS256"]), "typ": "JWT"})
    body = seg({"sub": str(rng.randrange(10**9)), "iat": 1700000000 + rng.randrange(10**6)})
    return f"{head}.{body}.{pick(URLSAFE, 43)}"


def pem(kind: str) -> str:
    label = {"rsa": "RSA PRIVATE KEY", "ec": "EC PRIVATE KEY", "openssh": "OPENSSH PRIVATE KEY",
             "pkcs8": "PRIVATE KEY", "pgp": "PGP PRIVATE KEY BLOCK"}[kind]  # fmt: skip
    lines = "\n".join(pick(B64, 64) for _ in range(4))
    return f"-----BEGIN {label}-----\n{lines}\n-----END {label}-----"


def password() -> str:
    words = ["correct", "horse", "battery", "staple", "purple", "monkey", "river", "stone"]
    return rng.choice(words) + rng.choice("-_.!") + rng.choice(words) + str(rng.randrange(10, 99))


def generic_token() -> str:
    return pick(ALNUM, rng.choice([24, 32, 40]))


# -- positives: each kind in several settings -----------------------------------------------

PREFIXED = [
    ("github", github),
    ("github", github_pat),
    ("gitlab", gitlab),
    ("slack", slack),
    ("stripe", stripe),
    ("openai", openai),
    ("anthropic", anthropic),
    ("google-api-key", google),
    ("twilio", twilio),
    ("sendgrid", sendgrid),
    ("npm", npm),
    ("pypi", pypi),
    ("huggingface", huggingface),
    ("jwt", jwt),
    ("aws-access-key", aws_id),
]
SETTINGS = [
    "{v}",
    "export MY_CRED={v}",
    "Found this in the logs: {v} (rotate it)",
    '{{"credential": "{v}", "scope": "repo"}}',
    "curl -s https://api.example.net/v1 -H 'X-Key: {v}'",
    "config:\n  upstream:\n    key_ref: {v}\n",
    "client = Client({v!r})",
]
for kind, make in PREFIXED:
    for setting in rng.sample(SETTINGS, 5):
        value = make()
        pos(setting.format(v=value), (kind, value), why=f"{kind} key in: {setting[:30]}")

for _ in range(3):
    url = slack_webhook()
    pos(f"POST {url}", ("slack-webhook", url), why="slack incoming webhook URL")

for kind in ("rsa", "ec", "openssh", "pkcs8", "pgp"):
    block = pem(kind)
    pos(f"here is the key:\n{block}\nthanks", ("private-key", block), why=f"{kind} PEM block")
block = pem("rsa")
truncated = block[: block.index("-----END")]
pos(f"cat id_rsa\n{truncated}", ("private-key", truncated), why="PEM block cut before END")

for _ in range(3):
    pkcs8 = pem("pkcs8").replace("\n", "\\n") + "\\n"
    sa = (
        '{"type": "service_account", "project_id": "demo-project-123", '
        f'"private_key_id": "{pick(HEX, 40)}", "private_key": "{pkcs8}", '
        '"client_email": "svc@demo-project-123.iam.gserviceaccount.com"}'
    )
    pos(
        sa,
        ("gcp-service-account", pkcs8),
        ("email", "svc@demo-project-123.iam.gserviceaccount.com"),
        why="GCP service-account JSON",
    )

for _ in range(4):
    key_id, secret = aws_id(), aws_secret()
    pos(
        f"[default]\naws_access_key_id = {key_id}\naws_secret_access_key = {secret}\n",
        ("aws-access-key", key_id),
        ("aws-secret-key", secret),
        why="AWS credentials file",
    )
for _ in range(3):
    key_id, secret = aws_id(), aws_secret()
    pos(
        f"User name,Access key ID,Secret access key\ndeploy,{key_id},{secret}\n",
        ("aws-access-key", key_id),
        ("aws-secret-key", secret),
        why="AWS credentials CSV: a bare secret next to its key id",
    )
pos(
    "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
    ("aws-access-key", "AKIAIOSFODNN7EXAMPLE"),
    why="AWS's documented example key id counts (a key's shape)",
)
pos(
    "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ("aws-secret-key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    why="AWS's documented example secret counts",
)

for _ in range(3):
    account, key = pick(string.ascii_lowercase, 12), azure_key()
    pos(
        f"DefaultEndpointsProtocol=https;AccountName={account};AccountKey={key};"
        "EndpointSuffix=core.windows.net",
        ("azure-storage-key", key),
        why="Azure storage connection string",
    )
for _ in range(2):
    sig = pick(ALNUM, 43) + "%3D"
    pos(
        f"https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&sp=r&sig={sig}",
        ("azure-sas", sig),
        why="Azure SAS URL signature",
    )

for scheme, host in (("postgres", "db.internal:5432/app"), ("https", "git.example.org/x.git"),
                     ("mongodb+srv", "cluster0.example.net/test"), ("redis", "cache:6379/0"),
                     ("amqp", "mq.local:5672")):  # fmt: skip
    secret = password() if scheme != "https" else generic_token()
    pos(
        f"DATABASE_URL={scheme}://svc_user:{secret}@{host}",
        ("url-password", secret),
        why=f"password in a {scheme} URL",
    )

for _ in range(4):
    token = generic_token()
    pos(f"Authorization: Bearer {token}", ("bearer", token), why="bearer token header")
creds = base64.b64encode(b"admin:" + pick(ALNUM, 16).encode()).decode()
pos(f"Authorization: Basic {creds}", ("basic-auth", creds), why="HTTP basic auth header")

NAMES = ["DB_PASSWORD", "password", "api_key", "apiKey", "client_secret", "SECRET_KEY",
         "auth_token", "GITHUB_TOKEN", "private_key", "access_token", "passwd",
         "SECRET_KEY_BASE", "credentials", "signing_key", "x-api-key", "webhookSecret"]  # fmt: skip
FORMS = ["{n}={v}", "{n}: {v}", '"{n}": "{v}"', "{n} = '{v}'", "{n} := {v}", "<{n}>{v}"]
for name in NAMES:
    for form in rng.sample(FORMS[:5], 2):
        value = password() if "pass" in name.lower() else generic_token()
        pos(form.format(n=name, v=value), ("generic-secret", value), why=f"value under {name}")

# -- personal data ---------------------------------------------------------------------------


def iban(country: str, bban: str) -> str:
    digits = "".join(str(int(c, 36)) for c in bban + country + "00")
    return f"{country}{98 - int(digits) % 97:02d}{bban}"


def grouped(value: str) -> str:
    return " ".join(value[i : i + 4] for i in range(0, len(value), 4))


IBAN_BBANS = {"DE": ("", 18), "GB": ("NWBK", 14), "FR": ("", 23), "NL": ("ABNA", 10),
              "ES": ("", 20), "IT": ("X", 22), "CH": ("", 17), "BE": ("", 12)}  # fmt: skip
for country, (bank, n) in IBAN_BBANS.items():
    value = iban(country, bank + "".join(rng.choice(string.digits) for _ in range(n)))
    shown = grouped(value) if rng.random() < 0.5 else value
    pos(f"Please wire the refund to {shown} today.", ("iban", shown), why=f"{country} IBAN")


def card(prefix: str, length: int) -> str:
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    for check in string.digits:
        total = 0
        for index, char in enumerate(reversed(body + check)):
            digit = int(char) * (2 if index % 2 else 1)
            total += digit - 9 if digit > 9 else digit
        if total % 10 == 0:
            return body + check
    raise AssertionError


for prefix, length in (("4", 16), ("51", 16), ("22", 16), ("37", 15), ("6011", 16),
                       ("35", 16), ("4", 13), ("4", 19)):  # fmt: skip
    number = card(prefix, length)
    shown = rng.choice([number, grouped(number), "-".join(grouped(number).split())])
    pos(f"card on file: {shown}, exp 04/29", ("card", shown), why=f"card {prefix}… {length}")

for text, value in (
    ("mail bob.smith@example.com about it", "bob.smith@example.com"),
    ("Contact: alice+billing@mail.example.co.uk.", "alice+billing@mail.example.co.uk"),
    ("From: Mallory <mallory@evil.example>", "mallory@evil.example"),
    ('{"to": "ops-team@corp.example.org"}', "ops-team@corp.example.org"),
    ("cc j_doe99@sub.domain.io", "j_doe99@sub.domain.io"),
):
    pos(text, ("email", value), why="email address")

for text, value in (
    ("call +1 415 555 2671 tomorrow", "+1 415 555 2671"),
    ("Tel: +44 20 7946 0958", "+44 20 7946 0958"),
    ("phone (415) 555-2671 ext 2", "(415) 555-2671"),
    ("ring 415-555-2671", "415-555-2671"),
    ("mobile: 06 12 34 56 78", "06 12 34 56 78"),
    ("whatsapp +33612345678", "+33612345678"),
    ("Fax +49 30 12345678", "+49 30 12345678"),
    ("call 020 7946 0958 now", "020 7946 0958"),
):
    pos(text, ("phone", value), why="phone number")

for text, value in (
    ("SSN: 536-22-8419", "536-22-8419"),
    ("ssn 219-09-9999 on the form", "219-09-9999"),
):
    pos(text, ("us-ssn", value), why="US social security number")

for prefix, size, kind in (("shpat_", 32, "shopify"), ("dop_v1_", 64, "digitalocean")):
    for _ in range(2):
        value = prefix + pick(HEX, size)
        pos(f"TOKEN_VALUE={value}", (kind, value), why=f"{kind} token")

PROSE_WORDS = ("the quick brown fox", "hello world", "lorem ipsum dolor sit amet", "ok")

# -- negatives: things that look like secrets or personal data but are not ------------------

for _ in range(8):
    neg(f"request id {uuid.UUID(int=rng.getrandbits(128), version=4)}", "a UUID")
for _ in range(8):
    neg(f"commit {pick(HEX, 40)}\nAuthor: dev", "a git commit SHA")
for _ in range(6):
    digest = base64.b64encode(rng.randbytes(64)).decode()
    neg(f'"integrity": "sha512-{digest}"', "an npm lockfile integrity hash")
for _ in range(4):
    name, patch = pick(string.ascii_lowercase, 8), rng.randrange(9)
    neg(f"{name}==1.2.{patch} \\\n    --hash=sha256:{pick(HEX, 64)}", "a pip requirements hash")
for _ in range(4):
    image = base64.b64encode(rng.randbytes(300)).decode()
    neg(f'<img src="data:image/png;base64,{image}">', "a base64 image")
for _ in range(4):
    neg(f"sha256 {pick(HEX, 64)}  dist/app.tar.gz", "a checksum line")
for text in (
    "version 1.2.3", "v2.10.0-rc.1", "python==3.11.4", "node v20.11.1 (npm 10.2.4)",
    "released 2024-01-15", "on 15/01/2024 at 10:20", "2024-01-15T10:20:30Z",
    "2024.01.15", "server 192.168.1.10:8080", "dns 10.0.0.1 and 8.8.8.8",
    "Order #123456789 shipped", "timestamp 1700000000123", "port 5432",
    "build 20240115.3", "ISBN 978-0-306-40615-7", "range 1000-2000-3000",
    "the meeting is at 12:30:45", "lat 48.858844, lon 2.294351",
    "invoice INV-2024-000123", "ticket 4815162342",
):  # fmt: skip
    neg(text, "numbers that are not phone numbers or cards")
for text in (
    "IBAN DE89 3704 0044 0532 0130 01", "GB82 WEST 1234 5698 7654 33",
    "FR14 2004 1010 0505 0001 3M02 607", "ZZ12 3456 7890 1234",
):  # fmt: skip
    neg(f"pay to {text}", "an IBAN-shaped string failing mod-97 or its country's length")
for text in (
    "4111 1111 1111 1112", "5500-0000-0000-0005", "1234 5678 9012 3456",
    "0000 0000 0000 0000", "9999999999999995",
):  # fmt: skip
    neg(f"card {text}", "a card-shaped number failing Luhn or with no issuer")
for text in ("000-12-3456", "666-45-6789", "123-00-4567", "2024-01-1234"):
    neg(f"id {text}", "an SSN-shaped number that cannot be one")
for text in (
    "git clone git@github.com:org/repo.git", "icon@2x.png", "@pytest.fixture",
    "npm i @types/node@20.1.0", "user@localhost", "see @alice in #general",
):  # fmt: skip
    neg(text, "an @ that is not an email address")
for text in (
    "AWS_ACCESS_KEY_ID=<your-access-key-id>",
    "api_key: YOUR_API_KEY",
    "password: ********",
    "token = os.environ['GITHUB_TOKEN']",
    "OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "GITHUB_TOKEN=ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
    "password=${DB_PASSWORD}",
    "DATABASE_URL=postgres://user:password@localhost/app",
    "secret: {{ .Values.secret }}",
    "api_key = process.env.API_KEY",
    "token: <token>",
    'password = ""',
    "api_key=None",
    "client_secret: changeme",
    "password: %(db_password)s",
    "SECRET_KEY=your-secret-key-here",
    "Authorization: Bearer <token>",
    "Authorization: Bearer $TOKEN",
    "sk-this-is-not-a-real-key-at-all-ok",
    "https://user:@example.com/",
):
    neg(text, "a placeholder or a reference, not a value")
for text in (
    "tokenizer: bert-base-uncased-v2", "max_tokens: 4096", "auth: required",
    "secret: true", "password_min_length: 12", "keyboard: us", "primary_key: id",
    "sort(key=len)", "token_count=1024", "auth_method: oauth2", "passwords: []",
    "the api_key field is optional", "secret_santa: enabled", "monkey: business",
    "use_auth: false", "token_type: Bearer", "credentials: inherit",
    "password: none", "pwd: /home/user", "author: Jane Smith",
):  # fmt: skip
    neg(text, "a key-like name with a value that is not a secret")
for text in (
    "pk_live_" + pick(ALNUM, 24),
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC" + pick(B64, 60) + " dev@laptop",
    "-----BEGIN PUBLIC KEY-----\n" + pick(B64, 64) + "\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\n" + pick(B64, 64) + "\n-----END CERTIFICATE-----",
    "eyJhbGciOiJIUzI1NiJ9 is only a header",
    "ghp_short",
    "AKIA1234",
    "sk-ant-short",
    "SKU-12345-ABCDE-67890",
    "the desk-sk-ant rule",
    "xoxb-not-a-token",
    "npm_config_cache=/tmp/npm",
    "hf_hub_download(repo_id='bert-base-uncased')",
    "AIzaSy is how google keys start",
    "AccountName=devstore;EndpointSuffix=core.windows.net",
    "https://example.com/page?sig=short",
    "xAKIAIOSFODNN7EXAMPLEx",
    "pypi-token-goes-here",
    "glpat-token",
    "SG.example",
):
    neg(text, "a key's prefix without a key's body, or a public key")
for _ in range(5):
    neg(f"image: ghcr.io/acme/api@sha256:{pick(HEX, 64)}", "a container image digest")
for _ in range(5):
    neg(f"segfault at 0x{pick(HEX, 12)} ip 0x{pick(HEX, 12)}", "memory addresses")
for _ in range(5):
    text = base64.b64encode(rng.choice(PROSE_WORDS).encode() * 3).decode()
    neg(f"payload={text}", "base64 of ordinary text under a plain name")
for _ in range(4):
    neg(f"session_id={pick(ALNUM, 24)}", "a random id under a name that is not key-like")
for text in (
    "api_key_header = 'X-API-Key'",
    "token_url: https://oauth2.example.com/token",
    "password_hash_algorithm: argon2id",
    "AbstractSingletonProxyFactoryBeanConfigurationManager",
    "key: value",
    "tokens_used: 1532 (prompt 1210, completion 322)",
    "secret_name: prod/db/credentials",
    "auth_url = 'https://login.example.com/oauth/authorize'",
    "cache_key = f'{user_id}:{path}'",
    "x-api-key header missing (401)",
    "the key is in the vault, ask ops",
    "PASSWORD_MIN_LENGTH=12",
):
    neg(text, "key-like words in settings, logs and prose")
PROSE = (
    "The agent read the README, ran the tests and opened a pull request with the fix.",
    "def handler(event, context):\n    return {'statusCode': 200, 'body': json.dumps(event)}",
    "SELECT id, name FROM users WHERE created_at > now() - interval '7 days';",
    "Traceback (most recent call last):\n  File \"app.py\", line 12, in <module>\nKeyError: 'x'",
    '<div class="token-list"><span>secret garden</span></div>',
    "Passing tests: 128, failed: 0, skipped: 3 (in 4.21s)",
    "docker run --rm -p 8080:80 nginx:1.25-alpine",
    "The password reset email is sent within five minutes.",
    "Use a bearer token in the Authorization header; see the docs.",
    "kubectl get secret my-secret -o yaml",
)
for text in PROSE:
    neg(text, "ordinary prose, code or logs")

for text in (
    "    auth: McpAuthConfig | None = None",
    '    password = parsed.value("-p")',
    "        token = _CURRENT.set(export)",
    "def from_config(cls, auth: McpAuthConfig, base: str) -> Bearer:",
    'span.set_attribute("password", "[REDACTED]")',
    "db: postgres://app:[REDACTED]@db.internal/app",
    "# in scheme://user:pass@host the password follows the colon",
    "secret_key = settings.SECRET_KEY",
    "api_key = load_key()",
    "token = tokens[index]",
):
    neg(text, "code and masked values, not secrets")
OUT.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
positives = sum(1 for row in rows if row["expect"])
print(f"{OUT}: {positives} positives, {len(rows) - positives} negatives")

"""Writes the held-out redaction corpus: secret formats and ordinary look-alikes that the rules of
memtool/redact.py were NOT written against (bench/redaction_corpus.py is the tuned corpus). Written
before the rules it measures were changed (issue 37), from vendors' published token formats and the
shapes secrets take in a session: bare on their own line, in prose, in a JSON reply, in a config
file. Every value is made here from a fixed seed with the format's charset and length: none is real.

    python bench/redaction_heldout.py [--out tests/data/redaction_heldout] [--seed 37]

Same files and fields as bench/redaction_corpus.py (secrets.jsonl, ordinary.jsonl); measured by
`bench/redaction.py --corpus tests/data/redaction_heldout` (add --through-memory to measure what
reaches the memory files through a kept transcript and `memory log`). Do not tune rules on it:
a rule changed to pass a row here makes this corpus a tuned one.
"""

from __future__ import annotations

import base64
import string

from bench.redaction_corpus import ALNUM, B64, HEX, LOWER_ALNUM, UPPER_ALNUM, URLSAFE, Fake, write_corpus

SEED = 37
BASE32_LOWER = "abcdefghijklmnopqrstuvwxyz234567"


def secrets(f: Fake) -> list[dict]:
    out: list[dict] = []

    def add(family: str, template: str, *values: str) -> None:
        out.append({"family": family, "text": template.format(*values), "secrets": list(values)})

    # --- bare: a value pasted alone, no key name on its line (issue 36: the AWS secret) ----------
    add("bare", "Here are the new credentials:\n{}\n{}", "AKIA" + f.s(UPPER_ALNUM, 16), f.s(B64, 40))
    add("bare", "the secret access key is below\n\n{}\n", f.s(B64, 40))
    add("bare", "```\n{}\n```", f.s(B64, 40))
    add("bare", "  {}", f.s(B64, 40))
    add("bare", "user: rotated it, new one:\n{}", f.s(ALNUM, 40))
    add("bare", "paste this into the CI settings\n{}", f.s(URLSAFE, 43))
    add("bare", "signing secret\n{}", f.s(ALNUM, 32))
    add("bare", "new webhook secret:\n{}", f.s(B64, 44) + "=")
    add("bare", "- {}", f.s(ALNUM, 48))
    add("bare", '"{}"', f.s(ALNUM, 64))
    add("bare", "copied from the console: `{}`", f.s(B64, 40))
    # --- vendor formats not in the tuned corpus --------------------------------------------------
    add("vendor", "export SUPABASE_ACCESS_TOKEN={}", "sbp_" + f.s(HEX, 40))
    add("vendor", "the management token {} expired", "sbp_" + f.s(HEX, 40))
    add("vendor", "netlify: using {}", "nfp_" + f.s(ALNUM, 36))
    add("vendor", "render api key {}", "rnd_" + f.s(ALNUM, 32))
    add("vendor", "NEON_API_KEY={}", "napi_" + f.s(LOWER_ALNUM, 64))
    add("vendor", "resend.api_key = '{}'", "re_" + f.s(ALNUM, 8) + "_" + f.s(URLSAFE, 24))
    add("vendor", "OPENROUTER_API_KEY={}", "sk-or-v1-" + f.s(HEX, 64))
    add("vendor", "LANGSMITH_API_KEY={}", "lsv2_pt_" + f.s(HEX, 32) + "_" + f.s(HEX, 10))
    add("vendor", "pinecone key {}", "pcsk_" + f.s(ALNUM, 6) + "_" + f.s(ALNUM, 64))
    add("vendor", "tailscale up --authkey={}", "tskey-auth-" + f.s(ALNUM, 17) + "-" + f.s(ALNUM, 32))
    add("vendor", "TS_API_KEY={}", "tskey-api-" + f.s(ALNUM, 17) + "-" + f.s(ALNUM, 32))
    add("vendor", "buildkite agent token {}", "bkua_" + f.s(HEX, 40))
    add("vendor", "CIRCLECI_TOKEN={}", "CCIPAT_" + f.s(ALNUM, 22) + "_" + f.s(HEX, 40))
    add("vendor", "Authorization: SSWS {}", "00" + f.s(URLSAFE, 40))
    add("vendor", "cloudinary://{}:{}@demo-cloud", f.s(string.digits, 15), f.s(URLSAFE, 27))
    add("vendor", "twitter bearer {}", "AAAAAAAAAAAAAAAAAAAAA" + f.s(ALNUM, 22) + "%3D" + f.s(ALNUM, 40))
    add("vendor", "ANTHROPIC_ADMIN_KEY={}", "sk-ant-admin01-" + f.s(URLSAFE, 93) + "AA")
    add("vendor", "azure devops PAT {}", f.s(BASE32_LOWER, 52))
    add("vendor", "AZURE_OPENAI_API_KEY={}", f.s(HEX, 32))
    add("vendor", "api-key: {}", f.s(HEX, 32))
    add("vendor", "mistral key {}", f.s(ALNUM, 32))
    add("vendor", "COHERE_API_KEY={}", f.s(ALNUM, 40))
    add("vendor", "NGROK_AUTHTOKEN={}", f.s(ALNUM, 27) + "_" + f.s(ALNUM, 21))
    add("vendor", "deepgram token {}", f.s(HEX, 40))
    add("vendor", "ELEVENLABS_API_KEY={}", "sk_" + f.s(HEX, 48))
    add("vendor", "airtable personal access token {}", "pat" + f.s(ALNUM, 14) + "." + f.s(HEX, 64))
    add("vendor", "typeform token {}", "tfp_" + f.s(URLSAFE, 44) + "_" + f.s(URLSAFE, 14))
    add("vendor", "Contentful CMA token {}", "CFPAT-" + f.s(URLSAFE, 43))
    add("vendor", "asana pat {}", "2/" + f.s(string.digits, 16) + "/" + f.s(string.digits, 16) + ":" + f.s(HEX, 32))
    add("vendor", "sentry dsn https://{}@o123456.ingest.sentry.io/4504", f.s(HEX, 32))
    # --- assignments and config shapes -----------------------------------------------------------
    add("config", '{{"AccessKeyId": "ASIA{}", "SecretAccessKey": "{}", "SessionToken": "{}"}}', f.s(UPPER_ALNUM, 16), f.s(B64, 40), f.s(B64, 300))
    add("config", "[default]\naws_access_key_id=AKIA{}\naws_secret_access_key={}", f.s(UPPER_ALNUM, 16), f.s(B64, 40))
    add("config", "localhost:5432:appdb:app:{}", f.password(16))
    add("config", "//registry.npmjs.org/:_authToken={}", f.uuid())
    add("config", "spring.datasource.password={}", f.password(14))
    add("config", "[Interface]\nPrivateKey = {}", f.s(B64, 43) + "=")
    add("config", "DJANGO_SECRET_KEY='{}'", f.s(ALNUM + "!@#%^&*(-_=+)", 50))
    add("config", "SESSION_SECRET: {}", f.s(HEX, 64))
    add("config", "JWT_SIGNING_KEY = {}", f.s(B64, 64))
    add("config", "ENCRYPTION_KEY={}", base64.b64encode(bytes(f.rng.randrange(256) for _ in range(32))).decode())
    add("config", "mongodb+srv://admin:{}@cluster0.ab1cd.mongodb.net/test", f.password(18))
    add("config", "redis://:{}@cache.internal:6379/0", f.s(ALNUM, 32))
    add("config", "amqp://guest:{}@rabbit:5672/", f.password(12))
    add("config", "Server=db;Database=app;User Id=sa;Password={};", f.password(15))
    add("config", "      password: >-\n        {}", f.password(20))
    add("config", "client_secret={}&grant_type=client_credentials", f.s(URLSAFE, 40))
    add("config", "curl -H 'X-API-Key: {}' https://api.example.com/v2/items", f.s(ALNUM, 40))
    add("config", 'curl -H "x-api-key: {}" ...', f.s(HEX, 40))
    add("config", "kubectl create secret generic db --from-literal=password={}", f.password(16))
    add("config", 'env:\n  - name: API_TOKEN\n    value: "{}"', f.s(ALNUM, 40))
    # --- prose: a secret named in a sentence -----------------------------------------------------
    add("prose", "I set the API key to {} and restarted the worker.", f.s(ALNUM, 40))
    add("prose", "The token ({}) was committed by mistake.", f.s(URLSAFE, 40))
    add("prose", "Use password {} for the staging admin.", f.password(14))
    add("prose", "the db password is {}", f.password(12))
    add("prose", "Secret: {}", f.s(B64, 40))
    add("prose", "key={} worked after the rotation", f.s(ALNUM, 40))
    return out


def ordinary(f: Fake) -> list[dict]:
    out: list[dict] = []

    def add(family: str, template: str, n: int, make) -> None:
        for _ in range(n):
            out.append({"family": family, "text": template.format(make())})

    # --- hashes and ids, bare on their own line too ------------------------------------------------
    add("hash", "{}", 3, lambda: f.s(HEX, 40))  # a git sha pasted alone
    add("hash", "{}", 3, lambda: f.s(HEX, 64))  # a sha256
    add("hash", "  {}  dist/app.tar.gz", 2, lambda: f.s(HEX, 64))
    add("hash", "fixed in {} (backport)", 3, lambda: f.s(HEX, 12))
    add("hash", 'integrity="sha384-{}"', 3, lambda: f.s(B64, 64))
    add("hash", "sha512-{}==", 2, lambda: f.s(B64, 86))
    add("hash", 'ETag: "{}"', 2, lambda: f.s(HEX, 32))
    add("hash", "/nix/store/{}-python3-3.11.9", 2, lambda: f.s("0123456789abcdfghijklmnpqrsvwxyz", 32))
    add("hash", "main.{}.js 142 kB", 2, lambda: f.s(HEX, 8))
    add("id", "{}", 3, f.uuid)
    add("id", 'ObjectId("{}")', 2, lambda: f.s(HEX, 24))
    add("id", "ulid {}", 2, lambda: f.s("0123456789ABCDEFGHJKMNPQRSTVWXYZ", 26))
    add("id", "channel C{} in the alerts workspace", 2, lambda: f.s(UPPER_ALNUM, 8))
    add("id", "pod api-{}-x2x9k restarted", 2, lambda: f.s(LOWER_ALNUM, 10))
    add("id", "run {} failed on step 3", 2, lambda: f.s(string.digits, 10))
    add("id", "youtube.com/watch?v={}", 2, lambda: f.s(URLSAFE, 11))
    add("id", "trace_id={}", 2, lambda: f.s(HEX, 32))
    add("id", "Request ID: {}", 2, lambda: f.s(UPPER_ALNUM, 16))
    add("id", "AKIAIOSFODNN7EXAMPLE is the documented example id{}", 1, lambda: "")
    # --- versions, packages, paths ---------------------------------------------------------------
    add("version", "go get example.com/mod@v0.0.0-2024{}-ab12cd34ef56", 2, lambda: f.s(string.digits, 10))
    add("version", "numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl{}", 1, lambda: "")
    add("version", "bumped to {}", 3, lambda: f"{f.rng.randint(1, 9)}.{f.rng.randint(0, 40)}.{f.rng.randint(0, 20)}-beta.{f.rng.randint(1, 9)}")
    add("version", "node v{} (npm 10.2.4)", 2, lambda: f"{f.rng.randint(16, 22)}.{f.rng.randint(0, 20)}.{f.rng.randint(0, 9)}")
    add("path", "src/components/{}/UserProfileHeader2.tsx", 2, lambda: f.s(string.ascii_lowercase, 8))
    add("path", "/usr/lib/x86_64-linux-gnu/libssl.so.3{}", 1, lambda: "")
    add("path", "~/.cache/huggingface/hub/models--intfloat--multilingual-e5-small/snapshots/{}", 2, lambda: f.s(HEX, 40))
    add("path", "{}", 2, lambda: "AbstractSingletonProxyFactoryBeanV2Impl")
    add("path", "{}", 2, lambda: "test_the_merge_driver_leaves_a_conflict_never_an_empty_day")
    # --- keys and encodings that are public ----------------------------------------------------------
    add("public", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{} dev@laptop", 2, lambda: f.s(B64, 43))
    add("public", "age recipient age1{}", 2, lambda: f.s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58))
    add("public", "pk_live_{} (publishable key, safe in the browser)", 1, lambda: "")
    add("public", "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAA{}", 2, lambda: f.s(B64, 40))
    add("public", "base64 of the README header: {}", 2, lambda: base64.b64encode(b"# memtool: file-first memory").decode())
    add("public", "fingerprint SHA256:{}", 2, lambda: f.s(B64, 43))
    add("public", "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE{}\n-----END PUBLIC KEY-----", 1, lambda: f.s(B64, 52))
    add("public", "arn:aws:lambda:eu-west-1:{}:function:export-job", 2, lambda: f.s(string.digits, 12))
    add("public", "fe80::{}:1ff:fe23:4567:890a", 1, lambda: f.s(HEX, 4))
    add("public", "MAC 3c:22:fb:{}:9a:10", 1, lambda: f.s(HEX, 2))
    # --- words near secret words ---------------------------------------------------------------------
    add("words", "the token budget was {} tokens", 2, lambda: f.s(string.digits, 4))
    add("words", "password reset emails go out from {}", 1, lambda: "noreply@example.com")
    add("words", "secret management moved to {}", 1, lambda: "Vault")
    add("words", "api key rotation is every {} days", 1, lambda: "90")
    add("words", "key: {}", 2, lambda: f.rng.choice(["name", "user.email"]))
    add("words", "token: {}", 1, lambda: "${{ secrets.NPM_TOKEN }}")
    return out


def main() -> None:
    write_corpus(__doc__, "redaction_heldout", SEED, secrets, ordinary)


if __name__ == "__main__":
    main()

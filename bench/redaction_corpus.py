"""Writes the redaction corpus: fake secrets in the shapes they take in transcripts, and ordinary
values that must come through untouched. Every value is made here, from a fixed seed, with the
charset and length of the real format: none is a real credential.

    python bench/redaction_corpus.py [--out tests/data/redaction]

Two JSON-lines files:
  secrets.jsonl   {"family", "text", "secrets": [...]}: redaction succeeds when no string of
                  "secrets" is left in the output (a multi-line secret lists each of its lines).
  ordinary.jsonl  {"family", "text"}: redaction must return the text unchanged.

The secret families follow gitleaks' rule list (config/gitleaks.toml) and detect-secrets' plugins
as a checklist, plus the shapes issue 25 found surviving (assignments of any case, CLI options,
multi-line and encoded forms). `bench/redaction.py` measures memtool.redact on it.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import string
from pathlib import Path
from typing import Callable
from urllib.parse import quote

SEED = 25
HEX = "0123456789abcdef"
ALNUM = string.ascii_letters + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l".upper()
WORDS = ("correct horse battery staple orbit velvet lantern quarry mosaic thimble walnut ember falcon saddle cobalt meadow").split()


Rows = Callable[["Fake"], list[dict]]


class Fake:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def s(self, charset: str, n: int) -> str:
        """n characters of charset, with at least one digit and one letter when the charset has both."""
        while True:
            value = "".join(self.rng.choice(charset) for _ in range(n))
            digits = any(c.isdigit() for c in charset)
            letters = any(c.isalpha() for c in charset)
            if n < 6 or not (digits and letters) or (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
                return value

    def password(self, n: int = 14) -> str:
        return self.s(ALNUM, n - 2) + self.rng.choice("!#%+-_.") + self.s(string.digits, 1)

    def words(self, n: int = 4, sep: str = " ") -> str:
        return sep.join(self.rng.sample(WORDS, n))

    def uuid(self) -> str:
        h = self.s(HEX, 32)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def secrets(f: Fake) -> list[dict]:
    out: list[dict] = []

    def add(family: str, template: str, *values: str) -> None:
        out.append({"family": family, "text": template.format(*values), "secrets": list(values)})

    # --- provider tokens with a documented prefix (gitleaks rule ids in brackets) ---------------
    add("cloud", "export AWS_ACCESS_KEY_ID={}", "AKIA" + f.s("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16))  # aws-access-token
    add("cloud", "aws_secret_access_key = {}", f.s(B64, 40))
    add("cloud", "Found session creds: {} (expires 12:00Z)", "ASIA" + f.s("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16))
    add("cloud", "AWS_BEARER_TOKEN_BEDROCK={}", "ABSK" + f.s(ALNUM, 130))  # aws-amazon-bedrock
    add("cloud", "gcloud says: key {} is restricted", "AIza" + f.s(URLSAFE, 35))  # gcp-api-key
    add("cloud", '"client_secret": "{}"', "GOCSPX-" + f.s(URLSAFE, 28))
    add("cloud", "curl -H 'Authorization: Bearer {}' https://www.googleapis.com/drive/v3/files", "ya29." + f.s(URLSAFE, 60))
    add("cloud", "server key {} for FCM", "AAAA" + f.s(URLSAFE, 7) + ":APA91b" + f.s(URLSAFE, 134))
    add("cloud", "AZURE_CLIENT_SECRET={}", f.s(ALNUM, 3) + "8Q~" + f.s(ALNUM + "_.-", 34))  # azure-ad-client-secret
    add("cloud", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={};EndpointSuffix=core.windows.net", f.s(B64, 86) + "==")
    add("cloud", "ALIBABA_CLOUD_ACCESS_KEY_ID={}", "LTAI" + f.s(ALNUM, 20))
    add("cloud", "doctl auth init -t {}", "dop_v1_" + f.s(HEX, 64))  # digitalocean-pat
    add("cloud", "oauth token {} issued", "doo_v1_" + f.s(HEX, 64))
    add("cloud", "refresh with {}", "dor_v1_" + f.s(HEX, 64))
    add("cloud", "export HEROKU_API_KEY={}", f.uuid())  # heroku-api-key
    add("cloud", "heroku token: {}", "HRKU-AA" + f.s(URLSAFE, 58))  # heroku-api-key-v2
    add("cloud", "fly tokens create deploy -> {}", "fo1_" + f.s(URLSAFE, 43))
    add("cloud", "export CLOUDFLARE_API_TOKEN={}", f.s(URLSAFE, 40))
    add("cloud", "X-Auth-Key: {}", f.s(HEX, 37))  # cloudflare-global-api-key
    add("cloud", "origin ca key {}", "v1.0-" + f.s(HEX, 24) + "-" + f.s(HEX, 146))
    add("cloud", "oc login --token={}", "sha256~" + f.s(URLSAFE, 43))  # openshift-user-token
    add("cloud", "VAULT_TOKEN={}", "hvs." + f.s(URLSAFE, 95))
    add("cloud", "batch token {}", "hvb." + f.s(URLSAFE, 140))
    add("cloud", 'credentials "app.terraform.io" {{ token = "{}" }}', f.s(LOWER_ALNUM, 14) + ".atlasv1." + f.s(URLSAFE, 67))
    add("cloud", "pulumi login with {}", "pul-" + f.s(HEX, 40))
    add("cloud", "DOPPLER_TOKEN={}", "dp.pt." + f.s(ALNUM, 43))
    add("cloud", "scalingo login --api-token {}", "tk-us-" + f.s(URLSAFE, 48))
    add("cloud", "export DYNATRACE_API_TOKEN={}", "dt0c01." + f.s(UPPER_ALNUM, 24) + "." + f.s(UPPER_ALNUM, 64))
    add("cloud", "infracost configure set api_key {}", "ico-" + f.s(ALNUM, 32))
    add("cloud", "harness key {}", "pat." + f.s(URLSAFE, 22) + "." + f.s(ALNUM, 24) + "." + f.s(ALNUM, 20))
    add("cloud", "databricks configure --token {}", "dapi" + f.s(HEX, 32))
    add("cloud", "export DATABRICKS_TOKEN={}", "dapi" + f.s(HEX, 32) + "-2")
    add("cloud", "age key: {}", "AGE-SECRET-KEY-1" + f.s(BECH32, 58))
    add("cloud", "export OP_SERVICE_ACCOUNT_TOKEN={}", "ops_eyJ" + f.s(B64, 260))
    add(
        "cloud",
        "1Password secret key {}",
        "A3-" + f.s(UPPER_ALNUM, 6) + "-" + f.s(UPPER_ALNUM, 11) + "-" + f.s(UPPER_ALNUM, 5) + "-" + f.s(UPPER_ALNUM, 5) + "-" + f.s(UPPER_ALNUM, 5),
    )
    add("vcs", "git clone https://{}@github.com/org/repo.git", "ghp_" + f.s(ALNUM, 36))
    add("vcs", "gh auth status: token {}", "gho_" + f.s(ALNUM, 36))
    add("vcs", "installation token {}", "ghs_" + f.s(ALNUM, 36))
    add("vcs", "user-to-server {}", "ghu_" + f.s(ALNUM, 36))
    add("vcs", "refresh_token: {}", "ghr_" + f.s(ALNUM, 36))
    add("vcs", "GH_TOKEN={} gh pr list", "github_pat_" + f.s(ALNUM, 22) + "_" + f.s(ALNUM, 59))
    add("vcs", "PRIVATE-TOKEN: {}", "glpat-" + f.s(URLSAFE, 20))
    add("vcs", "deploy token {}", "gldt-" + f.s(URLSAFE, 20))
    add("vcs", "gitlab-runner register --token {}", "glrt-" + f.s(URLSAFE, 20))
    add("vcs", "trigger {}", "glptt-" + f.s(HEX, 40))
    add("vcs", "feed token {}", "glft-" + f.s(URLSAFE, 20))
    add("vcs", "agent token {}", "glagent-" + f.s(URLSAFE, 50))
    add("vcs", "oauth app secret {}", "gloas-" + f.s(URLSAFE, 64))
    add("vcs", "incoming mail {}", "glimt-" + f.s(URLSAFE, 25))
    add("vcs", "BITBUCKET_CLIENT_SECRET={}", f.s(URLSAFE, 64))
    add("vcs", "SRC_ACCESS_TOKEN={}", "sgp_" + f.s(HEX, 16) + "_" + f.s(HEX, 40))
    add("chat", "SLACK_BOT_TOKEN={}", "xoxb-" + f.s(string.digits, 12) + "-" + f.s(string.digits, 13) + "-" + f.s(ALNUM, 24))
    add("chat", "user token {}", "xoxp-" + f.s(string.digits, 12) + "-" + f.s(string.digits, 12) + "-" + f.s(string.digits, 13) + "-" + f.s(HEX, 32))
    add("chat", "socket mode with {}", "xapp-1-A" + f.s(UPPER_ALNUM, 10) + "-" + f.s(string.digits, 13) + "-" + f.s(HEX, 64))
    add("chat", "POST https://hooks.slack.com/services/{}", "T" + f.s(UPPER_ALNUM, 8) + "/B" + f.s(UPPER_ALNUM, 8) + "/" + f.s(ALNUM, 24))
    add("chat", "client.run('{}')", "MT" + f.s(ALNUM, 24) + "." + f.s(URLSAFE, 6) + "." + f.s(URLSAFE, 38))
    add("chat", "https://discord.com/api/webhooks/{}", f.s(string.digits, 18) + "/" + f.s(URLSAFE, 68))
    add("chat", "https://api.telegram.org/bot{}/getMe", f.s(string.digits, 10) + ":AA" + f.s(URLSAFE, 33))
    add("chat", "TELEGRAM_BOT_TOKEN={}", f.s(string.digits, 9) + ":AA" + f.s(URLSAFE, 33))
    add("chat", "teams webhook https://acme.webhook.office.com/webhookb2/{}", f.uuid() + "@" + f.uuid() + "/IncomingWebhook/" + f.s(HEX, 32) + "/" + f.uuid())
    add("chat", "MATTERMOST_ACCESS_TOKEN={}", f.s(LOWER_ALNUM, 26))
    add("payment", 'stripe.api_key = "{}"', "sk_live_" + f.s(ALNUM, 24))
    add("payment", "restricted key {} denied", "rk_live_" + f.s(ALNUM, 24))
    add("payment", "STRIPE_WEBHOOK_SECRET={}", "whsec_" + f.s(ALNUM, 32))
    add("payment", "square token {}", "EAAA" + f.s(URLSAFE, 60))
    add("payment", "SQUARE_ACCESS_TOKEN={}", "sq0atp-" + f.s(URLSAFE, 22))
    add("payment", "square oauth secret {}", "sq0csp-" + f.s(URLSAFE, 43))
    add("payment", "shopify token {}", "shpat_" + f.s(HEX, 32))
    add("payment", "shared secret {}", "shpss_" + f.s(HEX, 32))
    add("payment", "SHIPPO_API_TOKEN={}", "shippo_live_" + f.s(HEX, 40))
    add("payment", "duffel key {}", "duffel_live_" + f.s(URLSAFE, 43))
    add("payment", "FLW secret {}", "FLWSECK_TEST-" + f.s("abcdefgh0123456789", 32) + "-X")
    add("payment", "PLAID_SECRET={}", f.s(LOWER_ALNUM, 30))
    add("payment", "paypal client_secret: {}", f.s(URLSAFE, 80))
    add("ai", "export OPENAI_API_KEY={}", "sk-proj-" + f.s(URLSAFE, 74) + "T3BlbkFJ" + f.s(URLSAFE, 74))
    add("ai", "x-api-key: {}", "sk-ant-api03-" + f.s(URLSAFE, 93) + "AA")
    add("ai", "huggingface-cli login --token {}", "hf_" + f.s(string.ascii_letters, 34))
    add("ai", "org token {}", "api_org_" + f.s(string.ascii_letters, 34))
    add("ai", "PPLX_API_KEY={}", "pplx-" + f.s(ALNUM, 48))
    add("ai", "XAI key {}", "xai-" + f.s(ALNUM, 80))
    add("ai", "groq: {}", "gsk_" + f.s(ALNUM, 52))
    add("ai", "REPLICATE_API_TOKEN={}", "r8_" + f.s(ALNUM, 37))
    add("ai", "COHERE_API_KEY={}", f.s(ALNUM, 40))
    add("ai", "MISTRAL_API_KEY: {}", f.s(ALNUM, 32))
    add("ai", "prefect cloud login -k {}", "pnu_" + f.s(ALNUM, 36))
    add("packages", "//registry.npmjs.org/:_authToken={}", "npm_" + f.s(ALNUM, 36))
    add("packages", "password = {}", "pypi-AgEIcHlwaS5vcmc" + f.s(URLSAFE, 70))
    add("packages", "gem push with {}", "rubygems_" + f.s(HEX, 48))
    add("packages", "CLOJARS token {}", "CLOJARS_" + f.s(LOWER_ALNUM, 60))
    add("packages", "docker login -u bot --password-stdin <<< {}", "dckr_pat_" + f.s(URLSAFE, 27))
    add("packages", "artifactory key {}", "AKCp" + f.s(ALNUM, 69))
    add("packages", '<add key="ClearTextPassword" value="{}" />', f.password(16))
    add("packages", "README token {}", "rdme_" + f.s(LOWER_ALNUM, 70))
    add("saas", "atlassian token {}", "ATATT3xFfGF0" + f.s(URLSAFE, 170) + "=" + f.s(HEX.upper(), 8))
    add("saas", "JIRA_API_TOKEN={}", f.s(ALNUM, 24))
    add("saas", "grafana sa token {}", "glsa_" + f.s(ALNUM, 32) + "_" + f.s(HEX, 8))
    add("saas", "grafana cloud {}", "glc_" + f.s(B64, 80) + "==")
    add("saas", "grafana api key {}", "eyJrIjoi" + f.s(ALNUM, 80) + "=")
    add("saas", "LINEAR_API_KEY={}", "lin_api_" + f.s(ALNUM, 40))
    add("saas", "notion integration {}", "ntn_" + f.s(string.digits, 11) + f.s(ALNUM, 35))
    add("saas", "NOTION_TOKEN={}", "secret_" + f.s(ALNUM, 43))
    add("saas", "mailchimp key {}", f.s(HEX, 32) + "-us" + f.s(string.digits, 2))
    add("saas", "MAILGUN_API_KEY={}", "key-" + f.s(LOWER_ALNUM, 32))
    add("saas", "SENDGRID_API_KEY='{}'", "SG." + f.s(URLSAFE, 22) + "." + f.s(URLSAFE, 43))
    add("saas", "brevo key {}", "xkeysib-" + f.s(HEX, 64) + "-" + f.s(ALNUM, 16))
    add("saas", "twilio SK {}", "SK" + f.s(HEX, 32))
    add("saas", "TWILIO_AUTH_TOKEN={}", f.s(HEX, 32))
    add("saas", "postman key {}", "PMAK-" + f.s(HEX, 24) + "-" + f.s(HEX, 34))
    add("saas", "sentry user token {}", "sntryu_" + f.s(HEX, 64))
    add("saas", "SENTRY_AUTH_TOKEN={}", "sntrys_eyJpYXQiO" + f.s(B64, 120) + "_" + f.s(B64, 43))
    add("saas", "DATADOG_API_KEY={}", f.s(HEX, 32))
    add("saas", "DD_APP_KEY={}", f.s(HEX, 40))
    add("saas", "NEW_RELIC_API_KEY={}", "NRAK-" + f.s(UPPER_ALNUM, 27))
    add("saas", "PlanetScale: {}", "pscale_tkn_" + f.s(URLSAFE, 43))
    add("saas", "DATABASE_PASSWORD={}", "pscale_pw_" + f.s(URLSAFE, 43))
    add("saas", "oauth {}", "pscale_oauth_" + f.s(URLSAFE, 43))
    add("saas", "ALGOLIA_ADMIN_KEY={}", f.s(HEX, 32))
    add("saas", "octopus key {}", "API-" + f.s(UPPER_ALNUM, 26))
    add("saas", "EasyPost {}", "EZAK" + f.s(ALNUM, 54))
    add("saas", "facebook page token {}", "EAAC" + f.s(ALNUM, 120))
    add("saas", "TWITTER_BEARER_TOKEN={}", "A" * 22 + f.s(ALNUM, 90))
    add("saas", "frame.io token {}", "fio-u-" + f.s(URLSAFE, 64))
    add("saas", "adobe client secret {}", "p8e-" + f.s(ALNUM, 32))
    add("saas", "mapbox secret {}", "sk.eyJ" + f.s(URLSAFE, 60) + "." + f.s(URLSAFE, 22))
    add("saas", "dropbox {}", "sl." + f.s(URLSAFE, 135))
    add("saas", "maxmind license {}", f.s(ALNUM, 6) + "_" + f.s(ALNUM, 29) + "_mmk")
    add("saas", "sm token {}", "sm_pat_" + f.s(ALNUM, 16))
    add("saas", "Set-Cookie: session={}; HttpOnly", "eyJhbGciOiJIUzI1NiJ9.eyJ" + f.s(URLSAFE, 40) + "." + f.s(URLSAFE, 43))

    # --- assignment shapes: key names of any case, quoting, separators ------------------------
    add("assignment", "DB_PWD={}", f.password())
    add("assignment", "db_pwd: {}", f.password())
    add("assignment", "  dbPassword: '{}'", f.password())
    add("assignment", "export MYSQL_PWD={}", f.password())
    add("assignment", "PGPASSWORD={} psql -h db -U app", f.password())
    add("assignment", "SIGNING_KEY={}", f.s(B64, 44))
    add("assignment", "ENCRYPTION_KEY={}", f.s(HEX, 64))
    add("assignment", 'encryptionKey: "{}"', f.s(B64, 44))
    add("assignment", "SECRET_KEY_BASE={}", f.s(HEX, 128))
    add("assignment", "JWT_SECRET={}", f.s(ALNUM, 32))
    add("assignment", "MASTER_KEY={}", f.s(HEX, 32))
    add("assignment", "app.secret_key = '{}'", f.s(ALNUM + "!@#%^&*", 24))
    add("assignment", "session_secret => '{}'", f.password(20))
    add("assignment", 'const apiKey = "{}";', f.s(ALNUM, 32))
    add("assignment", 'config.ApiKey := "{}"', f.s(ALNUM, 32))
    add("assignment", "HMAC_KEY={}", f.s(B64, 44))
    add("assignment", "client_secret={}", f.s(URLSAFE, 40))
    add("assignment", "WEBHOOK_SECRET={}", f.s(ALNUM, 32))
    add("assignment", "<password>{}</password>", f.password())
    add("assignment", "Server=db;User Id=sa;Password={};", f.password())
    add("assignment", '{{"username": "admin", "password": "{}"}}', f.password())
    add("assignment", '{{\\"password\\": \\"{}\\"}}', f.password())
    add("assignment", "token: GITHUB_TOKEN: {}", "Zk29" + f.s(ALNUM, 36))
    add("assignment", "X-API-Key: {}", f.s(ALNUM, 32))
    add("assignment", "X-Auth-Token: {}", f.s(URLSAFE, 40))
    add("assignment", "X-Vault-Token: {}", "hvs." + f.s(URLSAFE, 95))
    add("assignment", "requirepass {}", f.password(20))
    add("assignment", "ldap bind_password = {}", f.password())
    add("assignment", "smtp_pass: {}", f.password())
    add("assignment", "SNYK_TOKEN={}", f.uuid())
    add("assignment", "credentials: {}", f.s(B64, 40))
    add("assignment", "  client-key-data: {}", f.s(B64, 120) + "=")
    add("assignment", '{{"auths": {{"registry.example.com": {{"auth": "{}"}}}}}}', base64.b64encode(f"deploy:{f.password()}".encode()).decode())
    add("assignment", "_auth={}", base64.b64encode(f"ci:{f.password()}".encode()).decode())
    add("assignment", "data:\n  password: {}\n  username: YWRtaW4=", base64.b64encode(f.password().encode()).decode())
    add("assignment", "passphrase: {}", f.words(4))
    add("assignment", "GPG_PASSPHRASE={}", f.words(4))
    add("assignment", 'wallet_passphrase = "{}"', f.words(4, "-"))

    # --- command lines --------------------------------------------------------------------------
    add("cli", "mysql -u root -p{} prod", f.password())
    add("cli", "mysqldump -h db -uadmin -p{} --all-databases > all.sql", f.password())
    add("cli", "mariadb -u app -p'{}' app", f.password())
    add("cli", "sshpass -p '{}' ssh deploy@web1", f.password())
    add("cli", "sshpass -p{} scp a b:", f.password())
    add("cli", "curl -u admin:{} https://jenkins.internal/api/json", f.password())
    add("cli", "curl --user 'ci:{}' https://nexus/repo", f.password())
    add("cli", "CREATE USER 'app'@'%' IDENTIFIED BY '{}';", f.password())
    add("cli", "ALTER USER app IDENTIFIED WITH mysql_native_password BY '{}';", f.password())
    add("cli", "CREATE ROLE app LOGIN PASSWORD '{}';", f.password())
    add("cli", "machine api.example.com login bot password {}", f.password())
    add("cli", "machine git.example.com\n  login ci\n  password {}\n", f.password())
    add("cli", "docker login -u bot -p {} registry.example.com", f.password())
    add("cli", "redis-cli -h cache -a {} ping", f.password())
    add("cli", "vault login -method=userpass username=me password={}", f.password())
    add("cli", "gh secret set API_TOKEN --body {}", f.s(ALNUM, 32))
    add("cli", "terraform apply -var db_password={}", f.password())
    add("cli", "htpasswd -b .htpasswd admin {}", f.password())
    add("cli", "kubectl create secret generic db --from-literal=password={}", f.password())
    add("cli", "psql postgresql://app:{}@db:5432/prod", f.password())
    add("cli", "mongodb+srv://admin:{}@cluster0.example.net/test", f.password())
    add("cli", "az login --service-principal -u http://app --password {} --tenant t", f.password())
    add("cli", 'curl -H "Authorization: Basic {}" https://api.example.com', base64.b64encode(f"user:{f.password()}".encode()).decode())

    # --- encoded forms ----------------------------------------------------------------------------
    token = f.s(ALNUM, 40)
    add("encoded", "GET /cb?redirect=https%3A%2F%2Fapp%2Fdone%3Faccess_token%3D{}%26state%3Dx", token)
    pw = "p@ss:" + f.s(ALNUM, 10) + "!"
    out.append({"family": "encoded", "text": f"amqp://guest:{quote(pw, safe='')}@rabbit:5672/", "secrets": [quote(pw, safe="")]})
    add("encoded", "?client_secret={}&grant_type=client_credentials", quote(f.s(ALNUM, 20) + "/+=" + f.s(ALNUM, 10), safe=""))
    add("encoded", "Proxy-Authorization: Basic {}", base64.b64encode(f"proxy:{f.password()}".encode()).decode())

    # --- multi-line forms ---------------------------------------------------------------------------
    for label in ("RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY", "ENCRYPTED PRIVATE KEY"):
        body = [f.s(B64, 64) for _ in range(4)]
        pem = f"-----BEGIN {label}-----\n" + "\n".join(body) + f"\n-----END {label}-----"
        out.append({"family": "multiline", "text": f"$ cat key.pem\n{pem}\n$ ls", "secrets": body})
    body = [f.s(B64, 64) for _ in range(3)]
    out.append(
        {
            "family": "multiline",
            "text": "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + "\n".join(body) + "\n=" + f.s(B64, 4) + "\n-----END PGP PRIVATE KEY BLOCK-----",
            "secrets": body,
        }
    )
    body = [f.s(B64, 64) for _ in range(3)]
    out.append(
        {
            "family": "multiline",
            "text": "tls:\n  private_key: |\n    -----BEGIN PRIVATE KEY-----\n"
            + "".join(f"    {b}\n" for b in body)
            + "    -----END PRIVATE KEY-----\n  cert: ./tls.crt",
            "secrets": body,
        }
    )
    body = [f.s(B64, 48) for _ in range(2)]
    out.append({"family": "multiline", "text": "app:\n  signing_secret: |-\n" + "".join(f"    {b}\n" for b in body) + "  port: 8080", "secrets": body})
    body = [f.words(3), f.words(3)]
    out.append(
        {"family": "multiline", "text": "vault:\n  unseal_password: >\n" + "".join(f"    {b}\n" for b in body) + "  addr: https://vault.local", "secrets": body}
    )
    a, b = f.s(ALNUM, 20), f.s(ALNUM, 20)
    out.append({"family": "multiline", "text": f"export API_TOKEN={a}\\\n    {b}\nmake deploy", "secrets": [a, b]})
    a, b = f.s(ALNUM, 24), f.s(ALNUM, 24)
    out.append({"family": "multiline", "text": f'{{\n  "password":\n      "{a}{b}",\n  "user": "x"\n}}', "secrets": [a + b]})
    a, b = f.s(ALNUM, 20), f.s(ALNUM, 20)
    out.append({"family": "multiline", "text": f'client_secret: "{a}\n  {b}"\nscope: read', "secrets": [a, b]})
    return out


def ordinary(f: Fake) -> list[dict]:
    out: list[dict] = []

    def add(family: str, template: str, n: int, make) -> None:
        for _ in range(n):
            out.append({"family": family, "text": template.format(make())})

    add("git", "commit {}\nAuthor: Dev <dev@example.com>", 6, lambda: f.s(HEX, 40))
    add("git", "Merge pull request #{} from org/feature-branch", 2, lambda: f.s(string.digits, 3))
    add("git", "HEAD is now at {} Fix the index rebuild", 4, lambda: f.s(HEX, 7))
    add("git", "git cherry-pick {}", 3, lambda: f.s(HEX, 40))
    add("uuid", '{{"id": "{}", "status": "ok"}}', 5, f.uuid)
    add("uuid", "request_id={} took 12ms", 3, f.uuid)
    add("uuid", "Idempotency-Key: {}", 3, f.uuid)
    add("uuid", "session_id: {}", 3, f.uuid)
    add("digest", "sha256: {}", 4, lambda: f.s(HEX, 64))
    add("digest", "The digest {} matches the release.", 3, lambda: f.s(HEX, 64))
    add("digest", "docker pull ghcr.io/org/app@sha256:{}", 4, lambda: f.s(HEX, 64))
    add("digest", "image: postgres:16@sha256:{}", 3, lambda: f.s(HEX, 64))
    add("digest", '"integrity": "sha512-{}=="', 3, lambda: f.s(B64, 86))
    add("digest", "md5sum: {}  dist.tar.gz", 2, lambda: f.s(HEX, 32))
    add("digest", "cache_key: deps-{}", 2, lambda: f.s(HEX, 40))
    add("arn", "arn:aws:iam::{}:role/deploy-role", 3, lambda: f.s(string.digits, 12))
    add("arn", "arn:aws:s3:::my-bucket-{}/logs/*", 2, lambda: f.s(LOWER_ALNUM, 6))
    add("arn", "SecretId: arn:aws:secretsmanager:us-east-1:{}:secret:prod/db-AbCdEf", 2, lambda: f.s(string.digits, 12))
    add("names", "bundle id: com.example.{}", 2, lambda: f.s(string.ascii_lowercase, 8))
    add("names", "npm install @scope/{}-client@2.3.1", 2, lambda: f.s(string.ascii_lowercase, 6))
    add("names", "implementation 'org.apache.commons:commons-{}:3.12.0'", 2, lambda: f.s(string.ascii_lowercase, 5))
    add("names", "Released v{}-rc.1+build.5", 3, lambda: f"{f.rng.randint(0, 9)}.{f.rng.randint(0, 30)}.{f.rng.randint(0, 9)}")
    add("names", "pip install memtool=={}", 2, lambda: f"{f.rng.randint(0, 3)}.{f.rng.randint(0, 20)}.{f.rng.randint(0, 9)}")
    add("paths", "Wrote /home/dev/project/{}/index/index.json", 3, lambda: f.s(string.ascii_lowercase, 7))
    add("paths", "SECRET_FILE=/run/secrets/{}", 2, lambda: f.s(string.ascii_lowercase, 8))
    add("paths", "password_file: /etc/app/{}.pass", 2, lambda: f.s(string.ascii_lowercase, 6))
    add("paths", r"C:\Users\dev\{}\config.yaml", 2, lambda: f.s(string.ascii_lowercase, 6))
    add("urls", "See https://github.com/org/{}/pull/12", 3, lambda: f.s(string.ascii_lowercase, 6))
    add("urls", "http://localhost:8080/api/v1/items?page={}&sort=asc", 2, lambda: f.s(string.digits, 2))
    add("urls", "git@github.com:org/{}.git", 2, lambda: f.s(string.ascii_lowercase, 6))
    add("urls", "token_endpoint: https://auth.example.com/{}/oauth2/token", 2, lambda: f.s(string.ascii_lowercase, 6))
    add("urls", "TOKEN_URL=https://oauth2.googleapis.com/{}", 1, lambda: "token")
    add("keys", "password_hash_algorithm: {}", 2, lambda: f.rng.choice(["argon2id", "bcrypt-sha256"]))
    add("keys", "next_page_token: {}", 3, lambda: f.s(URLSAFE, 48))
    add("keys", '{{"nextPageToken": "{}"}}', 2, lambda: f.s(URLSAFE, 40))
    add("keys", "token_count: {}", 2, lambda: f.s(string.digits, 4))
    add("keys", "max_tokens = {}", 1, lambda: "4096")
    add("keys", "secret_santa: {}", 2, lambda: f.rng.choice(["Alice draws Bob this year", "draw names on Friday"]))
    add("keys", "password_min_length: {}", 1, lambda: "12")
    add("keys", "token_type: {}", 1, lambda: "Bearer")
    add("keys", "access_token_lifetime: {}", 1, lambda: "3600")
    add("keys", "secretKeyRef:\n  name: {}\n  key: password", 2, lambda: "db-" + f.s(string.ascii_lowercase, 5))
    add("keys", "SECRET_NAME=prod/{}/credentials", 1, lambda: f.s(string.ascii_lowercase, 5))
    add("keys", "tokenizer: {}", 2, lambda: f.rng.choice(["cl100k_base", "bert-base-uncased"]))
    add("keys", "primary_key: {}", 1, lambda: "id")
    add("keys", "public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{} dev@laptop", 2, lambda: f.s(B64, 43))
    add("keys", "partition_key: tenant_{}", 1, lambda: "id")
    add("keys", "author: {}", 1, lambda: "Jane Doe")
    add("keys", "auth: {}", 1, lambda: "required")
    add("keys", "bypass_cache: {}", 1, lambda: "true")
    add("keys", "passport_number_field: {}", 1, lambda: "hidden")
    add("placeholder", "API_KEY={}", 6, lambda: f.rng.choice(["<your-key>", "${API_KEY}", "xxx", "your-api-key-here", "$API_KEY", "<YOUR_API_KEY>"]))
    add("placeholder", "password: {}", 3, lambda: f.rng.choice(["'********'", "changeme", "${DB_PASSWORD}"]))
    add("placeholder", "GITHUB_TOKEN: {}", 1, lambda: "${{ secrets.GITHUB_TOKEN }}")
    add("placeholder", "OPENAI_API_KEY={}", 1, lambda: "sk-...")
    add("placeholder", "token = {}", 2, lambda: f.rng.choice(["tokenizer.encode(text)", "os.environ['TOKEN']"]))
    add("code", "client = OpenAI(api_key={})", 2, lambda: f.rng.choice(["settings.openai_key", "api_key_value"]))
    add("code", "for token in tokens:\n    {}", 1, lambda: "yield token")
    add("code", "def get_token(self) -> str:\n    return self._token  # {}", 1, lambda: "cached")
    add("prose", "The password policy needs {} characters.", 2, lambda: f.s(string.digits, 2))
    add("prose", "Password: reset it {}", 1, lambda: "tomorrow")
    add("prose", "The secret to good memory is {}.", 1, lambda: "compression")
    add("prose", "the token budget is {}, fine", 1, lambda: f.s(string.digits, 4))
    add(
        "prose",
        "echo {} | base64 -d prints the greeting",
        3,
        lambda: base64.b64encode(f.rng.choice(["hello world, this is fine", "meeting notes for monday", "release checklist done"]).encode()).decode(),
    )
    add("prose", "Decoded the banner: {} (base64 of the motd)", 2, lambda: base64.b64encode(b"Welcome to the build server").decode())
    add("prose", "mkdir -p {} && docker run -u 1000:1000 image", 1, lambda: "build/out")
    add("prose", "git push -u origin {}", 1, lambda: "main")
    add("logs", "2024-05-01T12:00:00Z INFO trace_id={} span_id=00f067aa0ba902b7", 4, lambda: f.s(HEX, 32))
    add("logs", "DEBUG blob {} written (4096 bytes)", 3, lambda: f.s(HEX, 64))
    add("logs", "object key uploads/{}.png stored", 2, lambda: f.s(HEX, 40))
    add("logs", "kernel: [{}] eth0: link up", 2, lambda: f.s(string.digits, 6) + ".123456")
    add("logs", "mysql -u root -p {} < dump.sql", 1, lambda: "appdb")
    add("logs", "mysql -h db -P{} -u app -p", 1, lambda: "3306")
    add("logs", "Listening on 0.0.0.0:{}", 1, lambda: "8080")
    add("certs", "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----", 2, lambda: f.s(B64, 64))
    add("certs", "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----", 1, lambda: f.s(B64, 64))
    add("ids", "Stripe customer {} charged", 2, lambda: "cus_" + f.s(ALNUM, 14))
    add("ids", "Slack channel {} archived", 1, lambda: "C0" + f.s(UPPER_ALNUM, 8))
    add("ids", "instance {} stopped", 2, lambda: "i-0" + f.s(HEX, 16))
    add("ids", "vpc {} created", 1, lambda: "vpc-0" + f.s(HEX, 16))
    add("ids", "ISBN {}", 1, lambda: "978-3-16-148410-0")
    add("ids", "google client_id: {}.apps.googleusercontent.com", 1, lambda: f.s(string.digits, 12) + "-" + f.s(LOWER_ALNUM, 32))
    # Near misses for the key-name rules: code, CLI options and config keys that name a secret
    # without holding one.
    for text in (
        "    self.password = password",
        "token = token.strip()",
        "password = request.form['password']",
        "api_key_header: X-API-Key",
        "ssh_key_path: ~/.ssh/id_ed25519",
        "SECRET_KEY_FILE=/etc/app/secret.key",
        "auth_method: oauth2",
        "auth:\n  type: oauth2\n  scopes: [read, write]",
        "key: app.kubernetes.io/name",
        'key: "errors.notFound"',
        "docker login -u bot --password-stdin registry.example.com",
        "session_token_ttl: 3600",
        "| token | 1234 |\n| password | required |",
        "Passwords must match; the password reset link expires in 24 hours.",
        "if len(password) > 12 and key > 0:",
        "<password>${DB_PASSWORD}</password>",
        "password_reset_url: https://example.com/reset",
        "the API key and the secret key go in the vault",
        "keyboard: us\nmonkey: patched",
        "credentials_provider: aws-sso",
        "token_budget=8000 max_tokens=1024",
        "eos_token: </s>\npad_token: <pad>",
        "sort_key: created_at",
        "encryption_key_id: alias/prod-kms",
        "public_key_fingerprint: SHA256:" + f.s(B64, 43),
        "docker run -a stdout -p 8080:80 nginx && ls -a -p",
        '<li key="user-123-profile-card">',
        '{"key": "release-2024-05-01-hotfix"}',
        "gh secret set API_TOKEN < token.txt",
        "mongodb://db.internal:27017/app?replicaSet=rs0#primary",
        # Found by redacting this repository's own sources:
        "        max_tokens: MaxTokens = max_tokens,",
        "    window_tokens: int | None = None,",
        'raise BadInput(f"--max-tokens must be between {C.MIN} and {C.MAX}")',
        'AUTH = "Alice: We decided to use Auth0 instead of custom JWT handling."',
        '"GEMINI_API_KEY": FAKE_KEY if key else None,',
        'f"use {FAKE_TOKEN} and DB_PWD={FAKE_PASSWORD} for the deploy"',
        # Found by redacting CPython's standard library (Lib/*.py):
        "        self.token = nextchar",
        "PseudoToken = Whitespace + group(PseudoExtras, Number, Funny, ContStr, Name)",
        "    - password:     The password for the authentication.",
        "    - password: password to use with username",
        "        the username/\n        password combination.",
        "Pass 'parameters' and/or 'return_annotation' arguments",
        "with messages identified by UID, or the path identified by the passed name",
    ):
        out.append({"family": "near_miss", "text": text})
    return out


def human(f: "Fake", nouns: list[str]) -> str:
    """A password a person picks: a capitalised word, digits, a sign (`Harbor2291!`)."""
    return f.rng.choice(nouns).capitalize() + f.s(string.digits, f.rng.randint(2, 4)) + f.rng.choice("!@#$%&*?")


def write_corpus(doc: str, folder: str, seed: int, secret_rows: Rows, ordinary_rows: Rows) -> None:
    """The command line of a seeded corpus generator: `--out DIR` (default tests/data/FOLDER) and
    `--seed N`; the secrets are made from Fake(seed), the ordinary values from Fake(seed + 1)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "tests" / "data" / folder)
    parser.add_argument("--seed", type=int, default=seed)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("secrets", secret_rows(Fake(args.seed))), ("ordinary", ordinary_rows(Fake(args.seed + 1)))):
        (args.out / f"{name}.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
        print(f"{args.out / name}.jsonl: {len(rows)} rows")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "tests" / "data" / "redaction")
    args = parser.parse_args()
    f = Fake(SEED)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("secrets.jsonl", secrets(f)), ("ordinary.jsonl", ordinary(f))):
        with open(args.out / name, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"{args.out / name}: {len(rows)} rows")


if __name__ == "__main__":
    main()

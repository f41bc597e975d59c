"""Writes the unseen redaction corpus: secrets and ordinary values in the shapes real terminal logs,
transcripts and config files hold, written before the rules it measures were changed and never
tuned on (no `--part`: the whole corpus is the report). Every value is made here from a fixed seed
with a plausible charset and length (random tokens, and passwords a person picks: a word, digits,
a sign); none is real.

    python -m bench.redaction_unseen [--out tests/data/redaction_unseen] [--seed 2026]

Same files and fields as bench/redaction_corpus.py (secrets.jsonl, ordinary.jsonl); measured by
`python bench/redaction.py --corpus tests/data/redaction_unseen` (add --through-memory for what
reaches the memory files). Do not tune rules on it: look at its misses only to report them.
"""

from __future__ import annotations

import base64
import string

from bench.redaction_corpus import ALNUM, B64, HEX, LOWER_ALNUM, UPPER_ALNUM, URLSAFE, Fake, human, write_corpus

SEED = 2026
NOUNS = "falcon harbor maple orbit cedar willow copper summer winter raven tiger garden sunset".split()


def secrets(f: Fake) -> list[dict]:
    out: list[dict] = []

    def add(family: str, template: str, *values: str) -> None:
        out.append({"family": family, "text": template.format(*values), "secrets": list(values)})

    # --- command lines in a terminal log ---------------------------------------------------------
    add("cli", "$ mysql -h 127.0.0.1 -u root -p{} app < dump.sql", human(f, NOUNS))
    add("cli", "PGPASSWORD={} psql -h db.internal -U postgres -c 'select 1'", f.password(14))
    add("cli", "$ sshpass -p '{}' ssh deploy@10.0.0.4 uptime", human(f, NOUNS))
    add("cli", "smbclient //fs01/backup -U svc_backup%{} -c 'ls'", f.password(12))
    add("cli", "C:\\> net use Z: \\\\fs01\\finance /user:CORP\\svc_backup {} /persistent:no", human(f, NOUNS))
    add("cli", 'ldapsearch -x -H ldap://dc1.corp.local -D "cn=admin,dc=corp,dc=local" -w {} -b "dc=corp,dc=local"', f.password(13))
    add("cli", "PsExec.exe \\\\web02 -u Administrator -p {} cmd /c ipconfig", human(f, NOUNS))
    add("cli", "redis-cli -h cache.internal -a {} ping", f.s(ALNUM, 24))
    add("cli", "curl -s -u admin:{} http://localhost:9200/_cat/indices?v", human(f, NOUNS))
    add("cli", "wget --user=deploy --password={} https://repo.example.com/artifact.tar.gz", f.password(12))
    add("cli", 'sqlcmd -S tcp:db01,1433 -U sa -P {} -Q "SELECT @@VERSION"', f.password(15))
    add("cli", "openssl enc -aes-256-cbc -salt -k {} -in backup.tar -out backup.tar.enc", f.password(16))
    add("cli", "keytool -importkeystore -srckeystore app.p12 -srcstorepass {} -destkeystore app.jks", f.password(12))
    add("cli", "java -Djavax.net.ssl.keyStorePassword={} -jar service.jar", f.password(14))
    add("cli", "aws configure set aws_secret_access_key {}", f.s(B64, 40))
    add("cli", "kubectl create secret docker-registry regcred --docker-server=ghcr.io --docker-username=bot --docker-password={}", "ghp_" + f.s(ALNUM, 36))
    add("cli", 'ansible-playbook site.yml --extra-vars "ansible_become_pass={}"', human(f, NOUNS))
    add("cli", "lftp -u deploy,{} sftp://files.example.com", f.password(12))
    add("cli", "docker run -d -e POSTGRES_PASSWORD={} -p 5432:5432 postgres:16", human(f, NOUNS))
    add("cli", "heroku config:set STRIPE_SECRET_KEY={} -a shop-prod", "sk_live_" + f.s(ALNUM, 24))
    add("cli", "vault login {}", "hvs." + f.s(URLSAFE, 90))
    # --- URLs and connection strings in logs -----------------------------------------------------
    add("url", "git clone https://oauth2:{}@gitlab.example.com/team/app.git", "glpat-" + f.s(URLSAFE, 20))
    add("url", "origin\thttps://x-access-token:{}@github.com/org/repo.git (fetch)", "ghs_" + f.s(ALNUM, 36))
    add("url", 'psql "host=db.internal port=5432 user=app password={} dbname=app sslmode=require"', f.password(16))
    add("url", "Driver={{ODBC Driver 18 for SQL Server}};Server=tcp:db01,1433;Uid=sa;Pwd={};Encrypt=yes;", human(f, NOUNS))
    add("url", "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://api.example.com/v1/items?api_key={}", f.s(ALNUM, 32))
    add("url", "index-url = https://ci:{}@nexus.corp.local/repository/pypi/simple", f.password(14))
    # --- config files as cat shows them -----------------------------------------------------------
    add("config", "$ cat ~/.pgpass\ndb.internal:5432:*:deploy:{}", human(f, NOUNS))
    add("config", "machine api.heroku.com\n  login me@example.com\n  password {}", f.uuid())
    add("config", "[client]\nuser=root\npassword={}\nhost=127.0.0.1", human(f, NOUNS))
    add("config", "define( 'DB_PASSWORD', '{}' );", f.password(16))
    add("config", "spring.mail.password={}", human(f, NOUNS))
    add("config", "smtp:\n  host: smtp.example.com\n  user: alerts@example.com\n  password: {}", human(f, NOUNS))
    add("config", "SECRET_KEY = 'django-insecure-{}'", f.s(LOWER_ALNUM + "!@#$%^&*(-_=+)", 50))
    add("config", '  + password = "{}"\n  + username = "admin"', f.password(18))
    add("config", "//npm.pkg.github.com/:_authToken={}", "ghp_" + f.s(ALNUM, 36))
    add("config", "export OPENAI_API_KEY={}", "sk-proj-" + f.s(URLSAFE, 64))
    add("config", "STRIPE_WEBHOOK_SECRET={}", "whsec_" + f.s(ALNUM, 32))
    # --- code and JSON ---------------------------------------------------------------------------
    add("code", 's3 = boto3.client("s3", aws_access_key_id="AKIA{}", aws_secret_access_key="{}")', f.s(UPPER_ALNUM, 16), f.s(B64, 40))
    add("code", 'client = OpenAI(api_key="{}")', "sk-proj-" + f.s(URLSAFE, 48))
    add("code", '{{"access_token": "{}", "token_type": "Bearer", "expires_in": 3599}}', f.s(URLSAFE, 43))
    add("code", '{{"headers": {{"Authorization": "token {}"}}}}', "ghp_" + f.s(ALNUM, 36))
    add("code", "conn = psycopg2.connect(host='db', user='app', password='{}')", human(f, NOUNS))
    add("code", "Authorization: Basic {}", base64.b64encode(f"admin:{human(f, NOUNS)}".encode()).decode())
    # --- prose in a chat ---------------------------------------------------------------------------
    add("prose", "The new admin password is {} - please change it after first login.", human(f, NOUNS))
    add("prose", "login: admin / pass: {}", human(f, NOUNS))
    add("prose", "<alice> the wifi password is {}", human(f, NOUNS))
    add("prose", "I've put the slack bot token ({}) in the vault.", "xoxb-" + f.s(string.digits, 12) + "-" + f.s(string.digits, 13) + "-" + f.s(ALNUM, 24))
    add("prose", "here's my token: {}", f.s(ALNUM, 40))
    add("prose", "use this API key for staging {}", f.s(HEX, 32))
    return out


def ordinary(f: Fake) -> list[dict]:
    out: list[dict] = []

    def add(family: str, template: str, *values: str) -> None:
        out.append({"family": family, "text": template.format(*values)})

    # --- git and packages ----------------------------------------------------------------------
    add("git", "{} (HEAD -> main, origin/main) fix: retry on 502 from the registry", f.s(HEX, 7))
    add("git", "commit {}\nAuthor: Dev <dev@example.com>\nDate:   Mon Jun 3 10:12:44 2024 +0200", f.s(HEX, 40))
    add("git", "issue #1234 closed by {}", f.s(HEX, 10))
    add("git", "git push -u origin feature/login-page{}", "")
    add("git", "Merge pull request #88 from org/token-refresh{}", "")
    add("hash", "{}  memtool-0.4.1.tar.gz", f.s(HEX, 64))
    add("hash", "--hash=sha256:{}", f.s(HEX, 64))
    add("hash", 'checksum = "{}"', f.s(HEX, 64))
    add("hash", '"integrity": "sha512-{}=="', f.s(B64, 86))
    add("hash", 'resolved "https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz#{}"', f.s(HEX, 40))
    add("hash", "docker pull ghcr.io/org/app@sha256:{}", f.s(HEX, 64))
    add("hash", "Content-MD5: {}", base64.b64encode(bytes(f.rng.randrange(256) for _ in range(16))).decode())
    add("hash", '"etag": "W/\\"{}\\""', f.s(HEX, 32))
    add("hash", "cache key: {}", f.s(HEX, 64))
    add("id", '"request_id": "{}"', f.uuid())
    add("id", "X-Request-Id: {}", f.s(HEX, 32))
    add("id", "trace={} span={}", f.s(HEX, 32), f.s(HEX, 16))
    add("id", "ObjectId('{}')", f.s(HEX, 24))
    add("id", "kubectl logs web-7d9c8b6f5-{}", f.s(LOWER_ALNUM, 5))
    add("id", "Session ID: {}", f.uuid())
    add("id", "api_key_id: {}", f.uuid())
    add("id", "Idempotency-Key: {}", f.uuid())
    add("id", "sec   rsa4096/{} 2024-01-01 [SC]", f.s("0123456789ABCDEF", 16))
    add("id", "256 SHA256:{} dev@laptop (ED25519)", f.s(B64, 43))
    add("version", "Successfully installed requests-2.32.3 urllib3-2.2.2{}", "")
    add("version", "version: {}", f"3.{f.rng.randint(0, 13)}.{f.rng.randint(0, 20)}")
    add("version", "v2.1.0-rc.3+build.{}", f.s(HEX, 7))
    add("version", "Microsoft Windows [Version 10.0.19045.{}]", f.s(string.digits, 4))
    add("version", "Python 3.11.9 (main, Apr  6 2024, 17:59:24) [GCC 11.4.0]{}", "")
    add("path", "/home/dev/.cache/pip/wheels/{}/{}/{}", f.s(HEX, 2), f.s(HEX, 2), f.s(HEX, 56))
    add("path", "node_modules/.pnpm/react-dom@18.3.1_react@18.3.1/node_modules/react-dom{}", "")
    add("base64", "cursor={}", base64.b64encode(b'{"page": 2, "per_page": 50}').decode())
    add("base64", "echo '{}' | base64 -d", base64.b64encode(b"hello world\n").decode())
    # --- command lines and words near secret words ---------------------------------------------------
    add("cli", "docker run -p 8080:80 -d nginx:1.27{}", "")
    add("cli", "ssh -p 2222 deploy@10.0.0.4{}", "")
    add("cli", "mkdir -p build/{}", f.s(HEX, 8))
    add("cli", "mysql -h db -u root -p app{}", "")
    add("cli", "psql -h localhost -U postgres -d app{}", "")
    add("cli", "smbclient -L //fs01 -N{}", "")
    add("cli", 'ldapsearch -x -b "dc=corp,dc=local" "(uid=jdoe)"{}', "")
    add("cli", "net use Z: \\\\fs01\\share /persistent:yes{}", "")
    add("cli", "curl -u admin https://localhost:9200/{}", "")
    add("cli", "echo $CR_PAT | docker login ghcr.io -u bot --password-stdin{}", "")
    add("words", "password_min_length: 12{}", "")
    add("words", "Password must be at least 8 characters.{}", "")
    add("words", "The password reset token expires after 30 minutes.{}", "")
    add("words", '"token_type": "bearer", "expires_in": 3600{}', "")
    add("words", "token_count=2048 prompt_tokens=1500{}", "")
    add("words", "secret_name: prod/db/credentials{}", "")
    add("words", "password: ${{DB_PASSWORD}}{}", "")
    add("words", "password: ********{}", "")
    add("words", "PASS src/auth/token.test.ts (2.{} s)", f.s(string.digits, 1))
    add("words", "Tests: 12 passed, 12 total{}", "")
    add("words", "the primary key is (user_id, created_at){}", "")
    add("words", "auth method: publickey{}", "")
    add("words", "login: jdoe{}", "")
    return out


def main() -> None:
    write_corpus(__doc__, "redaction_unseen", SEED, secrets, ordinary)


if __name__ == "__main__":
    main()

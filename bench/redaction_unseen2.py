"""Writes the second unseen redaction corpus: secrets and ordinary values in the shapes terminal logs,
agent transcripts, config files, CI logs, code and chat hold, with tools, vendors and shapes that no
other corpus of this repository uses (read them to avoid repeats before adding a row). It was written
and committed before any rule was changed against it and is scored whole, never tuned on. Every value
is made here from a fixed seed with a plausible charset and length (random tokens, and passwords a
person picks: a word, digits, a sign); none is real.

    python -m bench.redaction_unseen2 [--out tests/data/redaction_unseen2] [--seed 3037]

Same files and fields as bench/redaction_corpus.py (secrets.jsonl, ordinary.jsonl); measured by
`python bench/redaction.py --corpus tests/data/redaction_unseen2` (add --through-memory for what
reaches the memory files). Do not tune rules on it: look at its misses only to report them.
"""

from __future__ import annotations

import base64
import json
import string

from bench.redaction_corpus import ALNUM, B64, HEX, LOWER_ALNUM, UPPER_ALNUM, URLSAFE, Fake, human, write_corpus

SEED = 3037
NOUNS = "lantern pebble juniper thistle meadow anchor quartz falcon comet ember nimbus saffron".split()


def jwt(f: Fake) -> str:
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    body = base64.urlsafe_b64encode(json.dumps({"sub": f.s(string.digits, 8), "iat": 1717400000}).encode()).decode().rstrip("=")
    return f"{head}.{body}.{f.s(URLSAFE, 43)}"


def secrets(f: Fake) -> list[dict]:
    out: list[dict] = []

    def add(family: str, template: str, *values: str) -> None:
        out.append({"family": family, "text": template.format(*values), "secrets": list(values)})

    # --- terminal logs: tools whose options take a password ---------------------------------------
    add("cli", "$ mongosh --host rs0/db1:27017 -u admin -p {} --authenticationDatabase admin", human(f, NOUNS))
    add("cli", "$ sqlplus system/{}@//ora01.corp.local:1521/ORCLPDB1", human(f, NOUNS))
    add("cli", "$ mc alias set minio http://minio.lan:9000 minioadmin {}", f.s(ALNUM, 32))
    add("cli", "$ jarsigner -keystore release.jks -storepass {} app-release.apk upload", f.password(14))
    add("cli", "$ ipmitool -I lanplus -H 10.20.0.15 -U ADMIN -P {} chassis power status", human(f, NOUNS))
    add("cli", "$ xfreerdp /v:term01.corp.local /u:CORP\\jdoe /p:{} /cert:ignore", human(f, NOUNS))
    add("cli", "$ mosquitto_pub -h broker.lan -u sensor01 -P {} -t home/temp -m 21.5", f.password(12))
    add("cli", "$ rabbitmqctl add_user orders {}", f.password(16))
    add("cli", "$ cqlsh cass01 9042 -u cassandra -p {}", human(f, NOUNS))
    add("cli", "$ nmcli dev wifi connect Office-5G password {}", human(f, NOUNS))
    add("cli", "C:\\> plink -ssh -pw {} root@192.168.1.20 uptime", human(f, NOUNS))
    add("cli", "$ 7z a -p{} -mhe=on backup-2024-06.7z ./exports", f.password(14))
    add("cli", "$ zip -P {} payroll.zip payroll.xlsx", human(f, NOUNS))
    add("cli", "$ gpg --batch --yes --passphrase {} -c secrets.tar", f.password(18))
    add("cli", "$ mysqladmin -u root password {}", human(f, NOUNS))
    # The application (client) id and the tenant id are public ids, as UUIDs elsewhere in this corpus are.
    app, client_secret, tenant = f.uuid(), f.s(ALNUM, 3) + "8Q~" + f.s(ALNUM + "_.-", 34), f.uuid()
    out.append({"family": "cli", "text": f"$ az login --service-principal -u {app} -p {client_secret} --tenant {tenant}", "secrets": [client_secret]})
    add("cli", "$ argocd login argocd.example.com --username admin --password {} --grpc-web", f.s(ALNUM, 16))
    add("cli", "C:\\> winrs -r:web03 -u:Administrator -p:{} ipconfig /all", human(f, NOUNS))
    add("cli", "C:\\> schtasks /create /tn Backup /tr backup.cmd /sc daily /ru CORP\\svc_bkp /rp {}", human(f, NOUNS))
    add("cli", "PS> $pw = ConvertTo-SecureString '{}' -AsPlainText -Force", human(f, NOUNS))
    add("cli", "$ echo 'deploy:{}' | sudo chpasswd", human(f, NOUNS))
    add("cli", "$ twine upload -u __token__ -p {} dist/*", "pypi-AgEIcHlwaS5vcmc" + f.s(URLSAFE, 120))
    add("cli", "$ terraform apply -var 'db_admin_password={}' -auto-approve", human(f, NOUNS))
    add("cli", "$ curl --oauth2-bearer {} https://api.example.net/v2/me", f.s(URLSAFE, 40))
    add("cli", "$ snmpwalk -v3 -l authPriv -u monitor -a SHA -A {} -x AES -X {} 10.0.0.1", f.password(12), f.password(12))
    # --- config files -----------------------------------------------------------------------------
    add("config", "$ cat ~/.s3cfg\n[default]\naccess_key = {}\nsecret_key = {}", "AKIA" + f.s(UPPER_ALNUM, 16), f.s(B64, 40))
    add("config", "[gdrive]\ntype = drive\nclient_id = 2048.apps.googleusercontent.com\nclient_secret = {}", f.s(URLSAFE, 24))
    add("config", "[pypi]\nusername = __token__\npassword = {}", "pypi-AgEIcHlwaS5vcmc" + f.s(URLSAFE, 100))
    add("config", "signing.keyId=24875D73\nsigning.password={}\nsigning.secretKeyRingFile=/home/ci/.gnupg/secring.gpg", human(f, NOUNS))
    add("config", "ossrhPassword={}", f.password(16))
    add("config", 'network={{\n    ssid="HomeNet"\n    psk="{}"\n}}', human(f, NOUNS))
    add("config", "environment:\n  MINIO_ROOT_USER: admin\n  MINIO_ROOT_PASSWORD: {}", f.password(20))
    add("config", "users:\n- name: ci\n  user:\n    token: {}", jwt(f))
    add("config", "---\n:rubygems_api_key: {}", "rubygems_" + f.s(HEX, 48))
    add("config", '{{"http-basic": {{"repo.packagist.com": {{"username": "token", "password": "{}"}}}}}}', f.s(HEX, 40))
    add("config", "web01 ansible_host=10.0.1.5 ansible_user=admin ansible_password={}", human(f, NOUNS))
    add("config", "jwt_secret: {}", f.s(HEX, 64))
    add("config", 'admin_password = "{}"', human(f, NOUNS))
    add("config", "$ cat /etc/openvpn/auth.txt\nvpnuser\n{}", human(f, NOUNS))
    add("config", "cache_url: rediss://:{}@cache.internal:6380/0", f.s(ALNUM, 32))
    add("config", 'proxy_set_header Authorization "Basic {}";', base64.b64encode(f"ops:{human(f, NOUNS)}".encode()).decode())
    # --- code ---------------------------------------------------------------------------------------
    add("code", 'Connection conn = DriverManager.getConnection(url, "app", "{}");', human(f, NOUNS))
    add("code", 'stripe.api_key = "{}"', "rk_live_" + f.s(ALNUM, 99))
    add("code", 'client = Client("AC{}", "{}")', f.s(HEX, 32), f.s(HEX, 32))
    add("code", "conn = Connection(server, user='cn=admin,dc=corp,dc=local', password='{}', auto_bind=True)", human(f, NOUNS))
    add("code", 'server.login("alerts@example.com", "{}")', human(f, NOUNS))
    add("code", 'rdb := redis.NewClient(&redis.Options{{Addr: "cache:6379", Password: "{}", DB: 0}})', f.password(16))
    add("code", "mongoose.connect('mongodb://orders:{}@mongo:27017/orders?authSource=admin')", human(f, NOUNS))
    add("code", "$mail->Password = '{}';", human(f, NOUNS))
    add("code", 'const sg = require("@sendgrid/mail"); sg.setApiKey("{}");', "SG." + f.s(URLSAFE, 22) + "." + f.s(URLSAFE, 43))
    # --- CI logs ------------------------------------------------------------------------------------
    add("ci", "[Pipeline] sh\n+ export DEPLOY_PASS={}", human(f, NOUNS))
    add("ci", "2024-06-03T10:12:44.1234567Z   NEXUS_PASSWORD: {}", f.password(14))
    add("ci", "Step 4/9 : ARG NPM_TOKEN={}", "npm_" + f.s(ALNUM, 36))
    add("ci", "$ helm repo add private https://charts.corp.local --username ci --password {}", f.s(ALNUM, 24))
    # --- chat and agent transcripts -----------------------------------------------------------------
    add("prose", "the root pw for the NAS is {}", human(f, NOUNS))
    add("prose", "creds: admin / {}", human(f, NOUNS))
    add("prose", "passphrase for the signing key: {}", f.words(4, "-") + f.s(string.digits, 2))
    add("prose", "I rotated the webhook secret, new one is {}", f.s(HEX, 40))
    add("prose", "The Mailgun key is {} (sandbox domain).", "key-" + f.s(HEX, 32))
    add("prose", "Assistant: I'll set the header `X-Api-Key: {}` and retry.", f.s(ALNUM, 32))
    add("prose", "User: here is the bot token, don't commit it: {}", f.s(string.digits, 10) + ":" + f.s(URLSAFE, 35))
    add("prose", "Tool output:\n  Your new personal access token: {}\n  Make sure to copy it now.", f.s(ALNUM, 40))
    add("prose", 'Basic auth for the staging site: user "preview", password "{}"', human(f, NOUNS))
    return out


def ordinary(f: Fake) -> list[dict]:
    out: list[dict] = []

    def add(family: str, template: str, *values: str) -> None:
        out.append({"family": family, "text": template.format(*values)})

    # --- git, lockfiles, builds ---------------------------------------------------------------------
    add("git", "$ git rev-parse HEAD\n{}", f.s(HEX, 40))
    add("git", "stash@{{0}}: WIP on main: {} wip: password reset form", f.s(HEX, 7))
    add("git", "Cherry-picked from commit {}", f.s(HEX, 40))
    add("lock", 'files = [{{file = "idna-3.7-py3-none-any.whl", hash = "sha256:{}"}}]', f.s(HEX, 64))
    add("lock", '"narHash": "sha256-{}=",', f.s(B64, 43))
    add("lock", '"rev": "{}",', f.s(HEX, 40))
    add("lock", '"reference": "{}",\n"shasum": ""', f.s(HEX, 40))
    add("build", "#7 sha256:{} 12.58MB / 31.42MB 2.1s", f.s(HEX, 64))
    add("build", "REPOSITORY   TAG     IMAGE ID       CREATED\napp          latest  {}   2 hours ago", f.s(HEX, 12))
    add("build", "Run actions/checkout@{}", f.s(HEX, 40))
    add("build", "Cache restored from key: Linux-pip-{}", f.s(HEX, 64))
    add("build", "      checksum/config: {}", f.s(HEX, 64))
    add("build", "BUILD_ID=20240603.{} SOURCE_DATE_EPOCH=1717400000", f.s(string.digits, 1))
    add("build", "added 312 packages, and audited 313 packages in 9s{}", "")
    # --- ids in logs and APIs -----------------------------------------------------------------------
    add("id", "web-6f8d9c7b5-{}   1/1   Running   0   3d", f.s(LOWER_ALNUM, 5))
    add("id", '  id = "i-0{}"', f.s(HEX, 16))
    add("id", "RequestId: {} Duration: 12.34 ms", f.uuid())
    add("id", "X-Amz-Cf-Id: {}", f.s(URLSAFE, 54) + "==")
    add("id", '{{"id": "pi_{}", "object": "payment_intent", "amount": 2000}}', "3P" + f.s(ALNUM, 22))
    add("id", "MessageSid: SM{}", f.s(HEX, 32))
    add("id", "Sentry event ID: {}", f.s(HEX, 32))
    add("id", 'metadata:\n  uid: {}\n  resourceVersion: "48213"', f.uuid())
    add("id", "dd.trace_id={} dd.span_id={}", f.s(string.digits, 19), f.s(string.digits, 19))
    add("id", "GET session:{}", f.uuid())
    add("id", "https://drive.google.com/file/d/{}/view?usp=sharing", "1" + f.s(URLSAFE, 32))
    add("id", "private static final long serialVersionUID = {}L;", f.s(string.digits, 18))
    add("id", "Key fingerprint = {} {} {} {} {}  {} {} {} {} {}", *[f.s("0123456789ABCDEF", 4) for _ in range(10)])
    add("id", "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{}", f.s(B64, 43))
    add("id", "Content-Security-Policy: script-src 'self' 'sha256-{}='", f.s(B64, 43))
    add("id", "slack ts={}.{}", f.s(string.digits, 10), f.s(string.digits, 6))
    add("id", "yt video id {}", f.s(URLSAFE, 11))
    # --- versions and paths ---------------------------------------------------------------------------
    add("version", 'versionCode 42\nversionName "2.7.{}"', f.s(string.digits, 1))
    add("version", "uses: actions/setup-node@v4{}", "")
    add("version", "node v20.14.0 (npm v10.7.0){}", "")
    add("path", "src/auth/__pycache__/token.cpython-311.pyc{}", "")
    add("path", 'File "/app/auth/password.py", line 12, in verify{}', "")
    add("path", "/var/lib/docker/overlay2/{}/merged", f.s(HEX, 64))
    # --- commands without a password ------------------------------------------------------------------
    add("cli", "$ mongosh --host db1 -u admin -p --authenticationDatabase admin{}", "")
    add("cli", "$ sqlplus /nolog{}", "")
    add("cli", "$ keytool -list -v -keystore release.jks{}", "")
    add("cli", "$ openssl enc -d -aes-256-cbc -in backup.enc -out backup.tar -pass env:BACKUP_PASS{}", "")
    add("cli", "$ mysql --login-path=local -e 'show databases'{}", "")
    add("cli", "$ ipmitool -I lanplus -H 10.20.0.15 -U ADMIN -E sensor list{}", "")
    add("cli", "$ 7z x backup.7z -o./restore{}", "")
    add("cli", "$ zip -r site.zip public/{}", "")
    add("cli", "PS> $cred = Get-Credential CORP\\svc_bkp{}", "")
    add("cli", "$ gpg --import --batch signing.asc{}", "")
    add("cli", "$ twine upload --repository testpypi dist/*{}", "")
    # --- words near secret words, placeholders, code --------------------------------------------------
    add("words", "token: ${{{{ secrets.GITHUB_TOKEN }}}}{}", "")
    add("words", 'api_key = os.environ["PAYMENTS_API_KEY"]{}', "")
    add("words", 'api_key="YOUR_API_KEY_HERE"{}', "")
    add("words", "Authorization: Bearer $ACCESS_TOKEN{}", "")
    add("words", '"bos_token": "<s>", "eos_token": "</s>"{}', "")
    add("words", "generate(max_new_tokens=512, temperature=0.2){}", "")
    add("words", "secret_scanning: enabled{}", "")
    add("words", "password_policy:\n  min_length: 14\n  require_symbols: true{}", "")
    add("words", '{{"key": "ArrowDown", "code": "ArrowDown"}}{}', "")
    add("words", "<li key={{`user-row-${{user.id}}`}}>{}", "")
    add("words", "i18n key auth.password.forgot missing{}", "")
    add("words", "tests/test_auth.py::test_token_refresh PASSED{}", "")
    add("words", "I reset my password yesterday and it works now.{}", "")
    add("words", "The token expired, so I logged in again and it was fine.{}", "")
    add("words", "Pass the key as the second argument to encrypt().{}", "")
    add("words", "Assistant: I'll read src/auth/keys.py to see how the secret is loaded.{}", "")
    add("words", '"passwordless": true, "mfa": "totp"{}', "")
    return out


def main() -> None:
    write_corpus(__doc__, "redaction_unseen2", SEED, secrets, ordinary)


if __name__ == "__main__":
    main()

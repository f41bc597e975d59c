"""Writes the third unseen redaction corpus: secrets and ordinary values in the shapes a developer's terminal, config
files of many syntaxes, SDK calls in several languages, vendor tokens, URLs, chat and agent transcripts hold, with
tools, vendors and shapes that the other corpora of this repository do not use (database, cloud, registry, CI,
deploy, network, container, broker, mail, LDAP and VPN tools). It was written and committed before any rule was
changed against it and scored whole, unseen, once (73.0 % / 2.4 %); from the commit of branch redact9 on it is
tuned on (its misses were read and their classes fixed), so its figure is no longer a never-tuned one.
Every value is made here from a fixed seed with a plausible
charset and length (random tokens in each vendor's documented shape, and passwords a person picks: a word, digits,
a sign); none is real.

    python -m bench.redaction_unseen3 [--out tests/data/redaction_unseen3] [--seed 5281]

Same files and fields as bench/redaction_corpus.py (secrets.jsonl, ordinary.jsonl); measured by
`python bench/redaction.py --corpus tests/data/redaction_unseen3` (add --through-memory for what
reaches the memory files).
"""

from __future__ import annotations

import base64
import json
import string
from urllib.parse import quote

from bench.redaction_corpus import ALNUM, B64, HEX, LOWER_ALNUM, UPPER_ALNUM, URLSAFE, Fake, human, write_corpus

SEED = 5281
NOUNS = "harbor willow granite sparrow cedar tundra marble beacon orchid glacier pepper violet".split()
BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


class Plain(str):
    """A generated value of a secret row that is not itself a secret (an id, a user name)."""


def url_pw(f: Fake) -> str:
    """A password a person picks, with only the signs that need no escaping in a URL."""
    return f.rng.choice(NOUNS).capitalize() + f.s(string.digits, f.rng.randint(2, 4)) + f.rng.choice("-_.!~*")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def jwt(f: Fake, claims: dict) -> str:
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"{head}.{body}.{f.s(URLSAFE, 43)}"


def secrets(f: Fake) -> list[dict]:
    out: list[dict] = []

    def add(family: str, template: str, *values: str) -> None:
        text = template.format(*values)
        out.append({"family": family, "text": text, "secrets": [v for v in values if not isinstance(v, Plain)]})

    def dumps(family: str, obj: object, *values: str) -> None:
        out.append({"family": family, "text": json.dumps(obj), "secrets": list(values)})

    # --- database CLIs ------------------------------------------------------------------------------------------
    add("db_cli", '$ clickhouse-client --host ch-prod-1 --user analyst --password {} --query "SELECT count() FROM ev"', human(f, NOUNS))
    add("db_cli", "$ influx config create --config-name prod --host-url https://influx.lan:8086 --org acme --token {}", f.s(URLSAFE, 86) + "==")
    add("db_cli", "$ cockroach sql --url 'postgresql://root:{}@crdb-0.crdb:26257/defaultdb?sslmode=verify-full'", url_pw(f))
    add("db_cli", '$ cypher-shell -a neo4j://graph.lan:7687 -u neo4j -p {} "MATCH (n) RETURN count(n)"', human(f, NOUNS))
    add("db_cli", "$ cbq -e couchbase://cb1.lan -u Administrator -p {}", human(f, NOUNS))
    add("db_cli", "$ etcdctl --endpoints=https://10.0.4.11:2379 --user root:{} get /config --prefix", human(f, NOUNS))
    add("db_cli", "$ REDISCLI_AUTH={} redis-cli -h cache.lan -p 6380 --tls INFO keyspace", f.s(ALNUM, 32))
    add("db_cli", "$ export SNOWSQL_PWD='{}' && snowsql -a xy12345.eu-central-1 -u LOADER -d RAW", human(f, NOUNS))
    add("db_cli", "$ vsql -h vertica.lan -U dbadmin -w {} -c 'select version()'", human(f, NOUNS))
    add("db_cli", "$ isql -v PRODDSN etl_user {}", human(f, NOUNS))
    add("db_cli", "$ mariadb-dump --user=backup --password={} --all-databases > all.sql", human(f, NOUNS))
    add("db_cli", '$ hdbsql -n hana.lan:30015 -u SYSTEM -p {} "SELECT * FROM DUMMY"', human(f, NOUNS))
    add("db_cli", "db2 => connect to SAMPLE user db2inst1 using {}", human(f, NOUNS))
    add("db_cli", "$ TRINO_PASSWORD='{}' trino --server https://trino.lan:8443 --user etl --password", human(f, NOUNS))
    add("db_cli", "$ usql 'sqlserver://sa:{}@mssql.lan:1433/inventory'", url_pw(f))

    # --- cloud CLIs ---------------------------------------------------------------------------------------------
    add("cloud_cli", "$ ibmcloud login --apikey {} -r us-south", f.s(URLSAFE, 44))
    add("cloud_cli", "$ linode-cli configure --token {}", f.s(HEX, 64))
    add("cloud_cli", "$ scw init access-key={} secret-key={} organization-id={}", "SCW" + f.s(UPPER_ALNUM, 17), f.uuid(), Plain(f.uuid()))
    add("cloud_cli", "$ export VULTR_API_KEY={}", f.s(UPPER_ALNUM, 36))
    add("cloud_cli", "$ exo config add --api-key EXO{} --api-secret {}", Plain(f.s(LOWER_ALNUM, 24)), f.s(URLSAFE, 43))
    add(
        "cloud_cli",
        "[DEFAULT]\nuser=ocid1.user.oc1..aaaaaaaa{}\nfingerprint=20:3b:97:13:55:1c:5b:0d:d3:37:d8:50:4e:c5:3a"
        ":34\nkey_file=~/.oci/oci_api_key.pem\npass_phrase={}\nregion=eu-frankfurt-1",
        Plain(f.s(LOWER_ALNUM, 52)),
        human(f, NOUNS),
    )
    add("cloud_cli", "$ civo apikey save prod {}", f.s(ALNUM, 50))
    add("cloud_cli", "$ yc config set token {}", "y0_" + f.s(URLSAFE, 55))
    add("cloud_cli", "$ tccli configure set secretId {} secretKey {}", "AKID" + f.s(ALNUM, 32), f.s(ALNUM, 32))
    add("cloud_cli", "export OS_AUTH_URL=https://keystone.lan:5000/v3\nexport OS_USERNAME=deploy\nexport OS_PASSWORD={}", human(f, NOUNS))

    # --- package registries -------------------------------------------------------------------------------------
    add("registry", "$ cargo login {}", "cio" + f.s(ALNUM, 32))
    add("registry", '# ~/.cargo/credentials.toml\n[registries.acme]\ntoken = "Bearer {}"', f.s(URLSAFE, 40))
    add("registry", "$ dotnet nuget push bin/Release/Acme.Core.2.4.1.nupkg -k {} -s https://api.nuget.org/v3/index.json", "oy2" + f.s(LOWER_ALNUM, 43))
    add(
        "registry",
        "$ dotnet nuget add source https://pkgs.dev.azure.com/acme/_packaging/feed/nuget/v3/index.json -n acme -u build -p {} --store-password-in-clear-text",
        f.s("abcdefghijklmnopqrstuvwxyz234567", 52),
    )
    add("registry", 'npmScopes:\n  acme:\n    npmRegistryServer: "https://npm.acme.dev"\n    npmAuthToken: "{}"', f.s(URLSAFE, 48))
    add("registry", "//npm.acme.dev/:_auth={}", b64("ci-bot:" + human(f, NOUNS)))
    add("registry", "$ mix hex.organization auth acme --key {}", f.s(HEX, 32))
    add("registry", "[global]\nindex-url = https://deploy:{}@nexus.acme.lan/repository/pypi/simple", url_pw(f))
    add("registry", "$ export UV_INDEX_ACME_PASSWORD={}", f.s(URLSAFE, 64))
    add("registry", "$ bundle config set --global enterprise.contribsys.com {}:{}", Plain(f.s(HEX, 8)), f.s(HEX, 8))
    add("registry", "$ helm repo add acme https://charts.acme.lan --username ci --password {}", human(f, NOUNS))
    add("registry", "$ export DENO_AUTH_TOKENS={}@deno.acme.dev", f.s(ALNUM, 40))
    add("registry", "$ poetry config http-basic.acme ci {}", human(f, NOUNS))
    add(
        "registry",
        "<server>\n  <id>acme-signing</id>\n  <privateKey>${{user.home}}/.m2/acme.key</privateKey>\n  <passphrase>{}</passphrase>\n</server>",
        human(f, NOUNS),
    )

    # --- CI tools -----------------------------------------------------------------------------------------------
    add("ci", "$ circleci setup --token {} --host https://circleci.com --no-prompt", "CCIPAT_" + f.s(BASE58, 22) + "_" + f.s(HEX, 40))
    add("ci", "$ bk auth login --org acme --token {}", "bkua_" + f.s(HEX, 40))
    add("ci", 'deploy:\n  stage: deploy\n  variables:\n    DEPLOY_PASSWORD: "{}"\n  script: ./deploy.sh', human(f, NOUNS))
    add("ci", "$ codecov upload-process -t {} -F unit", f.uuid())
    add("ci", "$ sonar-scanner -Dsonar.projectKey=acme-api -Dsonar.host.url=https://sonar.acme.lan -Dsonar.token={}", "squ_" + f.s(HEX, 40))
    add("ci", "$ drone secret add --repo acme/api --name docker_password --data {}", human(f, NOUNS))
    add("ci", "$ travis env set DEPLOY_KEY {} --private", f.s(ALNUM, 40))
    add("ci", '  - script: curl -sf -u :{} "https://dev.azure.com/acme/_apis/projects?api-version=7.1"', f.s("abcdefghijklmnopqrstuvwxyz234567", 52))
    add("ci", 'Run echo "::add-mask::{}"', f.s(ALNUM, 32))

    # --- deploy tools -------------------------------------------------------------------------------------------
    add("deploy", "$ vercel deploy --prod --token {}", f.s(ALNUM, 24))
    add("deploy", "$ netlify deploy --prod --dir dist --auth {}", "nfp_" + f.s(ALNUM, 36))
    add("deploy", "RENDER_API_KEY={}", "rnd_" + f.s(ALNUM, 32))
    add("deploy", "$ RAILWAY_TOKEN={} railway up --service api", f.uuid())
    add("deploy", "# .kamal/secrets\nKAMAL_REGISTRY_PASSWORD={}\nRAILS_ENV=production", human(f, NOUNS))
    add("deploy", "$ supabase login --token {}", "sbp_" + f.s(HEX, 40))
    add("deploy", "$ neonctl projects list --api-key {}", "napi_" + f.s(LOWER_ALNUM, 64))
    add("deploy", "$ deployctl deploy --project=acme-edge --token={} main.ts", "ddp_" + f.s(ALNUM, 36))
    add("deploy", "$ echo '{}' > ~/.vault_pass && ansible-playbook site.yml --vault-password-file ~/.vault_pass", human(f, NOUNS))
    add("deploy", "$ caprover deploy -h https://captain.acme.dev -p {} -a api", human(f, NOUNS))

    # --- network tools ------------------------------------------------------------------------------------------
    add("network", "$ http -a ops:{} POST https://api.acme.lan/v1/restart", human(f, NOUNS))
    add("network", "$ RSYNC_PASSWORD={} rsync -av backup@nas.lan::nightly /srv/restore/", human(f, NOUNS))
    add("network", "$ aria2c --http-user=mirror --http-passwd={} https://mirror.acme.lan/iso/debian.iso", human(f, NOUNS))
    add("network", "$ curl --proxy-user squid:{} -x http://proxy.lan:3128 https://example.com", human(f, NOUNS))
    add("network", "$ export https_proxy=http://jdoe:{}@proxy.corp.lan:8080", url_pw(f))
    add("network", "$ nmap -p445 --script smb-enum-shares --script-args smbuser=audit,smbpass={} 10.0.8.0/24", human(f, NOUNS))
    add("network", '$ git -c http.extraHeader="Authorization: Basic {}" clone https://git.acme.lan/platform/infra.git', b64("ci:" + f.s(HEX, 40)))
    add("network", "username netops privilege 15 password 0 {}\nsnmp-server community {} RW", human(f, NOUNS), f.s(ALNUM, 12))
    add("network", "$ ncftpput -u web -p {} ftp.acme.lan /htdocs index.html", human(f, NOUNS))
    add("network", "$ rdesktop -u administrator -p {} 10.0.0.5", human(f, NOUNS))
    add("network", 'spawn ssh admin@10.0.0.9\nexpect "password:"\nsend "{}\\r"\ninteract', human(f, NOUNS))

    # --- container registries -----------------------------------------------------------------------------------
    add("container", "$ podman login -u 'acme+ci' -p {} quay.io", f.s(UPPER_ALNUM, 64))
    add("container", "$ skopeo copy --src-creds ci:{} docker://registry.acme.lan/api:1.4 oci:api", human(f, NOUNS))
    add("container", "$ crane auth login harbor.acme.lan -u 'robot$ci' -p {}", f.s(ALNUM, 32))
    add("container", "$ nerdctl login -u admin --password {} registry.lan:5000", human(f, NOUNS))
    add("container", '{{"auths": {{"registry.acme.lan": {{"auth": "{}"}}}}}}', b64("deploy:" + human(f, NOUNS)))
    add("container", "$ jf config add acme --url https://acme.jfrog.io --access-token {}", "cmVmdGtuOjAxOj" + f.s(ALNUM, 50))

    # --- message brokers ----------------------------------------------------------------------------------------
    add(
        "broker",
        'sasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="{}" password="{}";',
        Plain(f.s(UPPER_ALNUM, 16)),
        f.s(B64, 64),
    )
    add(
        "broker",
        "$ kcat -b pkc-x1y2z.eu-west-1.aws.confluent.cloud:9092 -X security.protocol=SASL_SSL "
        "-X sasl.mechanisms=PLAIN -X sasl.username={} -X sasl.password={} -L",
        Plain(f.s(UPPER_ALNUM, 16)),
        f.s(B64, 64),
    )
    add("broker", "$ nats --server nats://ops:{}@nats.lan:4222 stream ls", url_pw(f))
    add("broker", "# user.nk\n{}", "SUA" + f.s(BASE32, 55))
    add(
        "broker",
        "$ pulsar-admin --auth-plugin org.apache.pulsar.client.impl.auth.AuthenticationToken --auth-params token:{} tenants list",
        jwt(f, {"sub": "admin"}),
    )
    add("broker", "Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={}", f.s(B64, 43) + "=")
    add("broker", 'broker_url = "amqps://worker:{}@mq.acme.lan:5671/prod"', url_pw(f))
    add("broker", "ABLY_API_KEY={}", f.s(ALNUM, 6) + "." + f.s(URLSAFE, 6) + ":" + f.s(URLSAFE, 43))
    add("broker", "PUSHER_APP_SECRET={}", f.s(HEX, 20))

    # --- mail -----------------------------------------------------------------------------------------------------
    add("mail", "account work\nhost smtp.office365.com\nport 587\nauth on\nuser j.doe@acme.example\npassword {}", human(f, NOUNS))
    add("mail", 'set imap_user = "j.doe@acme.example"\nset imap_pass = "{}"', human(f, NOUNS))
    add("mail", 'poll imap.acme.example protocol IMAP user "jdoe" password "{}" ssl', human(f, NOUNS))
    add("mail", "[smtp.fastmail.com]:465 ops@acme.example:{}", f.s(string.ascii_lowercase + string.digits, 16))
    add("mail", "$ swaks --to qa@acme.example --server smtp.lan:587 --auth LOGIN --auth-user alerts --auth-password {}", human(f, NOUNS))
    add("mail", "X-Postmark-Server-Token: {}", f.uuid())
    add("mail", "MAILER_DSN=smtp://alerts:{}@smtp.acme.example:587", url_pw(f))

    # --- LDAP -----------------------------------------------------------------------------------------------------
    add("ldap", '$ ldapmodify -x -H ldaps://ldap.acme.lan -D "cn=admin,dc=acme,dc=lan" -w {} -f add-group.ldif', human(f, NOUNS))
    add("ldap", '$ ldappasswd -x -D "uid=jdoe,ou=people,dc=acme,dc=lan" -w {} -s {}', human(f, NOUNS), human(f, NOUNS))
    add("ldap", 'rootdn "cn=Manager,dc=acme,dc=lan"\nrootpw {}', human(f, NOUNS))
    add("ldap", "ldap_default_bind_dn = cn=sssd,ou=svc,dc=acme,dc=lan\nldap_default_authtok = {}", human(f, NOUNS))
    add("ldap", 'err = l.Bind("cn=readonly,dc=acme,dc=lan", "{}")', human(f, NOUNS))

    # --- VPNs -----------------------------------------------------------------------------------------------------
    add(
        "vpn",
        "[Interface]\nPrivateKey = {}\nAddress = 10.8.0.2/24\n\n[Peer]\nPublicKey = {}\nPresharedKey = {}\nEndpoint = vpn.acme.example:51820",
        f.s(B64, 43) + "=",
        Plain(f.s(B64, 43) + "="),
        f.s(B64, 43) + "=",
    )
    add("vpn", 'vpn.acme.example %any : PSK "{}"', f.s(ALNUM, 24))
    add("vpn", "$ echo '{}' | sudo openconnect --user=jdoe --passwd-on-stdin vpn.acme.example", human(f, NOUNS))
    add("vpn", "$ sudo tailscale up --authkey={} --ssh", "tskey-auth-" + f.s(ALNUM, 11) + "CNTRL-" + f.s(ALNUM, 33))
    add("vpn", 'secrets {{\n  eap-jdoe {{\n    id = jdoe\n    secret = "{}"\n  }}\n}}', human(f, NOUNS))
    add("vpn", "$ openfortivpn vpn.acme.example:443 -u jdoe -p {}", human(f, NOUNS))

    # --- config files of many syntaxes --------------------------------------------------------------------------
    add("config", '[connections.snowflake]\naccount = "xy12345"\nuser = "APP"\npassword = "{}"', human(f, NOUNS))
    add("config", "[PRODDSN]\nDriver = ODBC Driver 18 for SQL Server\nServer = tcp:sql.acme.lan,1433\nUID = report\nPWD = {}", human(f, NOUNS))
    add("config", "[security]\nadmin_user = admin\nadmin_password = {}", human(f, NOUNS))
    add("config", "[inet_http_server]\nport = 127.0.0.1:9001\nusername = ops\npassword = {}", human(f, NOUNS))
    add("config", "sqlalchemy.url = postgresql+psycopg://migrator:{}@pg.acme.lan:5432/app", url_pw(f))
    add("config", 'provider "hcloud" {{\n  token = "{}"\n}}', f.s(ALNUM, 64))
    add("config", 'db_admin_password = "{}"\nregion            = "eu-central"', human(f, NOUNS))
    add("config", 'acl {{\n  enabled = true\n  tokens {{\n    agent = "{}"\n  }}\n}}', f.uuid())
    add("config", "spring.datasource.url=jdbc:postgresql://pg:5432/orders\nspring.datasource.username=orders\nspring.datasource.password={}", human(f, NOUNS))
    add("config", "flyway.url=jdbc:mysql://db:3306/shop\nflyway.user=migrate\nflyway.password={}", human(f, NOUNS))
    add("config", "spring.mail.username=noreply@acme.example\nspring.mail.password={}", f.s(string.ascii_lowercase, 16))
    add("config", '<user username="deployer" password="{}" roles="manager-script"/>', human(f, NOUNS))
    add("config", '<add name="Shop" connectionString="Data Source=sql01;Initial Catalog=Shop;Uid=web;Pwd={};" />', human(f, NOUNS))
    add(
        "config",
        '<Resource name="jdbc/app" auth="Container" type="javax.sql.DataSource" username="app" password="{}" url="jdbc:mysql://db:3306/app"/>',
        human(f, NOUNS),
    )
    add("config", '"ConnectionStrings": {{ "Redis": "cache.acme.lan:6380,password={},ssl=True,abortConnect=False" }}', f.s(B64, 43) + "=")
    add("config", '"private_key": "-----BEGIN PRIVATE KEY-----\\n{}\\n{}\\n-----END PRIVATE KEY-----\\n",', "MIIEv" + f.s(B64, 59), f.s(B64, 64))
    add("config", "spring:\n  rabbitmq:\n    host: mq.lan\n    username: orders\n    password: {}", human(f, NOUNS))
    add("config", "postgresql:\n  auth:\n    postgresPassword: {}\n    replicationPassword: {}", human(f, NOUNS), f.s(ALNUM, 20))
    add("config", "mqtt_password: {}\nwifi_password: {}", human(f, NOUNS), human(f, NOUNS))
    add("config", "$ cat config/master.key\n{}", f.s(HEX, 32))
    add("config", "UPSTASH_REDIS_REST_URL=https://eu1-sharp-owl-31337.upstash.io\nUPSTASH_REDIS_REST_TOKEN={}", "AX" + f.s(URLSAFE, 58))
    add("config", "SUPABASE_SERVICE_ROLE_KEY={}", jwt(f, {"iss": "supabase", "role": "service_role"}))
    add("config", "export ARTIFACTORY_PASSWORD={}  # added by setup script", human(f, NOUNS))
    add("config", "set -gx WANDB_API_KEY {}", f.s(HEX, 40))
    add("config", '[Service]\nEnvironment="DATABASE_URL=postgres://svc:{}@127.0.0.1/app"\nExecStart=/usr/local/bin/api', url_pw(f))
    add("config", "[Service]\nUser=mailer\nEnvironment=SMTP_PASSWORD={}", human(f, NOUNS))
    add("config", "FROM python:3.12-slim\nRUN pip install --index-url https://build:{}@pypi.acme.lan/simple -r req.txt", url_pw(f))
    add("config", 'RUN echo "machine git.acme.lan login ci password {}" > /root/.netrc', human(f, NOUNS))
    add("config", "ENV SONAR_TOKEN={}", "sqp_" + f.s(HEX, 40))
    add("config", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n  username: YXBw\n  password: {}", b64(human(f, NOUNS)))
    add("config", "kind: Secret\nstringData:\n  api-token: {}", f.s(ALNUM, 40))
    reg = json.dumps({"auths": {"registry.acme.lan": {"auth": b64("ci:" + human(f, NOUNS))}}})
    add("config", "type: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: {}", b64(reg))
    add("config", "'mysql' => [\n    'host' => 'db',\n    'username' => 'forge',\n    'password' => '{}',\n],", human(f, NOUNS))

    # --- code: SDK calls with credentials, keyword and positional -----------------------------------------------
    add("code", 'ftp = ftplib.FTP("ftp.acme.lan", "uploader", "{}")', human(f, NOUNS))
    add("code", 'conn = pymysql.connect("db.lan", "report", "{}", "sales")', human(f, NOUNS))
    add("code", 'r = requests.get(url, auth=("svc-metrics", "{}"), timeout=10)', human(f, NOUNS))
    add("code", 'imap.login("alerts@acme.example", "{}")', f.s(string.ascii_lowercase, 16))
    add("code", 'producer = KafkaProducer(bootstrap_servers=brokers, sasl_plain_username="svc", sasl_plain_password="{}")', f.s(B64, 64))
    add("code", 'ssh.connect("10.0.3.7", username="root", password="{}")', human(f, NOUNS))
    add("code", 'const pool = new Pool({{ host: "pg.lan", user: "api", password: "{}", database: "app" }});', human(f, NOUNS))
    add("code", 'const sequelize = new Sequelize("shop", "shop_rw", "{}", {{ host: "db", dialect: "mariadb" }});', human(f, NOUNS))
    add("code", 'const mailer = nodemailer.createTransport({{ host: "smtp.lan", auth: {{ user: "noreply", pass: "{}" }} }});', human(f, NOUNS))
    add("code", 'const resend = new Resend("{}");', "re_" + f.s(ALNUM, 8) + "_" + f.s(ALNUM, 24))
    add("code", 'auth := smtp.PlainAuth("", "alerts@acme.example", "{}", "smtp.acme.example")', human(f, NOUNS))
    add("code", 'db, err := sql.Open("mysql", "app:{}@tcp(10.0.0.12:3306)/shop?parseTime=true")', url_pw(f))
    add(
        "code",
        'mc, err := minio.New(endpoint, &minio.Options{{Creds: credentials.NewStaticV4("{}", "{}", ""), Secure: true}})',
        f.s(UPPER_ALNUM, 20),
        f.s(ALNUM + "/+", 40),
    )
    add("code", 'return new PasswordAuthentication("mailer", "{}".toCharArray());', human(f, NOUNS))
    add("code", 'factory.setUsername("orders");\nfactory.setPassword("{}");', human(f, NOUNS))
    add("code", 'jedis.auth("{}");', f.s(ALNUM, 32))
    add("code", 'var cred = new NetworkCredential("svc_backup", "{}", "CORP");', human(f, NOUNS))
    add("code", 'var credential = new ClientSecretCredential(tenantId, clientId, "{}");', f.s(ALNUM + "~._-", 40))
    add("code", 'var client = new MongoClient("mongodb+srv://app:{}@cluster0.ab1cd.mongodb.net/?retryWrites=true");', url_pw(f))
    add("code", 'Net::SMTP.start("smtp.acme.example", 587, "acme.example", "alerts", "{}", :login)', human(f, NOUNS))
    add("code", 'conn = PG.connect(host: "pg.lan", dbname: "app", user: "app", password: "{}")', human(f, NOUNS))
    add("code", 'set :ssh_options, {{ user: "deploy", password: "{}" }}', human(f, NOUNS))
    add("code", '$pdo = new PDO("mysql:host=db;dbname=shop", "shop", "{}");', human(f, NOUNS))
    add("code", '$link = mysqli_connect("localhost", "wp", "{}", "wordpress");', human(f, NOUNS))
    add("code", 'ldap_bind($ds, "cn=svc,dc=acme,dc=lan", "{}");', human(f, NOUNS))
    add("code", 'let res = client.get(url).basic_auth("metrics", Some("{}")).send().await?;', human(f, NOUNS))
    add("code", 'let opts = PgConnectOptions::new().host("pg.lan").username("app").password("{}");', human(f, NOUNS))
    add("code", 'let creds = Credentials::new("alerts@acme.example".to_owned(), "{}".to_owned());', human(f, NOUNS))
    add("code", 'let cred = URLCredential(user: "ios-ci", password: "{}", persistence: .forSession)', human(f, NOUNS))

    # --- vendor token formats (each vendor's documented prefix and shape) ---------------------------------------
    add("vendor", "FIGMA_TOKEN={}", "figd_" + f.s(URLSAFE, 40))
    add("vendor", "POSTHOG_PERSONAL_API_KEY={}", "phx_" + f.s(ALNUM, 43))
    add("vendor", 'curl -H "Authorization: Bearer {}" https://api.airtable.com/v0/meta/bases', "pat" + f.s(ALNUM, 14) + "." + f.s(HEX, 64))
    add("vendor", "HUBSPOT_ACCESS_TOKEN={}", "pat-na1-" + f.uuid())
    add("vendor", "asana personal access token: {}", "2/" + f.s(string.digits, 16) + "/" + f.s(string.digits, 16) + ":" + f.s(HEX, 32))
    add("vendor", "CLICKUP_API_TOKEN={}", "pk_" + f.s(string.digits, 8) + "_" + f.s(UPPER_ALNUM, 32))
    add("vendor", "CONTENTFUL_MANAGEMENT_TOKEN={}", "CFPAT-" + f.s(URLSAFE, 43))
    add("vendor", "TYPEFORM_TOKEN={}", "tfp_" + f.s(URLSAFE, 44) + "_" + f.s(URLSAFE, 14))
    add("vendor", "LD_SDK_KEY={}\nLD_API_KEY={}", "sdk-" + f.uuid(), "api-" + f.uuid())
    add("vendor", "TAVILY_API_KEY={}", "tvly-" + f.s(ALNUM, 32))
    add("vendor", "FIRECRAWL_API_KEY={}", "fc-" + f.s(HEX, 32))
    add("vendor", "E2B_API_KEY={}", "e2b_" + f.s(HEX, 40))
    add("vendor", "LANGFUSE_SECRET_KEY={}", "sk-lf-" + f.uuid())
    add("vendor", "LANGSMITH_API_KEY={}", "lsv2_pt_" + f.s(HEX, 32) + "_" + f.s(HEX, 10))
    add("vendor", "PINECONE_API_KEY={}", "pcsk_" + f.s(ALNUM, 6) + "_" + f.s(ALNUM, 64))
    add("vendor", "Authorization: SSWS {}", "00" + f.s(URLSAFE, 40))
    add("vendor", "$ ngrok config add-authtoken {}", "2" + f.s(ALNUM, 26) + "_" + f.s(ALNUM, 21))
    add("vendor", "HONEYCOMB_API_KEY={}", "hcaik_01" + f.s(LOWER_ALNUM, 58))
    add("vendor", "Authorization: Splunk {}", f.uuid())
    add("vendor", "Authorization: Token token={}", "u+" + f.s(URLSAFE, 18))
    add("vendor", "Authorization: ApiKey {}", b64(f.s(URLSAFE, 20) + ":" + f.s(URLSAFE, 22)))
    add("vendor", "CLOUDINARY_URL=cloudinary://{}:{}@acme", Plain(f.s(string.digits, 15)), f.s(URLSAFE, 27))
    add("vendor", "INFISICAL_TOKEN={}", "st." + f.uuid() + "." + f.s(HEX, 32) + "." + f.s(HEX, 32))
    add("vendor", "$ rancher login https://rancher.acme.lan --token {}", "token-" + f.s(string.ascii_lowercase + string.digits, 5) + ":" + f.s(LOWER_ALNUM, 54))
    add("vendor", "Authorization: GenieKey {}", f.uuid())
    add("vendor", "MJ_APIKEY_PRIVATE={}", f.s(HEX, 32))
    add("vendor", "MUX_TOKEN_SECRET={}", f.s(B64, 75))

    # --- URLs with credentials ----------------------------------------------------------------------------------
    add("url", "$ git remote set-url origin https://ci-bot:{}@gitea.acme.lan/platform/infra.git", f.s(HEX, 40))
    add("url", "REDIS_URL=rediss://default:{}@eu1-sharp-owl-31337.upstash.io:6379", f.s(ALNUM, 32))
    add("url", "Fetching ftp://backup:{}@ftp.acme.lan/nightly/db.tar.gz ...", url_pw(f))
    add(
        "url",
        "https://acme.blob.core.windows.net/exports/report.csv?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31T00:00:00Z&spr=https&sig={}",
        quote(f.s(B64, 43) + "=", safe=""),
    )
    add("url", "GET https://api.acme.example/v2/export?format=csv&api_key={} 200 OK", f.s(HEX, 32))
    add("url", "ws = new WebSocket('wss://stream.acme.example/ws?token={}')", f.s(URLSAFE, 40))
    add("url", "POST https://hooks.zapier.com/hooks/catch/{}/", f.s(string.digits, 7) + "/" + f.s(LOWER_ALNUM, 7))
    add("url", "$ lftp sftp://deploy:{}@files.acme.lan:22/uploads", url_pw(f))
    add("url", "CLICKHOUSE_URL=clickhouse://default:{}@ch.lan:9000/analytics", url_pw(f))

    # --- chat and prose -------------------------------------------------------------------------------------------
    add("chat", "fyi the wifi password for the office guest network is now {} (changed monday)", human(f, NOUNS))
    add("chat", "login for the staging admin panel: user `qa-lead`, pass `{}`, please don't share", human(f, NOUNS))
    add("chat", "I reset your account, your temporary password is {} and you'll be asked to change it", human(f, NOUNS))
    add("chat", "the passphrase for the deploy ssh key is {} btw, I keep forgetting it", "-".join(f.rng.sample(NOUNS, 4)))
    add("chat", "Recovery codes for the shared 2FA account: {} {} {}", *(f.s(string.digits, 4) + "-" + f.s(string.digits, 4) for _ in range(3)))
    add("chat", "can you try connecting with root / {} ? that's what the vendor set on the appliance", human(f, NOUNS))
    add("chat", "Here's the key Dana sent over Slack: {} , it's for the prod tenant", f.s(ALNUM, 40))
    add("chat", "Das Passwort für den Router ist {} – bitte nicht weitergeben.", human(f, NOUNS))
    add("chat", "user: my db password is {} and it still says access denied, what am I doing wrong?", human(f, NOUNS))

    # --- agent transcripts: JSON tool calls with a secret in the arguments --------------------------------------
    pw = human(f, NOUNS)
    dumps(
        "agent",
        {"type": "tool_use", "id": "toolu_01" + f.s(ALNUM, 22), "name": "Bash", "input": {"command": f"clickhouse-client --password {pw} -q 'SHOW TABLES'"}},
        pw,
    )
    tok = f.s(URLSAFE, 86) + "=="
    args = json.dumps({"cmd": ["bash", "-lc", f"influx query --token {tok} 'buckets()'"]})
    dumps("agent", {"type": "function_call", "name": "shell", "arguments": args, "call_id": "call_" + f.s(ALNUM, 24)}, tok)
    pw = url_pw(f)
    dumps(
        "agent",
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "postgres_query", "arguments": {"connection_string": f"postgresql://admin:{pw}@db:5432/app", "sql": "select 1"}},
        },
        pw,
    )
    key = "napi_" + f.s(LOWER_ALNUM, 64)
    dumps("agent", {"type": "tool_result", "tool_use_id": "toolu_01" + f.s(ALNUM, 22), "content": f"NEON_API_KEY={key}\nNODE_ENV=production\n"}, key)
    key = f.s(HEX, 32)
    dumps("agent", {"functionCall": {"name": "http_get", "args": {"url": "https://api.acme.example/v1/orders", "headers": {"X-Api-Key": key}}}}, key)
    pw = human(f, NOUNS)
    dumps("agent", {"type": "tool_use", "name": "Write", "input": {"file_path": "/srv/app/.env", "content": f"SMTP_HOST=smtp.lan\nSMTP_PASS={pw}\n"}}, pw)
    return out


def ordinary(f: Fake) -> list[dict]:
    out: list[dict] = []

    def add(family: str, template: str, *values: str) -> None:
        out.append({"family": family, "text": template.format(*values)})

    # --- hashes, digests, lockfile lines ------------------------------------------------------------------------
    add("hash", "$ git log --oneline -2\n{} fix: retry kafka producer on NOT_LEADER\n{} chore: bump clickhouse-driver", f.s(HEX, 7), f.s(HEX, 7))
    add("hash", "commit {}\nAuthor: Jane Roe <jane@acme.example>\nDate:   Tue Dec 1 09:12:44 2026 +0000", f.s(HEX, 40))
    add("hash", "$ sha256sum influxdb2-2.7.10_linux_amd64.tar.gz\n{}  influxdb2-2.7.10_linux_amd64.tar.gz", f.s(HEX, 64))
    add("hash", "$ b2sum release.tar.zst\n{}  release.tar.zst", f.s(HEX, 128))
    add("hash", "$ md5sum backup.sql.gz\n{}  backup.sql.gz", f.s(HEX, 32))
    add(
        "lockfile",
        'kafkajs@^2.2.4:\n  resolved "https://registry.yarnpkg.com/kafkajs/-/kafkajs-2.2.4.tgz#{}"\n  integrity sha512-{}==',
        f.s(HEX, 40),
        f.s(B64, 86),
    )
    add(
        "lockfile",
        '[[package]]\nname = "lettre"\nversion = "0.11.7"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\nchecksum = "{}"',
        f.s(HEX, 64),
    )
    add("lockfile", "github.com/nats-io/nats.go v1.37.0 h1:{}=", f.s(B64, 43))
    add("lockfile", "github.com/go-ldap/ldap/v3 v3.4.8/go.mod h1:{}=", f.s(B64, 43))
    add("lockfile", 'wheels = [{{ url = "https://files.pythonhosted.org/packages/psycopg-3.2.3-py3-none-any.whl", hash = "sha256:{}" }}]', f.s(HEX, 64))
    add("lockfile", '  "plug": {{:hex, :plug, "1.16.1", "{}", [:mix], [], "hexpm", "{}"}},', f.s(HEX, 64), f.s(HEX, 64))
    add("lockfile", "  /nodemailer@6.9.15:\n    resolution: {{integrity: sha512-{}==}}", f.s(B64, 86))
    add("lockfile", '"Npgsql": {{\n  "type": "Direct",\n  "resolved": "8.0.5",\n  "contentHash": "{}=="\n}}', f.s(B64, 86))
    add("lockfile", "psycopg[binary]==3.2.3 \\\n    --hash=sha256:{}", f.s(HEX, 64))
    add(
        "lockfile",
        "    net-ldap (0.19.0)\n    net-smtp (0.5.0)\n      net-protocol",
    )
    add("digest", "$ podman pull quay.io/acme/api:1.4.2\nWriting manifest to image destination\n{}", f.s(HEX, 64))
    add("digest", '$ skopeo inspect docker://registry.acme.lan/api:1.4 | jq .Digest\n"sha256:{}"', f.s(HEX, 64))
    add("digest", "version https://git-lfs.github.com/spec/v1\noid sha256:{}\nsize 48213", f.s(HEX, 64))
    add("digest", "/nix/store/{}-postgresql-16.4/bin/psql", f.s("0123456789abcdfghijklmnpqrsvwxyz", 32))

    # --- ids ----------------------------------------------------------------------------------------------------
    add(
        "id",
        "user=ocid1.user.oc1..aaaaaaaa{}\nfingerprint={}\nkey_file=~/.oci/oci_api_key.pem\nregion=eu-frankfurt-1",
        f.s(LOWER_ALNUM, 52),
        ":".join(f.s(HEX, 2) for _ in range(16)),
    )
    add("id", "az account set --subscription {}", f.uuid())
    add("id", '"correlationId": "{}", "status": "Succeeded"', f.uuid())
    add("id", "projects/acme-prod-{}/locations/europe-west1/keyRings/app/cryptoKeys/db", f.s(string.digits, 6))
    add("id", 'metadata:\n  uid: {}\n  resourceVersion: "{}"', f.uuid(), f.s(string.digits, 8))
    add("id", "api-7d9f8c6b5-{}   1/1   Running   0   3h12m", f.s(LOWER_ALNUM, 5))
    add("id", "topic=orders partition=3 offset=1048576 key={}", f.uuid())
    add("id", "$ nats account info\nAccount Information\n  Account ID: A{}", f.s(BASE32, 55))
    add("id", "peer: {}=\n  endpoint: 203.0.113.7:51820\n  allowed ips: 10.8.0.0/24\n  latest handshake: 1 minute ago", f.s(B64, 43))
    add("id", "100.101.{}.{}   build-runner   ci@   linux   active; direct 198.51.100.4:41641", f.s(string.digits, 2), f.s(string.digits, 2))
    add("id", "The key fingerprint is:\nSHA256:{} deploy@ci", f.s(B64, 43))
    add("id", "pub   ed25519 2026-01-04 [SC]\n      {}\nuid           [ultimate] Release Bot <release@acme.example>", f.s(HEX.upper(), 40))
    add("id", "SHA256 Fingerprint={}", ":".join(f.s(HEX.upper(), 2) for _ in range(32)))
    add("id", "job {} queued on worker-3", f.s(CROCKFORD, 26))
    add("id", "X-Request-Id: {}\ntraceparent: 00-{}-{}-01", f.uuid(), f.s(HEX, 32), f.s(HEX, 16))
    add("id", 'lineage = "{}"\nserial  = 42', f.uuid())
    add("id", "arn:aws:secretsmanager:eu-west-1:{}:secret:prod/db-{}", f.s(string.digits, 12), f.s(ALNUM, 6))
    add(
        "id",
        "link/ether 02:42:ac:11:00:02 brd ff:ff:ff:ff:ff:ff",
    )
    add("id", "Created Stripe-like idempotency key for retry: order-{}-attempt-2", f.s(string.digits, 6))
    add("id", "toolu_01{} finished in 2.3s", f.s(ALNUM, 22))

    # --- versions ---------------------------------------------------------------------------------------------------
    add("version", "ClickHouse client version 24.8.4.13 (official build).")
    add("version", "Influx CLI 2.7.5 (git: {}) build_date: 2026-05-20T14:03:11Z", f.s(HEX, 10))
    add("version", "$ tailscale version\n1.76.1\n  tailscale commit: {}", f.s(HEX, 40))
    add("version", "cargo 1.83.0 ({} 2026-10-15)", f.s(HEX, 9))

    # --- base64 of plain text -------------------------------------------------------------------------------------
    add("base64", "kind: ConfigMap\nbinaryData:\n  nginx.conf: {}", b64("worker_processes auto;\nevents {}\n"))
    add("base64", "$ echo {} | base64 -d\nbuild finished without warnings", b64("build finished without warnings"))
    add("base64", "data:\n  LOG_LEVEL: {}\n  REGION: {}", b64("info"), b64("eu-central-1"))
    add("base64", '"payload": "{}"', b64(json.dumps({"event": "deploy", "service": "api", "ok": True})))

    # --- the same tools, without a secret -------------------------------------------------------------------------
    add("tool", "$ clickhouse-client --host ch-prod-1 --user analyst --ask-password\nPassword for user (analyst):")
    add("tool", "$ influx bucket list --org acme --host https://influx.lan:8086")
    add("tool", "$ cockroach sql --certs-dir=certs --host=crdb-0.crdb:26257")
    add("tool", "$ etcdctl --endpoints=https://10.0.4.11:2379 --cacert ca.pem --cert client.pem --key client-key.pem endpoint health")
    add("tool", "db2 => connect to SAMPLE user db2inst1\nEnter current password for db2inst1:")
    add("tool", "$ cargo login\nplease paste the token found on https://crates.io/me below")
    add("tool", "$ dotnet nuget list source\nRegistered Sources:\n  1.  nuget.org [Enabled]")
    add("tool", "$ podman login --get-login quay.io\nacme+ci")
    add("tool", '$ skopeo inspect --creds "$REG_USER:$REG_PASS" docker://registry.acme.lan/api:1.4')
    add(
        "tool",
        "$ kcat -b broker:9092 -X security.protocol=SASL_SSL -X sasl.mechanisms=SCRAM-SHA-512 -X sasl.username=$KAFKA_USER -X sasl.password=$KAFKA_PASS -L",
    )
    add("tool", '$ ldapsearch -x -H ldaps://ldap.acme.lan -b "ou=people,dc=acme,dc=lan" "(uid=jdoe)" cn mail')
    add("tool", '$ ldapmodify -x -D "cn=admin,dc=acme,dc=lan" -W -f add-group.ldif\nEnter LDAP Password:')
    add("tool", "$ sudo openconnect --user=jdoe vpn.acme.example\nPOST https://vpn.acme.example/\nPassword:")
    add("tool", "$ sudo tailscale up --ssh --advertise-exit-node")
    add("tool", "$ swaks --to qa@acme.example --server smtp.lan:25")
    add("tool", "$ msmtp --serverinfo --host=smtp.office365.com --port=587 --tls=on")
    add("tool", "$ rsync -av --password-file=/etc/rsyncd.secret backup@nas.lan::nightly /srv/restore/")
    add("tool", "$ http -a ops POST https://api.acme.lan/v1/restart\nhttp: password for ops@api.acme.lan:")
    add("tool", "$ vercel deploy --prod\nInspect: https://vercel.com/acme/web/{}", f.s(ALNUM, 24))
    add("tool", "$ sonar-scanner -Dsonar.projectKey=acme-api -Dsonar.token=$SONAR_TOKEN")
    add("tool", 'Run echo "::add-mask::$DEPLOY_KEY"')
    add("tool", 'Run curl -H "Authorization: Bearer ***" https://api.acme.example/deploy')
    add("tool", "$ netlify status\nCurrent Netlify User\nEmail: dev@acme.example\nTeams: Acme")
    add("tool", "$ circleci setup\n? CircleCI API Token")
    add("tool", "$ nmap -p445 --script smb-enum-shares 10.0.8.0/24")
    add("tool", "$ crane auth login harbor.acme.lan -u 'robot$ci' --password-stdin < robot.txt")

    # --- the same config keys, without a secret -------------------------------------------------------------------
    add("config", "spring.datasource.username=orders\nspring.datasource.password=${{DB_PASSWORD}}")
    add("config", "flyway.user=migrate\nflyway.password=")
    add("config", "[security]\nadmin_user = admin\n;admin_password =\ndisable_initial_admin_creation = false")
    add("config", "[unix_http_server]\nfile=/var/run/supervisor.sock\nchmod=0700")
    add("config", "[Service]\nLoadCredential=db-password:/etc/credstore/db-password\nEnvironment=DB_PASSWORD_FILE=%d/db-password")
    add("config", "RUN --mount=type=secret,id=pip_conf,target=/etc/pip.conf pip install -r requirements.txt")
    add("config", "ENV PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1 NODE_ENV=production")
    add("config", "remoteRef:\n  key: prod/db\n  property: password")
    add("config", "auth:\n  existingSecret: pg-auth\n  secretKeys:\n    adminPasswordKey: postgres-password")
    add("config", '<role rolename="manager-script"/>\n<user username="deployer" roles="manager-script"/>')
    add("config", '<add name="Shop" connectionString="Data Source=sql01;Initial Catalog=Shop;Integrated Security=SSPI;" />')
    add("config", '"Logging": {{ "LogLevel": {{ "Default": "Information", "Microsoft.AspNetCore": "Warning" }} }}')
    add("config", "<server>\n  <id>acme-releases</id>\n  <username>${{env.NEXUS_USER}}</username>\n  <password>${{env.NEXUS_PASSWORD}}</password>\n</server>")
    add("config", "//npm.acme.dev/:_authToken=${{NPM_TOKEN}}")
    add("config", 'provider "hcloud" {{\n  token = var.hcloud_token\n}}')
    add("config", 'variable "db_admin_password" {{\n  type      = string\n  sensitive = true\n}}')
    add("config", "PostUp = wg set %i private-key /etc/wireguard/%i.key")
    add("config", "conn office\n  authby=psk\n  left=%defaultroute\n  right=vpn.acme.example\n  auto=start")
    add("config", "sasl.mechanism=SCRAM-SHA-512\nsecurity.protocol=SASL_SSL\nssl.endpoint.identification.algorithm=https")
    add("config", '{{"auths": {{"registry.acme.lan": {{}}}}, "credsStore": "desktop"}}')
    add("config", 'account work\nhost smtp.office365.com\nauth on\nuser j.doe@acme.example\npasswordeval "pass show mail"')

    # --- placeholders -----------------------------------------------------------------------------------------------
    add("placeholder", "TAVILY_API_KEY=<your-token>")
    add("placeholder", 'password: "****"')
    add("placeholder", "SNOWSQL_PWD=${{SNOWSQL_PWD}}")
    add("placeholder", '{{"username": "admin", "password": "REDACTED"}}')
    add("placeholder", "usage: clickhouse-client --user <name> --password <password>")
    add("placeholder", "CIRCLE_TOKEN: $CIRCLE_TOKEN")
    add("placeholder", "sqlalchemy.url = postgresql://%(DB_USER)s:%(DB_PASSWORD)s@%(DB_HOST)s/app")
    add("placeholder", "$env:DB_PASSWORD = Read-Host -AsSecureString")

    # --- code that reads a secret without holding one, and "password" as a word -----------------------------------
    add("code", 'password = os.environ["KAFKA_PASSWORD"]')
    add("code", "const pass = process.env.SMTP_PASS;")
    add("code", 'bindPw := os.Getenv("LDAP_BIND_PW")')
    add("code", 'factory.setPassword(System.getenv("RABBIT_PASS"));')
    add("code", 'var pwd = Environment.GetEnvironmentVariable("SVC_PWD");')
    add("code", 'conn = PG.connect(host: "pg.lan", user: "app", password: ENV.fetch("PG_PASSWORD"))')
    add("code", "$link = mysqli_connect('localhost', 'wp', getenv('DB_PASS'), 'wordpress');")
    add("code", 'let pw = std::env::var("SMTP_PASSWORD")?;')
    add("code", "def verify_password(plain: str, hashed: str) -> bool:")
    add("code", "if (!passwordsMatch(password, confirmPassword)) return res.status(400).end();")
    add("code", "func (u *User) SetPassword(raw string) error {{")
    add("code", "validates :password, length: {{ minimum: 12 }}, confirmation: true")
    add("code", "$hash = password_hash($password, PASSWORD_ARGON2ID);")
    add("code", "let hash = argon2.hash_password(password.as_bytes(), &salt)?.to_string();")
    add("prose", "Rotate the Kafka password every 90 days; the token for the CI bot lives in Vault.")
    add("prose", "what's the password for the staging db? -- it's in 1Password under Staging/Postgres")
    add("prose", "Forgot-password emails are landing in spam again since the SPF change.")
    add("prose", "The LDAP bind account has a password that expires; add an alert two weeks before.")

    # --- agent transcripts without a secret -------------------------------------------------------------------------
    out.append(
        {
            "family": "agent",
            "text": json.dumps(
                {
                    "type": "tool_use",
                    "id": "toolu_01" + f.s(ALNUM, 22),
                    "name": "Bash",
                    "input": {"command": "kubectl get secret db -o jsonpath='{.data.password}' | wc -c"},
                }
            ),
        }
    )
    out.append(
        {
            "family": "agent",
            "text": json.dumps({"type": "tool_result", "content": "PASS tests/auth.test.ts (3.2 s)\n  password reset\n    ✓ rejects an expired token (12 ms)"}),
        }
    )
    out.append(
        {
            "family": "agent",
            "text": json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 8,
                    "method": "tools/call",
                    "params": {
                        "name": "postgres_query",
                        "arguments": {"connection_string": "postgresql://app@db:5432/app", "sql": "select count(*) from users"},
                    },
                }
            ),
        }
    )
    return out


def main() -> None:
    write_corpus(__doc__, "redaction_unseen3", SEED, secrets, ordinary)


if __name__ == "__main__":
    main()

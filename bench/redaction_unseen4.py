"""Writes the fourth unseen redaction corpus: vendor tokens of many services (AI APIs, cloud, payment, messaging,
CI/CD, package registries, observability, SaaS, secret managers) in the shapes a developer pastes into an AI coding
session (shell exports, .env, YAML/TOML/JSON/INI/HCL/XML configs, compose files, k8s Secrets, connection strings,
HTTP headers, curl, code in several languages, logs and stack traces, chat prose, lines split, JSON inside strings,
Markdown tables), key blocks, passwords a person picks, and ordinary values that look like secrets but are not
(hashes, digests, ids, versions, public keys, placeholders, variable references). It was written by someone who had
not read memtool/redact.py nor the rows of the other corpora, committed before any rule was changed against it, and
is scored whole, never tuned on. Every value is made here from a fixed seed with the charset and length of each
format's documented shape; none is real.

    python -m bench.redaction_unseen4 [--out tests/data/redaction_unseen4] [--seed 7349]

Same files and fields as bench/redaction_corpus.py (secrets.jsonl, ordinary.jsonl); measured by
`python bench/redaction.py --corpus tests/data/redaction_unseen4` (add --through-memory for what
reaches the memory files). Do not tune rules on it: look at its misses only to report them.
"""

from __future__ import annotations

import base64
import json
import string
import textwrap
from typing import Callable
from urllib.parse import quote

from bench.redaction_corpus import ALNUM, B64, HEX, LOWER_ALNUM, UPPER_ALNUM, URLSAFE, Fake, human, write_corpus

SEED = 7349
NOUNS = "lighthouse juniper basalt otter saffron canyon hazel quartz falcon meadow tidepool ember".split()
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l".upper()
DIGITS = string.digits
LOWER = string.ascii_lowercase


class Plain(str):
    """A generated value of a secret row that is not itself a secret (an id, a user name, a host)."""


def b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def b64url(data: bytes | str) -> str:
    return base64.urlsafe_b64encode(data.encode() if isinstance(data, str) else data).decode().rstrip("=")


def jwt(f: Fake, claims: dict, alg: str = "HS256") -> str:
    head = b64url(json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":")))
    body = b64url(json.dumps(claims, separators=(",", ":")))
    return f"{head}.{body}.{f.s(URLSAFE, 86 if alg.startswith('RS') else 43)}"


def url_pw(f: Fake) -> str:
    """A password a person picks, with only signs that need no escaping in a URL."""
    return f.rng.choice(NOUNS).capitalize() + f.s(DIGITS, f.rng.randint(2, 4)) + f.rng.choice("-_.~")


def pem_body(f: Fake, nbytes: int) -> list[str]:
    return textwrap.wrap(b64(bytes(f.rng.randrange(256) for _ in range(nbytes))), 64)


def pem(f: Fake, label: str, nbytes: int) -> tuple[str, list[str]]:
    lines = pem_body(f, nbytes)
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----", lines


# Vendor tokens: (family, environment variable, vendor label, maker). Each is written in shapes drawn from SHAPES.
Maker = Callable[[Fake], str]
VENDORS: list[tuple[str, str, str, Maker]] = [
    ("ai", "ANTHROPIC_API_KEY", "Anthropic", lambda f: "sk-ant-api03-" + f.s(URLSAFE, 93) + "AA"),
    ("ai", "ANTHROPIC_ADMIN_KEY", "Anthropic", lambda f: "sk-ant-admin01-" + f.s(URLSAFE, 93) + "AA"),
    ("ai", "OPENAI_API_KEY", "OpenAI", lambda f: "sk-proj-" + f.s(URLSAFE, 74) + "T3BlbkFJ" + f.s(URLSAFE, 74)),
    ("ai", "OPENAI_SVC_KEY", "OpenAI", lambda f: "sk-svcacct-" + f.s(URLSAFE, 74) + "T3BlbkFJ" + f.s(URLSAFE, 74)),
    ("ai", "GROQ_API_KEY", "Groq", lambda f: "gsk_" + f.s(ALNUM, 52)),
    ("ai", "HF_TOKEN", "HuggingFace", lambda f: "hf_" + f.s(string.ascii_letters, 34)),
    ("ai", "REPLICATE_API_TOKEN", "Replicate", lambda f: "r8_" + f.s(ALNUM, 37)),
    ("ai", "COHERE_API_KEY", "Cohere", lambda f: f.s(ALNUM, 40)),
    ("ai", "MISTRAL_API_KEY", "Mistral", lambda f: f.s(ALNUM, 32)),
    ("ai", "XAI_API_KEY", "xAI", lambda f: "xai-" + f.s(ALNUM, 80)),
    ("ai", "PERPLEXITY_API_KEY", "Perplexity", lambda f: "pplx-" + f.s(ALNUM, 48)),
    ("ai", "GEMINI_API_KEY", "Gemini", lambda f: "AIza" + f.s(URLSAFE, 35)),
    ("ai", "PINECONE_API_KEY", "Pinecone", lambda f: "pcsk_" + f.s(ALNUM, 6) + "_" + f.s(ALNUM, 63)),
    ("ai", "LANGSMITH_API_KEY", "LangSmith", lambda f: "lsv2_pt_" + f.s(HEX, 32) + "_" + f.s(HEX, 10)),
    ("ai", "ELEVENLABS_API_KEY", "ElevenLabs", lambda f: "sk_" + f.s(HEX, 48)),
    ("ai", "DEEPGRAM_API_KEY", "Deepgram", lambda f: f.s(HEX, 40)),
    ("ai", "WANDB_API_KEY", "WandB", lambda f: f.s(HEX, 40)),
    ("cloud", "DIGITALOCEAN_TOKEN", "DigitalOcean", lambda f: "dop_v1_" + f.s(HEX, 64)),
    ("cloud", "LINODE_TOKEN", "Linode", lambda f: f.s(HEX, 64)),
    ("cloud", "CLOUDFLARE_API_TOKEN", "Cloudflare", lambda f: f.s(URLSAFE, 40)),
    ("cloud", "CF_API_KEY", "Cloudflare", lambda f: f.s(HEX, 37)),
    ("cloud", "FASTLY_API_TOKEN", "Fastly", lambda f: f.s(URLSAFE, 32)),
    ("cloud", "HEROKU_API_KEY", "Heroku", lambda f: "HRKU-AA" + f.s(URLSAFE, 58)),
    ("cloud", "NETLIFY_AUTH_TOKEN", "Netlify", lambda f: "nfp_" + f.s(ALNUM, 36)),
    ("cloud", "VERCEL_TOKEN", "Vercel", lambda f: f.s(ALNUM, 24)),
    ("cloud", "SUPABASE_ACCESS_TOKEN", "Supabase", lambda f: "sbp_" + f.s(HEX, 40)),
    ("cloud", "SUPABASE_SECRET_KEY", "Supabase", lambda f: "sb_secret_" + f.s(URLSAFE, 31)),
    ("cloud", "PLANETSCALE_SERVICE_TOKEN", "PlanetScale", lambda f: "pscale_tkn_" + f.s(URLSAFE, 43)),
    ("cloud", "NEON_API_KEY", "Neon", lambda f: "napi_" + f.s(LOWER_ALNUM, 64)),
    ("cloud", "FLY_API_TOKEN", "Fly", lambda f: "fm2_" + f.s(B64, 120)),
    ("cloud", "RENDER_API_KEY", "Render", lambda f: "rnd_" + f.s(ALNUM, 32)),
    ("cloud", "DATABRICKS_TOKEN", "Databricks", lambda f: "dapi" + f.s(HEX, 32)),
    ("cloud", "TS_AUTHKEY", "Tailscale", lambda f: "tskey-auth-k" + f.s(ALNUM, 16) + "-" + f.s(ALNUM, 33)),
    ("cloud", "NGROK_AUTHTOKEN", "ngrok", lambda f: "2" + f.s(ALNUM, 26) + "_" + f.s(ALNUM, 21)),
    ("payment", "STRIPE_SECRET_KEY", "Stripe", lambda f: "sk_live_51" + f.s(ALNUM, 97)),
    ("payment", "STRIPE_RESTRICTED_KEY", "Stripe", lambda f: "rk_live_51" + f.s(ALNUM, 97)),
    ("payment", "STRIPE_WEBHOOK_SECRET", "Stripe", lambda f: "whsec_" + f.s(ALNUM, 32)),
    ("payment", "SQUARE_ACCESS_TOKEN", "Square", lambda f: "EAAA" + f.s(URLSAFE, 60)),
    ("payment", "BRAINTREE_ACCESS_TOKEN", "Braintree", lambda f: "access_token$production$" + f.s(LOWER_ALNUM, 16) + "$" + f.s(HEX, 32)),
    ("payment", "SHOPIFY_ADMIN_TOKEN", "Shopify", lambda f: "shpat_" + f.s(HEX, 32)),
    ("payment", "SHOPIFY_API_SECRET", "Shopify", lambda f: "shpss_" + f.s(HEX, 32)),
    ("payment", "PADDLE_API_KEY", "Paddle", lambda f: "pdl_live_apikey_" + f.s(LOWER_ALNUM, 26) + "_" + f.s(ALNUM, 22) + "_" + f.s(ALNUM, 3)),
    ("messaging", "SENDGRID_API_KEY", "SendGrid", lambda f: "SG." + f.s(URLSAFE, 22) + "." + f.s(URLSAFE, 43)),
    ("messaging", "MAILGUN_API_KEY", "Mailgun", lambda f: f.s(HEX, 32) + "-" + f.s(HEX, 8) + "-" + f.s(HEX, 8)),
    ("messaging", "MAILCHIMP_API_KEY", "Mailchimp", lambda f: f.s(HEX, 32) + "-us" + str(f.rng.randint(1, 21))),
    ("messaging", "POSTMARK_SERVER_TOKEN", "Postmark", lambda f: f.uuid()),
    ("messaging", "RESEND_API_KEY", "Resend", lambda f: "re_" + f.s(ALNUM, 8) + "_" + f.s(ALNUM, 24)),
    ("messaging", "SLACK_BOT_TOKEN", "Slack", lambda f: f"xoxb-{f.s(DIGITS, 12)}-{f.s(DIGITS, 13)}-{f.s(ALNUM, 24)}"),
    ("messaging", "SLACK_USER_TOKEN", "Slack", lambda f: f"xoxp-{f.s(DIGITS, 12)}-{f.s(DIGITS, 12)}-{f.s(DIGITS, 13)}-{f.s(HEX, 32)}"),
    ("messaging", "SLACK_APP_TOKEN", "Slack", lambda f: f"xapp-1-A{f.s(UPPER_ALNUM, 10)}-{f.s(DIGITS, 13)}-{f.s(HEX, 64)}"),
    ("messaging", "DISCORD_BOT_TOKEN", "Discord", lambda f: f"{b64url(f.s(DIGITS, 18))}.{f.s(URLSAFE, 6)}.{f.s(URLSAFE, 38)}"),
    ("messaging", "TELEGRAM_BOT_TOKEN", "Telegram", lambda f: f"{f.rng.randint(10**8, 10**10)}:AA{f.s(URLSAFE, 33)}"),
    ("messaging", "TWILIO_AUTH_TOKEN", "Twilio", lambda f: f.s(HEX, 32)),
    ("messaging", "TWILIO_API_SECRET", "Twilio", lambda f: f.s(ALNUM, 32)),
    ("vcs_ci", "GITHUB_TOKEN", "GitHub", lambda f: "ghp_" + f.s(ALNUM, 36)),
    ("vcs_ci", "GH_OAUTH_TOKEN", "GitHub", lambda f: "gho_" + f.s(ALNUM, 36)),
    ("vcs_ci", "GITHUB_APP_INSTALL_TOKEN", "GitHub", lambda f: "ghs_" + f.s(ALNUM, 36)),
    ("vcs_ci", "GITHUB_PAT", "GitHub", lambda f: "github_pat_11" + f.s(UPPER_ALNUM, 20) + "_" + f.s(ALNUM, 59)),
    ("vcs_ci", "GITLAB_TOKEN", "GitLab", lambda f: "glpat-" + f.s(URLSAFE, 20)),
    ("vcs_ci", "CI_RUNNER_TOKEN", "GitLab", lambda f: "glrt-" + f.s(URLSAFE, 20)),
    ("vcs_ci", "GITLAB_TRIGGER_TOKEN", "GitLab", lambda f: "glptt-" + f.s(HEX, 40)),
    ("vcs_ci", "BITBUCKET_APP_PASSWORD", "Bitbucket", lambda f: "ATBB" + f.s(ALNUM, 28) + f.s(UPPER_ALNUM.replace("G", ""), 8)),
    ("vcs_ci", "CIRCLECI_TOKEN", "CircleCI", lambda f: "CCIPAT_" + f.s(ALNUM, 22) + "_" + f.s(HEX, 40)),
    ("vcs_ci", "BUILDKITE_API_TOKEN", "Buildkite", lambda f: "bkua_" + f.s(HEX, 40)),
    ("vcs_ci", "SOURCEGRAPH_TOKEN", "Sourcegraph", lambda f: "sgp_" + f.s(HEX, 16) + "_" + f.s(HEX, 40)),
    ("registry", "NPM_TOKEN", "npm", lambda f: "npm_" + f.s(ALNUM, 36)),
    ("registry", "PYPI_API_TOKEN", "PyPI", lambda f: "pypi-AgEIcHlwaS5vcmc" + f.s(URLSAFE, 140)),
    ("registry", "GEM_HOST_API_KEY", "RubyGems", lambda f: "rubygems_" + f.s(HEX, 48)),
    ("registry", "NUGET_API_KEY", "NuGet", lambda f: "oy2" + f.s(LOWER_ALNUM, 43)),
    ("registry", "DOCKERHUB_TOKEN", "DockerHub", lambda f: "dckr_pat_" + f.s(URLSAFE, 27)),
    ("registry", "CARGO_REGISTRY_TOKEN", "crates.io", lambda f: "cio" + f.s(ALNUM, 32)),
    ("observability", "DD_API_KEY", "Datadog", lambda f: f.s(HEX, 32)),
    ("observability", "DD_APP_KEY", "Datadog", lambda f: f.s(HEX, 40)),
    ("observability", "NEW_RELIC_API_KEY", "NewRelic", lambda f: "NRAK-" + f.s(UPPER_ALNUM, 27)),
    ("observability", "NEW_RELIC_LICENSE_KEY", "NewRelic", lambda f: f.s(HEX, 36) + "NRAL"),
    ("observability", "SENTRY_AUTH_TOKEN", "Sentry", lambda f: "sntryu_" + f.s(HEX, 64)),
    ("observability", "GRAFANA_SERVICE_ACCOUNT_TOKEN", "Grafana", lambda f: "glsa_" + f.s(ALNUM, 32) + "_" + f.s(HEX, 8)),
    ("observability", "GRAFANA_CLOUD_TOKEN", "GrafanaCloud", lambda f: "glc_" + b64(json.dumps({"o": f.s(DIGITS, 6), "n": "stack", "k": f.s(ALNUM, 24)}))),
    ("observability", "PAGERDUTY_TOKEN", "PagerDuty", lambda f: "u+" + f.s(URLSAFE, 18)),
    ("observability", "HONEYCOMB_API_KEY", "Honeycomb", lambda f: "hcaik_" + f.s(LOWER_ALNUM, 58)),
    ("observability", "LOGTAIL_SOURCE_TOKEN", "Logtail", lambda f: f.s(ALNUM, 24)),
    ("saas", "OKTA_API_TOKEN", "Okta", lambda f: "00" + f.s(URLSAFE, 40)),
    ("saas", "AUTH0_CLIENT_SECRET", "Auth0", lambda f: f.s(URLSAFE, 64)),
    ("saas", "ATLASSIAN_API_TOKEN", "Atlassian", lambda f: "ATATT3xFfGF0" + f.s(URLSAFE, 170) + "=" + f.s(HEX.upper(), 8)),
    ("saas", "LINEAR_API_KEY", "Linear", lambda f: "lin_api_" + f.s(ALNUM, 40)),
    ("saas", "NOTION_TOKEN", "Notion", lambda f: "ntn_" + f.s(ALNUM, 46)),
    ("saas", "NOTION_API_KEY", "Notion", lambda f: "secret_" + f.s(ALNUM, 43)),
    ("saas", "AIRTABLE_PAT", "Airtable", lambda f: "pat" + f.s(ALNUM, 14) + "." + f.s(HEX, 64)),
    ("saas", "ASANA_PAT", "Asana", lambda f: "2/" + f.s(DIGITS, 16) + "/" + f.s(DIGITS, 16) + ":" + f.s(HEX, 32)),
    ("saas", "FIGMA_TOKEN", "Figma", lambda f: "figd_" + f.s(URLSAFE, 40)),
    ("saas", "DROPBOX_ACCESS_TOKEN", "Dropbox", lambda f: "sl.u." + f.s(URLSAFE, 136)),
    ("saas", "POSTMAN_API_KEY", "Postman", lambda f: "PMAK-" + f.s(HEX, 24) + "-" + f.s(HEX, 34)),
    ("saas", "CONTENTFUL_MANAGEMENT_TOKEN", "Contentful", lambda f: "CFPAT-" + f.s(URLSAFE, 43)),
    ("saas", "HUBSPOT_ACCESS_TOKEN", "HubSpot", lambda f: "pat-na1-" + f.uuid()),
    ("saas", "ALGOLIA_ADMIN_KEY", "Algolia", lambda f: f.s(HEX, 32)),
    ("saas", "MAPBOX_SECRET_TOKEN", "Mapbox", lambda f: "sk.eyJ1Ijoi" + f.s(ALNUM, 50) + "." + f.s(URLSAFE, 22)),
    ("saas", "TYPEFORM_TOKEN", "Typeform", lambda f: "tfp_" + f.s(URLSAFE, 44) + "_" + f.s(URLSAFE, 14)),
    ("saas", "CLERK_SECRET_KEY", "Clerk", lambda f: "sk_live_" + f.s(ALNUM, 40)),
    ("saas", "TWITTER_BEARER_TOKEN", "Twitter", lambda f: "AAAAAAAAAAAAAAAAAAAAA" + f.s(ALNUM, 22) + "%3D" + f.s(ALNUM, 50)),
    ("secrets_mgr", "DOPPLER_TOKEN", "Doppler", lambda f: "dp.st.prd." + f.s(ALNUM, 43)),
    (
        "secrets_mgr",
        "OP_SERVICE_ACCOUNT_TOKEN",
        "1Password",
        lambda f: "ops_" + b64url(json.dumps({"signInAddress": "my.1password.com", "userAuth": f.s(ALNUM, 40)})),
    ),
    ("secrets_mgr", "VAULT_TOKEN", "Vault", lambda f: "hvs.CAESI" + f.s(URLSAFE, 86)),
    ("secrets_mgr", "VAULT_BATCH_TOKEN", "Vault", lambda f: "hvb.AAAAAQ" + f.s(URLSAFE, 120)),
    ("secrets_mgr", "TFE_TOKEN", "TerraformCloud", lambda f: f.s(ALNUM, 14) + ".atlasv1." + f.s(ALNUM, 67)),
    ("secrets_mgr", "PULUMI_ACCESS_TOKEN", "Pulumi", lambda f: "pul-" + f.s(HEX, 40)),
    ("secrets_mgr", "INFISICAL_TOKEN", "Infisical", lambda f: "st." + f.uuid() + "." + f.s(HEX, 32) + "." + f.s(HEX, 32)),
]


TWICE = {
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "HF_TOKEN",
    "GITHUB_TOKEN",
    "GITHUB_PAT",
    "GITLAB_TOKEN",
    "STRIPE_SECRET_KEY",
    "SLACK_BOT_TOKEN",
    "NPM_TOKEN",
    "SENDGRID_API_KEY",
    "DD_API_KEY",
}


def _cls(label: str) -> str:
    return "".join(c for c in label.title() if c.isalnum()) + "Client"


# A shape writes one token into a text: (var, label, value) -> text.
Shape = Callable[[str, str, str], str]
SHAPES: list[Shape] = [
    lambda var, label, v: f"export {var}={v}",
    lambda var, label, v: f"export {var}='{v}'",
    lambda var, label, v: f"# {label}\n{var}={v}\nLOG_LEVEL=info\nPORT=8080",
    lambda var, label, v: f'{var}="{v}"  # prod, rotate quarterly',
    lambda var, label, v: f"{label.lower()}:\n  enabled: true\n  {var.lower()}: {v}\n  timeout_seconds: 30",
    lambda var, label, v: f"services:\n  worker:\n    image: acme/worker:2.3.1\n    environment:\n      - {var}={v}",
    lambda var, label, v: json.dumps({"provider": label.lower(), "apiKey": v, "retries": 3}, indent=2),
    lambda var, label, v: f'client = {_cls(label)}(api_key="{v}")',
    lambda var, label, v: f"const client = new {_cls(label)}({{ apiKey: '{v}', timeout: 10_000 }});",
    lambda var, label, v: f'cfg := Config{{Token: "{v}", Region: "us-east-1"}}',
    lambda var, label, v: f'private static final String {var} = "{v}";',
    lambda var, label, v: f"ENV['{var}'] ||= '{v}'",
    lambda var, label, v: f'var client = new {_cls(label)}(apiKey: "{v}");',
    lambda var, label, v: f'let token = std::env::var("{var}").unwrap_or_else(|_| "{v}".to_string());',
    lambda var, label, v: f'curl -sS https://api.{label.lower()}.example/v1/me -H "Authorization: Bearer {v}"',
    lambda var, label, v: f"I set {var} to {v} but the {label} API still returns 401, any idea why?",
    lambda var, label, v: f"docker run --rm -e {var}={v} ghcr.io/acme/worker:1.4.2",
    lambda var, label, v: f'[{label.lower()}]\ntoken = "{v}"\nbase_url = "https://api.{label.lower()}.example"',
    lambda var, label, v: f"[{label.lower()}]\napi_key = {v}\nverify_ssl = true",
    lambda var, label, v: f'variable "{var.lower()}" {{\n  type    = string\n  default = "{v}"\n}}',
    lambda var, label, v: f'<appSettings>\n  <add key="{var}" value="{v}" />\n</appSettings>',
    lambda var, label, v: f"| name | value |\n|------|-------|\n| {var} | `{v}` |\n| REGION | eu-west-1 |",
    lambda var, label, v: f"2026-11-03T09:14:22.481Z DEBUG settings loaded {{'{var.lower()}': '{v}', 'retries': 3}}",
    lambda var, label, v: f"gh secret set {var} --body '{v}'",
    lambda var, label, v: f"here's the {label} key you asked for: {v}",
    lambda var, label, v: f"$ echo ${var}\n{v}",
    lambda var, label, v: f"heroku config:set {var}={v} -a acme-api",
    lambda var, label, v: f"{var}: {json.dumps(v)}",
]


def secrets(f: Fake) -> list[dict]:
    out: list[dict] = []

    def add(family: str, template: str, *values: str) -> None:
        text = template.format(*values)
        out.append({"family": family, "text": text, "secrets": [v for v in values if not isinstance(v, Plain)]})

    def raw(family: str, text: str, found: list[str]) -> None:
        out.append({"family": family, "text": text, "secrets": found})

    # Vendor tokens, each in one shape (two for the ones pasted most).
    for family, var, label, make in VENDORS:
        for shape in f.rng.sample(SHAPES, 2 if var in TWICE else 1):
            value = make(f)
            raw(family, shape(var, label, value), [value])

    # AWS.
    for _ in range(2):
        key_id, secret = "AKIA" + f.s(UPPER_ALNUM, 16), f.s(B64, 40)
        add("cloud", "[default]\naws_access_key_id = {}\naws_secret_access_key = {}\nregion = us-west-2", key_id, secret)
    key_id, secret, session = "ASIA" + f.s(UPPER_ALNUM, 16), f.s(B64, 40), "IQoJb3JpZ2luX2VjE" + f.s(B64, 300)
    add("cloud", "export AWS_ACCESS_KEY_ID={}\nexport AWS_SECRET_ACCESS_KEY={}\nexport AWS_SESSION_TOKEN={}", key_id, secret, session)
    key_id, secret = "AKIA" + f.s(UPPER_ALNUM, 16), f.s(B64, 40)
    add("cloud", 's3 = boto3.client("s3", aws_access_key_id="{}", aws_secret_access_key="{}")', key_id, secret)
    key_id, secret = "AKIA" + f.s(UPPER_ALNUM, 16), f.s(B64, 40)
    add(
        "cloud",
        '{{\n  "AccessKey": {{\n    "UserName": "ci-deployer",\n    "AccessKeyId": "{}",\n    "Status": "Active",\n    "SecretAccessKey": "{}"\n  }}\n}}',
        key_id,
        secret,
    )
    key_id, secret = "AKIA" + f.s(UPPER_ALNUM, 16), f.s(B64, 40)
    add("cloud", "aws configure set aws_access_key_id {} && aws configure set aws_secret_access_key {}", key_id, secret)

    # GCP service account JSON (the private key inside a JSON string, newlines escaped).
    for _ in range(2):
        block, lines = pem(f, "PRIVATE KEY", 1190)
        sa = {
            "type": "service_account",
            "project_id": "acme-prod-" + f.s(DIGITS, 6),
            "private_key_id": f.s(HEX, 40),
            "private_key": block + "\n",
            "client_email": "deployer@acme-prod.iam.gserviceaccount.com",
            "client_id": f.s(DIGITS, 21),
            "token_uri": "https://oauth2.googleapis.com/token",
        }
        raw("cloud", json.dumps(sa, indent=2), lines)
    # Azure.
    for _ in range(2):
        key = f.s(B64, 86) + "=="
        add("cloud", "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acmeassets;AccountKey={};EndpointSuffix=core.windows.net", key)
    sig = quote(b64(bytes(f.rng.randrange(256) for _ in range(32))), safe="")
    add("cloud", "https://acmeassets.blob.core.windows.net/uploads/report.pdf?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2026-12-31T00:00:00Z&spr=https&sig={}", sig)
    sig = quote(b64(bytes(f.rng.randrange(256) for _ in range(32))), safe="")
    add(
        "cloud",
        "az storage blob upload --container-name builds --file dist.zip --sas-token "
        '"sp=racwdl&st=2026-11-01T10:00:00Z&se=2026-11-30T18:00:00Z&spr=https&sv=2022-11-02&sr=c&sig={}"',
        sig,
    )
    client_secret = f.s(ALNUM, 3) + "8Q~" + f.s(URLSAFE + ".~", 31)
    add("cloud", "az login --service-principal -u {} -p {} --tenant {}", Plain(f.uuid()), client_secret, Plain(f.uuid()))
    key = f.s(HEX, 32)
    add("ai", 'AzureOpenAI(azure_endpoint="https://acme-east.openai.azure.com/", api_key="{}", api_version="2024-06-01")', key)
    key = f.s(B64, 86) + "=="
    add("cloud", "Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={}", key[:43] + "=")

    # Twilio pair, Cloudinary URL, Algolia app+key.
    sid, token = Plain("AC" + f.s(HEX, 32)), f.s(HEX, 32)
    add("messaging", "client = Client('{}', '{}')", sid, token)
    sid, token = Plain("AC" + f.s(HEX, 32)), f.s(HEX, 32)
    add("messaging", "curl -X POST https://api.twilio.com/2010-04-01/Accounts/{0}/Messages.json -u {0}:{1} -d To=+15555550100 -d Body=hi", sid, token)
    add("saas", "CLOUDINARY_URL=cloudinary://{}:{}@acme-media", Plain(f.s(DIGITS, 15)), f.s(URLSAFE, 27))

    # Webhook URLs.
    for _ in range(2):
        hook = f"T{f.s(UPPER_ALNUM, 10)}/B{f.s(UPPER_ALNUM, 10)}/{f.s(ALNUM, 24)}"
        add("messaging", "curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"deploy done\"}}' https://hooks.slack.com/services/{}", hook)
    add("messaging", "DISCORD_WEBHOOK=https://discord.com/api/webhooks/{}/{}", Plain(f.s(DIGITS, 19)), f.s(URLSAFE, 68))
    add("messaging", 'requests.post("https://discordapp.com/api/webhooks/{}/{}", json={{"content": msg}})', Plain(f.s(DIGITS, 18)), f.s(URLSAFE, 68))
    add(
        "messaging",
        "teams_webhook: https://acme.webhook.office.com/webhookb2/{}@{}/IncomingWebhook/{}/{}",
        Plain(f.uuid()),
        Plain(f.uuid()),
        f.s(HEX, 32),
        Plain(f.uuid()),
    )
    add("messaging", "curl -s https://api.telegram.org/bot{}/sendMessage -d chat_id=-100123 -d text=ok", f"{f.s(DIGITS, 10)}:AA{f.s(URLSAFE, 33)}")

    # Sentry DSN.
    for _ in range(2):
        add(
            "observability",
            'sentry_sdk.init(dsn="https://{}@o{}.ingest.sentry.io/{}", traces_sample_rate=0.2)',
            f.s(HEX, 32),
            Plain(f.s(DIGITS, 6)),
            Plain(f.s(DIGITS, 7)),
        )

    # Connection strings and URLs with credentials.
    for scheme, host in (
        ("postgres", "db.internal:5432/app"),
        ("postgresql", "10.0.3.7/orders"),
        ("mysql", "mysql.acme.lan:3306/shop"),
        ("redis", "cache:6379/0"),
    ):
        pw = url_pw(f)
        add("conn_string", "DATABASE_URL=" + scheme + "://app_user:{}@" + host, pw)
    pw = f.s(ALNUM, 16)
    add("conn_string", 'MONGO_URI="mongodb+srv://admin:{}@cluster0.x7k2p.mongodb.net/prod?retryWrites=true&w=majority"', pw)
    pw = "npg_" + f.s(ALNUM, 12)
    add("conn_string", "psql 'postgresql://neondb_owner:{}@ep-cool-meadow-a5x9k2.us-east-2.aws.neon.tech/neondb?sslmode=require'", pw)
    pw = "pscale_pw_" + f.s(URLSAFE, 43)
    add("conn_string", 'DATABASE_URL="mysql://{}:{}@aws.connect.psdb.cloud/shop?sslaccept=strict"', Plain(f.s(LOWER_ALNUM, 12)), pw)
    pw = f.s(ALNUM, 20)
    add("conn_string", "Server=tcp:acme-sql.database.windows.net,1433;Initial Catalog=orders;User ID=sqladmin;Password={};Encrypt=True;", pw)
    pw = human(f, NOUNS)
    add("conn_string", "spring.datasource.url=jdbc:postgresql://db:5432/app\nspring.datasource.username=app\nspring.datasource.password={}", pw)
    pw = url_pw(f)
    add("conn_string", "amqp://rabbit:{}@mq.internal:5672/%2F", pw)
    pw = url_pw(f)
    add("conn_string", "git clone https://deploy:{}@git.acme.dev/platform/infra.git", pw)
    tok = "ghp_" + f.s(ALNUM, 36)
    add("vcs_ci", "git remote set-url origin https://x-access-token:{}@github.com/acme/api.git", tok)
    tok = "glpat-" + f.s(URLSAFE, 20)
    add("vcs_ci", "pip install git+https://oauth2:{}@gitlab.com/acme/internal-lib.git@v1.2.0", tok)
    pw = url_pw(f)
    add("conn_string", "pip install --index-url https://ci:{}@pypi.acme.dev/simple/ acme-core", pw)
    pw = f.s(ALNUM, 32)
    add("conn_string", "redis-cli -h redis-12345.c1.us-east-1.ec2.cloud.redislabs.com -p 12345 -a {} ping", pw)
    pw = human(f, NOUNS)
    pw_q = quote(pw, safe="")
    add("conn_string", "postgresql://reporting:{}@analytics.acme.lan:5432/warehouse", pw_q)
    pw = url_pw(f)
    add("conn_string", "ftp://uploader:{}@files.acme.example/incoming/", pw)

    # HTTP headers.
    user, pw = "api", human(f, NOUNS)
    basic = b64(f"{user}:{pw}")
    add("header", "GET /v2/orders HTTP/1.1\nHost: api.acme.example\nAuthorization: Basic {}\nAccept: application/json", basic)
    add("header", "curl -u admin:{} https://jenkins.acme.lan/api/json", human(f, NOUNS))
    add("header", "X-API-Key: {}", f.s(ALNUM, 32))
    add("header", "curl -H 'x-api-key: {}' https://api.acme.example/v1/search?q=boots", f.s(HEX, 40))
    add("header", "Cookie: theme=dark; session={}; _ga=GA1.2.1234567890.1700000000", f.s(URLSAFE, 48))
    add("header", "Set-Cookie: sessionid={}; Path=/; HttpOnly; Secure; SameSite=Lax", f.s(LOWER_ALNUM, 32))
    add("header", "Authorization: SSWS {}", "00" + f.s(URLSAFE, 40))
    add("header", "fetch(url, {{ headers: {{ Authorization: `Token {}` }} }})", f.s(HEX, 40))
    add("header", "http GET https://api.acme.example/me 'Authorization:Bearer {}'", f.s(URLSAFE, 64))
    add("header", "-H 'DD-API-KEY: {}' -H 'DD-APPLICATION-KEY: {}'", f.s(HEX, 32), f.s(HEX, 40))
    add("header", "PRIVATE-TOKEN: {}", "glpat-" + f.s(URLSAFE, 20))

    # JWTs.
    add("jwt", "Authorization: Bearer {}", jwt(f, {"sub": f.s(DIGITS, 8), "role": "admin", "iat": 1762000000, "exp": 1762003600}))
    add("jwt", "SUPABASE_SERVICE_ROLE_KEY={}", jwt(f, {"iss": "supabase", "ref": f.s(LOWER, 20), "role": "service_role", "iat": 1730000000, "exp": 2045000000}))
    add("jwt", "localStorage.setItem('access_token', '{}');", jwt(f, {"sub": "user_" + f.s(ALNUM, 10), "scope": "read write"}, "RS256"))
    add("jwt", "the refresh token from the login response was {} (expires in 30 days)", jwt(f, {"typ": "refresh", "sid": f.uuid()}))
    add("jwt", "OP_CONNECT_TOKEN={}", jwt(f, {"aud": ["acme-vault"], "sub": "connect", "iss": "com.1password.connect"}, "ES256"))

    # Key blocks.
    for label, n in (("RSA PRIVATE KEY", 1190), ("EC PRIVATE KEY", 121), ("PRIVATE KEY", 1218), ("OPENSSH PRIVATE KEY", 400), ("ENCRYPTED PRIVATE KEY", 1298)):
        block, lines = pem(f, label, n)
        raw("key_block", f"$ cat ~/.ssh/deploy_key\n{block}\n", lines)
    block, lines = pem(f, "RSA PRIVATE KEY", 1190)
    raw("key_block", "tls:\n  key: |\n" + textwrap.indent(block, "    ") + "\n  cert: /etc/ssl/acme.crt", lines)
    body = pem_body(f, 900)
    pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + "\n".join(body) + "\n=" + f.s(B64, 4) + "\n-----END PGP PRIVATE KEY BLOCK-----"
    raw("key_block", "gpg --export-secret-keys --armor ops@acme.example\n" + pgp, body)
    add("key_block", "# created: 2026-10-02T11:20:45Z\n# public key: age1{}\n{}", Plain(f.s(BECH32.lower(), 58)), "AGE-SECRET-KEY-1" + f.s(BECH32, 58))
    add("key_block", "SOPS_AGE_KEY={}", "AGE-SECRET-KEY-1" + f.s(BECH32, 58))
    block, lines = pem(f, "PRIVATE KEY", 121)
    raw("key_block", "const privateKey = `" + block + "`;", lines)
    block, lines = pem(f, "RSA PRIVATE KEY", 600)
    raw("key_block", "JWT_PRIVATE_KEY=" + json.dumps(block), lines)
    wg = b64(bytes(f.rng.randrange(256) for _ in range(32)))
    add("key_block", "[Interface]\nAddress = 10.8.0.2/24\nPrivateKey = {}\nDNS = 1.1.1.1", wg)

    # k8s Secrets and CI files.
    pw, tok = human(f, NOUNS), "sk_live_51" + f.s(ALNUM, 97)
    raw(
        "k8s",
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-secrets\ntype: Opaque\ndata:\n  DB_PASSWORD: {b64(pw)}\n  STRIPE_KEY: {b64(tok)}\n",
        [b64(pw), b64(tok)],
    )
    pw = human(f, NOUNS)
    add("k8s", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  POSTGRES_PASSWORD: {}\n", pw)
    auth = b64("ci-bot:" + "dckr_pat_" + f.s(URLSAFE, 27))
    dockercfg = b64(json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": auth}}}))
    raw("k8s", f"apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: {dockercfg}\n", [dockercfg])
    auth = b64("_json_key:" + f.s(ALNUM, 30))
    add("registry", '{{\n  "auths": {{\n    "ghcr.io": {{ "auth": "{}" }}\n  }}\n}}', auth)
    add("k8s", "kubectl create secret generic api-keys --from-literal=OPENAI_API_KEY={} -n prod", "sk-proj-" + f.s(URLSAFE, 74) + "T3BlbkFJ" + f.s(URLSAFE, 74))
    add("k8s", "helm upgrade --install api ./chart --set db.password={} --set image.tag=1.8.3", human(f, NOUNS))
    add("registry", "//registry.npmjs.org/:_authToken={}", "npm_" + f.s(ALNUM, 36))
    add("registry", "[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = {}", "pypi-AgEIcHlwaS5vcmc" + f.s(URLSAFE, 140))
    add("registry", "echo {} | docker login ghcr.io -u acme-bot --password-stdin", "ghp_" + f.s(ALNUM, 36))
    add("registry", "docker login -u acme -p {} registry.gitlab.com", "glpat-" + f.s(URLSAFE, 20))
    add(
        "registry",
        '<packageSourceCredentials>\n  <acme>\n    <add key="Username" value="ci" />\n'
        '    <add key="ClearTextPassword" value="{}" />\n  </acme>\n</packageSourceCredentials>',
        f.s(LOWER_ALNUM, 52),
    )
    add("registry", 'credentials "app.terraform.io" {{\n  token = "{}"\n}}', f.s(ALNUM, 14) + ".atlasv1." + f.s(ALNUM, 67))
    add("registry", "machine api.heroku.com\n  login ops@acme.example\n  password {}", "HRKU-AA" + f.s(URLSAFE, 58))

    # Passwords a person picks.
    add("password", "mysql -u root -p{} -h 127.0.0.1 shop", human(f, NOUNS))
    add("password", "PGPASSWORD={} pg_dump -h db.internal -U postgres app > app.sql", human(f, NOUNS))
    add("password", "the admin password for the staging dashboard is {} (don't share it)", human(f, NOUNS))
    add("password", "login: ops@acme.example / {}", human(f, NOUNS))
    add("password", "environment:\n  POSTGRES_USER: app\n  POSTGRES_PASSWORD: {}\n  POSTGRES_DB: app", human(f, NOUNS))
    add("password", 'ADMIN_PASSWORD = "{}"', human(f, NOUNS))
    add("password", "conn = psycopg2.connect(host='db', user='app', password='{}', dbname='app')", human(f, NOUNS))
    add("password", 'db, err := sql.Open("mysql", "app:{}@tcp(db:3306)/shop")', url_pw(f))
    add("password", "keytool -genkeypair -alias acme -keystore acme.jks -storepass {} -keypass {}", human(f, NOUNS), human(f, NOUNS))
    add("password", "openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{}", human(f, NOUNS))
    add("password", "sshpass -p '{}' ssh deploy@10.0.4.12", human(f, NOUNS))
    add("password", "wifi: AcmeGuest, password {}", f.words(3, "-"))
    add("password", 'my passphrase for the vault is "{}"', f.words(4, " "))
    add("password", "  <password>{}</password>", human(f, NOUNS))
    add("password", "smtp:\n  host: smtp.acme.example\n  user: alerts\n  pass: {}", human(f, NOUNS))
    add("password", "REDIS_PASSWORD={}", f.s(ALNUM, 24))
    add("password", "rabbitmqctl add_user worker {}", human(f, NOUNS))
    add("password", "ALTER USER app WITH PASSWORD '{}';", human(f, NOUNS))
    add("password", "CREATE USER 'report'@'%' IDENTIFIED BY '{}';", human(f, NOUNS))
    add("password", "htpasswd -b -c /etc/nginx/.htpasswd admin {}", human(f, NOUNS))
    add("password", "Password for 'https://jdoe@bitbucket.org': {}", human(f, NOUNS))
    add("password", "ansible-vault decrypt secrets.yml --vault-password-file <(echo '{}')", human(f, NOUNS))
    add("password", "$ mongosh 'mongodb://localhost:27017' -u root -p '{}'", human(f, NOUNS))
    add("password", "new Pool({{ user: 'app', host: 'db', database: 'app', password: '{}', port: 5432 }})", human(f, NOUNS))
    add("password", "keyring set smtp alerts@acme.example  # entered: {}", human(f, NOUNS))

    # Logs and stack traces that echo a secret.
    tok = "sk-ant-api03-" + f.s(URLSAFE, 93) + "AA"
    add(
        "log",
        'Traceback (most recent call last):\n  File "app/llm.py", line 42, in ask\n    resp = client.messages.create(**kw)\n'
        "anthropic.AuthenticationError: Error code: 401 - invalid x-api-key: {}",
        tok,
    )
    pw = human(f, NOUNS)
    add("log", "psycopg2.OperationalError: connection to server failed: FATAL: password authentication failed (dsn='host=db user=app password={}')", pw)
    add("log", "[2026-11-04 10:02:11] INFO  POST /oauth/token client_id=web client_secret={} grant_type=client_credentials 200 41ms", f.s(URLSAFE, 40))
    add("log", 'level=debug msg="outgoing request" url="https://api.acme.example/v1/charge?api_key={}&amount=1200"', f.s(ALNUM, 32))
    add("log", "npm ERR! 403 Forbidden - PUT https://registry.npmjs.org/@acme%2fui - token {} lacks publish rights", "npm_" + f.s(ALNUM, 36))
    add("log", 'Exception in thread "main" java.lang.IllegalStateException: bad config {{user=svc, password={}, url=jdbc:mysql://db/app}}', human(f, NOUNS))
    add("log", "WARN  webhook signature mismatch: expected secret {} got header t=1762000000,v1={}", "whsec_" + f.s(ALNUM, 32), Plain(f.s(HEX, 64)))

    # Secrets split over lines and escaped or nested.
    tok = "github_pat_11" + f.s(UPPER_ALNUM, 20) + "_" + f.s(ALNUM, 59)
    raw("split", f'GITHUB_PAT="{tok[:40]}"\\\n"{tok[40:]}"', [tok[:40], tok[40:]])
    tok = "sk-proj-" + f.s(URLSAFE, 74) + "T3BlbkFJ" + f.s(URLSAFE, 74)
    raw("split", f"key = (\n    '{tok[:80]}'\n    '{tok[80:]}'\n)", [tok[:80], tok[80:]])
    pw = human(f, NOUNS)
    inner = json.dumps({"db": {"user": "app", "password": pw}})
    raw("escaped", json.dumps({"type": "tool_result", "content": inner}), [pw])
    tok = "xoxb-" + f.s(DIGITS, 12) + "-" + f.s(DIGITS, 13) + "-" + f.s(ALNUM, 24)
    raw("escaped", json.dumps({"role": "user", "content": f"my .env has SLACK_BOT_TOKEN={tok}\nand it fails"}), [tok])
    tok = "sk_live_51" + f.s(ALNUM, 97)
    raw("escaped", json.dumps({"command": f"stripe listen --api-key {tok} --forward-to localhost:3000/webhooks"}), [tok])
    pw = human(f, NOUNS)
    raw("escaped", 'logger.info("config: {\\"user\\": \\"svc\\", \\"password\\": \\"' + pw + '\\"}")', [pw])
    tok = f.s(HEX, 40)
    raw("escaped", "TOKEN=" + quote(json.dumps({"api_key": tok}), safe=""), [tok])
    tok = "AKIA" + f.s(UPPER_ALNUM, 16)
    sec = f.s(B64, 40)
    raw("escaped", json.dumps({"Parameters": {"Env": f"AWS_ACCESS_KEY_ID={tok};AWS_SECRET_ACCESS_KEY={sec}"}}), [tok, sec])
    tok = b64("admin:" + human(f, NOUNS))
    raw("escaped", f"echo {tok} | base64 -d  # prints admin and the password", [tok])

    # Chat prose.
    add("prose", "use this key: {}", "sk-ant-api03-" + f.s(URLSAFE, 93) + "AA")
    add("prose", "can you check why this fails? my token is {} and the repo is acme/api", "ghp_" + f.s(ALNUM, 36))
    add("prose", "The Stripe test went fine; the live key is {} — please wire it into the checkout service", "sk_live_51" + f.s(ALNUM, 97))
    add("prose", "password is {} for the grafana admin user", human(f, NOUNS))
    add("prose", "ok I rotated it, new one: {}", "glpat-" + f.s(URLSAFE, 20))
    add("prose", "Sure, the Datadog API key is {} and the app key {}.", f.s(HEX, 32), f.s(HEX, 40))
    add("prose", "if it helps, the bot's token: {}", f"{f.s(DIGITS, 10)}:AA{f.s(URLSAFE, 33)}")
    add("prose", "Try with the secret `{}` in the Authorization header.", f.s(URLSAFE, 48))

    # Markdown tables.
    a, b = "NRAK-" + f.s(UPPER_ALNUM, 27), human(f, NOUNS)
    add("table", "| service | user | secret |\n|---|---|---|\n| New Relic | - | {} |\n| staging db | app | {} |", a, b)
    a, b = "AKIA" + f.s(UPPER_ALNUM, 16), f.s(B64, 40)
    add("table", "| Key | Value |\n| --- | --- |\n| Access key ID | {} |\n| Secret access key | {} |", a, b)

    for row in out:
        for value in row["secrets"]:
            assert value and value in row["text"], (row["family"], value)
    return out


def ordinary(f: Fake) -> list[dict]:
    out: list[dict] = []

    def add(family: str, text: str) -> None:
        out.append({"family": family, "text": text})

    def digest(n: int = 64) -> str:
        return f.s(HEX, n)

    # Git.
    for _ in range(3):
        add("git", f"commit {digest(40)}\nAuthor: Dana Kim <dana@acme.example>\nDate:   Tue Nov 4 10:11:12 2026 +0000\n\n    fix retry loop")
    for _ in range(3):
        add("git", f"{digest(7)} (HEAD -> main, origin/main) merge branch 'billing'\n{digest(7)} billing: round cents half-even")
    add("git", f"git cherry-pick {digest(40)}")
    add("git", f"index {digest(7)}..{digest(7)} 100644\n--- a/app/config.py\n+++ b/app/config.py")
    add("git", f"Merge: {digest(9)} {digest(9)}")
    add("git", f"  acme-lib: git+https://github.com/acme/acme-lib.git@{digest(40)}")
    add("git", f"Submodule path 'vendor/proto': checked out '{digest(40)}'")

    # Hashes and digests.
    for name in ("dist/acme-1.4.2.tar.gz", "acme-1.4.2-py3-none-any.whl", "install.sh"):
        add("hash", f"{digest()}  {name}")
    for _ in range(3):
        add("hash", f'"integrity": "sha512-{b64(bytes(f.rng.randrange(256) for _ in range(64)))}"')
    for pkg in ("requests==2.32.3", "urllib3==2.2.3", "idna==3.10"):
        add("hash", f"{pkg} \\\n    --hash=sha256:{digest()} \\\n    --hash=sha256:{digest()}")
    for _ in range(3):
        add("hash", f"FROM python:3.12-slim@sha256:{digest()}")
    add("hash", f"docker pull ghcr.io/acme/api@sha256:{digest()}")
    add("hash", f"Digest: sha256:{digest()}\nStatus: Downloaded newer image for nginx:1.27")
    add("hash", f"md5: {digest(32)}\nsha1: {digest(40)}")
    add("hash", f'  checksum = "{digest()}"')
    add("hash", f"go.sum: golang.org/x/net v0.30.0 h1:{b64(bytes(f.rng.randrange(256) for _ in range(32)))}")
    add("hash", f'  resolved "https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz#{digest(40)}"')
    add(
        "hash",
        f'source = {{ registry = "https://pypi.org/simple" }}\nsdist = {{ url = "https://files.pythonhosted.org/x.tar.gz", hash = "sha256:{digest()}" }}',
    )
    add("hash", f'name = "serde"\nversion = "1.0.210"\nsource = "registry+https://github.com/rust-lang/crates.io-index"\nchecksum = "{digest()}"')
    add("hash", f'ETag: "{digest(32)}"')
    add("hash", f'SRI: <script src="/app.js" integrity="sha384-{b64(bytes(f.rng.randrange(256) for _ in range(48)))}" crossorigin="anonymous"></script>')

    # Ids, versions, timestamps.
    for _ in range(4):
        add("id", f"request_id={f.uuid()} user_id={f.uuid()} status=200")
    add("id", f"traceparent: 00-{digest(32)}-{digest(16)}-01")
    add("id", f"X-Request-Id: {f.uuid()}")
    add("id", f"X-Amzn-Trace-Id: Root=1-{digest(8)}-{digest(24)}")
    add("id", f"build #{f.s(DIGITS, 5)} ({digest(12)}) finished in 4m12s")
    add("id", f"run id: {f.s(DIGITS, 11)}  job: {f.s(DIGITS, 11)}")
    add("id", f"ULID {f.s('0123456789ABCDEFGHJKMNPQRSTVWXYZ', 26)}")
    add("id", f"stripe customer cus_{f.s(ALNUM, 14)}, invoice in_{f.s(ALNUM, 24)}")
    add("id", f"Created charge ch_{f.s(ALNUM, 24)} for pi_{f.s(ALNUM, 24)}")
    add("id", f"price_{f.s(ALNUM, 24)}  prod_{f.s(ALNUM, 14)}")
    add("id", f"Slack channel C{f.s(UPPER_ALNUM, 10)}, user U{f.s(UPPER_ALNUM, 10)}, team T{f.s(UPPER_ALNUM, 10)}")
    add("id", f"instance i-{digest(17)} in vpc-{digest(17)}, subnet-{digest(17)}, sg-{digest(17)}")
    add("id", f"ami-{digest(17)}")
    add("id", f"arn:aws:iam::{f.s(DIGITS, 12)}:role/ci-deployer")
    add("id", f"arn:aws:secretsmanager:us-east-1:{f.s(DIGITS, 12)}:secret:prod/db-{f.s(ALNUM, 6)}")
    add("id", f"arn:aws:lambda:eu-west-1:{f.s(DIGITS, 12)}:function:resize-images:12")
    add("id", f"/subscriptions/{f.uuid()}/resourceGroups/acme-prod/providers/Microsoft.Storage/storageAccounts/acmeassets")
    add("id", f"projects/acme-prod-{f.s(DIGITS, 6)}/secrets/db-password/versions/3")
    add("id", f"AWS_ACCESS_KEY_ID is set; account {f.s(DIGITS, 12)}, region us-east-1")
    add("id", f"Twilio account SID: AC{digest(32)}")
    add("id", f"Google Analytics: G-{f.s(UPPER_ALNUM, 10)}, UA-{f.s(DIGITS, 8)}-1")
    add("id", f"client_id: {f.s(DIGITS, 12)}-{f.s(LOWER_ALNUM, 32)}.apps.googleusercontent.com")
    add("id", f"Sentry event {digest(32)} in project 4507{f.s(DIGITS, 12)}")
    add("id", f"docker ps\nCONTAINER ID   IMAGE          STATUS\n{digest(12)}   redis:7.4      Up 3 hours\n{digest(12)}   postgres:16    Up 3 hours")
    add("id", f'mongo ObjectId("{digest(24)}")')
    add("id", f"Kafka offset 18342 partition 3 key={f.uuid()}")
    add("id", f"HEROKU_APP_ID={f.uuid()}")
    for v in ("1.4.2", "2.0.0-rc.3+build.5114", "v0.30.0", "3.12.7", "20.18.0"):
        add("version", f"acme-cli {v} (commit {digest(8)}, built 2026-11-02T08:00:00Z)")
    add("version", "python_requires = >=3.10\nnumpy>=1.26,<3\npydantic==2.9.2")
    add("version", '"dependencies": {\n  "react": "^18.3.1",\n  "next": "15.0.3",\n  "zod": "~3.23.8"\n}')
    add("version", "Linux build-7 6.8.0-48-generic #48-Ubuntu SMP PREEMPT_DYNAMIC x86_64 GNU/Linux")
    add("time", "2026-11-04T10:02:11.123456+00:00 started; 1762250531 epoch; took 00:04:12.331")
    add("time", "Last-Modified: Tue, 04 Nov 2026 10:02:11 GMT\nCache-Control: max-age=31536000, immutable")
    add("time", "cron: '17 3 * * 1-5'  # weekdays 03:17 UTC")

    # Base64 of ordinary text.
    for text in ("hello world", '{"alg":"none"}', "user preferences: dark mode, compact list", "#!/bin/sh\necho ok\n"):
        add("base64", f"echo {b64(text)} | base64 -d")
    add("base64", f"data:image/png;base64,{b64(bytes(range(80)))}")
    add("base64", f"apiVersion: v1\nkind: ConfigMap\nbinaryData:\n  banner.txt: {b64('Welcome to the acme build farm')}")
    add("base64", f"Content-Transfer-Encoding: base64\n\n{b64('Hi team, the release notes are attached. Thanks!')}")

    # Public keys and certificates.
    for kind, n in (("ssh-ed25519", 51), ("ssh-rsa", 372)):
        add("pubkey", f"{kind} AAAA{f.s(B64, n)} dana@laptop")
    add("pubkey", f"ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB{f.s(B64, 87)}= ci@runner")
    block, _ = pem(f, "PUBLIC KEY", 294)
    add("pubkey", block)
    block, _ = pem(f, "CERTIFICATE", 900)
    add("pubkey", "ca.crt: |\n" + textwrap.indent(block, "  "))
    add("pubkey", f"age recipient: age1{f.s(BECH32.lower(), 58)}")
    add("pubkey", f"github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{f.s(B64, 43)}")
    add("pubkey", f"SHA256:{f.s(B64, 43)} dana@laptop (ED25519)")
    add("pubkey", f"pub   ed25519 2026-01-12 [SC]\n      {digest(40).upper()}\nuid           [ultimate] Ops <ops@acme.example>")
    add("pubkey", f"Stripe publishable key: pk_test_{f.s(ALNUM, 99)}")
    add("pubkey", f"NEXT_PUBLIC_SUPABASE_URL=https://{f.s(LOWER, 20)}.supabase.co")
    add("pubkey", f'<meta name="google-site-verification" content="{f.s(URLSAFE, 43)}" />')

    # Placeholders and references.
    for text in (
        "export OPENAI_API_KEY=YOUR_API_KEY",
        "ANTHROPIC_API_KEY=<your-key-here>",
        "export GITHUB_TOKEN=<token>",
        'api_key = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"',
        "STRIPE_SECRET_KEY=sk_live_...",
        "password: changeme  # replace before deploying",
        "DB_PASSWORD=${DB_PASSWORD}",
        "token: ${{ secrets.NPM_TOKEN }}",
        "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db\n        key: password",
        "export AWS_SECRET_ACCESS_KEY=$(vault kv get -field=secret aws/ci)",
        'password = var.db_password\ntoken    = data.vault_generic_secret.api.data["token"]',
        "Authorization: Bearer $TOKEN",
        'curl -H "Authorization: Bearer ${API_TOKEN}" https://api.acme.example/v1/me',
        'client = OpenAI(api_key=os.environ["OPENAI_API_KEY"])',
        "const stripe = new Stripe(process.env.STRIPE_SECRET_KEY!);",
        'token := os.Getenv("GITHUB_TOKEN")',
        "apiKey: process.env.NEXT_PUBLIC_API_URL ?? 'http://localhost:3000'",
        "SENDGRID_API_KEY=  # leave empty in development",
        "password: '********'",
        "REDIS_URL=redis://localhost:6379/0",
        "mysql -u root -p shop   # prompts for the password",
        "op read op://Private/Stripe/credential",
        "aws secretsmanager get-secret-value --secret-id prod/db --query SecretString",
        "The password must be at least 12 characters and include a number.",
        "Rotate the Slack bot token (xoxb-...) in the admin console after offboarding.",
        "Set SENTRY_DSN in your environment; see docs/observability.md.",
        "kubectl get secret api-secrets -o jsonpath='{.data.STRIPE_KEY}' | base64 -d",
        "# TOKEN=paste-your-token-here",
        "api_key: !vault |\n  $ANSIBLE_VAULT;1.1;AES256",
        "git config --global credential.helper osxkeychain",
        "ssh -i ~/.ssh/id_ed25519 deploy@10.0.4.12",
        "The token prefix ghp_ means a classic personal access token; github_pat_ a fine-grained one.",
    ):
        add("placeholder", text)

    # Paths, colours, code identifiers and minified code.
    add("path", "/home/dana/.cache/pip/wheels/3f/9a/7c1e2b6d4a8f0e5c3b2a1d9e8f7c6b5a4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f")
    add("path", "node_modules/.pnpm/@babel+core@7.26.0_supports-color@9.4.0/node_modules/@babel/core/lib/index.js")
    add("path", f"/var/lib/docker/overlay2/{digest()}/merged/usr/lib")
    add("path", f"~/.m2/repository/org/springframework/spring-core/6.1.14/spring-core-6.1.14.jar.sha1 -> {digest(40)}")
    add("path", f"s3://acme-build-artifacts/{digest(12)}/dist/app.tar.gz")
    add("path", f"https://github.com/acme/api/actions/runs/{f.s(DIGITS, 11)}/job/{f.s(DIGITS, 11)}")
    add("path", f"https://github.com/acme/api/blob/{digest(40)}/src/auth/token.ts#L42")
    add("css", ":root { --brand: #1f6feb; --bg: #0d1117; --fg: #c9d1d9; --accent: #ff7b72cc; }")
    add("css", ".btn-primary{background:#2da44e;border-color:rgba(27,31,36,.15)}")
    add("code", 'function a(e,t){return e.reduce((n,r)=>n+r[t],0)}var b="abcdefghijklmnopqrstuvwxyz0123456789";')
    add("code", f'__webpack_require__.p="/static/";chunk.{digest(20)}.js')
    add("code", f'<link rel="stylesheet" href="/assets/index-{f.s(URLSAFE, 8)}.css">')
    add("code", "def verify_password(plain: str, hashed: str) -> bool:\n    return bcrypt.checkpw(plain.encode(), hashed.encode())")
    add("code", "if token is None:\n    raise AuthError('missing token')")
    add("code", 'PASSWORD_MIN_LENGTH = 12\nTOKEN_TTL_SECONDS = 3600\nSECRET_HEADER = "X-Webhook-Signature"')
    add("code", 'const secretName = "prod/api-keys";\nconst tokenUrl = "https://auth.acme.example/oauth/token";')
    add("code", "password_hash = '$2b$12$' + salt  # stored, never the password itself")
    add("code", "let api_key_len = key.len(); assert!(api_key_len >= 32);")
    add("code", f'UUID_NAMESPACE = uuid.UUID("{f.uuid()}")')
    add("code", "grep -rn 'api_key' src/ | wc -l")
    add("code", "SELECT id, email, created_at FROM users WHERE password_reset_token IS NOT NULL;")
    add("lockfile", f"  /lodash@4.17.21:\n    resolution: {{integrity: sha512-{b64(bytes(f.rng.randrange(256) for _ in range(64)))}}}")
    add(
        "lockfile",
        f'[[package]]\nname = "certifi"\nversion = "2024.8.30"\nfiles = [\n    {{file = "certifi-2024.8.30.tar.gz", hash = "sha256:{digest()}"}},\n]',
    )
    add("lockfile", f"gem 'rails', '~> 7.2'\n    nokogiri (1.16.7-x86_64-linux)\nBUNDLED WITH\n   2.5.22  # {digest(8)}")

    # Prose and logs without secrets.
    add("prose", "I rotated the GitHub token and updated the secret in the repo settings; CI is green again.")
    add("prose", "The API key lives in 1Password under 'Stripe live'; ask Dana for access.")
    add("prose", "We store passwords as argon2id hashes with a per-user salt.")
    add("prose", "Tokens expire after one hour; the refresh token lasts 30 days.")
    add("prose", "Use `memory log` to record the decision; don't paste secrets into it.")
    add("log", f"2026-11-04T10:02:11Z INFO auth: token refreshed for user {f.uuid()} (expires_in=3600)")
    add("log", "2026-11-04T10:02:12Z WARN auth: invalid api key (redacted) from 203.0.113.7")
    add("log", f"GET /api/v1/orders?page=2&per_page=50 200 12ms trace={digest(32)}")
    add("log", f"[webpack] compiled successfully in 2314 ms, hash {digest(20)}")
    add("log", "pytest: 412 passed, 3 skipped in 18.21s")
    add("log", f"Uploaded acme-1.4.2.tar.gz  sha256={digest()}  size=48213")
    add("log", "Login succeeded\nWARNING! Your password will be stored unencrypted in /root/.docker/config.json.")
    add("config", "server:\n  port: 8080\n  read_timeout: 30s\nlog:\n  level: info\n  format: json")
    add("config", '[tool.ruff]\nline-length = 160\ntarget-version = "py310"')
    add("config", "[mysqld]\nbind-address = 0.0.0.0\nmax_connections = 200\ninnodb_buffer_pool_size = 1G")
    add("config", 'resource "aws_s3_bucket" "artifacts" {\n  bucket = "acme-build-artifacts"\n  tags   = { team = "platform" }\n}')
    add("config", json.dumps({"name": "acme-web", "version": "1.4.2", "private": True, "scripts": {"build": "next build"}}, indent=2))
    add("config", '<configuration>\n  <appSettings>\n    <add key="Environment" value="Production" />\n  </appSettings>\n</configuration>')
    add(
        "config",
        "auth:\n  provider: oidc\n  issuer: https://acme.okta.com/oauth2/default\n  client_id: 0oa1b2c3d4e5f6g7h8i9\n  scopes: [openid, profile, email]",
    )
    add("config", "| Variable | Description |\n|---|---|\n| `OPENAI_API_KEY` | your OpenAI key |\n| `PORT` | port to listen on |")
    return out


def main() -> None:
    write_corpus(__doc__, "redaction_unseen4", SEED, secrets, ordinary)


if __name__ == "__main__":
    main()

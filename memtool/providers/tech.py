"""Names of software systems a coding session may speak of: languages, frameworks, databases, cloud
services, build and CI tools, common libraries. A general lexicon (not drawn from any one session),
used by the offline compressor to tell a system ("Helm", "serde_json") from a person or a word.
"""

from __future__ import annotations

import re
import sys
from functools import lru_cache

# Canonical spellings, comma-separated; matched case-insensitively as whole words (a lower-case
# spelling matches only when written so or capitalised: "go" the language is matched only as "Go"
# or in a command).
SYSTEMS = """
Python, Java, JavaScript, TypeScript, Go, Golang, Rust, Ruby, PHP, Kotlin, Swift, Scala, Elixir, Erlang, Haskell, Clojure, C++, C#, Lua, Perl, Dart, Zig, Bash,
Node.js, Deno, Bun, npm, pnpm, Yarn, npx, Vite, Webpack, Rollup, esbuild, Babel, SWC, Turborepo, Nx, Lerna,
React, Vue, Angular, Svelte, SvelteKit, Next.js, Nuxt, Remix, Astro, Gatsby, Solid, jQuery, Redux, Zustand, MobX, Tailwind, Bootstrap,
React Native, Expo, EAS, Flutter, Ionic, Capacitor, Electron, Tauri, Xcode, CocoaPods, Gradle, Maven, Android, iOS, APNs, FCM,
expo-notifications, expo-device,
Django, Flask, FastAPI, Starlette, Celery, SQLAlchemy, Alembic, Pydantic, pytest, unittest, tox, Poetry, pip, uv, mypy, ruff, Black, flake8, pylint,
Jupyter, NumPy, pandas, Polars, SciPy, scikit-learn, PyTorch, TensorFlow, Keras, Hugging Face, spaCy, NLTK,
Rails, Sinatra, RSpec, Bundler, Sidekiq, Laravel, Symfony, Composer, Spring, Spring Boot, Hibernate, JUnit, Gradle,
Express, Koa, Fastify, NestJS, Hapi, Passport.js, jsonwebtoken, express-rate-limit, Jest, Vitest, Mocha, Chai, Cypress, Playwright, Puppeteer, Storybook,
ESLint, typescript-eslint, eslint-plugin-react-hooks, eslint-plugin-react, Prettier, Stylelint, Husky, lint-staged,
Cargo, serde, serde_json, simd-json, Tokio, Actix, Axum, Rocket, Diesel, criterion, Clippy, rustfmt, rustc,
net/http, errgroup, gRPC, golangci-lint, goimports, gofmt, Gin, Echo, Chi, resty, protobuf, Protocol Buffers, Thrift, GraphQL, REST, OpenAPI, Swagger,
PostgreSQL, Postgres, MySQL, MariaDB, SQLite, Oracle, SQL Server, MongoDB, Redis, Memcached, Cassandra, DynamoDB, Elasticsearch, OpenSearch,
ClickHouse, Snowflake, BigQuery, Redshift, Databricks, Spark, Hadoop, Hive, Presto, Trino, dbt, Airflow, Dagster, Prefect, Luigi, Flink, Beam,
Kafka, RabbitMQ, NATS, Pulsar, SQS, SNS, Kinesis, Pub/Sub, ZeroMQ, Confluent Schema Registry, Avro, Parquet,
psql, pg_dump, pg_stat_statements, pg_stat_user_indexes, pgbouncer, EXPLAIN ANALYZE, Flyway, Liquibase, Prisma, TypeORM, Sequelize, Knex,
Docker, Docker Compose, Podman, Kubernetes, k8s, kubectl, Helm, Kustomize, Argo CD, ArgoCD, Flux, Istio, Linkerd, Envoy, KEDA, Karpenter,
Terraform, OpenTofu, Pulumi, Ansible, Chef, Puppet, CloudFormation, CDK, Packer, Vagrant, Atlantis, Terragrunt, hashicorp/aws, Vault, Consul, Nomad,
AWS, S3, EC2, ECS, EKS, Lambda, CloudFront, Route 53, IAM, KMS, RDS, Aurora, CloudWatch, Fargate, API Gateway,
GCP, Google Cloud, GKE, Cloud Run, Cloud SQL, Azure, AKS, Heroku, Vercel, Netlify, Fly.io, Render, Cloudflare, DigitalOcean,
GitHub, GitHub Actions, GitLab, GitLab CI, Bitbucket, Jenkins, CircleCI, Travis CI, Buildkite, TeamCity, Git, gh,
Prometheus, Grafana, Loki, Tempo, Jaeger, OpenTelemetry, Datadog, Sentry, New Relic, Honeycomb, Splunk, Kibana, Logstash, Fluentd, PagerDuty, Opsgenie,
Nginx, Apache, Caddy, HAProxy, Traefik, Varnish, Linux, Ubuntu, Debian, Alpine, macOS, Windows, WSL, systemd,
Stripe, Twilio, SendGrid, Auth0, Okta, Keycloak, OAuth, JWT, SAML, Firebase, Supabase, Appwrite,
Jira, Confluence, Slack, Linear, Notion, Figma, VS Code, Cursor, aider, Claude Code, Codex, Gemini CLI, Copilot, Vim, Emacs, IntelliJ,
OpenAI, Anthropic, Gemini, Ollama, vLLM, LangChain, LlamaIndex,
pendulum, Decimal, moment.js, date-fns, Luxon, Lodash, Axios, RxJS, Zod, Joi, Yup, Mongoose, Socket.IO, WebSocket,
curl, jq, make, CMake, Bazel, Homebrew, apt, nvm, pyenv, direnv,
exponent_server_sdk
"""
# Words that look like names of systems but are not: SQL, HTTP, shell builtins, agents' tool names.
NOT_SYSTEMS = frozenset(
    """select from where order limit desc asc group by join insert update delete create drop alter index table values into set and or not
    null true false get post put patch head options http https api url json yaml toml csv xml html css id ok todo fixme note pr ci cd
    bash edit read write grep glob ls cat sed awk echo cd rm mv cp mkdir find head tail sort uniq wc perl xargs sleep time env export
    multiedit todowrite webfetch websearch task notebookedit read_file write_file replace run_shell_command search_file_content
    list_directory shell shell_command apply_patch update_plan run_terminal_cmd edit_file codebase_search""".split()
)
# Programs run in a shell command that are systems in their own right: "program" (the system of
# that name) or "program:System".
_COMMANDS = dict(
    (w.partition(":")[0], w.partition(":")[2] or w)
    for w in """
pytest python:Python python3:Python pip poetry:Poetry uv mypy ruff npm npx pnpm yarn:Yarn node:Node.js vitest:Vitest jest:Jest eslint:ESLint
tsc:TypeScript playwright:Playwright go:Go golangci-lint goimports cargo rustc:Rust kubectl helm:Helm docker:Docker terraform:Terraform tofu:OpenTofu
aws:AWS gcloud:GCP az:Azure psql mysql:MySQL redis-cli:Redis gh:GitHub jq curl make bundle:Bundler rails:Rails rspec:RSpec mvn:Maven gradle:Gradle
expo:Expo eas:EAS airflow:Airflow bq:BigQuery dbt ansible:Ansible atlantis:Atlantis xcrun:Xcode pod:CocoaPods bazel:Bazel deno:Deno bun:Bun
rabbitmqctl:RabbitMQ kafka-topics:Kafka
""".split()
)


@lru_cache(maxsize=1)
def _lexicon() -> tuple[re.Pattern, dict[str, str]]:
    names = {n.strip().lower(): n.strip() for n in SYSTEMS.split(",")}
    alternatives = sorted(names, key=len, reverse=True)  # longest first: "GitHub Actions" wins over "GitHub"
    pattern = re.compile(r"(?<![\w@./-])(" + "|".join(re.escape(n) for n in alternatives) + r")(?![\w/]|[.-]\w)", re.I)
    return pattern, names


# English words that are also names of systems: counted only when written with the system's capitals.
AMBIGUOUS = frozenset(
    "render chef puppet echo gin make flux beam spark hive linear notion cursor black vault consul nomad rocket solid remix astro "
    "decimal express jest mocha chai koa nats bun deno vite swift rust go dart zig nx task ionic capacitor electron envoy flask "
    "rails sinatra composer spring tempo buildkite render polars prefect luigi dagster beam flink apt caddy".split()
)
_ALIASES = {"postgres": "PostgreSQL", "golang": "Go", "k8s": "Kubernetes", "argocd": "Argo CD"}


def known_system(name: str) -> bool:
    return name.lower() in _lexicon()[1] and name.lower() not in NOT_SYSTEMS


def mentions(text: str) -> list[str]:
    """Systems named in the text, canonical spelling, once per mention. A name of four characters or
    fewer counts only in the lexicon's own spelling; a shell command's programs count through
    command_systems (`go test`)."""
    pattern, names = _lexicon()
    out = []
    for m in pattern.finditer(text):
        raw = m.group(1)
        key = raw.lower()
        canon = names.get(key, raw)
        if key in NOT_SYSTEMS:
            continue
        if len(canon) <= 4 and raw != canon:  # "rest", "aws", "go" as words: only the system's own spelling
            continue
        if key in AMBIGUOUS and (canon.islower() or raw != canon or text[max(0, m.start() - 2) : m.start()].strip() in ("", ".", "!", "?", ":", "-", "*")):
            continue  # "render", "express" as words; "Go with ..." starting a sentence
        out.append(_ALIASES.get(key, canon))
    return out


def command_systems(tool_line: str) -> list[str]:
    """Systems a tool call ran: the programs of its shell command ("[tool Bash] pytest billing -q")."""
    m = re.match(r"^\[tool [^\]]+\]\s*(.*)$", tool_line.strip())
    command = m.group(1) if m else tool_line
    out = []
    for segment in re.split(r"&&|\|\||[|;]", command):
        words = segment.split()
        while words and ("=" in words[0] or words[0] in ("sudo", "env", "time", "exec", "cd")):
            words = words[2:] if words[0] == "cd" else words[1:]
        if words:
            program = words[0].rsplit("/", 1)[-1]
            if program in ("python", "python3") and len(words) > 1 and words[1].endswith("manage.py"):
                out.append("Django")
            elif program in _COMMANDS:
                out.append(_COMMANDS[program])
    return out


# The client that wrote a transcript, as its own export says: aider's log header, SpecStory's
# session comment ("<!-- cursor Session …", "<!-- vscode Session …") and its assistant label
# ("_**Assistant (copilot/claude-sonnet-4)**_", "_**Agent (claude-opus-4-7)**_").
_CLIENT_RES = (
    (re.compile(r"^#\s*aider chat started at\b|^>\s*Aider v\d", re.M), "aider"),
    (re.compile(r"<!--\s*cursor (?:IDE )?Session\b", re.I), "Cursor"),
    (re.compile(r"<!--\s*vscode Session\b", re.I), "VS Code"),
    (re.compile(r"^_\*\*(?:Assistant|Agent) \(copilot/", re.M), "GitHub Copilot"),
)
_AGENT_LABEL_MODEL_RE = re.compile(r"^_\*\*(?:Assistant|Agent) \(([\w.-]+)\)\*\*_", re.M)  # the model, with no client before it


def clients(text: str) -> list[str]:
    """The agent (and the model it ran, when its export names it without a client) that wrote the
    transcript: aider, Cursor, VS Code with GitHub Copilot."""
    out = [name for pattern, name in _CLIENT_RES if pattern.search(text)]
    out += list(dict.fromkeys(re.sub(r"-\d{8}$", "", m) for m in _AGENT_LABEL_MODEL_RE.findall(text)))
    return out


_INSTALL_RE = re.compile(
    r"(?:^|[\s;&|`(])(?:pip3?|python3? -m pip|uv pip|poetry|npm|pnpm|yarn|bun|cargo|go|gem|composer)\s+(?:install|i|add|get)\b((?:\s+[^\s;&|`)]+)+)"
)
_AS = r"[\w.]+(?:\s+as\s+\w+)?"
_IMPORT_RE = re.compile(rf"^[ \t]*(?:import\s+({_AS}(?:\s*,\s*{_AS})*)[ \t]*(?:#.*)?$|from\s+([\w.]+)\s+import\b)", re.M)  # Python's, not JavaScript's
_JS_IMPORT_RE = re.compile(r"""(?:\bfrom\s+|\brequire\(\s*|^\s*import\s+)["']([@\w][\w@/.-]*)["']""", re.M)
_PACKAGE_RE = re.compile(r"^(?:@[\w.-]+/)?[A-Za-z][\w.-]*$")


def packages(text: str, local: set[str]) -> list[str]:
    """Packages a command installed ("pip install requests", "npm install -D @playwright/test") and
    third-party modules code imported ("import matplotlib.pyplot", `from "date-fns"`), once each:
    no option, version pin or path, no standard-library module, none of `local` (the session's own
    modules and folders, lower-case)."""
    found: list[str] = []
    for m in _INSTALL_RE.finditer(text):
        for word in m.group(1).split():
            name = re.split(r"[=<>~!\[]|(?<=.)@", word, maxsplit=1)[0]  # "requests==2.31", "react@18", "uvicorn[standard]"
            if word.startswith("-") or not _PACKAGE_RE.match(name) or name in ("install", "add", "-r"):
                continue
            found.append(name)
    for m in _IMPORT_RE.finditer(text):
        for module in (m.group(1) or m.group(2)).split(","):
            found.append(module.split()[0].split(".")[0])
    for m in _JS_IMPORT_RE.finditer(text):
        name = m.group(1)
        found.append("/".join(name.split("/")[:2]) if name.startswith("@") else name.split("/")[0])
    names = _lexicon()[1]
    out = []
    for name in dict.fromkeys(found):
        low = name.lower()
        if len(name) < 2 or name.startswith("_") or low in sys.stdlib_module_names or low in local or low in NOT_SYSTEMS:
            continue
        out.append(names.get(low, name))
    return out

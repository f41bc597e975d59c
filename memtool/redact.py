"""Secret redaction: runs on every transcript and note before anything is written to memory.

A leaked key in a git-tracked memory file is forever, so each match of a known secret shape is
replaced by ``[REDACTED:<kind>]``. Only the secret value is replaced: key names, URL scheme/user/host
and header names stay, so the memory still reads well (``API_KEY=[REDACTED:env_assignment]``).

Design notes
  * Each rule is a module-level regex compiled once, with ASCII semantics and bounded or
    deterministic quantifiers, so matching is linear in the text length (no catastrophic
    backtracking on 20 MB transcripts). User patterns are compiled once too (LRU cache).
  * Every built-in regex starts with a literal, so `re` finds candidates with a fast substring
    scan; the left token boundary is a lookbehind placed after that literal (``_tok``).
    Case-insensitive rules are written in lower case and run on the lower-cased text
    (``_Rule.lowered``) for the same reason.
  * Matches from all rules are merged as a union of spans, so overlapping rules can never leave
    a fragment of a secret behind; the merged span takes the kind of the most specific rule.
  * Placeholders are not secrets and are kept: empty values, ``${VAR}``, ``$VAR``, ``$(cmd)``,
    ``<your key>``, ``{{ tmpl }}``, ``xxxx``/``****``, ``your_api_key_here``, ``changeme``,
    ``null``/``none``/``true``/``false``. So are numbers, file paths, URLs and code expressions
    (``token = tokenizer.encode(text)``, ``api_key=os.getenv("K")``, ``key=settings.API_KEY``).
    Values of secret-named keys shorter than MIN_SECRET_LEN are kept.
  * ``extra_patterns`` (config ``redact_patterns``) are user regexes: a named group ``secret`` is
    redacted alone, otherwise the whole match; their kind is ``custom``. They run as written, so
    their speed is the user's to keep linear. A bad one raises ConfigError naming it.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from memtool.errors import ConfigError

__all__ = ["Finding", "redact", "marker", "KINDS", "CUSTOM_KIND", "MIN_SECRET_LEN"]

# Values of secret-named keys shorter than this are kept (flags, counts, short words).
MIN_SECRET_LEN = 8


@dataclass(frozen=True)
class Finding:
    """One redacted span ``[start, end)`` of the *input* text. The secret itself is never stored.

    ``fingerprint`` is sha256(secret)[:8], to tell repeated secrets apart. It is unsalted: do not
    write it into memory files (a weak password could be confirmed by guessing).
    """

    kind: str
    start: int
    end: int
    fingerprint: str


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _c(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII)


_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "_-")
_KEY_CHARS = _TOKEN_CHARS | {"."}
_DIGITS = frozenset(string.digits)
_E = r"(?![A-Za-z0-9_\-])"  # right token boundary: not glued to more token characters


def _tok(prefix: str, width: int, glue: str = r"A-Za-z0-9_\-") -> str:
    """``prefix`` (exactly ``width`` characters) not glued to ``glue`` characters on its left.

    The lookbehind comes after the literal, so `re` still finds candidates by substring search
    and rejects a glued one in O(1) (a leading lookbehind would force a check at every position).
    """
    return f"{prefix}(?<![{glue}].{{{width}}})"


# --- patterns (lower-case ones run on the lower-cased text) ---------------------------------------
# PEM private key block, BEGIN to matching END (also inside JSON strings with literal "\n").
# The body may not contain "-----", so each BEGIN scans at most up to the next armour line.
PRIVATE_KEY_BLOCK = _c(
    r"-----BEGIN (?P<label>[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?)-----"
    r"(?:(?!-----)[\s\S]){0,65536}?-----END (?P=label)-----"
)
# PEM private key whose END line is missing (truncated output): BEGIN line, then header lines
# ("Proc-Type: 4,ENCRYPTED") and base64 lines.
PRIVATE_KEY_TRUNCATED = _c(
    r"-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:(?:\r?\n|\\n)+(?:[A-Za-z\-]{1,40}: [^\r\n\\]{0,200}|[A-Za-z0-9+/=]{1,256})(?=[\r\n]|\\n|\Z))*"
)
# AWS access key id: AKIA (long-term), ASIA (STS), ABIA, ACCA, A3T* + 16 upper-case alphanumerics.
AWS_ACCESS_KEY = _c(_tok("(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])", 4, "A-Z0-9") + r"[A-Z0-9]{16}(?![A-Z0-9])")
# AWS secret access key: 40 base64 characters after a (aws_)secret_access_key / SecretAccessKey name.
AWS_SECRET_KEY = _c(
    r"secret_?access_?key[\"']?[ \t]*[:=][ \t]*[\"']?(?P<secret>[a-z0-9/+]{40})(?![a-z0-9/+])"
)
# GitHub tokens: classic/OAuth/user/server/refresh (gh?_) and fine-grained (github_pat_).
GITHUB_TOKEN = _c(
    "(?:" + _tok("gh[pousr]_", 4) + r"[A-Za-z0-9]{36,255}|" + _tok("github_pat_", 11) + r"[A-Za-z0-9_]{22,255})" + _E
)
# GitLab personal/deploy/runner/pipeline-trigger/service-account tokens.
GITLAB_TOKEN = _c(_tok("gl", 2) + r"(?:pat|dt|rt|ptt|soat)-[A-Za-z0-9_\-]{20,255}" + _E)
# Slack incoming webhook: the host stays, the path (which is the secret) goes.
SLACK_WEBHOOK = _c(r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/\-]{20,255})")
# Slack bot/user/app/refresh/config tokens (xoxb-, xoxp-, xoxa-, xoxr-, xoxs-, xoxe-, xapp-).
SLACK_TOKEN = _c(
    "(?:" + _tok("xox", 3) + r"[abprseo](?:\.[A-Za-z0-9]+)?-|" + _tok("xapp-", 5) + r")[A-Za-z0-9\-]{10,255}" + _E
)
# Stripe secret key (live and test).
STRIPE_SECRET_KEY = _c(_tok("sk_", 3) + r"(?:live|test)_[A-Za-z0-9]{16,255}" + _E)
# Stripe restricted key.
STRIPE_RESTRICTED_KEY = _c(_tok("rk_", 3) + r"(?:live|test)_[A-Za-z0-9]{16,255}" + _E)
# Stripe publishable key (public by design, but it names the account).
STRIPE_PUBLISHABLE_KEY = _c(_tok("pk_", 3) + r"(?:live|test)_[A-Za-z0-9]{16,255}" + _E)
# Stripe webhook signing secret.
STRIPE_WEBHOOK_SECRET = _c(_tok("whsec_", 6) + r"[A-Za-z0-9]{24,255}" + _E)
# Google API key.
GOOGLE_API_KEY = _c(_tok("AIza", 4) + r"[0-9A-Za-z_\-]{35}" + _E)
# Google OAuth client secret.
GOOGLE_OAUTH_SECRET = _c(_tok("GOCSPX-", 7) + r"[A-Za-z0-9_\-]{24,40}" + _E)
# Anthropic API/admin keys (ranked before OpenAI: both start with sk-).
ANTHROPIC_KEY = _c(_tok("sk-ant-", 7) + r"[A-Za-z0-9_\-]{20,255}" + _E)
# OpenAI keys: legacy sk-<48>, sk-proj-, sk-svcacct-, sk-admin-; must mix digits and letters.
OPENAI_KEY = _c(_tok("sk-", 3) + r"(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,255}" + _E)
# Hugging Face user access token.
HUGGINGFACE_TOKEN = _c(_tok("hf_", 3) + r"[A-Za-z0-9]{30,64}" + _E)
# npm access token.
NPM_TOKEN = _c(_tok("npm_", 4) + r"[A-Za-z0-9]{36}" + _E)
# PyPI API token (a macaroon: always "pypi-AgE...").
PYPI_TOKEN = _c(_tok("pypi-AgE", 8) + r"[A-Za-z0-9_\-]{50,}" + _E)
# Twilio API key SID: SK + 32 lower-case hex.
TWILIO_API_KEY = _c(_tok("SK", 2, "A-Za-z0-9") + r"[0-9a-f]{32}(?![A-Za-z0-9])")
# Twilio account SID: AC + 32 lower-case hex.
TWILIO_ACCOUNT_SID = _c(_tok("AC", 2, "A-Za-z0-9") + r"[0-9a-f]{32}(?![A-Za-z0-9])")
# SendGrid API key: SG.<id>.<secret>.
SENDGRID_KEY = _c(_tok(r"SG\.", 3) + r"[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,64}" + _E)
# Mailgun (legacy) private API key.
MAILGUN_KEY = _c(_tok("key-", 4) + r"[0-9a-z]{32}" + _E)
# JSON Web Token: base64url header and payload (both JSON objects, so "eyJ"), optional signature.
JWT = _c(_tok("eyJ", 3) + r"[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*" + _E)
# Azure storage / service bus connection-string keys (AccountKey=..., SharedAccessKey=...).
AZURE_KEY = _c(r"key=(?:(?<=accountkey=)|(?<=sharedaccesskey=))(?P<secret>[a-z0-9+/]{20,}={0,2})")
# Discord webhook URL: the id/token path goes.
DISCORD_WEBHOOK = _c(r"discord(?:app)?\.com/api/webhooks/(?P<secret>[0-9]{5,30}/[A-Za-z0-9_\-]{20,255})")
# Discord bot token "<user id>.<timestamp>.<hmac>": this finds ".<timestamp>.<hmac>" and
# _discord() checks the id before it against DISCORD_TOKEN_ID.
DISCORD_TOKEN_TAIL = _c(r"\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}" + _E)
# The base64 user id that starts a Discord bot token.
DISCORD_TOKEN_ID = _c(r"[MNO][A-Za-z0-9_\-]{23,27}")
# Telegram bot token "<8-10 digit bot id>:AA<33>": this finds ":AA<33>", _telegram() the id.
TELEGRAM_TOKEN_TAIL = _c(r":AA[A-Za-z0-9_\-]{33}" + _E)
# Password in a URL (scheme://user:password@host): only the password goes.
PASSWORD_IN_URL = _c(
    r"://(?P<user>[^\s:/?#@\[\]\"'<>]{0,256}):(?P<secret>[^\s/?#\[\]\"'<>]{1,256})@(?=[A-Za-z0-9\[])"
)
# Authorization / Proxy-Authorization header value (any scheme: Bearer, Basic, Token, ...).
AUTH_HEADER = _c(
    r"authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:bearer|basic|token|digest|apikey)[ \t]+"
    r"(?P<secret>[a-z0-9._~+/\-]{8,}=*)"
)
# A bare "Bearer <token>" outside a header line (curl logs, code); random-looking tokens only.
BEARER_TOKEN = _c(_tok("bearer", 6, "a-z0-9_") + r"[ \t]+(?P<secret>[a-z0-9._~+/\-]{16,}=*)")
# curl -u / --user user:password (the option must start a word).
CURL_USER = _c(r"-(?:u|-user)[ \t]+[\"']?[^\s:\"']{1,256}:(?P<secret>[^\s\"']{1,256})")

# Words that make a key name secret-bearing; checked on the whole key by _assignment().
SECRET_KEY_NAME = _c(
    r"secret|token|password|passwd|passphrase|(?<![a-z])pass(?![a-z])|api[_\-]?key|access[_\-]?key"
    r"|private[_\-]?key"
)
# Literal starts of those words: one assignment regex each keeps every scan a substring search.
_SECRET_KEY_STARTS = ("secret", "token", "pass", "api", "access", "private")
# The rest of an assignment after such a word: rest of the key, separator, then a quoted value
# ("..", '..', \"..\" inside JSON strings) or a bare one. Covers `KEY=value`, `key: value`,
# `"key": "value"`, `key := "value"`, `key => 'value'`, `?access_token=value&`.
_ASSIGNMENT_TAIL = (
    r"(?=(?P<rest>[a-z0-9_.\-]{0,64}))(?P=rest)"  # atomic: a key never gives characters back
    r"(?:\\?[\"'])?(?P<pre>[ \t]*)(?P<sep>:=|=>|=|:)(?P<post>[ \t]*)"
    r"(?:\"(?P<dq>[^\"\r\n]{0,4096})\""
    r"|'(?P<sq>[^'\r\n]{0,4096})'"
    r"|\\\"(?P<eq>[^\"\\\r\n]{0,4096})\\\""
    r"|(?P<bare>[^\s\"'`,;&<>()\[\]\\]+))"
)
# Assignments to a secret-named key, one regex per key word (run on the lower-cased text).
ENV_ASSIGNMENTS = tuple(_c(word + _ASSIGNMENT_TAIL) for word in _SECRET_KEY_STARTS)

# Values that stand for a secret without being one.
PLACEHOLDER = re.compile(
    r"""
      \$\{[^}]*\}\S*          # ${VAR}, ${VAR:-default}
    | \$\(.*\)                # $(command)
    | \$[A-Za-z_]\w*          # $VAR
    | %[A-Za-z_]\w*%          # %VAR% (Windows)
    | %\(\w+\)s               # %(name)s
    | \{\{.*\}\}              # {{ template }}
    | <[^>]*>                 # <your key>
    | [x*.\#_\-]{3,}          # xxxx, ****, ...., ----
    | (?:change[_\-]?me|changeit|placeholder|example|dummy|redacted|null|none|nil|undefined
        |true|false|todo|tbd)
    | (?:your|insert|enter)[_\-\ ].*   # your_api_key_here, YOUR-TOKEN
    | .*[_\-]here             # api_key_here
    | \[REDACTED:[a-z0-9_]+\] # already redacted
    """,
    re.ASCII | re.IGNORECASE | re.VERBOSE,
)
# Numbers, versions, durations, counts: `max_tokens=4096`, `token_ttl: 3600`.
_NUMBER = _c(r"[0-9][0-9.,_:+\-]*")
# File paths (two segments or more) and URLs: `SECRET_FILE=/run/secrets/db`.
_PATH_OR_URL = _c(r"(?:~|\.{1,2})?/[^/\s]+/.*|[A-Za-z][A-Za-z0-9+.\-]*://.*")
# Code references rather than literals: dotted names (`settings.API_KEY`) and snake_case variables.
_CODE_REF = _c(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[a-z]+(?:_[a-z]+)+")
# What may precede a key on its line for the line to count as a config line (.env, YAML, INI).
_CONFIG_LINE_PREFIX = _c(r"[ \t]*(?:export[ \t]+|set[ \t]+|ENV[ \t]+|-[ \t]+)?[\"']?")


# --- validators: (match, original text) -> span to redact, or None to reject ----------------------
_Extract = Callable[[re.Match[str], str], "tuple[int, int] | None"]


def _has_digit_and_letter(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _random_looking(m: re.Match[str], text: str) -> tuple[int, int] | None:
    """Prose and kebab-case names are not keys: the token must mix digits and letters."""
    start, end = m.span("secret" if "secret" in m.re.groupindex else 0)
    return (start, end) if _has_digit_and_letter(text[start:end]) else None


def _curl_user(m: re.Match[str], text: str) -> tuple[int, int] | None:
    """`-u` must start a word; `docker run -u 1000:1000` is a uid:gid, not a password."""
    if m.start() > 0 and not text[m.start() - 1].isspace():
        return None
    value = m.group("secret")
    return None if value.isdigit() or PLACEHOLDER.fullmatch(value) else m.span("secret")


def _run_start(text: str, pos: int, chars: frozenset[str], limit: int) -> int:
    """Start of the run of ``chars`` ending at ``pos``, looking back at most ``limit`` characters."""
    lo = max(0, pos - limit)
    while pos > lo and text[pos - 1] in chars:
        pos -= 1
    return pos


def _discord(m: re.Match[str], text: str) -> tuple[int, int] | None:
    start = _run_start(text, m.start(), _TOKEN_CHARS, 29)
    if start > 0 and text[start - 1] in _KEY_CHARS:
        return None  # glued to a longer token
    if not DISCORD_TOKEN_ID.fullmatch(text, start, m.start()):
        return None
    return (start, m.end()) if _has_digit_and_letter(text[start : m.end()]) else None


def _telegram(m: re.Match[str], text: str) -> tuple[int, int] | None:
    """The bot id is 8-10 digits; letters may precede it (`https://api.telegram.org/bot<token>`)."""
    start = _run_start(text, m.start(), _DIGITS, 11)
    return (start, m.end()) if 8 <= m.start() - start <= 10 else None


def _at_config_line_start(text: str, pos: int) -> bool:
    lo = max(0, pos - 200)
    nl = text.rfind("\n", lo, pos)
    if nl < 0 and lo > 0:
        return False
    return _CONFIG_LINE_PREFIX.fullmatch(text, nl + 1, pos) is not None


def _assignment(m: re.Match[str], text: str) -> tuple[int, int] | None:
    """Accept the value of a secret-named key only if it is a literal that may be a secret."""
    key_start = _run_start(text, m.start(), _KEY_CHARS, 64)
    key = text[key_start : m.end("rest")].lower().replace("tokeniz", "")  # tokenizer= is no secret
    if not SECRET_KEY_NAME.search(key):
        return None  # passenger=, compass=
    group = next(g for g in ("dq", "sq", "eq", "bare") if m.start(g) >= 0)
    start, end = m.span(group)
    value = text[start:end].strip()
    if len(value) < MIN_SECRET_LEN or "[REDACTED:" in value:
        return None
    if PLACEHOLDER.fullmatch(value) or _NUMBER.fullmatch(value) or _PATH_OR_URL.fullmatch(value):
        return None  # a URL with a password is handled by PASSWORD_IN_URL
    if group == "bare":
        if text[end : end + 1] in ("(", "["):
            return None  # token = tokenizer.encode(text), key = os.environ["K"]
        if _CODE_REF.fullmatch(value):
            return None  # key=settings.API_KEY, token=access_token
        spaced = bool(m.group("pre") or m.group("post")) or m.group("sep") != "="
        if spaced and not _at_config_line_start(text, key_start) and not _has_digit_and_letter(value):
            return None  # inline `x = y` / `x: y` is code or prose unless the value looks random
    return start, end


# --- rules --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Rule:
    kind: str
    regex: re.Pattern[str]
    lowered: bool = False  # the regex is lower-case and runs on the lower-cased text
    extract: _Extract | None = None  # default: the span of group 'secret', else the whole match


# Most specific first: when spans overlap, the merged span takes the earliest rule's kind.
_RULES: tuple[_Rule, ...] = (
    _Rule("private_key", PRIVATE_KEY_BLOCK),
    _Rule("private_key", PRIVATE_KEY_TRUNCATED),
    _Rule("aws_access_key", AWS_ACCESS_KEY),
    _Rule("aws_secret_key", AWS_SECRET_KEY, lowered=True),
    _Rule("github_token", GITHUB_TOKEN),
    _Rule("gitlab_token", GITLAB_TOKEN),
    _Rule("slack_webhook", SLACK_WEBHOOK),
    _Rule("slack_token", SLACK_TOKEN),
    _Rule("stripe_key", STRIPE_SECRET_KEY),
    _Rule("stripe_key", STRIPE_RESTRICTED_KEY),
    _Rule("stripe_key", STRIPE_PUBLISHABLE_KEY),
    _Rule("stripe_key", STRIPE_WEBHOOK_SECRET),
    _Rule("google_api_key", GOOGLE_API_KEY),
    _Rule("google_oauth_secret", GOOGLE_OAUTH_SECRET),
    _Rule("anthropic_key", ANTHROPIC_KEY),
    _Rule("openai_key", OPENAI_KEY, extract=_random_looking),
    _Rule("huggingface_token", HUGGINGFACE_TOKEN),
    _Rule("npm_token", NPM_TOKEN),
    _Rule("pypi_token", PYPI_TOKEN),
    _Rule("twilio_key", TWILIO_API_KEY),
    _Rule("twilio_key", TWILIO_ACCOUNT_SID),
    _Rule("sendgrid_key", SENDGRID_KEY),
    _Rule("mailgun_key", MAILGUN_KEY),
    _Rule("jwt", JWT),
    _Rule("azure_storage_key", AZURE_KEY, lowered=True),
    _Rule("discord_webhook", DISCORD_WEBHOOK),
    _Rule("discord_token", DISCORD_TOKEN_TAIL, extract=_discord),
    _Rule("telegram_bot_token", TELEGRAM_TOKEN_TAIL, extract=_telegram),
    _Rule("password_in_url", PASSWORD_IN_URL),
    _Rule("authorization_header", AUTH_HEADER, lowered=True),
    _Rule("bearer_token", BEARER_TOKEN, lowered=True, extract=_random_looking),
    _Rule("basic_auth", CURL_USER, extract=_curl_user),
    *(_Rule("env_assignment", regex, lowered=True, extract=_assignment) for regex in ENV_ASSIGNMENTS),
)

CUSTOM_KIND = "custom"
# Every kind, most specific first; user patterns rank just above the generic assignment rule.
KINDS: tuple[str, ...] = tuple(dict.fromkeys(r.kind for r in _RULES if r.kind != "env_assignment")) + (
    CUSTOM_KIND,
    "env_assignment",
)
# Rank of each kind when spans merge: lower wins.
_RANK = {kind: i for i, kind in enumerate(KINDS)}
# A-Z -> a-z only, for the rare text whose str.lower() changes length (U+0130).
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


@lru_cache(maxsize=256)
def _compile_extra(pattern: str) -> re.Pattern[str]:
    """Compile one user pattern once; later calls hit the cache."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"redact_patterns: invalid regular expression {pattern!r}: {exc}") from None


def _extra_rules(extra_patterns: Iterable[str]) -> tuple[_Rule, ...]:
    rules = []
    for pattern in extra_patterns:
        if not isinstance(pattern, str):
            raise ConfigError(f"redact_patterns: each entry must be a string, got {pattern!r}")
        rules.append(_Rule(CUSTOM_KIND, _compile_extra(pattern)))
    return tuple(rules)


def _lower_same_length(text: str) -> str:
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.translate(_ASCII_LOWER)


def _candidates(text: str, rules: Iterable[_Rule]) -> list[tuple[int, int, str]]:
    """Spans of ``text`` proposed by the rules, before merging."""
    lowered: str | None = None
    found: list[tuple[int, int, str]] = []
    for rule in rules:
        haystack = text
        if rule.lowered:
            if lowered is None:
                lowered = _lower_same_length(text)
            haystack = lowered
        for m in rule.regex.finditer(haystack):
            if rule.extract is not None:
                span = rule.extract(m, text)
            else:
                span = m.span("secret") if "secret" in rule.regex.groupindex else m.span()
            if span is not None and 0 <= span[0] < span[1]:
                found.append((span[0], span[1], rule.kind))
    return found


def _merge(found: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Union of overlapping spans; each merged span keeps its most specific kind."""
    merged: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(found):
        if merged and start < merged[-1][1]:
            m_start, m_end, m_kind = merged[-1]
            best = kind if _RANK[kind] < _RANK[m_kind] else m_kind
            merged[-1] = (m_start, max(m_end, end), best)
        else:
            merged.append((start, end, kind))
    return merged


def _fingerprint(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def redact(text: str, extra_patterns: Sequence[str] = ()) -> tuple[str, list[Finding]]:
    """Replace every secret in ``text`` by ``[REDACTED:<kind>]``.

    Returns the redacted text and one Finding per replaced span (offsets into the input, sorted).
    Raises ConfigError when an entry of ``extra_patterns`` is not a valid regular expression.
    """
    if isinstance(extra_patterns, str):
        raise ConfigError(f"redact_patterns: expected a list of regular expressions, got {extra_patterns!r}")
    rules = _RULES + _extra_rules(extra_patterns) if extra_patterns else _RULES
    spans = _merge(_candidates(text, rules))
    if not spans:
        return text, []
    out: list[str] = []
    findings: list[Finding] = []
    pos = 0
    for start, end, kind in spans:
        out.append(text[pos:start])
        out.append(marker(kind))
        findings.append(Finding(kind, start, end, _fingerprint(text[start:end])))
        pos = end
    out.append(text[pos:])
    return "".join(out), findings

"""Secret redaction: runs on every transcript and note before anything is written to memory.

A leaked key in a git-tracked memory file is forever, so each match of a known secret shape is
replaced by ``[REDACTED:<kind>]``. Only the secret value is replaced: key names, URL scheme/user/host
and header names stay, so the memory still reads well (``API_KEY=[REDACTED:env_assignment]``).

Design notes
  * Each rule is one row of _RULES, its regex compiled once with ASCII semantics and bounded or
    deterministic quantifiers, so matching is linear in the text length (no catastrophic
    backtracking on 20 MB transcripts). Every built-in regex starts with a literal, so `re` finds
    candidates with a fast substring scan (_tok); case-insensitive rules are written in lower case
    and run on the lower-cased text (``_Rule.lowered``) for the same reason.
  * Vendor tokens with a documented prefix are one table, _PREFIXED_ROWS, found by three
    one-character triggers. Assignments (`KEY=v`, `key: v`, `"key": "v"`, `--key v`, netrc, XML,
    YAML blocks) are judged by the key's last word (_key_strength).
  * Matches from all rules are merged as a union of spans, so overlapping rules can never leave
    a fragment of a secret behind; the merged span takes the kind of the most specific rule.
  * Placeholders (PLACEHOLDER: ``${VAR}``, ``<your key>``, ``changeme``...), numbers, file paths,
    URLs and code expressions (``token = tokenizer.encode(text)``, ``key=settings.API_KEY``) are
    not secrets and are kept, as are values of secret-named keys shorter than MIN_SECRET_LEN.
  * ``extra_patterns`` (config ``redact_patterns``) are user regexes: a named group ``secret`` is
    redacted alone, otherwise the whole match; their kind is ``custom``. They are compiled with
    RE2 (google-re2, compile_pattern), which matches in time linear in the text whatever the
    pattern: ``(a+)+$`` cannot hang a write. RE2 has no backreferences or lookaround; a pattern
    that uses them, or is not a regex at all, raises ConfigError naming it.
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from memtool.errors import ConfigError

__all__ = ["Finding", "redact", "compile_pattern", "marker", "KINDS", "CUSTOM_KIND", "MIN_SECRET_LEN"]

# Values of secret-named keys shorter than this are kept (flags, counts, short words).
MIN_SECRET_LEN = 8
# A password quoted or in a connection string (`Password=<value>;`) is a literal from 6 characters.
MIN_PASSWORD_LEN = 6


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


# --- vendor tokens with a documented prefix (gitleaks' rule list was the checklist) -----------------
# One row per token family: (kind, regex anchored at the token's first character). Most start with a
# word and a separator ("dop_v1_", "sq0atp-", "dt0c01."); a regex per row would scan the text once
# per row, so they are found together: TOKEN_TRIGGER finds a separator followed by 16 token
# characters (a fast single-character scan), and _prefixed() tries PREFIXED_TOKEN at the start of
# the token around it. Rows without a separator have their own regexes below.
_PREFIXED_ROWS: tuple[tuple[str, str], ...] = (
    ("github_token", r"gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}"),
    ("gitlab_token", r"gl(?:pat|dt|rt|ptt|soat|ft|imt|cbt|ffct|oas|agent)-[A-Za-z0-9_\-]{20,255}(?:\.[a-z0-9]{9})?"),
    ("slack_token", r"xox[abprseo](?:\.xox[bp])?-[A-Za-z0-9\-]{10,255}|xapp-[0-9]-[A-Za-z0-9\-]{8,255}"),
    ("stripe_key", r"[spr]k_(?:live|test|prod)_[A-Za-z0-9]{10,255}|whsec_[A-Za-z0-9]{24,255}"),
    ("google_oauth_secret", r"GOCSPX-[A-Za-z0-9_\-]{24,40}"),
    ("anthropic_key", r"sk-ant-[A-Za-z0-9_\-]{20,255}"),
    # OpenAI: legacy sk-<48>, sk-proj-, sk-svcacct-, sk-admin-; must mix digits and letters.
    ("openai_key", r"sk-(?=[A-Za-z_\-]*[0-9])(?=[0-9_\-]*[A-Za-z])(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,255}"),
    ("huggingface_token", r"hf_[A-Za-z0-9]{30,64}|api_org_[A-Za-z]{34}"),
    ("npm_token", r"npm_[A-Za-z0-9]{36}"),
    ("pypi_token", r"pypi-AgE[A-Za-z0-9_\-]{50,}"),  # a macaroon: always "pypi-AgE..."
    ("sendgrid_key", r"SG\.[A-Za-z0-9_=\-]{16,32}\.[A-Za-z0-9_=\-]{30,64}"),
    ("mailgun_key", r"key-[0-9a-z]{32}"),
    ("digitalocean_token", r"do[opr]_v1_[a-f0-9]{64}"),
    ("grafana_token", r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,3}"),
    ("linear_key", r"lin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    ("notion_token", r"ntn_[0-9]{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43}"),
    ("docker_token", r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{20,64}"),
    ("planetscale_token", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_=.\-]{32,64}"),
    ("shopify_token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("sentry_token", r"sntryu_[a-f0-9]{64}|sntrys_eyJ[A-Za-z0-9+/=_]{50,400}"),
    ("rubygems_key", r"rubygems_[a-f0-9]{48}"),
    ("prefect_key", r"pnu_[A-Za-z0-9]{36}"),
    ("readme_key", r"rdme_[a-z0-9]{70}"),
    ("settlemint_token", r"sm_(?:aat|pat|sat)_[A-Za-z0-9]{16}"),
    ("shippo_token", r"shippo_(?:live|test)_[a-fA-F0-9]{40}"),
    ("duffel_token", r"duffel_(?:test|live)_[A-Za-z0-9_=\-]{43}"),
    ("sourcegraph_token", r"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}"),
    ("onepassword_token", r"ops_eyJ[A-Za-z0-9+/]{250,}={0,3}"),
    ("flyio_token", r"fo1_[A-Za-z0-9_\-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3}"),
    ("clojars_token", r"CLOJARS_[a-z0-9]{60}"),
    ("maxmind_key", r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk"),
    ("groq_key", r"gsk_[A-Za-z0-9]{52}"),
    ("replicate_token", r"r8_[A-Za-z0-9]{37}"),
    ("heroku_key", r"HRKU-AA[A-Za-z0-9_\-]{58}"),
    ("square_token", r"sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,60}"),
    ("postman_key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("perplexity_key", r"pplx-[A-Za-z0-9]{48}"),
    ("xai_key", r"xai-[A-Za-z0-9]{80}"),
    ("brevo_key", r"x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    ("age_secret_key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("pulumi_token", r"pul-[a-f0-9]{40}"),
    ("infracost_token", r"ico-[A-Za-z0-9]{32}"),
    ("scalingo_token", r"tk-us-[A-Za-z0-9_\-]{48}"),
    ("frameio_token", r"fio-u-[A-Za-z0-9_=\-]{64}"),
    ("newrelic_key", r"NR(?:AK|II|JS|IQ)-[A-Za-z0-9_\-]{19,32}"),
    ("flutterwave_key", r"FLW(?:SECK|PUBK)(?:_TEST)?-[a-hA-H0-9]{12,32}(?:-X)?"),
    ("adobe_secret", r"p8e-[A-Za-z0-9]{32}"),
    ("octopus_key", r"API-[A-Z0-9]{26}"),
    ("cloudflare_key", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}"),
    ("mailchimp_key", r"[a-f0-9]{32}-us[0-9]{1,2}"),
    ("doppler_token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}"),
    ("dynatrace_token", r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    ("vault_token", r"hv[sb]\.[A-Za-z0-9_\-]{90,300}"),
    ("terraform_token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70}"),
    ("harness_key", r"(?:pat|sat)\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"),
    ("mapbox_token", r"sk\.eyJ[A-Za-z0-9_\-]{50,}\.[A-Za-z0-9_\-]{20,}"),
    ("dropbox_token", r"sl\.[A-Za-z0-9_=\-]{130,}"),
    ("google_oauth_token", r"ya29\.[A-Za-z0-9_\-]{30,}"),
    ("airtable_token", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    ("intra42_secret", r"s-s4t2(?:ud|af)-[a-f0-9]{64}"),
    ("slack_token", r"xoxe(?:\.xox[bp])?-[0-9]-[A-Za-z0-9]{146,166}"),
    # (rows below: gitleaks' rules that had none here when its list was read again, rule by rule)
    ("typeform_token", r"tfp_[A-Za-z0-9_=.\-]{59}"),
    ("authress_key", r"(?:sc|ext|scauth|authress)_[A-Za-z0-9]{5,30}\.[A-Za-z0-9]{4,6}\.acc[_\-][A-Za-z0-9\-]{10,32}\.[A-Za-z0-9+/_=\-]{30,120}"),
    ("defined_networking_token", r"dnkey-[A-Za-z0-9=_\-]{26}-[A-Za-z0-9=_\-]{52}"),
    ("plaid_token", r"access-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"),
    ("yandex_token", r"t1\.[A-Za-z0-9_\-]{1,64}={0,2}\.[A-Za-z0-9_\-]{86}={0,2}"),
    ("vault_token", r"s\.(?=[A-Za-z]{0,23}[0-9])(?=[0-9a-z]{0,23}[A-Z])[A-Za-z0-9]{24}"),  # legacy service token
)
# The longest stretch of a token before its trigger (Mailchimp: 32 hex digits before "-us").
_PREFIX_MAX = 32
PREFIXED_TOKEN = _c("|".join(f"(?P<t{i}>{regex}){_E}" for i, (_, regex) in enumerate(_PREFIXED_ROWS)))
# A separator followed by 16 token characters (or a Mailchimp data-centre suffix "-us12").
_TRIGGER_TAIL = r"[A-Za-z0-9][A-Za-z0-9_+/\-]{15}"
TOKEN_TRIGGER = (
    _c("_" + _TRIGGER_TAIL),
    _c(r"-(?:" + _TRIGGER_TAIL + r"|(?<=[a-f0-9]{32}-)us[0-9])"),
    _c(r"\." + _TRIGGER_TAIL),
)

# Incoming webhooks whose URL path is the credential: (kind, the host and path before it, the secret).
# The host stays, the path goes.
_WEBHOOK_ROWS: tuple[tuple[str, str, str], ...] = (
    ("slack_webhook", "hooks.slack.com/services/", r"[A-Za-z0-9_/\-]{20,255}"),
    ("slack_webhook", "hooks.slack.com/workflows/", r"[A-Za-z0-9_/\-]{20,255}"),
    ("slack_webhook", "hooks.slack.com/triggers/", r"[A-Za-z0-9_/\-]{20,255}"),
    ("teams_webhook", "webhook.office.com/webhookb2/", r"[A-Za-z0-9@/\-]{60,300}"),
    ("discord_webhook", "discord.com/api/webhooks/", r"[0-9]{5,30}/[A-Za-z0-9_\-]{20,255}"),
    ("discord_webhook", "discordapp.com/api/webhooks/", r"[0-9]{5,30}/[A-Za-z0-9_\-]{20,255}"),
    ("zapier_webhook", "hooks.zapier.com/hooks/catch/", r"[0-9]{3,20}/[A-Za-z0-9]{5,64}"),
    ("tines_webhook", ".tines.com/webhook/", r"[a-z0-9]{32}/[a-z0-9]{32}"),
    ("ifttt_webhook", "maker.ifttt.com/trigger/", r"[A-Za-z0-9_\-]{1,64}/with/key/[A-Za-z0-9_\-]{16,64}"),
    ("make_webhook", ".make.com/", r"(?=[a-z0-9]{32}(?![A-Za-z0-9]))[a-z0-9]{32}"),
)

# --- command lines -------------------------------------------------------------------------------
# Options documented as taking a password, a passphrase or a token, by command (each tool's man
# page or --help). An option named by a secret word (`--password`, `--db-password`, `-storepass`,
# `/pass:`) needs no entry: the assignment rules judge it by its name. The table holds the options
# whose name says nothing (`-p`, `-P`, `-a`, `-w`, `-k`, `-pw`, `/p`): each counts only after its
# command, so `mkdir -p`, `ssh -p 2222`, `mysql -P3306`, `ldapsearch -W` (a prompt), `docker run
# -a stdout` stay. An option written `-u,` takes `user,password` (its password after the comma),
# `-U:` takes `user:password`. GLUED: letters whose password is written against them (`-pPASS`);
# for mysql a separate `-p VALUE` is a prompt, then the database.
_DB_CLIENTS = (
    "mysql mysqldump mysqladmin mysqlimport mysqlcheck mysqlshow mysqlpump mysqlslap mysqlbinlog mysqlsh"
    " mariadb mariadb-dump mariadb-admin mariadb-import mariadb-check"
)
_MONGO = "mongo mongosh mongodump mongorestore mongoexport mongoimport mongostat mongotop mongofiles"
_LDAP = "ldapsearch ldapmodify ldapadd ldapdelete ldapwhoami ldappasswd ldapcompare ldapmodrdn ldapexop"
_SNMP = "snmpwalk snmpbulkwalk snmpget snmpgetnext snmpbulkget snmpset snmptable snmptrap snmpinform snmpdelta snmpdf snmpstatus"
_OPTION_TABLE: tuple[tuple[str, str, str], ...] = (
    # commands, options taking the value after a space, `=` or `:`, glued letters
    (_DB_CLIENTS, "", "p"),
    ("7z 7za 7zz 7zr rar unrar", "", "p"),
    ("sshpass psexec psexec64 rdesktop cqlsh mycli hdbsql cypher-shell ncftp ncftpget ncftpput influx winrs", "-p", ""),
    (_MONGO, "-p", ""),
    ("redis-cli keydb-cli valkey-cli", "-a", ""),
    (_LDAP + " vsql", "-w", ""),
    ("sqlcmd bcp osql sqsh mssql-cli ipmitool mosquitto_pub mosquitto_sub mosquitto_rr zip unzip zipcloak", "-P", ""),
    ("openssl", "-k", ""),
    ("keytool jarsigner", "-storepass -keypass -srcstorepass -deststorepass -srckeypass -destkeypass -new", ""),
    ("plink pscp psftp putty nzsql", "-pw", ""),
    (_SNMP, "-A -X", ""),
    ("xfreerdp xfreerdp3 wfreerdp sdl-freerdp", "/p", ""),
    ("schtasks", "/rp /p", ""),
    ("lftp", "-u,", ""),
    ("curl", "-U: --proxy-user:", ""),
    ("http https", "-a: --auth:", ""),  # HTTPie: `-a user:password`
    ("cbq caprover openfortivpn", "-p", ""),
    ("ldappasswd", "-s -a", ""),  # the new and the old password
    ("codecov codecovcli", "-t", ""),  # the upload token
)
# Commands whose table entry counts only with one of these words after them on the line.
_SUBCOMMANDS = {
    "docker": "login", "podman": "login", "nerdctl": "login", "buildah": "login", "skopeo": "login", "oras": "login",
    "helm": "login", "az": "login", "oc": "login", "cf": "login", "twine": "upload", "gh": "secret", "dotnet": "nuget",
}  # fmt: skip
_OPTION_TABLE += (("docker podman nerdctl buildah skopeo oras helm az oc cf twine dotnet", "-p", ""), ("gh", "-b --body", ""))


def _option_index() -> dict[str, tuple[dict[str, str], str]]:
    """command -> (option -> separator inside its value, or ""; glued letters)."""
    index: dict[str, tuple[dict[str, str], str]] = {}
    for commands, options, glued in _OPTION_TABLE:
        for command in commands.split():
            known, letters = index.setdefault(command, ({}, ""))
            for option in options.split():
                sep = option[-1] if option[-1] in ",:" else ""
                known[option.rstrip(",:")] = sep
            index[command] = (known, letters + glued)
    return index


_OPTIONS_BY_COMMAND = _option_index()
_ALL_OPTIONS = frozenset(option for known, _ in _OPTIONS_BY_COMMAND.values() for option in known)
_ALL_GLUED = frozenset(letter for _, letters in _OPTIONS_BY_COMMAND.values() for letter in letters)
# CREATE USER / ALTER USER / CREATE ROLE before an unquoted IDENTIFIED BY value.
_SQL_USER = _c(r"\b(?:create|alter)[ \t]+(?:user|role)\b")

# --- assignments to secret-named keys ------------------------------------------------------------
# A key is split into words (snake, kebab, dotted, camelCase: `dbPassword` -> db, password) and
# judged by its last word, after trailing qualifiers (`SECRET_KEY_BASE`, `client-key-data`):
#   strong (2): password/passwd/pwd/pass/passphrase/secret/token/credentials, or "key" after a word
#               that makes it secret (api, signing, encryption, private, auth, ...): any literal
#               value of MIN_SECRET_LEN characters or more is redacted;
#   weak (1):   a plain "key", "auth", "authorization", "login" or "pat" (`key:`, docker `"auth":`):
#               only a random-looking token (after a qualifier, `sonar.login`, `config.facebook.key`:
#               16+ letters and digits);
#   none (0):   `password_hash_algorithm`, `token_count`, `next_page_token`, `secret_santa`,
#               `public_key`, `cache_key`, `secretKeyRef`, `SECRET_NAME`.
_KEY_WORDS = _c(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# ("tokens" is a count: max_tokens, window_tokens.)
# (`smbpass`, `rootpw`, `bindpw`, `authtok`: a word glued before "pass" or "pw"; _NOT_PASS_WORDS are not.)
_STRONG_WORD = _c(r"[a-z0-9]*(?:passwords?|passwd|passphrase|pwd|secrets?|token|credentials?|creds|apikeys?)|[a-z0-9]{0,8}(?:pass|pw)|psk|authtok")
_NOT_PASS_WORDS = frozenset("bypass compass surpass overpass underpass trespass encompass multipass firstpass onepass singlepass".split())
_KEY_QUALIFIERS = frozenset(
    "api access secret private signing sign encryption encrypt enc decryption master hmac client app"
    " application auth service account admin root session cookie jwt webhook ssh gpg pgp aes cipher"
    " crypto shared license subscription consumer storage deploy integration server rest sas".split()
)
_NOT_SECRET_KEYS = frozenset(
    "public pub primary foreign sort partition cache idempotency routing lookup object unique composite"
    " index map dict row group shard translation i18n hot short".split()
)
_TRAILING_QUALIFIERS = frozenset(
    "base value val b64 base64 hex raw str string data enc encoded plain plaintext text old new current prod production dev staging test live private".split()
)
# Tokens that are positions, not credentials: `next_page_token`, `nextPageToken`, `sync_token`.
_POSITION_TOKEN = _c(r"(?:page|next|continuation|sync|resume|pagination|cursor)token")
# Literal starts of those key words (lower case): one assignment regex each keeps every scan a
# substring search.
_SECRET_KEY_STARTS = ("pass", "pw", "secret", "token", "key", "auth", "cred", "login", "pat", "psk")
# What follows such a word: the rest of the key (and a type: `var k string =`), a separator, then a
# quoted value (".." or '..'
# that may wrap once onto the next line, \"..\" inside JSON strings) or a bare one that is not
# itself a key (`token: GITHUB_TOKEN: x`: the match fails at "token" and is found again at
# "GITHUB_TOKEN"). The match consumes its value, so each character is scanned by one match. Separators: = : := ::= ?= ??= += .= => and
# URL-encoded %3D %3A, a comma after a quoted key (`setProperty("K", "v")`), a dash between spaces before a
# quoted value (`api token - 'v'`); a value may start on the next
# line when quoted (pretty-printed JSON); a space separates CLI options, netrc/redis lines and a
# value named in prose ("the password is X", "api key (X)"; not before a plain word, so "token
# budget" in prose costs no check);
# `>` ends an XML element (<password>v</password>), `value=` follows an XML key attribute
# (<add key="Password" value="v"/>); `|` or `>` at the end of a YAML line opens a block scalar.
_ASSIGNMENT_TAIL = (
    r"(?=(?P<rest>[a-z0-9_.\-]{0,64}))(?P=rest)"  # atomic: a key never gives characters back
    r"(?:(?P<quote>\\?[\"'])?(?:[ \t]*:?[ \t]+(?:string|str)(?=[ \t]*=))?"  # a type: `var k string =`, `k: String =`
    # a separator, with the spaces around it and a line break before a quoted value (or after `>`)
    r"(?:(?P<pre>[ \t]*)"
    r"(?P<sep>:{1,3}=|\?\??=|[+.]=|={2,3}(?=[ \t]*[\"'])|=>|=|:|%3d|%3a|>|value=|,(?=[ \t]*[\"'`])|-(?<=[ \t]-)(?=[ \t]+[\"']))"
    r"(?P<post>[ \t]*)(?:\r?\n[ \t]*(?=[\"'])|(?<=>)\r?\n[ \t]*)?"
    # or spaces, with a filler word of prose, not before a plain word
    r"|(?P<space>[ \t]+(?:(?P<filler>is|was|now|set[ \t]+to|to)[ \t]+)?[(`]?)(?![a-z]{1,12}(?:[\s,;!?)]|:(?![^\s])|\.(?![a-z0-9])|$)))"
    r"(?:\"(?P<dq>[^\"\r\n]{0,4096}(?:\r?\n[^\"\r\n]{0,4096})?)\""
    r"|'(?P<sq>[^'\r\n]{0,4096}(?:\r?\n[^'\r\n]{0,4096})?)'"
    r"|\\\"(?P<eq>[^\"\\\r\n]{0,4096})\\\""
    r"|`(?P<bq>[^`\s]{1,4096})`"  # Go's raw string; judged as a bare value (Markdown code spans hold names)
    r"|(?P<block>[|>][+\-]?[0-9]?)(?=[ \t]*\r?\n)"
    r"|(?![a-z0-9_.\-]{1,64}:(?:[ \t]|\r?\n))(?P<bare>[^\s\"'`,;&<>()\[\]\\]+))"
    # or the word names a token alone on a line below it (_under_label)
    # (in a lookahead: a refused one consumes nothing, `access_token=` below is still seen)
    r"|(?=(?=(?P<label>[^\r\n]{0,80}))(?P=label)\r?\n(?:[ \t]*\r?\n){0,2}"  # atomic: the rest of the line, at most 80 characters
    r"[ \t]*[`\"']?(?P<lsecret>[a-z0-9+/=_\-.]{16,512})[`\"']?[ \t]*(?:\r?\n|\Z)))"
)
# Assignments to a secret-named key, one regex per key word (run on the lower-cased text).
# ("tokens" ending a key is a count, never a secret: `"output_tokens": 156` is refused in the regex.)
ENV_ASSIGNMENTS = tuple(_c(word + (r"(?!s\b)" if word == "token" else "") + _ASSIGNMENT_TAIL) for word in _SECRET_KEY_STARTS)
# The rest of a config line made of words: an unquoted passphrase (`passphrase: correct horse ...`).
_MORE_WORDS = _c(r"(?:[ \t]+[^\s#'\"]+){1,7}[ \t]*(?=\r?\n|\Z)")
# A bare value continued on the next line with a backslash (shell).
_CONTINUED = _c(r"\\\r?\n[ \t]*[^\s\"'\\]+")
# Common English words: a run of words holding one is prose, not a passphrase.
_STOPWORDS = frozenset(
    "a an the to of for with in on at by from as is are be was it this that and or not no use used your you we our if then than when".split()
)
# An operator or a condition after a bare value: the value is part of an expression.
_EXPRESSION_GOES_ON = _c(r"[ \t]+(?:[-+*/%|&^]|if[ \t]|and[ \t]|or[ \t])")
# What may precede `password <value>` on a netrc line (machine/login/account tokens).
_NETRC_PREFIX = _c(r"[ \t]*(?:(?:machine[ \t]+\S+|default)[ \t]+)?(?:(?:login|account)[ \t]+\S+[ \t]+)*")
# What may follow it: end of line or the next netrc token.
_NETRC_SUFFIX = _c(r"[ \t]*(?:\r?\n|\Z|(?:login|account|machine|macdef)[ \t])")
# A netrc entry starts with machine/default and names a login before the password.
_NETRC_CONTEXT = _c(r"(?:^|\s)(?:machine|default|login)[ \t]")
# SQL words before PASSWORD 'value' on its line.
_SQL_CONTEXT = _c(r"\b(?:user|role|with|login)\b")
# Keys that take a space-separated value on their own line (netrc, redis.conf).
_SPACED_KEYS = frozenset(("password", "passwd", "requirepass", "masterauth", "rootpw", "bindpw"))
# Of those, the keys that start their line (redis.conf, slapd.conf), not netrc tokens.
_LINE_KEYS = frozenset(("requirepass", "masterauth", "rootpw", "bindpw"))

# A key naming a password (not a token or a key): its quoted values are literals from MIN_PASSWORD_LEN.
_PASSWORD_KEY = _c(r"(?:pass(?:word|wd|phrase)?|pwd?)s?$")
# Type names and schema words a password field is given in code and API docs (`"password": "string"`).
_TYPE_NAMES = frozenset("string text varchar boolean object number integer hidden masked".split())
# Values that stand for a secret without being one.
PLACEHOLDER = re.compile(
    r"""
      \$\{[^}]*\}\S*          # ${VAR}, ${VAR:-default}
    | \$\(.*\)                # $(command)
    | \$\{?[A-Za-z_]\w*\}?(?::\$\{?[A-Za-z_]\w*\}?)+  # $USER:$PASS
    | \$[A-Za-z_]\w*          # $VAR
    | %[A-Za-z_]\w*%          # %VAR% (Windows)
    | %\(\w+\)s               # %(name)s
    | \{\{.*\}\}              # {{ template }}
    | \{(?:[A-Za-z_][\w.]*|[0-9]*)\}  # {name}, {}, {0} (f-string, str.format)
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
# (Also `name:/path`, systemd's `LoadCredential=db-password:/etc/credstore/db-password`.)
_PATH_OR_URL = _c(r"(?:[A-Za-z0-9_.\-]+:)?(?:~|\.{1,2})?/[^/\s]+/.*|[A-Za-z][A-Za-z0-9+.\-]*://.*")


def _path_or_url(value: str) -> bool:
    """A path or a URL, not base64 that starts with "/" (`sasl.password=/etx1uK4C1zmR5RcD/mH8n...`)."""
    return _PATH_OR_URL.fullmatch(value) is not None and not _random_token(value)


# Code references rather than literals: dotted names (`settings.API_KEY`), snake_case variables
# and UPPER_CASE constants (`"GEMINI_API_KEY": FAKE_KEY`).
_CODE_REF = _c(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[a-z]+(?:_[a-z]+)+|[A-Z]+(?:_[A-Z]+)+")
# What may precede a key on its line for the line to count as a config line (.env, YAML, INI).
_CONFIG_LINE_PREFIX = _c(r"[ \t]*(?:export[ \t]+|set[ \t]+|ENV[ \t]+|-[ \t]+)?[\"']?")


# --- validators: (match, original text) -> span to redact, or None to reject ----------------------
# A span to redact, optionally with its own kind (for rules that cover several token families).
Span = tuple[int, int] | tuple[int, int, str]


def _has_digit_and_letter(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _random_looking(m: re.Match[str], text: str) -> tuple[int, int] | None:
    """Prose and kebab-case names are not keys: the token must mix digits and letters."""
    start, end = m.span("secret")
    return (start, end) if _has_digit_and_letter(text[start:end]) else None


def _key_as_user(m: re.Match[str], text: str) -> tuple[int, int] | None:
    """A URL's user that is random (a key, not a name) or 12+ digits (an account key: a name has letters)."""
    user = m.group("secret")
    if "@" not in text[m.end() : m.end() + 258].split("/", 1)[0]:
        return None  # not a user: `http://localhost:8080`, `host:port`
    return m.span("secret") if user.isdigit() or _looks_random(user) or _random_hex(user) else None


_COOKIE_PAIR = _c(r"(?:^|;)[ \t]*[^=;\s]{1,128}=(?P<value>[^;\s\"\\,]{16,4096})(?=[;\s\"\\,]|$)")


def _cookie(m: re.Match[str], text: str) -> tuple[int, int] | None:
    """From the first random cookie value to the end of the last (names between them go too)."""
    start = m.start("secret")
    spans = [
        (start + v.start("value"), start + v.end("value"))
        for v in _COOKIE_PAIR.finditer(text[start : m.end("secret")])
        if _looks_random(v.group("value").strip('"')) or _random_hex(v.group("value")) or _random_alnum(v.group("value"))
    ]
    return (spans[0][0], spans[-1][1]) if spans else None


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


# The base64 user id that starts a Discord bot token.
_DISCORD_TOKEN_ID = _c(r"[MNO][A-Za-z0-9_\-]{23,27}")


def _discord(m: re.Match[str], text: str) -> tuple[int, int] | None:
    start = _run_start(text, m.start(), _TOKEN_CHARS, 29)
    if start > 0 and text[start - 1] in _KEY_CHARS:
        return None  # glued to a longer token
    if not _DISCORD_TOKEN_ID.fullmatch(text, start, m.start()):
        return None
    return (start, m.end()) if _has_digit_and_letter(text[start : m.end()]) else None


def _telegram(m: re.Match[str], text: str) -> tuple[int, int] | None:
    """The bot id is 8-16 digits; letters may precede it (`https://api.telegram.org/bot<token>`)."""
    start = _run_start(text, m.start(), _DIGITS, 17)
    return (start, m.end()) if 8 <= m.start() - start <= 16 else None


def _at_config_line_start(text: str, pos: int) -> bool:
    lo = max(0, pos - 200)
    nl = text.rfind("\n", lo, pos)
    if nl < 0 and lo > 0:
        return False
    return _CONFIG_LINE_PREFIX.fullmatch(text, nl + 1, pos) is not None


# How far back a rule looks for the start of the line it checks (a command, SQL words, netrc
# tokens): bounded, so a 20 MB single-line text costs each match no more than this.
_LINE_LOOKBACK = 512


def _line_start(text: str, pos: int) -> int:
    """Start of the line holding ``pos``, or ``_LINE_LOOKBACK`` characters back if it is longer."""
    lo = max(0, pos - _LINE_LOOKBACK)
    nl = text.rfind("\n", lo, pos)
    return nl + 1 if nl >= 0 else lo


def _key_strength(key: str) -> int:
    """2: any literal value is a secret; 1: only a random-looking one; 0: not a secret key."""
    words = [w.lower() for w in _KEY_WORDS.findall(key)]
    while len(words) > 1 and words[-1] in _TRAILING_QUALIFIERS:
        words.pop()
    if not words or _POSITION_TOKEN.search("".join(words)):
        return 0
    last, before = words[-1], (words[-2] if len(words) > 1 else "")
    if _STRONG_WORD.fullmatch(before + last) and before + last not in _NOT_PASS_WORDS:
        return 2  # `pass_phrase`, `api_token`, `pass_word`
    if _STRONG_WORD.fullmatch(last) and last not in _NOT_PASS_WORDS:
        return 2
    if last.endswith("key"):
        qualifier = last[:-3] or before
        if qualifier in _KEY_QUALIFIERS:
            return 2
        return 0 if qualifier in _NOT_SECRET_KEYS else 1
    return 1 if last.endswith("auth") or last in ("authorization", "login", "pat") else 0


_BASE64 = _c(r"[A-Za-z0-9+/]{8,}={0,2}")


_ID_PARTS = _c(r"[_.\-]")


def _words_and_digest(value: str) -> bool:
    """Words around a hex digest (a cache key `Linux-pip-<sha256>`, `deps-<sha>`): a name, not a
    key. A vendor's prefix is letters too, but short or in capitals (`sk_pr_`, `NRBR-`)."""
    parts = _ID_PARTS.split(value)
    digests = [p for p in parts if len(p) >= 16 and all(c in string.hexdigits for c in p)]
    words = [p for p in parts if p not in digests]
    return bool(digests) and bool(words) and all(len(p) >= 3 and p.isalpha() and not p.isupper() for p in words)


def _looks_random(value: str) -> bool:
    """A key-like value: 16+ characters mixing upper case, lower case and digits, not words around
    a digest, or base64 of `user:password` (docker's `"auth":`)."""
    if any(c.isspace() for c in value) or _words_and_digest(value):
        return False
    classes = any(c.isupper() for c in value) + any(c.islower() for c in value) + any(c.isdigit() for c in value)
    if len(value) >= 16 and classes == 3:  # not "user-123-profile", a UUID or a hex digest
        return True
    if not _BASE64.fullmatch(value) or len(value) % 4:
        return False
    try:
        decoded = base64.b64decode(value, validate=True).decode("ascii")
    except (ValueError, UnicodeDecodeError):
        return False
    return ":" in decoded and decoded.isprintable()


def _block_end(text: str, start: int, indent: int) -> int:
    """End of the YAML block starting at ``start`` whose lines are indented more than ``indent``."""
    pos = end = start
    limit = min(len(text), start + 65536)
    while pos < limit:
        nl = text.find("\n", pos)
        line_end = len(text) if nl < 0 else nl
        line = text[pos:line_end]
        if line.strip():
            if len(line) - len(line.lstrip(" \t")) <= indent:
                break
            end = line_end
        pos = line_end + 1
        if nl < 0:
            break
    return end


def _spaced(m: re.Match[str], text: str, key_start: int, group: str, strength: int) -> Span | None:
    """`key value` without = or :, accepted in five shapes only: a CLI option, SQL `PASSWORD 'v'`,
    a netrc `password v` (after machine/login), a redis.conf `requirepass v` line, and a value
    named in prose (_in_prose)."""
    start, end = m.span(group)
    value = text[start:end]
    key = text[key_start : m.end("rest")].lower()
    if PLACEHOLDER.fullmatch(value) or _NUMBER.fullmatch(value):
        return None
    short = key.lstrip("-") in _SPACED_KEYS and _short_password(value)  # netrc `password pass123`
    if strength < 2 or len(value) < (MIN_PASSWORD_LEN if short else MIN_SECRET_LEN) or m.group("filler") or m.group("space").endswith(("(", "`")):
        return _in_prose(m, text, key, group, strength)
    return _spaced_shapes(m, text, key_start, key, group) or _in_prose(m, text, key, group, strength)


# What ends a sentence after a bare value in prose.
_PROSE_END = ".,:;!?)`"


def _in_prose(m: re.Match[str], text: str, key: str, group: str, strength: int) -> Span | None:
    """A value named in a sentence: `the db password is X`, `Use password X for`, `mistral key X`,
    `the token (X)`. Quoted after a password word and "is": any one word of 4+ characters;
    otherwise one token that mixes letters and digits and is not an identifier, a path or a
    version; after a plain "key" only a random-looking one."""
    if key == "pass":
        return None  # a verb: "pass force_zip64 to use"
    start, end = m.span(group)
    if group == "bare":
        while end > start and text[end - 1] in _PROSE_END:
            end -= 1
    value = text[start:end]
    if group in ("dq", "sq"):
        words = strength == 2 and m.group("filler") and not key.startswith(("token", "key"))
        return (start, end) if words and len(value) >= 4 and " " not in value.strip() and value.lower() != key else None
    # a password word and "is" before it: a password a person picks is often short (`Raven82?`)
    named = strength == 2 and m.group("filler") is not None and _PASSWORD_KEY.search(key) is not None
    if group != "bare" or len(value) < (MIN_PASSWORD_LEN if named else MIN_SECRET_LEN) or PLACEHOLDER.fullmatch(value) or _path_or_url(value):
        return None
    if _NUMBER.fullmatch(value) or _CODE_REF.fullmatch(value) or not _has_digit_and_letter(value):
        return None
    if strength < 2 or key.startswith("key"):
        if _looks_random(value) or _random_hex(value):
            return start, end
        return (start, end, "keyword_token") if _keyword_token(value) and not _public_word_before(text, m.start()) else None
    return start, end


# The characters of a token (base64, base64url, hex, JWT); a weak key's value must be made of them.
_TOKEN_VALUE = _c(r"[A-Za-z0-9+/=_.~:\-]+")


def _random_word(value: str) -> bool:
    """One word that mixes letters and digits and is not a dotted or snake_case name."""
    return " " not in value and _has_digit_and_letter(value) and not _CODE_REF.fullmatch(value)


def _qualified(key: str) -> bool:
    """A key of two words or more (`config.facebook.key`, `sonar.login`, `provisionDeviceKey`)."""
    return len(_KEY_WORDS.findall(key)) > 1


def _random_alnum(value: str) -> bool:
    """16+ letters and digits, both: the value of a vendor's `<name>.key` (hex and one-case keys too)."""
    return len(value) >= 16 and value.isalnum() and value.isascii() and _has_digit_and_letter(value)


def _random_hex(value: str) -> bool:
    """32+ hex digits: a key of a vendor whose keys are hex (also a digest: only where a key is named)."""
    return len(value) >= 32 and all(c in string.hexdigits for c in value) and _has_digit_and_letter(value)


def _short_password(value: str) -> bool:
    """A password of MIN_PASSWORD_LEN to MIN_SECRET_LEN characters where a config line or netrc
    names it: letters with digits or signs (`pass123`, `Rrhh1234`), not a word (`passwd: compat`
    in nsswitch.conf) nor a count (`pass: 120/120`)."""
    return any(c.isalpha() for c in value) and not value.isalpha() and not PLACEHOLDER.fullmatch(value)


# A version (`v2.1.0-rc.3`) and a UUID: ordinary values a keyword may name (`version key`, `api_key_id`).
_VERSION = _c(r"v?[0-9]+(?:\.[0-9]+)+(?:[-+.][A-Za-z0-9.+\-]*)?")
# A file name or a path of words: `object key uploads/<sha>.png`.
_FILE_LIKE = _c(r"\.[A-Za-z][A-Za-z0-9]{0,7}$|(?:^|/)[a-z]{4,}/")


def _keyword_token(value: str) -> bool:
    """A token of a secret's shape right after a secret keyword (`Using Key=<base36>`, `codemagic_key:
    "<base64url>"`, `api token - '<token>'`), where the keyword alone is too weak to redact any
    literal: 16 to 256 token characters, random (upper and lower case without digits from 24
    characters, or a part of 12+ characters mixing letters and digits), high entropy, not mostly
    words. Ordinary values a keyword names are kept: hex (a git sha, a content hash, a UUID: a
    hex key needs a stronger name, `api_key`, `secret`), words around a digest, versions, code
    names, paths, and ids with an id's prefix (`req_`, `cus_`), file names and paths."""
    if not 16 <= len(value) <= 256 or not _TOKEN_VALUE.fullmatch(value) or ":" in value or _FILE_LIKE.search(value):
        return False
    if all(c in string.hexdigits or c == "-" for c in value) or _VERSION.fullmatch(value):
        return False
    if _CODE_REF.fullmatch(value) or PLACEHOLDER.fullmatch(value) or _ID_PARTS.split(value, 1)[0].lower() in _NOT_VENDOR_PREFIXES:
        return False
    if _entropy(value) < 3.5:
        return False
    if _words_and_digest(value):
        return False
    parts = _ID_PARTS.split(value)
    mixed = max((len(p) for p in parts if _has_digit_and_letter(p)), default=0)
    if mixed >= 12 and sum(c.isdigit() for c in value) >= 2:
        return True
    two_cases = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return two_cases and len(value) >= 24 and sum(len(w) for w in _WORDY.findall(value)) < 0.5 * len(value)


_LAST_WORD = _c(r"([A-Za-z]+)[ \t]+$")


def _public_word_before(text: str, key_start: int) -> bool:
    """The word before a keyword says what is public or an id: `public key: age1...`, `cache key`."""
    word = _LAST_WORD.search(text, max(0, key_start - 32), _run_start(text, key_start, _KEY_CHARS, 64))
    return bool(word and (word.group(1).lower() in _NOT_SECRET_KEYS or _PUBLIC_VALUE_KEY.fullmatch(word.group(1).lower())))


def _spaced_shapes(m: re.Match[str], text: str, key_start: int, key: str, group: str) -> tuple[int, int] | None:
    """The four `key value` shapes of configuration and commands (see _spaced)."""
    start, end = m.span(group)
    value = text[start:end]
    if key.startswith("-"):  # --password VALUE, --api-token VALUE
        if value.lower().startswith(("env:", "file:", "fd:", "stdin")):
            return None  # openssl's `-pass env:VAR`: where the password is, not the password
        return (start, end) if not value.startswith("-") and not _path_or_url(value) else None
    line_start = _line_start(text, key_start)
    before = text[line_start:key_start].lower()
    if group in ("dq", "sq"):  # SQL: CREATE ROLE app LOGIN PASSWORD 'v', ALTER USER x WITH PASSWORD 'v'
        sql = key == "password" and _SQL_CONTEXT.search(before) and " " not in value
        ipsec = key == "psk" and before.rstrip().endswith(":")  # ipsec.secrets: `host %any : PSK "v"`
        return (start, end) if sql or ipsec else None
    if group != "bare" or key not in _SPACED_KEYS or not _NETRC_SUFFIX.match(text, end):
        return None
    if key in _LINE_KEYS:
        return (start, end) if not before.strip() else None
    netrc = _NETRC_PREFIX.fullmatch(text, line_start, key_start) and _NETRC_CONTEXT.search(text, max(0, key_start - 200), key_start)
    return (start, end) if netrc else None  # prose: "the username/\n password combination."


def _assignment(m: re.Match[str], text: str) -> Span | None:
    """Accept the value of a secret-named key only if it is a literal that may be a secret."""
    if m.start("lsecret") >= 0:
        return _under_label(m, text)
    key_start = _run_start(text, m.start(), _KEY_CHARS, 64)
    key = text[key_start : m.end("rest")]
    strength = _key_strength(key)
    if not strength:
        return None  # passenger=, compass=, tokenizer=, password_hash_algorithm=
    group = next(g for g in ("dq", "sq", "eq", "bq", "block", "bare") if m.start(g) >= 0)
    if m.start("space") >= 0:
        return _spaced(m, text, key_start, group, strength)
    sep = m.group("sep")
    if (sep == ">" and text[key_start - 1 : key_start] != "<") or (sep == "value=" and not m.group("pre")):
        return None  # `x > y` is a comparison; `value=` must follow a quoted XML key
    if sep.startswith("==") and not _PASSWORD_KEY.search(key.lower()):
        return None  # `password == 'literal'` hard-codes a password; `token == "Bearer"` compares a type
    if sep == "," and not (m.group("quote") and text[key_start - 1 : key_start] in "\"'" and _random_word(m.group(group))):
        return None  # a comma separates a quoted key from its value only, `setProperty("K_TOKEN", "v")`, not a list of names
    start, end = m.span(group)
    value = text[start:end].strip()
    if group == "block":
        if strength != 2:
            return None
        line_start = _line_start(text, key_start)
        indent = len(text[line_start:key_start]) - len(text[line_start:key_start].lstrip(" \t-"))
        first_line = text.index("\n", end) + 1
        block_end = _block_end(text, first_line, indent)
        block = text[first_line:block_end]
        block_start = first_line + len(block) - len(block.lstrip())
        return (block_start, block_end) if block_end > block_start else None
    if group == "bare":
        if value.endswith(":"):
            return None  # `token: GITHUB_TOKEN: x`: a key; its own match follows
        continued = _CONTINUED.match(text, end)
        if continued:  # a value continued on the next line
            end = continued.end()
        elif strength == 2 and not key.istitle() and _at_config_line_start(text, key_start):
            end = _passphrase_end(text, start, end)
        value = text[start:end]
    literal = group in ("dq", "sq", "eq", "bq") or text[end : end + 1] == ";"
    password = _PASSWORD_KEY.search(key.lower()) is not None
    config_line = group == "bare" and sep in ("=", ":") and _at_config_line_start(text, key_start) and _short_password(value)
    shortest = MIN_PASSWORD_LEN if password and (literal or config_line) else MIN_SECRET_LEN
    if len(value) < shortest or "[REDACTED:" in value or value.lower() in _TYPE_NAMES:
        return None
    if PLACEHOLDER.fullmatch(value) or _NUMBER.fullmatch(value) or _path_or_url(value):
        return None  # a URL with a password is handled by PASSWORD_IN_URL
    if strength == 1:
        if not _TOKEN_VALUE.fullmatch(value):
            return None  # `HEX_PAT = "[0-9A-Fa-f]{1,4}"`: a pattern, not a token
        if _looks_random(value) or (_qualified(key) and _random_alnum(value)):
            return start, end
        return (start, end, "keyword_token") if _keyword_token(value) and not _public_word_before(text, key_start) else None
    if group in ("bare", "bq"):
        if text[end : end + 1] in ("(", "["):
            return None  # token = tokenizer.encode(text), key = os.environ["K"]
        if (_CODE_REF.fullmatch(value) and not any(len(part) >= 20 and _random_token(part) for part in value.split("."))) or value.lower() in (
            key.lower(),
            key.lower().rsplit(".", 1)[-1],
        ):
            return None  # key=settings.API_KEY, token=access_token, self.password = password
        if _EXPRESSION_GOES_ON.match(text, end) and value.isidentifier() and not _has_digit_and_letter(value):
            return None  # PseudoToken = Whitespace + group(...); not `DB_PASSWORD=Tr0ub4dor-x93kq - note`
        spaced = bool(m.group("pre") or m.group("post")) or m.group("sep") != "="
        if spaced and "." in key and value.isidentifier() and not _has_digit_and_letter(value):
            return None  # self.token = nextchar
        if spaced and not _at_config_line_start(text, key_start) and not _has_digit_and_letter(value):
            return None  # inline `x = y` / `x: y` is code or prose unless the value looks random
    return start, end


def _passphrase_end(text: str, start: int, end: int) -> int:
    """End of an unquoted passphrase that starts at ``start``: the rest of the config line when it
    is 3 to 8 lower-case words and none is a common English word (then it is prose: `password:
    password to use with username`); else ``end``. Not after a token: `GH_TOKEN=ghp_x gh pr list`
    runs a command."""
    more = _MORE_WORDS.match(text, end)
    if more is None:
        return end
    words = text[start : more.end()].split()
    if len(words) < 3 or any(not (w.isalnum() and w.islower()) or w in _STOPWORDS for w in words):
        return end
    return start + len(text[start : more.end()].rstrip())


def _prefixed(m: re.Match[str], text: str) -> Span | None:
    """A separator followed by 16 token characters: try PREFIXED_TOKEN at the token's start and
    after each of the three separators before the trigger (`x.dop_v1_...`; no prefix has more)."""
    trigger = m.start()
    token_start = _run_start(text, trigger, _KEY_CHARS, _PREFIX_MAX)
    starts = [token_start]
    for pos in range(trigger, token_start, -1):
        if text[pos - 1] in "_-.":
            starts.append(pos)
            if len(starts) == 4:
                break
    for start in sorted(set(starts)):
        hit = PREFIXED_TOKEN.match(text, start)
        if hit and hit.end() > trigger:
            return (*hit.span(), _PREFIXED_ROWS[int(str(hit.lastgroup)[1:])][0])
    return _any_prefixed(text, token_start, trigger)


# A token of a vendor not in _PREFIXED_ROWS: a short word (and up to three short parts) then a
# body of 24+ token characters, the shape gitleaks' rules share (`sbp_<40 hex>`, `hvb.<random>`,
# `tskey-auth-<id>-<random>`, `dp.st.dev.<random>`). The body must be random: after "_" 32+ hex
# digits or a mix of letters and digits, after "." or "-" upper case, lower case and digits
# (`deps-<sha>`, `main.<hash>.js` are names with a digest in them).
_ANY_PREFIXED = _c(r"(?P<prefix>[A-Za-z][A-Za-z0-9]{1,7}(?:[_.\-][A-Za-z0-9]{1,8}){0,3}?(?P<sep>[_.\-]))(?P<body>[A-Za-z0-9_\-]{24,255})" + _E)
# Prefixes that name a digest, a temporary or cached object, or an id rather than a vendor (API
# request, message, tool-call and object ids in transcripts: `req_`, `toolu_`, `chatcmpl-`, `cus_`).
_NOT_VENDOR_PREFIXES = frozenset(
    "sha sha1 sha256 sha384 sha512 md5 h1 blake2b xxh hash digest tmp temp cache id uuid commit rev build file blob obj test"
    " req request msg toolu call chatcmpl resp run thread asst org cus evt pi ch sub prod price txn trace span".split()
)


_WORD_PART = _c(r"[A-Za-z0-9]*")
_BODY_SEPARATORS = _c(r"[_\-]")


def _any_prefixed(text: str, start: int, trigger: int) -> Span | None:
    if not text[trigger + 1 : trigger + 25].isalnum():
        return None  # the common case (an identifier, a kebab-case name): no body of 24 after this separator
    hit = _ANY_PREFIXED.match(text, start)
    if hit is None or hit.end() <= trigger or (start > 0 and text[start - 1] in "/\\"):
        return None
    word = _WORD_PART.match(hit.group("prefix")).group()  # type: ignore[union-attr]  # matches the empty string: never None
    if word.lower() in _NOT_VENDOR_PREFIXES:
        return None
    longest = max(_BODY_SEPARATORS.split(hit.group("body")), key=len)
    sep = hit.group("sep")
    shortest = 24 if sep == "." else 32  # ids: `req_<24>`, `chatcmpl-<29>`; code: `errors.InvalidBase64PaddingDefect`
    if not ((sep == "_" and _random_hex(longest)) or (len(longest) >= shortest and _random_token(longest))):
        return None
    if _public_value_key(text[max(0, start - 64) : start]):
        return None  # `"nextPageToken": "..."`, `"etag": "..."`, `"requestId": "..."`
    return (*hit.span(), "prefixed_token")


# The catalogued commands, found once per text when a candidate option first needs them.
# (Not before ":/": a URL's scheme.)
_COMMAND_NAME = _c(r"(?<![a-z0-9_\-])(?:" + "|".join(sorted(map(re.escape, _OPTIONS_BY_COMMAND), key=len, reverse=True)) + r")(?:\.exe)?(?![a-z0-9_\-]|:/)")


class _CommandLines:
    """The catalogued commands of the line last looked at, for one redact() call: the commands of a
    line are listed once (bisected per option), so a line of ten thousand options costs no more
    than ten thousand look-ups. Made anew for each call (_Rule.per_call): no text outlives it."""

    def __init__(self) -> None:
        self.line, self.end = 0, -1
        self.starts: list[int] = []
        self.found: list[tuple[int, str]] = []

    def options(self, text: str, pos: int) -> tuple[dict[str, str], str] | None:
        """The options table of the nearest catalogued command before ``pos`` on its line (within
        _LINE_LOOKBACK characters)."""
        if not self.line <= pos <= self.end:
            self.line = text.rfind("\n", 0, pos) + 1
            end = text.find("\n", pos)
            self.end = len(text) if end < 0 else end
            lowered = text[self.line : self.end].translate(_ASCII_LOWER)
            self.found = [(self.line + c.start(), c.group().removesuffix(".exe")) for c in _COMMAND_NAME.finditer(lowered)]
            self.starts = [start for start, _ in self.found]
        window = _line_start(text, pos)
        i = bisect.bisect_left(self.starts, pos)
        while i > 0 and self.starts[i - 1] >= window:
            i -= 1
            start, name = self.found[i]
            if name not in _SUBCOMMANDS or f" {_SUBCOMMANDS[name]}" in text[start:pos].lower():
                return _OPTIONS_BY_COMMAND[name]
        return None


def _password_flags() -> Callable[[re.Match[str], str], Span | None]:
    """_password_flag with the command lines of one redact() call."""
    commands = _CommandLines()
    return lambda m, text: _password_flag(m, text, commands)


def _password_flag(m: re.Match[str], text: str, commands: _CommandLines) -> tuple[int, int] | None:
    """The value of a password option, when the command on the line takes one there."""
    flag, gap = text[m.start()] + m.group("flag"), m.group("gap")
    glued = flag[:2] != "--" and flag[:1] == "-" and (len(flag) > 2 or not gap)  # -pPASS
    if not (flag in _ALL_OPTIONS or (glued and (flag[1] in _ALL_GLUED or flag[:2] in _ALL_OPTIONS))):
        return None  # the common case (mkdir -p, ls -a): no look at the line
    options = commands.options(text, m.start())
    if options is None:
        return None
    known, letters = options
    start, end = m.span("secret")
    # getopt: a short option's value may be glued to it (not a word: `influx -precision rfc3339`)
    if glued and (flag[1] in letters or (flag[:2] in known and not flag[2:].isalpha())):
        start = m.start() + 2
        word = _WORD.match(text, m.start())
        end = word.end() if word else end
    elif flag not in known or not gap:
        return None  # mysql -p db (a prompt, then the database), mysql -P3306
    value = text[start:end].strip("'\"")
    if value != value.strip() or (glued and len(value) < 3):
        return None  # `"-storepass " * 10 + "`: code around a string; `-pX`: a flag's letters
    sep = known.get(flag, "")
    if sep:
        if sep not in value:
            return None  # lftp -u user (a prompt), curl -U user
        start += len(text[start:end]) - len(text[start:end].lstrip("'\"")) + value.index(sep) + 1
        value = value.split(sep, 1)[1]
    if (
        not any(c.isalnum() for c in value)
        or value.isdigit()
        or PLACEHOLDER.fullmatch(value)
        or "`" in value
        or value.startswith(("env:", "file:", "fd:", "/"))
    ):
        return None  # a code span ends there: `psexec -p` in prose; openssl -pass env:VAR; `"-p", ""` in a table
    return start, end


def _samba_user(m: re.Match[str], text: str) -> tuple[int, int] | None:
    line = text[_line_start(text, m.start()) : m.start()].lower()
    if not any(command in line for command in _SAMBA_COMMANDS) or PLACEHOLDER.fullmatch(m.group("secret")):
        return None  # psql -U postgres, date -U
    return m.span("secret")


def _net_use(m: re.Match[str], text: str) -> tuple[int, int] | None:
    """The password word of `net use`: the first word after the share that is not an option
    (`/user:x`, `/persistent:no`) nor `*` (a prompt)."""
    for word in _WORD.finditer(text, m.start("rest"), m.end("rest")):
        value = word.group().strip("\"'")
        if word.group().startswith("/"):
            continue
        if not value or value == "*" or PLACEHOLDER.fullmatch(value):
            return None
        return word.span()
    return None


def _pgpass(m: re.Match[str], text: str) -> tuple[int, int] | None:
    """A .pgpass line: a host name (or `*`) from the line's start; the password not a number (a
    MAC address, a time) nor a placeholder."""
    value = m.group("secret")
    if not _PGPASS_HOST.fullmatch(text, _line_start(text, m.start()), m.start()) or _NUMBER.fullmatch(value) or PLACEHOLDER.fullmatch(value):
        return None
    return m.span("secret")


def _tilde(m: re.Match[str], text: str) -> Span | None:
    """Azure AD secrets begin 5 characters before their "~" (`abc8Q~`), OpenShift tokens 6 ("sha256")."""
    azure = text[m.start() - 1] == "Q"
    start = m.start() - (5 if azure else 6)
    if start > 0 and text[start - 1] in _TOKEN_CHARS:
        return None
    return start, m.end(), "azure_ad_secret" if azure else "openshift_token"


def _named(m: re.Match[str], text: str) -> Span | None:
    return m.start(), m.end(), str(m.lastgroup)


def _identified_by(m: re.Match[str], text: str) -> tuple[int, int] | None:
    """A quoted value always; a bare one (Oracle) only in a CREATE/ALTER USER statement, not in
    prose ("messages identified by UID")."""
    if m.start("bare") < 0:
        return m.span("sq" if m.start("sq") >= 0 else "dq")
    statement = text[_line_start(text, m.start()) : m.start()].lower()
    return m.span("bare") if _SQL_USER.search(statement) else None


# --- tokens without a label ---------------------------------------------------------------------
# The one rule for what is redacted without a key name, a prefix or a command around it: a token of
# a secret's shape, 32 characters or more of base64/base62 (an AWS secret access key is 40), that is
# random: upper case, lower case and two digits or more, a high Shannon entropy, and not made of
# words (an identifier, `AbstractSingletonProxyFactoryBean2`, is runs of lower-case letters).
# Hex (a git sha, a digest, a UUID), one-case base32 (ULIDs, nix hashes) never match; neither do
# the encodings that are public by their context (_PUBLIC_BEFORE, a PEM block that is not a
# private key) nor base64 that decodes to text without a ":" (a `user:password` pair is a secret),
# nor a part of a URL. Its kind ranks last: where a labelled rule matches too, its kind is kept.
_UNLABELLED = _c(r"(?<![A-Za-z0-9+/_\-.=])[A-Za-z0-9][A-Za-z0-9+/_\-]{31,511}={0,2}(?![A-Za-z0-9+/_\-=]|\.[A-Za-z0-9])")
UNLABELLED_MIN_ENTROPY = 3.9  # bits per character; 32 random base62 characters: 3.99 at the lowest of 2,000 draws, 40 of base64: 4.32
_WORDY = _c(r"[a-z]{3,}|[A-Z]{4,}")
_PUBLIC_BEFORE = _c(
    r"(?:sha(?:1|224|256|384|512)[-:=]|md5[-:]|h1:|base64,|ssh-[a-z0-9]+[ \t]+|ecdsa-sha2-[a-z0-9]+[ \t]+|sk-(?:ssh|ecdsa)-[a-z0-9@.\-]+[ \t]+)$",
)
# A digest written with its algorithm (Subresource Integrity, npm's lockfile): one token with it.
_DIGEST_PREFIX = _c(
    r"(?:sha(?:1|224|256|384|512)|md5)-",
)
# The key a value is assigned to, just before it (`key: `, `key=`, `"key": "`), and the key words
# that say the value is a position, a digest or an id rather than a credential.
_KEY_BEFORE = _c(r"([A-Za-z_][A-Za-z0-9_.\-]{0,63})[\"']?[ \t]*[:=][ \t]*[\"']?$")
_PUBLIC_VALUE_KEY = _c(
    r"(?:page|next|continuation|cursor|resume|sync)_?token|etag|hash|digest|checksum|integrity|fingerprint|sha|uuid|(?:^|[_.\-])id$|commit|revision"
)
_PEM_ARMOUR = _c(r"-----(BEGIN|END) ([A-Z0-9 ]{1,40})-----")


def _public_value_key(before: str) -> bool:
    """The text before a value ends with a key naming a position, a digest or an id (`requestId:`)."""
    key = _KEY_BEFORE.search(before)
    return bool(key and _PUBLIC_VALUE_KEY.search(_CAMEL.sub(r"\1_\2", key.group(1)).lower()))


_CAMEL = _c(r"([a-z0-9])([A-Z])")


def _entropy(value: str) -> float:
    n = len(value)
    return -sum(k / n * math.log2(k / n) for k in Counter(value).values())


def _random_token(token: str) -> bool:
    """Upper case, lower case and two digits or more, high entropy, and not mostly words (nor
    words around a digest)."""
    digits = sum(c.isdigit() for c in token)
    if digits < 2 or not any(c.isupper() for c in token) or not any(c.islower() for c in token):
        return False
    if _words_and_digest(token):
        return False
    if sum(len(w) for w in _WORDY.findall(token)) >= 0.5 * len(token):
        return False
    return _entropy(token) >= UNLABELLED_MIN_ENTROPY


def _text_in_base64(token: str) -> bool:
    """Base64 of printable text that is not a `user:password` pair (no ":", or words with spaces)
    and holds no secret itself (the rules run on the decoded text: `echo <base64 of a config line>`)."""
    padded = token + "=" * (-len(token) % 4)
    try:
        decoded = base64.b64decode(padded, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return False
    if not decoded.replace("\n", " ").replace("\t", " ").isprintable():
        return False
    return (":" not in decoded or " " in decoded.strip()) and not _merge(_candidates(decoded, _RULES))


def _in_public_pem(text: str, pos: int) -> bool:
    """Inside a PEM block that is not a private key (a certificate, a public key)."""
    last = None
    for last in _PEM_ARMOUR.finditer(text, max(0, pos - 8192), pos):
        pass
    return last is not None and last.group(1) == "BEGIN" and "PRIVATE" not in last.group(2)


# Hex named as a secret in the prose before it on its line (`use this API key for staging <hex>`,
# `the webhook secret, new one is <hex>`): a git sha, a digest or an id has the same shape, so the
# words before it must name a secret and none may name a commit, a hash or an id.
_HEX_SECRET = _c(r"[0-9a-f]{32,128}|[0-9A-F]{32,128}")
_SECRET_NAMED_BEFORE = _c(
    r"\b(?:(?:api|secret|signing|encryption|private|hmac|master|client|app)[ _\-]?(?:key|token|secret)"
    r"|(?:access|auth|bearer|bot|api)[ _\-]?token|secret|token|password|passphrase)\b"
)
_NOT_A_SECRET_BEFORE = _c(
    r"\b(?:commit|commits|sha[0-9]*|hash|hashes|digest|checksum|md5|ids?|uuid|fingerprint|etag|revision|rev|build"
    r"|trace|span|request|cache|public|object|session|nonce|salt)\b"
)


# Words of a sentence between the name and the hex (`for staging`, `, new one is`), not code.
_PROSE_BETWEEN = _c(r"[ \t,]*(?:[a-z(][a-z()' \-]{0,48}[ \t])?[(]?")


def _hex_named_in_prose(text: str, start: int) -> bool:
    line = text[max(_line_start(text, start), start - 64) : start].lower()
    named = _SECRET_NAMED_BEFORE.search(line)
    return named is not None and not _NOT_A_SECRET_BEFORE.search(line) and _PROSE_BETWEEN.fullmatch(line, named.end()) is not None


def _unlabelled(m: re.Match[str], text: str) -> tuple[int, int] | None:
    token = m.group().rstrip("=")
    if _HEX_SECRET.fullmatch(token) and _has_digit_and_letter(token) and _hex_named_in_prose(text, m.start()):
        return m.span()
    if _DIGEST_PREFIX.match(token) or not _random_token(token) or _text_in_base64(m.group()):
        return None
    before = text[max(0, m.start() - 64) : m.start()]
    if _PUBLIC_BEFORE.search(before.lower()) or _in_public_pem(text, m.start()):
        return None
    word_start = max(before.rfind(" "), before.rfind("\t"), before.rfind("\n")) + 1
    if "://" in before[word_start:]:
        return None  # part of a URL: its password, path and query have their own rules
    if _public_value_key(before):
        return None  # labelled as what it is: `next_page_token: ...`, `"etag": "..."`
    return m.span()


# A token alone on its line under a line that names it ("Please use the following password to
# proceed:", "signing secret", "the key is below"), blank lines between allowed: hex and one-case
# tokens too, which _UNLABELLED never takes alone (a git sha has their shape). Found by the last
# branch of _ASSIGNMENT_TAIL (the same scan as the key words), judged here.
# How the line naming it ends: with a ":" or with the word itself ("signing secret", "... is below").
_LABEL_END = _c(r"(?::|password|passwd|passphrase|secret|token|key|credentials?|below)[ \t]*$")


_PUBLIC_LABEL = _c(r"\b(?:id|sha[0-9]*|md5|public|cache|object|cursor)\b")


def _under_label(m: re.Match[str], text: str) -> Span | None:
    if not _LABEL_END.search(text, m.start(), m.end("label")):
        return None
    start, end = m.span("lsecret")
    label = text[_line_start(text, m.start()) : m.end("label")].lower()
    if _PUBLIC_VALUE_KEY.search(label) or _PUBLIC_LABEL.search(label):
        return None  # "commit key:", "sha256 checksum:", "request id:"
    value = text[start:end]
    if _NUMBER.fullmatch(value) or _CODE_REF.fullmatch(value) or PLACEHOLDER.fullmatch(value) or not _has_digit_and_letter(value):
        return None
    if _random_token(value) or _random_hex(value[:64]) or (value.isalnum() and _entropy(value) >= 3.5):
        return start, end, "labelled_line"
    return None


_NAME_VALUE = _c(
    r"name[\"']?[ \t]*[:=][ \t]*[\"']?(?P<key>[a-z0-9_.\-]{1,64})[\"']?[ \t]*,?[ \t]*(?:\r?\n[ \t]*-?[ \t]*)?"
    r"[\"']?value[\"']?[ \t]*[:=][ \t]*(?:\"(?P<dq>[^\"\r\n]{1,4096})\"|'(?P<sq>[^'\r\n]{1,4096})'|(?P<bare>[^\s\"',;}\]]{1,4096}))"
)


def _name_value(m: re.Match[str], text: str) -> tuple[int, int] | None:
    strength = _key_strength(text[m.start("key") : m.end("key")])
    group = next(g for g in ("dq", "sq", "bare") if m.start(g) >= 0)
    start, end = m.span(group)
    value = text[start:end]
    if not strength or len(value) < MIN_SECRET_LEN or PLACEHOLDER.fullmatch(value) or _NUMBER.fullmatch(value) or _path_or_url(value):
        return None
    if strength == 1 or (group == "bare" and _CODE_REF.fullmatch(value)):
        return (start, end) if _TOKEN_VALUE.fullmatch(value) and _looks_random(value) else None
    return start, end


# --- rules --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Rule:
    kind: str
    regex: re.Pattern[str]
    lowered: bool = False  # the regex is lower-case and runs on the lower-cased text
    extract: Callable[[re.Match[str], str], Span | None] | None = None  # default: the span of group 'secret', else the whole match
    # or an extract made anew for each redact() call, holding what it learns about the text for that call only
    per_call: Callable[[], Callable[[re.Match[str], str], Span | None]] | None = None


# The regexes longer than a line; the table below holds the others in their rows.
# PEM private key: BEGIN to matching END (also inside JSON strings with literal "\n"); the body
# may not contain "-----", so each BEGIN scans at most up to the next armour line. Without its
# END line (truncated output): the BEGIN line, then header ("Proc-Type: 4,ENCRYPTED") and base64 lines.
_PEM_KEY = _c(
    r"-----BEGIN (?:(?P<label>[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?)-----(?:(?!-----)[\s\S]){0,65536}?-----END (?P=label)-----"
    r"|[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----(?:(?:\r?\n|\\n)+(?:[A-Za-z\-]{1,40}: [^\r\n\\]{0,200}|[A-Za-z0-9+/=]{1,256})(?=[\r\n]|\\n|\Z))*)"
)
# JSON Web Token: base64url header and payload (both JSON objects, so "eyJ"), optional signature;
# and Grafana's legacy API key, base64 of '{"k":"...'.
_JWT = _c(
    _tok("eyJ", 3) + r"(?:(?P<jwt>[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*)"
    r"|(?P<grafana_token>rIjoi[A-Za-z0-9]{70,400}={0,3}))" + _E
)
# Authorization / Proxy-Authorization header value, of any scheme (Bearer, Basic, Token, a vendor's
# own: `Splunk`, `GenieKey`, `SSWS`) or none: _authorization judges it.
_AUTH_HEADER = _c(r"authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:(?P<scheme>[a-z][a-z0-9_\-]{1,31})[ \t]+)?(?P<secret>[a-z0-9._~+/\-]{8,}=*)")
# Schemes whose credential may be any word (a documented scheme names what follows as a credential).
_AUTH_SCHEMES = frozenset("bearer basic token digest apikey api-key negotiate ntlm key sso-key".split())


def _authorization(m: re.Match[str], text: str) -> tuple[int, int] | None:
    """After a standard scheme any credential of 8+ characters; after a vendor's scheme or none, a
    token that looks like one: letters and digits, 16+ characters (a UUID or hex key too)."""
    start, end = m.span("secret")
    value = text[start:end]
    if PLACEHOLDER.fullmatch(value) or _CODE_REF.fullmatch(value):
        return None
    if m.group("scheme") in _AUTH_SCHEMES:
        return start, end
    return (start, end) if len(value) >= 16 and _has_digit_and_letter(value) and not _VERSION.fullmatch(value) else None


# Prefixed tokens without a separator, grouped by first letter (a one-character literal scans fast).
_A_TOKENS = _c(
    _tok("A", 1, "A-Za-z0-9_\\-") + r"(?:(?P<atlassian_token>TATT3[A-Za-z0-9_=\-]{100,300})"
    r"|(?P<artifactory_key>KCp[A-Za-z0-9]{69})"
    r"|(?P<twitter_bearer_token>A{21}[A-Za-z0-9%]{80,100})"
    r"|(?P<yandex_api_key>QVN[A-Za-z0-9_\-]{35,38})"
    r"|(?P<bedrock_key>BSK[A-Za-z0-9+/]{109,269}={0,2})"
    r"|(?P<fcm_server_key>AAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,200})"
    r"|(?P<onepassword_key>3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}))" + _E
)
_E_TOKENS = _c(
    _tok("E", 1, "A-Za-z0-9_\\-") + r"(?:(?P<square_token>AAA[A-Za-z0-9_\-]{22,60})"
    r"|(?P<facebook_token>AA[CM][A-Za-z0-9]{100,})"
    r"|(?P<easypost_key>Z[AT]K[A-Za-z0-9]{54}))" + _E
)
# An option and its value (`-p PASS`, `-pPASS`, `-storepass PASS`, `-p:PASS`, `/p:PASS`, `/rp PASS`):
# _password_flag() looks the option up in _OPTION_TABLE under the command on its line.
_OPTION_VALUE = r"(?P<secret>'[^'\r\n]{1,256}'|\"[^\"\r\n]{1,256}\"|[^\s'\"\-][^\s'\"]{0,255})"
_PASSWORD_FLAG = _c(r"-(?<![^\s\"']-)(?P<flag>-?[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z]+)*)(?P<gap>[ \t]+|[=:]|)" + _OPTION_VALUE)
_WINDOWS_FLAG = _c(r"/(?<![^\s\"']/)(?P<flag>[A-Za-z]{1,8})(?P<gap>[ \t]+|:)" + _OPTION_VALUE)
# Samba's clients take `-U user%password` (`--user=DOMAIN\\user%password`): what follows the "%".
_SAMBA_USER = _c(r"-(?<![^ \t]-)(?:U|-user[ \t=])[ \t]*[\"']?[^\s%\"']{1,256}%(?P<secret>[^\s\"']{1,256})")
_SAMBA_COMMANDS = ("smbclient", "rpcclient", "smbcacls", "smbget", "smbtree", "winexe", "samba-tool", "net ")
# Windows `net use [drive:] \\host\share [password | *] [/user:[domain\]user] [/options]`: the one
# word that is not an option after the share (run on the lower-cased text; offsets are the same).
_NET_USE = _c(r"net[ \t]+use[ \t]+(?:[a-z]:[ \t]+|\*[ \t]+)?\\\\[^\s\\]+\\\S*(?P<rest>[^\r\n]{0,512})")
_WORD = _c(r"\S+")
# A .pgpass line, `host:port:database:user:password` (port digits or `*`, `\:` escapes a colon):
# found at its port, the host checked by _pgpass.
_PGPASS = _c(r":(?:[0-9]{1,5}|\*):(?:[^\s:\\]|\\.){1,128}:(?:[^\s:\\]|\\.){1,128}:(?P<secret>(?:[^\s:\\]|\\.){1,256})(?=[ \t]*(?:\r?\n|\Z))")
_PGPASS_HOST = _c(r"[ \t]*(?:[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*|\*)")
# Passwords given as a command's argument rather than an option (each tool's documented syntax):
# an Oracle logon `user/password[@db]` (sqlplus, sqlldr, expdp, impdp, exp, imp, dgmgrl, rman
# target; `connect user/password@db` at a SQL*Plus prompt), `rabbitmqctl add_user|change_password
# USER PASSWORD`, `mc alias set NAME URL ACCESS-KEY SECRET-KEY`, `echo 'user:password' | chpasswd`,
# PowerShell's `ConvertTo-SecureString 'password' -AsPlainText`, Windows `net user NAME PASSWORD`.
# Run on the lower-cased text (offsets are the same).
_ORACLE_LOGON = r"[\"']?[a-z0-9_$#]{1,64}/(?P<oracle>[^\s@/'\"]{1,128})(?=[@\s'\"]|$)"
_BARE_OR_QUOTED = r"'[^'\r\n]{1,256}'|\"[^\"\r\n]{1,256}\"|[^\s'\"\-][^\s'\"]{0,255}"
# One regex each, every one led by a literal (a scan for a literal is fast; an alternation is not).
_COMMAND_ARGUMENTS = tuple(
    _c(pattern)
    for pattern in (
        r"sql(?<![a-z0-9_.\-]sql)(?:plus|ldr)(?:\.exe)?(?:[ \t]+-[a-z]+)*[ \t]+(?:userid=)?" + _ORACLE_LOGON,
        r"sql>[ \t]*conn(?:ect)?[ \t]+(?=[^\s/]{1,64}/[^\s@]{1,128}@)" + _ORACLE_LOGON,
        r"pdp(?<![a-z0-9_.\-][ei][mx]pdp)(?:\.exe)?(?:[ \t]+-[a-z]+)*[ \t]+(?:userid=)?" + _ORACLE_LOGON,
        r"rman(?<![a-z0-9_.\-]rman)[ \t]+target[ \t]+" + _ORACLE_LOGON,
        r"rabbitmqctl(?:\.bat)?[ \t][^\r\n]{0,128}?(?:add_user|change_password)[ \t]+[\"']?[^\s\"']{1,128}[\"']?[ \t]+(?P<rabbit>" + _BARE_OR_QUOTED + ")",
        r"mc(?<![a-z0-9_.\-]mc)(?:\.exe)?[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)"
        r"[ \t]+\S+[ \t]+\S+[ \t]+\S+[ \t]+(?P<minio>[^\s'\"\-][^\s'\"]{0,255})",
        r"convertto-securestring[ \t]+(?:-string[ \t]+)?(?:'(?P<pssq>[^'\r\n]{1,256})'|\"(?P<psdq>[^\"\r\n]{1,256})\")",
        r"net(?<![a-z0-9_.\-]net)[ \t]+user[ \t]+(?:\"[^\"\r\n]{1,64}\"|[^\s/\"]{1,64})[ \t]+(?P<netuser>[^\s/*\"][^\s\"]{0,255})",
        # unixODBC `isql [-v] DSN USER PASSWORD`; DB2 `connect to DB user U using PASSWORD`
        r"isql(?<![a-z0-9_.\-]isql)(?:[ \t]+-[a-z0-9]+)*[ \t]+[^\s\-]\S*[ \t]+[^\s\-]\S*[ \t]+(?P<isql>" + _BARE_OR_QUOTED + ")",
        r"connect[ \t]+to[ \t]+\S+[ \t]+user[ \t]+\S+[ \t]+using[ \t]+(?P<db2>" + _BARE_OR_QUOTED + ")",
        # Bundler `bundle config [set] [--global] HOST USER:PASSWORD` (and its BUNDLE_HOST__COM=USER:PASSWORD),
        # Poetry `poetry config http-basic.NAME USER PASSWORD` / `pypi-token.NAME TOKEN`
        r"bundle[ \t]+config[ \t]+(?:set[ \t]+)?(?:--(?:global|local)[ \t]+)?[a-z0-9\-]+(?:\.[a-z0-9\-]+)+[ \t]+"
        r"[\"']?[^\s:\"']{1,128}:(?P<bundler>[^\s\"']{1,256})",
        r"bundle_[a-z0-9_]{1,64}__[a-z0-9_]{1,64}[\"']?[ \t]*[:=][ \t]*[\"']?[^\s:\"']{1,128}:(?P<bundleenv>[^\s\"']{1,256})",
        r"poetry[ \t]+config[ \t]+(?:http-basic\.\S+[ \t]+\S+|pypi-token\.\S+)[ \t]+(?P<poetry>" + _BARE_OR_QUOTED + ")",
        # network device configuration (Cisco IOS and the like): type 0 or 7 passwords, SNMP communities, server keys
        r"username[ \t]+\S+(?:[ \t]+privilege[ \t]+[0-9]+)?[ \t]+(?:password|secret)[ \t]+(?:[07][ \t]+)?(?P<ciscouser>\S+)",
        r"enable[ \t]+(?:password|secret)[ \t]+(?:level[ \t]+[0-9]+[ \t]+)?(?:[07][ \t]+)?(?P<ciscoenable>\S+)",
        r"snmp-server[ \t]+community[ \t]+(?P<snmp>\S+)",
        r"-server(?<=tacacs-server|radius-server)[ \t]+(?:host[ \t]+\S+[ \t]+)?key[ \t]+(?:[07][ \t]+)?(?P<serverkey>\S+)",
        # an expect script answering a password prompt: `expect "password:"` then `send "v\r"`
        r"expect[ \t]+(?:-[a-z]+[ \t]+)?\"[^\"\r\n]{0,64}(?:pass|secret|token|pin|phrase)[^\"\r\n]{0,64}\"[ \t]*(?:\r?\n[ \t]*|;[ \t]*)"
        r"send[ \t]+(?:--[ \t]+)?\"(?P<expect>[^\"\\\r\n]{1,256})",
    )
)
# `echo 'user:password' | chpasswd`: the echo before the pipe, found from "chpasswd".
_CHPASSWD_ECHO = _c(r"echo[ \t]+(?:-[en]+[ \t]+)?[\"']?[A-Za-z0-9_.\-]{1,64}:(?P<secret>[^\s'\"]{1,256})[\"']?[ \t]*\|[ \t]*(?:sudo[ \t]+)?$")


def _chpasswd(m: re.Match[str], text: str) -> tuple[int, int] | None:
    line_start = _line_start(text, m.start())
    echo = _CHPASSWD_ECHO.search(text, line_start, m.start())
    if echo is None or PLACEHOLDER.fullmatch(echo.group("secret")) or _STRONG_WORD.fullmatch(echo.group("secret").lower()):
        return None  # `echo 'user:password' | chpasswd` in a man page
    return echo.span("secret")


_DSN_PASSWORD_CHARS = frozenset(string.printable) - frozenset(string.whitespace + ":@/\"'`")


def _dsn_password(m: re.Match[str], text: str) -> tuple[int, int] | None:
    """The password of a DSN `user:password@tcp(`, found back from its "@": a user (a word that
    starts the string) and ":" before it."""
    start = _run_start(text, m.start(), _DSN_PASSWORD_CHARS, 256)
    if start == m.start() or text[start - 1 : start] != ":":
        return None
    user_start = _run_start(text, start - 1, _KEY_CHARS, 64)
    if user_start == start - 1 or (user_start > 0 and text[user_start - 1] not in "\"'` \t=(") or PLACEHOLDER.fullmatch(text[start : m.start()]):
        return None
    return start, m.start()


def _sasl_passwd(m: re.Match[str], text: str) -> tuple[int, int] | None:
    """A Postfix sasl_passwd line: `[host]` starts the line."""
    line = text[_line_start(text, m.start()) : m.start()].lstrip()
    return m.span("secret") if line.startswith("[") and " " not in line and not PLACEHOLDER.fullmatch(m.group("secret")) else None


# A call whose name says it takes a credential: `login(`, `connect(`, `auth(`, `Credential(`, `bind(`,
# `setPassword(`, `.password(`, `basic_auth(`, `ftplib.FTP(`, `new PDO(`, `smtp.start(`, `auth=(`: its
# string literals that look like a password (_credential_call). One regex per word (run on the
# lower-cased text): each is led by a literal; the name's other letters and a `.method` may follow.
_CREDENTIAL_CALL_WORDS = ("login", "logon", "connect", "auth", "credential", "bind", "password", "passwd", "secret", "ftp", "pdo", "sequelize", "smtp")
_CREDENTIAL_CALLS = tuple(_c(word + r"[a-z0-9_]{0,32}(?:(?:\.|::)[a-z_][a-z0-9_]{0,32})?(?:[ \t]*=[ \t]*)?\(") for word in _CREDENTIAL_CALL_WORDS)
# The string literals of a call's arguments, up to its closing parenthesis (or the end of the line).
_CALL_LITERAL = _c(r"\"((?:[^\"\\\r\n]|\\.){0,256})\"|'((?:[^'\\\r\n]|\\.){0,256})'|([()])|[\r\n;{]")
_HOST_OR_DN = _c(r"[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+|[A-Za-z]+=.*|[^@\s]+@[^@\s]+\.[A-Za-z]{2,}")
_PASSWORD_SIGNS = frozenset("!@#$%^&*?~+=_")


def _password_like(value: str) -> bool:
    """A literal a person or a generator made a password: letters with digits and a sign
    (`Willow17?`), or a random token (16+ letters and digits, high entropy); not a host, an e-mail
    address, a DN, a path, a placeholder, a name or a format string."""
    if not 6 <= len(value) <= 128 or any(c.isspace() for c in value) or "%s" in value or "{" in value:
        return False
    if PLACEHOLDER.fullmatch(value) or _HOST_OR_DN.fullmatch(value) or _path_or_url(value) or _CODE_REF.fullmatch(value) or _VERSION.fullmatch(value):
        return False
    if _STRONG_WORD.fullmatch(value.lower()):
        return False
    signed = any(c in _PASSWORD_SIGNS for c in value) and any(c.isalpha() for c in value) and any(c.isdigit() for c in value)
    return signed or _random_token(value) or (_random_alnum(value) and _entropy(value) >= 3.5)


def _credential_call(m: re.Match[str], text: str) -> Span | None:
    """The password-like literals among a credential call's arguments (the user and host stay); a
    second literal after a first in a login or auth call (`imap.login("user", "<app password>")`)."""
    found: list[tuple[int, int]] = []
    depth, literals = 1, 0
    for lit in _CALL_LITERAL.finditer(text, m.end(), min(len(text), m.end() + 512)):
        paren = lit.group(3)
        if paren is None and lit.group(1) is None and lit.group(2) is None:
            break  # the end of the line or of a statement
        if paren:
            depth += 1 if paren == "(" else -1
            if depth == 0:
                break
            continue
        group = 1 if lit.group(1) is not None else 2
        value = lit.group(group)
        literals += 1
        second = literals >= 2 and m.group().startswith(("login", "auth")) and len(value) >= 8 and value.isalnum() and not _HOST_OR_DN.fullmatch(value)
        if _password_like(value) or second:
            found.append(lit.span(group))
    if not found:
        return None
    return found[0][0], found[-1][1]


# `echo 'value' | command --password-stdin`, `echo 'value' > ~/.vault_pass`: a value echoed into a
# command or a file whose name says it takes a secret.
_ECHOED = _c(
    r"echo[ \t]+(?:-[en]+[ \t]+)?(?:'(?P<sq>[^'\s]{1,256})'|\"(?P<dq>[^\"\s]{1,256})\"|(?P<bare>[^\s'\"|>&;]{1,256}))[ \t]*(?:\||>>?)"
    r"(?P<rest>[^\r\n]{0,256}?)(?:pass|secret|token|stdin|cred|key)"
)


def _echoed(m: re.Match[str], text: str) -> tuple[int, int] | None:
    group = next(g for g in ("sq", "dq", "bare") if m.start(g) >= 0)
    value = text[m.start(group) : m.end(group)]
    return m.span(group) if _password_like(value) else None


def _command_argument(m: re.Match[str], text: str) -> tuple[int, int] | None:
    group = str(m.lastgroup)
    start, end = m.span(group)
    value = text[start:end].strip("'\"")
    if len(value) < 4 or _NUMBER.fullmatch(value) or PLACEHOLDER.fullmatch(value) or "`" in value or _STRONG_WORD.fullmatch(value.lower()):
        return None  # exp 2/3, net user bob *
    if group == "netuser" and not (_has_digit_and_letter(value) or not value.isalnum()):
        return None  # prose: "the net user command lists"
    return start, end


# SQL: CREATE USER ... IDENTIFIED BY 'pw' (also IDENTIFIED WITH plugin BY 'pw'; Oracle: unquoted).
_SQL_IDENTIFIED_BY = _c(
    r"identified[ \t]+(?:with[ \t]+[a-z_0-9]+[ \t]+)?by[ \t]+(?:password[ \t]+)?"
    r"(?:'(?P<sq>[^'\r\n]{1,256})'|\"(?P<dq>[^\"\r\n]{1,256})\"|(?P<bare>[^\s;'\"]{1,256}))"
)

# Most specific first: when spans overlap, the merged span takes the earliest rule's kind.
_RULES: tuple[_Rule, ...] = (
    _Rule("private_key", _PEM_KEY),
    # AWS access key id: AKIA (long-term), ASIA (STS), ABIA, ACCA, A3T* + 16 upper-case alphanumerics.
    _Rule("aws_access_key", _c(_tok("(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])", 4, "A-Z0-9") + r"(?![A-Z0-9]{9}EXAMPLE(?![A-Z0-9]))[A-Z0-9]{16}(?![A-Z0-9])")),
    # AWS secret access key: 40 base64 characters after a (aws_)secret_access_key / SecretAccessKey name.
    _Rule("aws_secret_key", _c(r"secret_?access_?key[\"']?[ \t]*[:=][ \t]*[\"']?(?P<secret>[a-z0-9/+]{40})(?![a-z0-9/+])"), lowered=True),
    *(_Rule(kind, _c(re.escape(path) + r"(?P<secret>" + secret + ")")) for kind, path, secret in _WEBHOOK_ROWS),
    _Rule("google_api_key", _c(_tok("AIza", 4) + r"[0-9A-Za-z_\-]{35}" + _E)),
    # Twilio API key SID (SK) and account SID (AC): + 32 lower-case hex. Two rules: a literal
    # start scans 15x faster than (?:SK|AC).
    _Rule("twilio_key", _c(_tok("SK", 2, "A-Za-z0-9") + r"[0-9a-f]{32}(?![A-Za-z0-9])")),
    _Rule("twilio_key", _c(_tok("AC", 2, "A-Za-z0-9") + r"[0-9a-f]{32}(?![A-Za-z0-9])")),
    _Rule("jwt", _JWT, extract=_named),
    # Azure storage / service bus connection-string keys (AccountKey=..., SharedAccessKey=...).
    _Rule("azure_storage_key", _c(r"key=(?:(?<=accountkey=)|(?<=sharedaccesskey=))(?P<secret>[a-z0-9+/]{20,}={0,2})"), lowered=True),
    # Discord bot token "<user id>.<timestamp>.<hmac>": this finds ".<timestamp>.<hmac>" and
    # _discord() checks the id before it.
    _Rule("discord_token", _c(r"\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}" + _E), extract=_discord),
    # Telegram bot token "<8-16 digit bot id>:A<34>": this finds ":A<34>", _telegram() the id.
    _Rule("telegram_bot_token", _c(r":A[A-Za-z0-9_\-]{34}" + _E), extract=_telegram),
    # Password in a URL (scheme://user:password@host): only the password goes; a "#" or "?" that
    # should have been percent-encoded is still part of it.
    _Rule("password_in_url", _c(r"://(?P<user>[^\s:/?#@\[\]\"'<>]{0,256}):(?P<secret>[^\s/\[\]\"'<>]{1,256})@(?=[A-Za-z0-9\[])")),
    # The user of a URL when it is a key (a Sentry DSN https://<32 hex>@host, cloudinary://<digits>:...@).
    _Rule("password_in_url", _c(r"://(?P<secret>[A-Za-z0-9_\-]{12,256})(?=[:@])"), extract=_key_as_user),
    _Rule("authorization_header", _AUTH_HEADER, lowered=True, extract=_authorization),
    # The signature of an Azure shared access signature URL (`?sv=...&sig=<base64>`): it grants access.
    _Rule("azure_sas_signature", _c(r"sig=(?<=[?&]sig=)(?P<secret>[A-Za-z0-9%+/=]{20,256})")),
    # A secret-named variable given as a name/value pair (Kubernetes and Actions env lists, ECS task
    # definitions, `{"name": "DB_PASSWORD", "value": "..."}`): judged by the name as an assignment is.
    _Rule("env_assignment", _NAME_VALUE, lowered=True, extract=_name_value),
    # Cookie / Set-Cookie header: the random values of its name=value pairs (session ids are credentials).
    _Rule("cookie", _c(r"cookie[\"']?[ \t]*:[ \t]*(?P<secret>[^\r\n]{8,4096})"), lowered=True, extract=_cookie),
    # A bare "Bearer <token>" outside a header line (curl logs, code); random-looking tokens only.
    _Rule("bearer_token", _c(_tok("bearer", 6, "a-z0-9_") + r"[ \t]+(?P<secret>[a-z0-9._~+/\-]{16,}=*)"), lowered=True, extract=_random_looking),
    # curl -u / --user user:password (the option must start a word).
    _Rule("basic_auth", _c(r"-(?:u|-user)[ \t]+[\"']?[^\s:\"']{0,256}:(?P<secret>[^\s\"']{1,256})"), extract=_curl_user),
    # Go's MySQL DSN `user:password@tcp(host:port)/db` (also unix(...)): no scheme, so not a URL.
    _Rule("password_in_url", _c(r"@(?:tcp|udp|unix)[46]?\("), extract=_dsn_password),
    # Postfix sasl_passwd `[smtp.host]:port user:password`
    _Rule("password_option", _c(r"\]:[0-9]{1,5}[ \t]+[^\s:]{1,128}:(?P<secret>\S{1,256})(?=[ \t]*(?:\r?\n|\Z))"), extract=_sasl_passwd),
    *(_Rule("password_option", regex, lowered=True, extract=_credential_call) for regex in _CREDENTIAL_CALLS),
    _Rule("password_option", _ECHOED, lowered=True, extract=_echoed),
    *(_Rule("vendor_token", trigger, extract=_prefixed) for trigger in TOKEN_TRIGGER),
    _Rule("vendor_token", _A_TOKENS, extract=_named),
    _Rule("vendor_token", _E_TOKENS, extract=_named),
    _Rule("databricks_token", _c(_tok("dapi", 4) + r"[a-f0-9]{32}(?:-[0-9])?" + _E)),
    # NuGet API key: "oy2" and 43 lower-case base32 characters.
    _Rule("nuget_key", _c(_tok("oy2", 3) + r"[a-z0-9]{43}" + _E)),
    _Rule("alibaba_key", _c(_tok("LTAI", 4) + r"[A-Za-z0-9]{20}" + _E)),
    # GitLab runner registration token: no separator after its prefix, so not a _PREFIXED_ROWS row.
    _Rule("gitlab_token", _c(_tok("GR1348941", 9) + r"[A-Za-z0-9_\-]{20}" + _E)),
    # NATS nkey seeds (user, account, operator): "S" + type + base32, 58 characters.
    _Rule("nats_seed", _c(_tok("S", 1, "A-Za-z0-9") + r"[UAO][A-Z2-7]{56}(?![A-Za-z0-9])")),
    # Facebook app access token "<app id>|<secret>": the app id is public, the part after "|" goes.
    _Rule("facebook_token", _c(r"\|(?:(?<=[^0-9][0-9]{15}\|)|(?<=[^0-9][0-9]{16}\|))(?P<secret>[A-Za-z0-9_\-]{27,40})" + _E)),
    # Azure AD client secret ("abc8Q~...") and OpenShift user token ("sha256~..."): both around a "~".
    _Rule("vendor_token", _c(r"~(?:(?<=[A-Za-z0-9_.]{3}[0-9]Q~)[A-Za-z0-9_~.\-]{31,34}|(?<=sha256~)[A-Za-z0-9_\-]{43})" + _E), extract=_tilde),
    _Rule("password_option", _PASSWORD_FLAG, per_call=_password_flags),
    _Rule("password_option", _WINDOWS_FLAG, per_call=_password_flags),
    _Rule("password_option", _SQL_IDENTIFIED_BY, lowered=True, extract=_identified_by),
    *(_Rule("password_option", regex, lowered=True, extract=_command_argument) for regex in _COMMAND_ARGUMENTS),
    _Rule("password_option", _c(r"chpasswd"), lowered=True, extract=_chpasswd),
    # htpasswd -b FILE USER PASSWORD (-bc, -bB, ...): the password is the third word after the flags.
    _Rule("password_option", _c(r"htpasswd[ \t]+-[a-zA-Z]*b[a-zA-Z]*[ \t]+(?:-[a-zA-Z0-9]+[ \t]+)*[^\s-]\S*[ \t]+\S+[ \t]+(?P<secret>[^\s-]\S{0,255})")),
    _Rule("password_option", _SAMBA_USER, extract=_samba_user),
    _Rule("password_option", _NET_USE, lowered=True, extract=_net_use),
    _Rule("pgpass_password", _PGPASS, extract=_pgpass),
    _Rule("unlabelled_token", _UNLABELLED, extract=_unlabelled),
    *(_Rule("env_assignment", regex, lowered=True, extract=_assignment) for regex in ENV_ASSIGNMENTS),
)

CUSTOM_KIND = "custom"
# Every kind, most specific first; user patterns rank just above the generic assignment rule.
# Kinds that name a shape rather than a vendor: a vendor's kind wins where both match.
_GENERIC_KINDS = ("password_in_url", "authorization_header", "bearer_token", "basic_auth", "password_option")
_SPECIFIC_KINDS = (
    *(r.kind for r in _RULES if r.kind not in ("env_assignment", "vendor_token", *_GENERIC_KINDS)),
    *(kind for kind, _ in _PREFIXED_ROWS),
    *(kind for r in _RULES if r.extract is _named for kind in r.regex.groupindex),
    "azure_ad_secret",
    "openshift_token",
    "prefixed_token",
    "labelled_line",
)
KINDS: tuple[str, ...] = (*dict.fromkeys(_SPECIFIC_KINDS), *_GENERIC_KINDS, CUSTOM_KIND, "keyword_token", "env_assignment", "unlabelled_token")
# Rank of each kind when spans merge: lower wins.
_RANK = {kind: i for i, kind in enumerate(KINDS)}
# A-Z -> a-z only, for the rare text whose str.lower() changes length (U+0130).
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


@lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """A user's pattern compiled with RE2 (linear-time matching, no catastrophic backtracking).
    ConfigError naming it when RE2 cannot compile it."""
    import re2  # google-re2: only when a config sets redact_patterns

    options = re2.Options()
    options.log_errors = False  # the error is raised, not written to stderr by RE2's own logger
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        why = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ConfigError(
            f"{pattern!r} is not a valid regular expression ({why}): patterns run on RE2, in time linear in the text, which has no backreferences or lookaround"
        ) from None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _candidates(text: str, rules: Iterable[_Rule]) -> list[tuple[int, int, str]]:
    """Spans of ``text`` proposed by the rules, before merging."""
    lowered = text.lower()  # the built-in rules always include lower-case ones
    if len(lowered) != len(text):
        lowered = text.translate(_ASCII_LOWER)  # offsets must match the text's
    found: list[tuple[int, int, str]] = []
    for rule in rules:
        extract = rule.per_call() if rule.per_call else rule.extract
        subject = lowered if rule.lowered else text
        if rule.kind == CUSTOM_KIND and not text.isascii():  # RE2 reads UTF-8: a lone surrogate becomes U+FFFD (one character, offsets kept)
            subject = _SURROGATE.sub("\ufffd", text)
        for m in rule.regex.finditer(subject):
            span = extract(m, text) if extract else m.span(rule.regex.groupindex.get("secret", 0))
            if span is not None and 0 <= span[0] < span[1]:
                found.append((span[0], span[1], span[2] if len(span) == 3 else rule.kind))
    return found


def _merge(found: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Union of overlapping spans; each merged span keeps its most specific kind."""
    merged: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(found):
        if merged and start < merged[-1][1]:
            m_start, m_end, m_kind = merged[-1]
            merged[-1] = (m_start, max(m_end, end), min(m_kind, kind, key=_RANK.__getitem__))
        else:
            merged.append((start, end, kind))
    return merged


# A line a terminal or an editor wrapped: this long at least, the secret running to its end.
_WRAP_WIDTH = 64
# The rest of a wrapped token at the start of the next line: token characters with a digit, an
# upper-case letter or a base64 sign among them (a plain word there is the next sentence).
_WRAPPED_REST = _c(r"(?=[A-Za-z0-9+/=_\-]*[0-9A-Z+/=])[A-Za-z0-9+/=_\-]{1,512}(?=[ \t]*(?:\r?\n|\Z))")


def _wrapped(text: str, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Spans that end a long line, carried over a hard wrap onto the start of the next one."""
    out: list[tuple[int, int, str]] = []
    for start, end, kind in spans:
        nl = end + (text.startswith("\r\n", end))
        if text.startswith("\n", nl) and end - _line_start(text, start) >= _WRAP_WIDTH:
            rest = _WRAPPED_REST.match(text, nl + 1)
            if rest and (not out or rest.end() > out[-1][1]) and not any(s < rest.end() <= e for s, e, _ in spans):
                out.append((start, end, kind))
                out.append((nl + 1, rest.end(), kind))
                continue
        out.append((start, end, kind))
    return _merge(out)


def redact(text: str, extra_patterns: Sequence[str] = ()) -> tuple[str, list[Finding]]:
    """Replace every secret in ``text`` by ``[REDACTED:<kind>]``.

    Returns the redacted text and one Finding per replaced span (offsets into the input, sorted).
    Raises ConfigError when an entry of ``extra_patterns`` is not a valid regular expression.
    """
    if isinstance(extra_patterns, str):
        raise ConfigError(f"redact_patterns: expected a list of regular expressions, got {extra_patterns!r}")
    rules = list(_RULES)
    for pattern in extra_patterns:
        if not isinstance(pattern, str):
            raise ConfigError(f"redact_patterns: each entry must be a string, got {pattern!r}")
        try:
            rules.append(_Rule(CUSTOM_KIND, compile_pattern(pattern)))
        except ConfigError as exc:
            raise ConfigError(f"redact_patterns: {exc}") from None
    spans = _wrapped(text, _merge(_candidates(text, rules)))
    ends = [0, *(end for _, end, _ in spans)]
    out = "".join(text[pos:start] + marker(kind) for pos, (start, _, kind) in zip(ends, spans)) + text[ends[-1] :]
    return out, [Finding(kind, start, end, hashlib.sha256(text[start:end].encode("utf-8", "surrogatepass")).hexdigest()[:8]) for start, end, kind in spans]

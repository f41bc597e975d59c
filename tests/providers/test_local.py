from collections import Counter

import pytest

from memtool.providers.local import LocalCompressor, _floor_tokens, _summary
from memtool.providers.local_parts import parts
from memtool.providers.local_session import _keywords
from memtool.text import content_words, count_tokens, split_sentences

TRANSCRIPT = (
    """Alice: Morning! The billing service keeps timing out under load since Friday.
Bob: I profiled it. The Postgres query on invoices does a full table scan, the index on customer_id is missing.
Alice: We decided to add the index and switch the ORM batch size to 500 instead of 50.
Bob: Agreed. I will write the migration today and deploy it to staging with Terraform.
Alice: Also need to rotate the Stripe webhook secret before the March 15 audit.
Bob: The Grafana dashboard shows p95 latency at 4 seconds, which is critical for the checkout flow.
Alice: Let's also ask Carol to review the caching layer in Redis next week.
Bob: Sounds good. I'll post the results in the incident channel when staging looks healthy.
"""
    * 3
)


def test_extractive_fields_not_truncation():
    out = LocalCompressor().compress(TRANSCRIPT * 4)  # a long session: room for every field
    body = TRANSCRIPT.replace("Alice: ", "").replace("Bob: ", "")
    sentences = split_sentences(out.summary)
    assert sentences and all(s in body for s in sentences)  # whole sentences, extracted, not cut
    assert len(sentences) == len(set(sentences))  # the repeated transcript does not repeat itself
    # the summary picks informative sentences, not the opening greeting
    assert not out.summary.startswith("Morning")
    assert {"Alice", "Bob"} <= set(out.entities.people)
    assert "Carol" in out.entities.people
    assert any("march 15" in d.lower() for d in out.entities.dates)
    assert any("decided" in d for d in out.decisions)
    assert any("need to rotate" in a or "will write" in a.lower() for a in out.action_items)
    assert {"postgres", "index", "billing"} & set(out.keywords)
    assert out.topics and out.topics[0] in {"database", "performance", "infrastructure"}
    assert out.importance in {"medium", "high"}


def test_compresses_at_least_ten_to_one_on_long_transcripts():
    out = LocalCompressor().compress(TRANSCRIPT * 4)
    packed = " ".join(
        [out.summary, *out.keywords, *out.topics, *out.decisions, *out.action_items, *out.entities.people, *out.entities.systems, *out.entities.dates]
    )
    assert count_tokens(TRANSCRIPT * 4) / count_tokens(packed) >= 10


def test_short_note_is_its_own_summary_and_does_not_balloon():
    note = "Switched the HTTP client to httpx; sync tests pass."
    out = LocalCompressor().compress(note)
    assert out.summary == note
    assert len(out.keywords) <= 4


def test_deterministic():
    a, b = LocalCompressor().compress(TRANSCRIPT), LocalCompressor().compress(TRANSCRIPT)
    assert a == b


def test_the_best_sentence_beats_a_filler_that_fits_a_small_budget():
    """A summary budget of a few tokens: the best sentence may take up to twice it, so a short
    filler sentence that happens to fit is not the whole summary."""
    best = "The flaky checkout test waited for the wrong Stripe redirect URL."
    filler = "Great stuff, thanks, cheers."
    tf = Counter(content_words(best + " " + filler))
    assert _summary([filler, best], tf, lambda w: 1.0, count_tokens(filler)) == best


def test_the_summary_prefers_a_sentence_that_says_when_something_happened():
    """A later "when did…" question asks about events. Of two sentences of the same words' weight,
    the one with a time expression is the summary; without one the reflection wins on its words."""
    event = "Yesterday I signed up for a pottery class downtown."
    musing = "It shows how important friendship and compassion really are."
    tf = Counter(content_words(event + " " + musing)) + Counter(content_words(musing))  # the musing's words weigh more
    budget = count_tokens(musing)
    assert _summary([musing, event], tf, lambda w: 1.0, budget) == event
    undated = event.replace("Yesterday ", "")
    assert _summary([musing, undated], tf, lambda w: 1.0, budget) == musing


def test_month_and_year_are_one_date():
    out = LocalCompressor().compress("Alice: we shipped the Kafka consumer in November 2022 and the audit is on May 3, 2023. " * 4)
    assert "November 2022" in out.entities.dates and "May 3, 2023" in out.entities.dates
    assert "November 20" not in out.entities.dates


def test_a_short_session_keeps_a_whole_informative_sentence():
    """A short technical session (its budget at the floor) may spend more of it on the summary: the
    sentence that says what the session was about, not a 5-word aside that fits a 14-token cap."""
    session = (
        "user: Checkout fails for customers paying with Apple Pay since the SDK upgrade on Monday.\n"
        "assistant: The new SDK returns the payment token under a different key, so the webhook handler drops it.\n"
        "user: Can we pin the old SDK version for now?\n"
        "assistant: Pinned it and added a regression test for the webhook payload. Maria reviews.\n"
    ) * 2
    out = LocalCompressor().compress(session)
    assert out.summary in session and count_tokens(out.summary) > 14
    assert out.summary != "Maria reviews."


def test_a_technical_session_gets_a_sentence_of_its_usual_length_and_no_numbers_as_keywords():
    """Technical sentences run long: the summary may take one of the text's median length (up to
    TYPICAL_SENTENCE_CAP), so it is not the one short aside; '0.820' or '25th' say nothing on their own,
    a measurement with its unit ('4.2 s') does."""
    session = "\n".join(
        [
            "assistant: The search benchmark on the dev split gives recall at five of 0.936 and a mean reciprocal rank of 0.823 after the change.",
            "assistant: The answer cues lift passages that state a time when the question asks when something happened, and cost nothing at search time.",
            "assistant: Each document gets its cue bits once at build time, sharing the word split with the BM25 terms, so a full rebuild stays at 4.2 s.",
            "user: Good.",
            "assistant: The place and title cues measured plus 0.002 on the same harness and were dropped rather than kept as dead weight.",
            "assistant: Cache version 8.",
        ]
        * 4
    )
    out = LocalCompressor().compress(session)
    assert out.summary in session and count_tokens(out.summary) > 14
    assert [k for k in out.keywords if k[0].isdigit()] in ([], ["4.2"])


NAMES = (
    """Alice: I asked José about the Kraków office; José said the Straße address is wrong.
Bob: Zoë told me the team moved to the Łódź office, and Иван said the lease ends soon.
Иван: the Straße sign in Kraków still names the old office, Straße and Kraków again.
"""
    * 2
)


def test_names_and_keywords_keep_diacritics_and_other_scripts():
    out = LocalCompressor().compress(NAMES)
    found = {*out.keywords, *out.entities.people, *out.entities.systems}
    assert {"José", "Zoë", "Иван"} <= set(out.entities.people)
    assert {"Łódź", "Straße"} <= set(out.entities.systems)
    assert "Kraków" in found and "straße" in out.keywords
    assert not {"Jos", "Zo", "Krak", "Stra", "jos", "zo", "krak", "stra", "ł", "dź"} & found  # nothing cut at a non-ASCII letter


def test_speakers_of_any_script_are_people_and_leave_the_body():
    out = LocalCompressor().compress("Иван: Перенесли базу данных.\n张伟: 好的，迁移完成了。\nZoe\u0308: Готово.\nnote: not a speaker.\n")
    assert out.entities.people == ["Иван", "张伟", "Zoë"]  # a decomposed ë is composed (NFC)
    assert out.summary == "Перенесли базу данных. 好的，迁移完成了。 Готово. note: not a speaker."


def test_a_speaker_label_may_end_in_a_fullwidth_colon():
    """Chinese and Japanese transcripts write 'Name：text' with the fullwidth colon, no space after it:
    the speaker is a person and the label leaves the body, as 'Name: text' does."""
    out = LocalCompressor().compress("张伟：我们把数据库迁移到了新服务器。\n田中：はい、バックアップも確認しました。\n张伟： 好的。\n")
    assert out.entities.people == ["张伟", "田中"]
    assert out.summary == "我们把数据库迁移到了新服务器。 はい、バックアップも確認しました。 好的。"


def test_a_caseless_script_has_no_capitalised_words():
    out = LocalCompressor().compress("User: мы обсудили, 数据库 迁移 and هذا الخادم الجديد في المكتب.\n" * 3)
    assert out.entities.people == [] and out.entities.systems == []
    assert out.keywords  # the words themselves are still keywords


# A short session in each script (its budget at the floor): the summary is one whole sentence of it.
# The sentences are listed by hand, not by split_sentences, so a wrong split cannot agree with itself.
SESSIONS_OF_ANY_SCRIPT = {
    "ru": (
        "Иван: Перенесли базу данных на новый сервер в Москве. Готово, резервные копии проверены.\n"
        "Мария: Отлично, миграция прошла без ошибок. Осталось обновить конфигурацию балансировщика.\n"
        "Иван: Займусь документацией завтра утром.\n",
        [
            "Перенесли базу данных на новый сервер в Москве.",
            "Готово, резервные копии проверены.",
            "Отлично, миграция прошла без ошибок.",
            "Осталось обновить конфигурацию балансировщика.",
            "Займусь документацией завтра утром.",
        ],
    ),
    "el": (
        "Νίκος: Μεταφέραμε τη βάση δεδομένων στον νέο διακομιστή. Έλεγξα και τα αντίγραφα ασφαλείας.\n"
        "Ελένη: Τέλεια, η μετάβαση έγινε χωρίς σφάλματα. Ποιος ενημερώνει τη ρύθμιση του εξισορροπητή; Εγώ, αύριο το πρωί.\n",
        [
            "Μεταφέραμε τη βάση δεδομένων στον νέο διακομιστή.",
            "Έλεγξα και τα αντίγραφα ασφαλείας.",
            "Τέλεια, η μετάβαση έγινε χωρίς σφάλματα.",
            "Ποιος ενημερώνει τη ρύθμιση του εξισορροπητή;",
            "Εγώ, αύριο το πρωί.",
        ],
    ),
    "fr": (
        "Paul: Nous avons migré la base de données vers le nouveau serveur hier soir. Élodie a vérifié les sauvegardes du cluster.\n"
        "Claire: Parfait, la migration s'est déroulée sans erreur. Écrivons la documentation du répartiteur demain matin.\n"
        "Paul: Éric met à jour la configuration du répartiteur de charge après la réunion.\n",
        [
            "Nous avons migré la base de données vers le nouveau serveur hier soir.",
            "Élodie a vérifié les sauvegardes du cluster.",
            "Parfait, la migration s'est déroulée sans erreur.",
            "Écrivons la documentation du répartiteur demain matin.",
            "Éric met à jour la configuration du répartiteur de charge après la réunion.",
        ],
    ),
    "zh": (
        "张伟: 我们昨天把数据库迁移到了新的服务器。迁移过程没有任何错误！备份也检查过了。\n"
        "李娜: 负载均衡器的配置还需要更新。我明天上午写迁移文档？可以，下午我来检查负载均衡器的日志。\n"
        "张伟: 好的，周五之前把新服务器的监控也配置好。\n",
        [
            "我们昨天把数据库迁移到了新的服务器。",
            "迁移过程没有任何错误！",
            "备份也检查过了。",
            "负载均衡器的配置还需要更新。",
            "我明天上午写迁移文档？",
            "可以，下午我来检查负载均衡器的日志。",
            "好的，周五之前把新服务器的监控也配置好。",
        ],
    ),
}


@pytest.mark.parametrize("lang", list(SESSIONS_OF_ANY_SCRIPT))
def test_a_short_session_in_any_script_is_summed_up_by_a_whole_sentence(lang):
    """Sentences of any script are split (before a capital of any script, after 。！？ with no space),
    so the summary is a whole sentence, not the start of the session cut mid-word ("Пер…")."""
    session, sentences = SESSIONS_OF_ANY_SCRIPT[lang]
    out = LocalCompressor().compress(session)
    assert out.summary in sentences, out.summary


LONG_SENTENCES_RU = (
    "Иван: Вчера вечером мы перенесли основную базу данных на новый сервер в Москве.\n"
    "Мария: Отлично, миграция прошла без единой ошибки, и резервные копии тоже проверены.\n"
    "Иван: Осталось обновить конфигурацию балансировщика нагрузки и написать документацию.\n"
    "Мария: Я займусь документацией для команды завтра утром после планёрки.\n"
)


def test_a_sentence_of_any_script_is_measured_against_the_floors_like_the_english_of_it():
    """count_tokens counted each Cyrillic letter as a token, so these sentences (64-79 characters,
    8-12 words) cost 56-72 tokens and fitted no floor of a short session: the summary was cut to a
    few letters (it counts them in pairs now: 32-38). Against the floors they count like English
    sentences of as many words."""
    out = LocalCompressor().compress(LONG_SENTENCES_RU)
    body = [line.split(": ", 1)[1] for line in LONG_SENTENCES_RU.splitlines()]
    assert out.summary in body, out.summary
    english = "Yesterday evening we moved the main database to the new server in Moscow."
    assert abs(_floor_tokens(body[0]) - count_tokens(english)) <= 4
    assert _floor_tokens(english) == count_tokens(english)
    assert _floor_tokens("迁移完成了。") == count_tokens("迁移完成了。")  # a character is a token in Chinese, as before


# --- sessions with an agent, and notes of one (memtool.providers.local_session) -------------------

AGENT_SESSION = (
    """session: /home/maya/src/ledgerly, branch fix/invoice-rounding

user: Tom from support flagged that invoices are off by a cent. Can you look at billing/services.py?

assistant: [tool Read] billing/services.py

tool: def invoice_total(invoice):
    # TODO: handle multi-currency rounding rules
    return round(sum(l.gross for l in lines), 2)

assistant: [tool Bash] pytest billing -q

tool: 1 failed, 52 passed

assistant: Reproduced: invoice_total rounds the float sum once, while the PDF rounds each line with ROUND_HALF_UP. Should we store money as integer cents instead?

user: No, let's not do integer cents now. Go with Decimal and round each line before summing.

assistant: [tool Edit] billing/services.py

assistant: [tool Bash] pytest billing -q && git commit -m "billing: round each line"

assistant: Done:
- invoice_total now sums Decimal lines rounded with ROUND_HALF_UP instead of rounding the float total once.
- [x] Fix the tests that encoded the old rounding

All 53 billing tests pass and the fix is committed on fix/invoice-rounding. Olu in finance has to sign off on the backfill of the 312 affected invoices.

Left to do:
1. Backfill the 312 affected invoices after Olu signs off.
2. Get Priya's review of the fix/invoice-rounding PR.
"""  # noqa: E501 (a transcript: its turns are one line each)
    * 1
)


def test_an_agent_session_gives_decisions_open_items_people_and_systems_without_markup():
    out = LocalCompressor().compress(AGENT_SESSION)
    assert any("Decimal" in d and "round each line" in d for d in out.decisions)
    assert not any(d.endswith("?") for d in out.decisions)  # a question is no decision
    assert out.action_items == ["Backfill the 312 affected invoices after Olu signs off.", "Get Priya's review of the fix/invoice-rounding PR."]
    assert not any("multi-currency" in a or "Fix the tests" in a for a in out.action_items)  # a TODO in a file, a done item
    assert {"Tom", "Olu", "Priya", "Maya"} <= set(out.entities.people)
    assert {"pytest"} <= set(out.entities.systems) and not {"Bash", "Edit", "Read"} & set(out.entities.systems)
    markup = {"tool", "command", "file_path", "bash", "read", "edit", "shell_command", "tmp", "home"}
    assert not markup & {k.lower() for k in out.keywords}
    assert out.summary and "[tool" not in out.summary and "tool:" not in out.summary


NOTE = """SESSION SUMMARY
Date: Tuesday 2 December 2025
Participants: Rob Castillo (developer), coding agent
Goal: review PR #482 "auth: replace session cookies with JWT middleware" before the release train.

What we did
- Ran the suite: 212 tests passed; verifyToken() calls jwt.verify without an algorithms option.
- The refresh endpoint stores refresh tokens in Redis with no TTL, so they never expire.

Decision: index created CONCURRENTLY on the orders table, with the old index kept for a week.
Decision: refresh tokens get a 14-day TTL in Redis.
TODO: Rob pushes the alg-confusion test to the PR branch tonight.
Left (TODO): ask the platform team to scrub token= query strings from the access logs in Loki.
"""


def test_label_lines_of_a_note_are_cues_not_speakers():
    out = LocalCompressor().compress(NOTE)
    assert not {"Decision", "TODO", "Goal", "Date", "Participants", "Left"} & set(out.entities.people)
    assert "Rob Castillo" in out.entities.people
    assert out.decisions[:2] == [
        "index created CONCURRENTLY on the orders table, with the old index kept for a week.",
        "refresh tokens get a 14-day TTL in Redis.",
    ]
    assert out.action_items == [
        "Rob pushes the alg-confusion test to the PR branch tonight.",
        "ask the platform team to scrub token= query strings from the access logs in Loki.",
    ]
    assert "Redis" in out.entities.systems and not {"SELECT", "ORDER", "LIMIT", "DESC"} & set(out.entities.systems)


def test_sql_words_and_tool_names_are_not_systems():
    session = (
        "user: the statement query is slow\n\nassistant: [tool run_shell_command] psql -c 'EXPLAIN ANALYZE SELECT * FROM orders "
        "WHERE customer_id = 1 ORDER BY created_at DESC LIMIT 50'\n\ntool: Seq Scan on orders\n\n"
        "assistant: Postgres reads every row: SELECT ... ORDER BY created_at DESC LIMIT 50 needs an index on (customer_id, created_at). "
        "We decided to add it CONCURRENTLY on Thursday.\n\n"
    ) * 3
    out = LocalCompressor().compress(session)
    assert "PostgreSQL" in out.entities.systems and "psql" in out.entities.systems
    assert not {"SELECT", "ORDER", "LIMIT", "DESC", "Bash", "run_shell_command"} & set(out.entities.systems)


def test_session_long_decision_list_and_open_list_both_kept():
    decisions = "\n".join(
        f"- {d}"
        for d in (
            "Billing moves to the eu-west-1 cluster in March, keeping its Grafana dashboards and PagerDuty routes as they are.",
            "Search stays on dedicated c6i.4xlarge nodes because Elasticsearch heap pressure spikes during reindexing at night.",
            "Checkout gets a second replica set behind the ingress so a rollout never drops below two healthy pods.",
            "Reports run on spot instances with a fallback to on-demand capacity when the interruption rate exceeds 5 percent.",
            "Mail leaves Kubernetes for the managed SMTP relay, retiring the postfix sidecar and its TLS certificate rotation.",
        )
    )
    text = (
        f"user: Plan the cluster move.\n\nassistant: Decisions:\n{decisions}\n\n"
        "Next steps:\n- Move the billing queue after the freeze.\n- Ask Ines to resize the node pool.\n"
    )
    out = LocalCompressor().compress(text)
    assert len(out.decisions) >= 2 and len(out.action_items) == 2


MEASURED_SESSION = """user: The nightly export of the shipments table takes forever since last week. Find out why, please.

assistant: The export scans shipments without an index on shipped_at: 4,210 ms per page on staging. Page 12 of 40 is where it stalls.

user: ok, add the index and measure again.

assistant: Added the index shipments_shipped_at_idx. The page query went from 4,210 ms -> 57 ms and the full export now takes 3 minutes instead of 48 minutes. All 19 export tests pass.
"""  # noqa: E501 (a transcript: its turns are one line each)


def test_session_keywords_keep_measured_numbers_not_bare_ones():
    said = [p for p in parts(MEASURED_SESSION) if p.kind == "said"]
    ranked = set(_keywords(said, lambda word: 1.0, []))  # every candidate, before the budget cuts
    assert {"210", "57", "48"} <= ranked  # said with a unit or as the two sides of a change
    assert "12" not in ranked and "40" not in ranked  # a page number is no measurement
    assert "57" in LocalCompressor().compress(MEASURED_SESSION).keywords


def test_session_summary_keeps_the_measured_outcome():
    session = (
        MEASURED_SESSION
        + """
user: good. Also the export job logs a warning about the connection pool every night, what is that about?

assistant: The pool warning comes from the reporting client, which opens its own connections and never returns them to the shared pool that the export job also uses every night.

user: leave that for another day.

assistant: Understood, the pool warning stays as it is and the index change is committed on branch perf/shipments-index together with the migration file and the updated export documentation for the team.
"""  # noqa: E501 (a transcript: its turns are one line each)
    )
    summary = LocalCompressor().compress(session).summary
    assert "4,210 ms -> 57 ms" in summary


CUE_NOTE = """# Session 2026-11-26

Done: moved the billing export to the nightly job and added retries around the S3 upload.
Done: the flaky export test now uses a frozen clock instead of the wall clock.
Decision: keep the CSV format for the finance team rather than switching to Parquet.
TODO: ask Dana whether finance wants the old columns kept for another quarter.
TODO: delete the legacy cron entry on the ops box after one clean week.
"""


def test_a_note_of_cue_lines_is_summed_up_as_prose_without_its_labels():
    out = LocalCompressor().compress(CUE_NOTE * 2)
    assert out.summary.startswith(("Moved the billing export", "The flaky export test"))  # what was done, not what is left
    assert not any(label in out.summary for label in ("Done:", "Decision:", "TODO:", "Dana"))
    assert out.decisions[0] == "keep the CSV format for the finance team rather than switching to Parquet."
    assert out.action_items[0] == "ask Dana whether finance wants the old columns kept for another quarter."


ADVISED = """user: The invoice list endpoint is slow. Should we also cache the computed totals on the Invoice model while we're at it?

assistant: I'd keep that out of this change. The total is already a stored column; a cached copy would be a second source of truth.

user: Fair. Ok, ship the rounding fix alone.

assistant: Changed invoice_total to sum the rounded lines instead of rounding once. All 53 billing tests pass.
"""


def test_the_agents_report_of_what_it_changed_is_a_decision():
    out = LocalCompressor().compress(ADVISED * 2)
    assert "Changed invoice_total to sum the rounded lines instead of rounding once." in out.decisions


def test_an_indented_line_under_a_decisions_heading_with_no_decision_yet_is_not_a_crash():
    # It used to extend the last decision (there was none: IndexError) when an open item came before.
    text = (
        "user: The nightly export to the billing bucket fails since Monday with an access error from S3.\n\n"
        "assistant: The role lost s3:PutObject when the bucket policy was rewritten last week; I restored it "
        "and the export ran again in 4 minutes.\n"
        "TODO: add an alarm on the export job so a failure pages someone the same night.\n"
        "Decisions:\n"
        "  the bucket policy now lives in Terraform next to the role that writes to it\n"
    )
    entry = LocalCompressor().compress(text)
    assert any("alarm on the export job" in a for a in entry.action_items)


def test_the_transcript_header_is_where_the_session_ran_not_what_was_said():
    text = (
        "session: /home/dev/projects/shop-api, branch master\n\n"
        "user: What did we decide about the orders table migration? Remind me who owns the runbook.\n\n"
        "assistant: We decided to do dual writes behind a feature flag.\n"
    )
    out = LocalCompressor().compress(text)
    assert out.summary.startswith("What did we decide about the orders table migration?"), out.summary
    assert "session" not in out.summary and "/home" not in out.summary
    assert "shop-api" not in out.entities.systems and "projects" not in out.keywords


README_SESSION = """user: The nightly export keeps timing out on the reporting database.
assistant: The slow part is the CSV writer. Decided to stream rows with COPY TO STDOUT.
user: Good. Dana owns the follow-up: add a retry to the export job by Friday.
"""


def test_the_readme_session_gives_an_open_item_with_its_owner_and_day_and_no_follow_up_system():
    out = LocalCompressor().compress(README_SESSION)
    assert any("Dana" in a and "retry to the export job" in a and "Friday" in a for a in out.action_items)
    assert out.entities.people == ["Dana"]
    assert not any("follow" in s.lower() for s in out.entities.systems)
    assert "export keeps timing out" in out.summary  # a short session is its own summary


def test_the_shipped_sentence_model_is_small_and_reads_a_session_the_same_way_twice():
    from memtool.providers.local_sentences import CLASSES, MODEL_FILE, embed, features, sentences, shipped_model

    assert MODEL_FILE.stat().st_size < 64_000
    said, ss = sentences(parts(ADVISED))
    x = features(ss, len(said), embed)
    p = shipped_model().probabilities(x)
    assert p.shape == (len(ss), len(CLASSES)) and abs(float(p.sum()) - len(ss)) < 1e-3
    assert LocalCompressor().compress(ADVISED * 2) == LocalCompressor().compress(ADVISED * 2)


def test_the_model_an_aider_session_ran_with_is_a_system():
    text = (
        "# aider chat started at 2025-01-14 11:56:56\n\n"
        "> Aider v0.71.0  \n> Main model: openrouter/anthropic/claude-3.5-sonnet with diff edit format, infinite output  \n"
        "> Weak model: openrouter/anthropic/claude-3-5-haiku  \n\n"
        "#### Add a --verbose flag to the metrics script so each request is printed.  \n\n"
        "I'll add the flag to the argument parser and print each request before it is sent.\n\n"
        "> Applied edit to metrics.sh  \n"
    )
    systems = LocalCompressor().compress(text).entities.systems
    assert "claude-3.5-sonnet" in systems and "openrouter" in systems
    assert "claude-3-5-haiku" not in systems  # the weak model is not what the session ran with


def test_labels_headings_package_scopes_and_companies_are_no_people():
    text = (
        "user: The login button on the Shopify storefront sends people to the wrong page.\n\n"
        "assistant: Authorization: Bearer tokens are sent by @shopify/hydrogen, so the redirect comes from Google sign-in.\n\n"
        "### Step 7: Create a Setup Script for Easy Deployment\n\n"
        "user: ok, and ask Priya to check the redirect_uri in the partner dashboard.\n"
    )
    people = LocalCompressor().compress(text).entities.people
    assert people == ["Priya"]


def test_a_default_branch_is_not_kept_as_a_keyword():
    said = (
        "user: Please add a retry with back-off to the export job in exporter/jobs.py; it drops rows on timeouts.\n\n"
        "assistant: Added three retries with exponential back-off to export_rows; the tests pass.\n\n"
    )
    default = LocalCompressor().compress("session: /home/sam/src/exporter, branch main\n\n" + said.replace("export job", "export job on main") * 4)
    assert "main" not in default.keywords and "export_rows" in default.keywords


def test_aider_commands_and_confirmations_are_not_something_the_user_said():
    text = (
        "#### /add src/app.py\n\n"
        "#### Add file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: all\n\n"
        "#### /run pytest tests -q\n\n"
        "#### /ask why does the export time out?\n\n"
        "The export waits on one query per row.\n\n"
        "> Run shell command? (Y)es/(N)o [Yes]: n\n\n"
        "#### /code\n"
        "> Aider v0.83.1\n> Main model: openrouter/qwen/qwen3-coder with whole edit format\n"
    )
    ps = parts(text)
    assert [(p.role, p.kind, p.text) for p in ps if p.role == "user"] == [
        ("user", "output", "/add src/app.py"),
        ("user", "output", "Add file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: all"),
        ("user", "tool", "[tool run] pytest tests -q"),
        ("user", "said", "why does the export time out?"),
    ]
    assert [p.text for p in ps if p.kind == "said"] == [
        "why does the export time out?",
        "The export waits on one query per row.",
    ]  # aider's banner after /code is output
    assert "pytest" in LocalCompressor().compress(text).entities.systems  # the command the user ran


def test_a_command_line_pasted_into_prose_is_no_candidate_sentence():
    from memtool.providers.local_sentences import sentences

    text = (
        "user: Keep the metrics script in bash and print each query before it is sent.\n\n"
        'assistant: RELEASE_RESPONSE=$(curl -s -H "Authorization: bearer $GITHUB_TOKEN" -d "{ \\"query\\": \\"{ repository(owner: $OWNER) }\\" }")\n\n'
        "assistant: The script now prints each query and its raw response.\n"
    )
    assert [s.text for s in sentences(parts(text))[1]] == [
        "Keep the metrics script in bash and print each query before it is sent.",
        "The script now prints each query and its raw response.",
    ]


def test_the_client_and_the_packages_a_session_installed_or_imported_are_systems():
    text = (
        "<!-- Generated by SpecStory -->\n\n<!-- cursor Session 15a5dfca (2025-06-25 09:41Z) -->\n\n"
        "_**User**_\n\nPlot the monthly expenses from the CSV file please.\n\n---\n\n"
        "_**Agent (claude-opus-4-7)**_\n\nI added a chart script that plots the expenses by month.\n\n"
        "```python\nimport os, json\nimport matplotlib.pyplot as plt\nfrom expense_tracker import ExpenseTracker\n```\n\n"
        "Install its one dependency first:\n\n```bash\npip install --upgrade matplotlib==3.9\nnpm install -D @playwright/test\n```\n\n"
        "The tracker lives in expense_tracker.py, as before. In JavaScript `import Display from './Display'` stays as it is.\n"
    )
    systems = LocalCompressor().compress(text).entities.systems
    assert {"Cursor", "claude-opus-4-7", "matplotlib", "@playwright/test"} <= set(systems)
    assert not {"os", "json", "expense_tracker", "Display", "plt"} & set(systems)  # the standard library, the session's own module, a JS default import


def test_an_npm_scoped_package_is_no_person():
    text = "user: Render the PDF on the server please.\n\nassistant: I switched S12 to renderToBuffer from @react-pdf/renderer, which the docs recommend.\n"
    assert LocalCompressor().compress(text).entities.people == []


def test_a_command_line_of_assignments_is_no_candidate_sentence():
    from memtool.providers.local_sentences import sentences

    text = (
        "user: How do I run the metrics check?\n\n"
        "assistant: Run it with your own token and repository names.\n\nGITHUB_TOKEN=your_token OWNER=owner_name REPO_NAME=repo_name ./metrics_check.sh\n"
    )
    found = [s.text for s in sentences(parts(text))[1]]
    assert "Run it with your own token and repository names." in found
    assert not any("GITHUB_TOKEN" in s for s in found)


def test_an_agent_sentence_knows_whether_the_edits_after_it_were_applied_and_what_it_answers():
    from memtool.providers.local_sentences import CONTEXT_NAMES, sentences

    text = (
        "#### Can you make the chart a pie chart instead?\n\n"
        "I will switch the category chart to a pie chart in visualize.py.\n\n"
        "> Applied edit to visualize.py\n\n"
        "#### Add a dark mode toggle to the header.\n\n"
        "I will add the toggle button to the header component.\n\n"
        "> The LLM did not conform to the edit format.\n"
    )
    ctx = {s.text: dict(zip(CONTEXT_NAMES, s.context)) for s in sentences(parts(text))[1] if s.role == "assistant"}
    pie, toggle = ctx["I will switch the category chart to a pie chart in visualize.py."], ctx["I will add the toggle button to the header component."]
    assert (pie["agent_turn_applied"], pie["agent_turn_failed"], pie["answers_question"]) == (1.0, 0.0, 1.0)
    assert (toggle["agent_turn_applied"], toggle["agent_turn_failed"], toggle["answers_question"]) == (0.0, 1.0, 0.0)

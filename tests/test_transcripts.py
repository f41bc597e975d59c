"""Transcript conversion: Claude Code / Codex JSONL and Gemini JSON -> "role: text" Markdown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memtool.errors import BadInput
from memtool.transcripts import load_transcript, looks_like_json, parse_transcript, read_transcript, text_transcript

FIXTURES = Path(__file__).parent / "fixtures" / "hooks"


def test_claude_code_jsonl_keeps_the_conversation_and_drops_the_noise():
    text = read_transcript(FIXTURES / "claude_transcript.jsonl")
    assert text == (
        "session: /home/dev/shop\n\n"
        "summary: Login form crash fixed\n\n"
        "user: The login form crashes when I press submit. Please fix it.\n\n"
        "thinking: Probably a null user.\n\n"
        "assistant: Let me look at the submit handler.\n\n"
        "assistant: [tool Read] src/login.ts\n\n"
        "tool: export function submit(user) { return user.id }\n\n"
        "assistant: [tool Edit] src/login.ts\n\n"
        "assistant: Fixed: submit() now guards against a missing user. "
        "We decided to keep the guard in submit() rather than in the form.\n"
    )
    # meta caveats, sub-agent chatter, slash commands and the half-written last line are not
    # conversation text (thinking and tool output are kept, marked as such)
    for noise in ("Caveat", "sub-agent", "/exit", "Thanks"):
        assert noise not in text


def test_codex_rollout_skips_injected_context_and_duplicate_events():
    text = read_transcript(FIXTURES / "codex_rollout.jsonl")
    assert text == (
        "session: /home/dev/shop\n\n"
        "user: Add a retry to the payment client.\n\n"
        "assistant: [tool shell] rg PaymentClient\n\n"
        "tool: src/pay.py:3:class PaymentClient\n\n"
        "assistant: Added exponential back-off (3 tries) to PaymentClient.charge.\n"
    )


def test_gemini_session_json():
    text = read_transcript(FIXTURES / "gemini_session.json")
    assert text == (
        "user: Why is the CI slow?\n\n"
        "thinking: Plan. read ci\n\n"
        "assistant: Checking the workflow file.\n\n"
        "assistant: [tool read_file] workflows/ci.yml\n\n"
        "user: And how do we fix it?\n\n"
        "assistant: Cache the pip downloads; the install step takes 6 of the 8 minutes.\n"
    )
    assert "Request cancelled" not in text  # info records are UI messages


def test_markdown_and_plain_text_pass_through_unchanged(tmp_path):
    body = '# Session\n\n{"looks": "like json"}\n\nuser: hi\n'
    for name in ("notes.md", "notes.txt"):
        path = tmp_path / name
        path.write_text(body, encoding="utf-8")
        assert read_transcript(path) == body
    plain = tmp_path / "transcript.log"
    plain.write_text("user: hello\nassistant: hi\n", encoding="utf-8")
    assert read_transcript(plain) == "user: hello\nassistant: hi\n"


def test_generic_role_content_messages():
    lines = [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": [{"type": "text", "text": "first answer"}]},
        {"role": "system", "content": "ignored"},
    ]
    jsonl = "\n".join(json.dumps(line) for line in lines)
    expected = "user: first question\n\nassistant: first answer\n"
    assert parse_transcript(jsonl).render() == expected
    assert parse_transcript(json.dumps(lines)).render() == expected


def test_legacy_codex_lines_without_envelope():
    jsonl = "\n".join(
        json.dumps(line)
        for line in (
            {"id": "s1", "timestamp": "2025-05-01T10:00:00Z", "instructions": None},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "rename foo"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "renamed"}]},
        )
    )
    assert parse_transcript(jsonl).render() == "user: rename foo\n\nassistant: renamed\n"


def test_long_tool_arguments_are_clipped():
    jsonl = json.dumps(
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "name": "Write", "input": {"content": "x" * 5000}}]}}
    )
    line = parse_transcript(jsonl).render().strip()
    assert line.startswith("assistant: [tool Write] {")
    assert len(line) < 260


@pytest.mark.parametrize("text", ["", "   \n", "not json at all {", "{broken json"])
def test_text_that_is_not_a_transcript_format_is_returned_as_is(text):
    assert parse_transcript(text).render() == text


def test_jsonl_with_nothing_conversational_gives_empty_text():
    jsonl = '{"type":"session_meta","payload":{"id":"x"}}\n{"type":"turn_context","payload":{}}\n'
    assert parse_transcript(jsonl).render() == ""


def test_undecodable_bytes_do_not_fail(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"role": "user", "content": "caf\xe9 ok"}\n')
    assert read_transcript(path) == "user: caf\ufffd ok\n"


# --- JSON of no known format, JSON beyond the parser, file names in any case --------------------

UNKNOWN_JSON = ['["a", "b"]', '{"messages": "x"}', '{"title": "notes", "mapping": {}}', '{"a": 1}\n{"b": 2}\n']


@pytest.mark.parametrize("text", UNKNOWN_JSON)
def test_json_of_no_known_format_is_returned_as_is_or_refused_when_strict(text):
    assert parse_transcript(text).render() == text  # passed through, as the module promises (it used to become "")
    with pytest.raises(
        BadInput, match=r"^t\.json: JSON, but of no known transcript format\. memtool reads Claude Code JSONL, Codex CLI JSONL, Gemini CLI JSON"
    ):
        parse_transcript(text, name="t.json", strict=True).render()


def test_known_formats_without_conversation_are_known_even_when_strict():
    assert parse_transcript('{"sessionId": "s", "messages": []}', strict=True).render() == ""
    assert parse_transcript('{"type":"session_meta","payload":{"id":"x"}}\n', strict=True).render() == ""
    assert parse_transcript("not json, but text", strict=True).render() == "not json, but text"
    assert parse_transcript("{broken json", strict=True).render() == "{broken json"


@pytest.mark.parametrize(
    "text, needle",
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"a": ' * 3000 + "1" + "}" * 3000, "nested too deeply"),
        ('{"role": "user", "content": "hi"}\n' + "[" * 5000 + "]" * 5000 + "\n", "line 2: the JSON is nested too deeply"),
        ('[{"role": "user", "content": "hi", "n": ' + "1" * 5000 + "}]", "Exceeds the limit"),
    ],
    ids=["array", "object", "jsonl-line", "huge-int"],
)
def test_json_beyond_the_parser_is_bad_input_not_a_traceback(text, needle):
    with pytest.raises(BadInput, match=f"^deep.json: .*{needle}"):
        parse_transcript(text, name="deep.json", strict=True).render()
    assert parse_transcript(text).render() == text  # not strict (stdin): not a transcript we know, so text


def test_deep_structure_inside_a_record_is_bad_input():
    """JSON the parser takes (500 levels) but that is too deep to walk in Python is BadInput too."""
    record = '{"role": "assistant", "content": ' + "[" * 500 + '{"text": "hi"}' + "]" * 500 + "}"
    assert json.loads(record)["role"] == "assistant"
    with pytest.raises(BadInput, match=r"^t\.json: the JSON is nested too deeply to read; not a transcript"):
        parse_transcript(record, name="t.json", strict=True).render()
    assert parse_transcript(record).render() == record


def test_tool_arguments_too_deep_to_parse_are_shown_as_the_string():
    args = "[" * 100_000 + "]" * 100_000
    line = json.dumps({"type": "function_call", "name": "shell", "arguments": args})
    assert parse_transcript(line).render().startswith("assistant: [tool shell] [[[")


def test_read_transcript_suffix_is_case_insensitive(tmp_path):
    lines = (FIXTURES / "claude_transcript.jsonl").read_bytes()
    upper = tmp_path / "session.JSONL"
    upper.write_bytes(lines)
    assert read_transcript(upper) == read_transcript(FIXTURES / "claude_transcript.jsonl")
    notes = tmp_path / "NOTES.MD"
    notes.write_text('{"role": "user", "content": "kept as written"}\n')
    assert read_transcript(notes) == '{"role": "user", "content": "kept as written"}\n'
    (tmp_path / "arr.JSON").write_text('["a", "b"]')
    with pytest.raises(BadInput, match="no known transcript format"):
        read_transcript(tmp_path / "arr.JSON")


@pytest.mark.parametrize("prefix", ["", "\ufeff", "  \n"])
def test_looks_like_json(prefix):
    assert looks_like_json(prefix + '{"a": 1}') and looks_like_json((prefix + "[1]").encode())
    assert not looks_like_json(prefix + "user: hi") and not looks_like_json((prefix + "# notes").encode())


# --- the transcript model: start times, formats, encodings, bad lines ----------------------------


def _jsonl(*records) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


def test_claude_code_start_time_tools_and_files_changed():
    t = load_transcript(FIXTURES / "claude_transcript.jsonl")
    assert t.format == "claude-code"
    assert t.started is not None and t.started.tzinfo is not None
    assert t.files_changed == ["src/login.ts"]


def test_codex_apply_patch_names_the_files_changed_and_shell_commands_are_unwrapped():
    text = _jsonl(
        {"timestamp": "2025-09-03T08:41:12.000Z", "type": "session_meta", "payload": {"cwd": "/home/sofia/shop", "timestamp": "2025-09-03T08:41:12.000Z"}},
        {
            "timestamp": "2025-09-03T08:42:00.000Z",
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps({"command": ["bash", "-lc", "go test ./..."], "workdir": "/home/sofia/shop"}),
            },
        },
        {
            "timestamp": "2025-09-03T08:43:00.000Z",
            "type": "response_item",
            "payload": {
                "type": "custom_tool_call",
                "name": "apply_patch",
                "input": "*** Begin Patch\n*** Update File: internal/api/orders.go\n@@\n-a\n+b\n"
                "*** Add File: internal/api/orders_timeout_test.go\n+x\n*** End Patch\n",
            },
        },
        {
            "timestamp": "2025-09-03T08:43:01.000Z",
            "type": "response_item",
            "payload": {"type": "custom_tool_call_output", "output": json.dumps({"output": "Success. Updated the following files"})},
        },
    )
    t = parse_transcript(text, strict=True)
    assert t.format == "codex"
    assert t.started.isoformat() == "2025-09-03T08:41:12+00:00"
    assert t.files_changed == ["internal/api/orders.go", "internal/api/orders_timeout_test.go"]
    rendered = t.render()
    assert "[tool shell] go test ./..." in rendered and "bash -lc" not in rendered
    assert "[tool apply_patch] internal/api/orders.go internal/api/orders_timeout_test.go" in rendered
    assert "tool: Success. Updated the following files" in rendered


def test_gemini_cli_jsonl_last_copy_wins_and_rewind_drops_later_messages():
    text = _jsonl(
        {"sessionId": "s1", "projectHash": "p", "startTime": "2026-02-10T15:47:22.381Z", "lastUpdated": "2026-02-10T15:47:22.381Z"},
        {"id": "u1", "timestamp": "2026-02-10T15:49:27Z", "type": "user", "content": [{"text": "Push is broken on iOS."}]},
        {"$set": {"lastUpdated": "2026-02-10T15:49:27Z"}},
        {"id": "g1", "timestamp": "2026-02-10T15:49:39Z", "type": "gemini", "content": ""},
        {
            "id": "g1",
            "timestamp": "2026-02-10T15:49:39Z",
            "type": "gemini",
            "content": "Reading src/push.ts.",
            "toolCalls": [
                {
                    "name": "read_file",
                    "args": {"file_path": "src/push.ts"},
                    "result": [{"functionResponse": {"response": {"output": "export async function registerForPush"}}}],
                }
            ],
        },
        {"id": "u2", "timestamp": "2026-02-10T15:50:00Z", "type": "user", "content": [{"text": "an abandoned question"}]},
        {"id": "g2", "timestamp": "2026-02-10T15:50:05Z", "type": "gemini", "content": "an abandoned answer"},
        {"$rewindTo": "u2"},
        {"id": "u3", "timestamp": "2026-02-10T15:51:00Z", "type": "user", "content": [{"text": "Fix it with the projectId."}]},
    )
    t = parse_transcript(text, name="session.jsonl", strict=True)
    assert t.format == "gemini-jsonl"
    assert t.started.isoformat() == "2026-02-10T15:47:22.381000+00:00"
    assert t.render() == (
        "user: Push is broken on iOS.\n\n"
        "assistant: Reading src/push.ts.\n\n"
        "assistant: [tool read_file] src/push.ts\n\n"
        "tool: export async function registerForPush\n\n"
        "user: Fix it with the projectId.\n"
    )


def test_a_bad_jsonl_line_is_reported_not_dropped_silently():
    text = _jsonl({"role": "user", "content": "hello"}) + "{not json\n" + _jsonl({"role": "assistant", "content": "hi"})
    t = parse_transcript(text, name="chat.jsonl", strict=True)
    assert t.render() == "user: hello\n\nassistant: hi\n"
    assert t.warnings == ["chat.jsonl: 1 line(s) are not JSON and were skipped (line 2)"]


@pytest.mark.parametrize("encoding, bom", [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"), ("utf-8", b"\xef\xbb\xbf")])
def test_utf16_and_bom_input_is_read(tmp_path, encoding, bom):
    for name, body in (("notes.md", "user: héllo\n"), ("chat.jsonl", _jsonl({"role": "user", "content": "héllo"}))):
        path = tmp_path / name
        path.write_bytes(bom + body.encode(encoding))
        text = read_transcript(path)
        assert text.startswith("user: héllo") and "\ufeff" not in text


@pytest.mark.parametrize(
    "head, day",
    [
        ("# aider chat started at 2025-03-20 09:14:02\n", "2025-03-20"),
        ("<!-- cursor Session 15a5 (2025-06-25 09:41Z) -->\n", "2025-06-25"),
        ("_Session with the coding agent, Thursday 17 April 2025_\n", "2025-04-17"),
        ("Date: Tuesday 2 December 2025, 15:10-16:25 UTC\n", "2025-12-02"),
        ("Meeting notes, March 3, 2024\n", "2024-03-03"),
        ("## Cherry-Picking Commits in Git (1/26/2025, 7:52:25 PM)\n", "2025-01-26"),
        ("Notes of 26/1/2025\n", "2025-01-26"),
    ],
)
def test_markdown_and_text_are_dated_by_their_first_lines(head, day):
    t = text_transcript("# Title\n\n" + head + "\nuser: hi\n")
    assert t.started is not None and t.started.date().isoformat() == day


def test_a_stated_day_without_a_time_is_taken_at_noon_and_a_stated_time_is_kept():
    assert text_transcript("# Session 2026-11-26\n\nDone: moved the export.\n").started.isoformat() == "2026-11-26T12:00:00+00:00"
    assert text_transcript("Date: 2 December 2025\n").started.isoformat() == "2025-12-02T12:00:00+00:00"
    assert text_transcript("# aider chat started at 2025-03-20 09:14:02\n").started.isoformat() == "2025-03-20T09:14:02+00:00"
    assert text_transcript("## Fix (1/26/2025, 7:52:25 PM)\n").started.isoformat() == "2025-01-26T19:52:25+00:00"
    assert text_transcript("## Fix (12/31/2024, 12:05 AM)\n").started.isoformat() == "2024-12-31T00:05:00+00:00"
    assert text_transcript("version 1/2/3456/7 and 13/13/2025\n").started is None


def test_a_date_deep_in_the_text_is_not_the_start():
    assert text_transcript("user: hi\n" * 30 + "we shipped on 2024-01-05\n").started is None


# -- the one loader (memory compress, MCP memory_compress, the hooks) ------------------------------
def test_the_loader_reads_utf16_refuses_binary_and_warns_about_bad_utf8(tmp_path):
    from memtool.transcripts import transcript_from_bytes

    utf16 = "user: hello ünïcode\n".encode("utf-16")  # with its BOM: NUL bytes that are text
    assert transcript_from_bytes(utf16, "a.md", "text").render() == "user: hello ünïcode\n"
    with pytest.raises(BadInput, match="b.md: looks like a binary file"):
        transcript_from_bytes(b"user: hi\x00\x01", "b.md", "text")
    bad = transcript_from_bytes(b"user: caf\xe9 ok\n", "c.md", "text")
    assert bad.render() == "user: caf\ufffd ok\n" and bad.warnings == ["c.md: invalid UTF-8 at byte 9; undecodable bytes replaced with U+FFFD"]


def test_the_loader_caps_text_files_before_reading_and_json_after_conversion(tmp_path):
    big = tmp_path / "big.md"
    big.write_text("user: " + "word " * 100 + "\n")
    with pytest.raises(BadInput, match="over the limit of 100 bytes"):
        load_transcript(big, max_bytes=100)
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_bytes((FIXTURES / "claude_transcript.jsonl").read_bytes())
    assert load_transcript(jsonl, max_bytes=100).render() == read_transcript(FIXTURES / "claude_transcript.jsonl")


def test_a_json_transcript_under_another_name_is_still_recognised(tmp_path):
    log = tmp_path / "session.log"  # neither .jsonl nor Markdown: parsed when it is a known format
    log.write_bytes((FIXTURES / "claude_transcript.jsonl").read_bytes())
    assert load_transcript(log).render() == read_transcript(FIXTURES / "claude_transcript.jsonl")
    notes = tmp_path / "notes.md"  # Markdown is kept as written, even when it looks like JSON
    notes.write_text('[{"role": "user", "content": "hi"}]\n')
    assert load_transcript(notes).render() == '[{"role": "user", "content": "hi"}]\n'


# -- what memtool injected is nobody's words; a date someone said is not the session's -------------
MEMTOOL_CONTEXT = "<memtool-context>\n## Relevant past work\n- [1 December 2026] Orders migration: dual writes behind a flag\n</memtool-context>"


def test_gemini_hook_context_in_the_prompt_is_not_kept_and_does_not_date_the_session():
    doc = {
        "sessionId": "s1",
        "startTime": "2026-12-01T10:00:00Z",
        "messages": [
            {"type": "user", "content": f"<hook_context>{MEMTOOL_CONTEXT}\nOld note of 3 March 2026</hook_context>\nWhere are we with the orders migration?"},
            {"type": "gemini", "content": "The dual writes are on; the backfill is next."},
        ],
    }
    t = parse_transcript(json.dumps(doc))
    assert t.render() == "user: Where are we with the orders migration?\n\nassistant: The dual writes are on; the backfill is next.\n"
    assert t.started.isoformat() == "2026-12-01T10:00:00+00:00"


def test_a_user_turn_that_is_only_injected_context_is_dropped_and_an_unclosed_tag_ends_with_its_turn():
    lines = [
        {"type": "user", "timestamp": "2026-12-01T09:00:00Z", "message": {"role": "user", "content": MEMTOOL_CONTEXT}},
        {"type": "user", "timestamp": "2026-12-01T09:00:01Z", "message": {"role": "user", "content": "<memtool-context>\n## Relevant past work\n- cut off"}},
        {"type": "user", "timestamp": "2026-12-01T09:00:02Z", "message": {"role": "user", "content": "Ship the backfill today."}},
    ]
    text = parse_transcript("\n".join(json.dumps(line) for line in lines)).render()
    assert text == "user: Ship the backfill today.\n"


def test_markdown_loses_injected_blocks_but_keeps_the_turns_after_an_unclosed_one():
    md = f"user: {MEMTOOL_CONTEXT}\nfix the login\n\nassistant: <hook_context>## Relevant past work\n- stale\n\nuser: and add a test\n"
    kept = text_transcript(md).text
    assert "Relevant past work" not in kept and "stale" not in kept
    assert "fix the login" in kept and "user: and add a test" in kept


def test_a_date_a_speaker_mentions_in_the_first_lines_does_not_date_a_markdown_transcript():
    assert text_transcript("session: /home/dev/shop, branch master\n\nuser: what did we decide on 3 March 2026?\n").started is None
    assert (
        text_transcript("# aider chat started at 2025-03-20 09:14:02\n\n#### the release of 3 March 2026\n").started.isoformat() == "2025-03-20T09:14:02+00:00"
    )
    assert text_transcript("_**User (2025-01-26 19:52Z)**_\n\nship it on 3 March 2026\n").started.isoformat() == "2025-01-26T19:52:00+00:00"

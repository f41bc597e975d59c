"""Transcript conversion: Claude Code / Codex JSONL and Gemini JSON -> "role: text" Markdown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memtool.errors import BadInput
from memtool.transcripts import convert_transcript, looks_like_json, read_transcript

FIXTURES = Path(__file__).parent / "fixtures" / "hooks"


def test_claude_code_jsonl_keeps_the_conversation_and_drops_the_noise():
    text = read_transcript(FIXTURES / "claude_transcript.jsonl")
    assert text == (
        "summary: Login form crash fixed\n\n"
        "user: The login form crashes when I press submit. Please fix it.\n\n"
        "assistant: Let me look at the submit handler.\n\n"
        "assistant: [tool Read] file_path=src/login.ts\n\n"
        "assistant: [tool Edit] file_path=src/login.ts\n\n"
        "assistant: Fixed: submit() now guards against a missing user. "
        "We decided to keep the guard in submit() rather than in the form.\n"
    )
    # meta caveats, thinking, tool results, sub-agent chatter, slash commands and the
    # half-written last line are not conversation text
    for noise in ("Caveat", "Probably a null user", "return user.id", "sub-agent", "/exit", "Thanks"):
        assert noise not in text


def test_codex_rollout_skips_injected_context_and_duplicate_events():
    text = read_transcript(FIXTURES / "codex_rollout.jsonl")
    assert text == (
        "user: Add a retry to the payment client.\n\n"
        "assistant: [tool shell] command=rg PaymentClient\n\n"
        "assistant: Added exponential back-off (3 tries) to PaymentClient.charge.\n"
    )


def test_gemini_session_json():
    text = read_transcript(FIXTURES / "gemini_session.json")
    assert text == (
        "user: Why is the CI slow?\n\n"
        "assistant: Checking the workflow file.\n\n"
        "assistant: [tool read_file] absolute_path=/repo/.github/workflows/ci.yml\n\n"
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
    assert convert_transcript(jsonl) == expected
    assert convert_transcript(json.dumps(lines)) == expected


def test_legacy_codex_lines_without_envelope():
    jsonl = "\n".join(
        json.dumps(line)
        for line in (
            {"id": "s1", "timestamp": "2025-05-01T10:00:00Z", "instructions": None},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "rename foo"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "renamed"}]},
        )
    )
    assert convert_transcript(jsonl) == "user: rename foo\n\nassistant: renamed\n"


def test_long_tool_arguments_are_clipped():
    jsonl = json.dumps(
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "name": "Write", "input": {"content": "x" * 5000}}]}}
    )
    line = convert_transcript(jsonl).strip()
    assert line.startswith("assistant: [tool Write] {")
    assert len(line) < 260


@pytest.mark.parametrize("text", ["", "   \n", "not json at all {", "{broken json"])
def test_text_that_is_not_a_transcript_format_is_returned_as_is(text):
    assert convert_transcript(text) == text


def test_jsonl_with_nothing_conversational_gives_empty_text():
    jsonl = '{"type":"session_meta","payload":{"id":"x"}}\n{"type":"turn_context","payload":{}}\n'
    assert convert_transcript(jsonl) == ""


def test_undecodable_bytes_do_not_fail(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"role": "user", "content": "caf\xe9 ok"}\n')
    assert read_transcript(path) == "user: caf\ufffd ok\n"


# --- JSON of no known format, JSON beyond the parser, file names in any case --------------------

UNKNOWN_JSON = ['["a", "b"]', '{"messages": "x"}', '{"title": "notes", "mapping": {}}', '{"a": 1}\n{"b": 2}\n']


@pytest.mark.parametrize("text", UNKNOWN_JSON)
def test_json_of_no_known_format_is_returned_as_is_or_refused_when_strict(text):
    assert convert_transcript(text) == text  # passed through, as the module promises (it used to become "")
    with pytest.raises(BadInput, match=r"^t\.json: JSON, but of no known transcript format\. memtool reads Claude Code JSONL, Codex CLI JSONL, Gemini CLI JSON"):
        convert_transcript(text, name="t.json", strict=True)


def test_known_formats_without_conversation_are_known_even_when_strict():
    assert convert_transcript('{"sessionId": "s", "messages": []}', strict=True) == ""
    assert convert_transcript('{"type":"session_meta","payload":{"id":"x"}}\n', strict=True) == ""
    assert convert_transcript('not json, but text', strict=True) == "not json, but text"
    assert convert_transcript('{broken json', strict=True) == "{broken json"


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
        convert_transcript(text, name="deep.json", strict=True)
    assert convert_transcript(text) == text  # not strict (stdin): not a transcript we know, so text


def test_deep_structure_inside_a_record_is_bad_input():
    """JSON the parser takes (500 levels) but that is too deep to walk in Python is BadInput too."""
    record = '{"role": "assistant", "content": ' + "[" * 500 + '{"text": "hi"}' + "]" * 500 + "}"
    assert json.loads(record)["role"] == "assistant"
    with pytest.raises(BadInput, match=r"^t\.json: the JSON is nested too deeply to read; not a transcript"):
        convert_transcript(record, name="t.json", strict=True)
    assert convert_transcript(record) == record


def test_tool_arguments_too_deep_to_parse_are_shown_as_the_string():
    args = "[" * 100_000 + "]" * 100_000
    line = json.dumps({"type": "function_call", "name": "shell", "arguments": args})
    assert convert_transcript(line).startswith("assistant: [tool shell] \"[[[")


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

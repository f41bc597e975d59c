"""Transcript conversion: Claude Code / Codex JSONL and Gemini JSON -> "role: text" Markdown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memtool.transcripts import convert_transcript, read_transcript

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

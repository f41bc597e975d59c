from memtool.app import open_memory
from memtool.chunking import chunk_lines, chunk_markdown, uncommented
from memtool.scaffold import init
from memtool.text import count_tokens

DOC = """# Project

Intro paragraph about the project.

## Decisions

- Use Postgres
- Use Redis for caching

```python
# not a heading
x = 1
```

## People

Alice leads the backend.
"""


def test_markdown_chunks_carry_heading_and_line():
    chunks = chunk_markdown(DOC, target=1000)
    heads = [c.heading for c in chunks]
    assert heads == ["Project", "Project > Decisions", "Project > People"]
    decisions = chunks[1]
    assert "Use Redis" in decisions.text and "# not a heading" in decisions.text
    assert DOC.splitlines()[decisions.line - 1] == "- Use Postgres"
    assert chunks[2].text == "Alice leads the backend."


def test_markdown_small_target_splits_paragraphs():
    text = "\n\n".join(f"Paragraph {i} " + "word " * 30 for i in range(6))
    chunks = chunk_markdown(text, target=70)
    assert len(chunks) >= 3
    assert all(count_tokens(c.text) <= 70 or "\n\n" not in c.text for c in chunks)
    assert "".join(c.text for c in chunks).count("Paragraph") == 6


def test_chunk_lines_groups_turns_with_overlap():
    text = "\n".join(f"A: line number {i} with some words" for i in range(40))
    chunks = chunk_lines(text, target=40, overlap=1)
    assert len(chunks) > 3
    first_lines = chunks[0].text.splitlines()
    assert chunks[1].text.splitlines()[0] == first_lines[-1]  # one turn of overlap
    assert chunks[0].line == 1
    covered = set()
    for c in chunks:
        covered.update(c.text.splitlines())
    assert len(covered) == 40


def test_html_comments_are_blanked_outside_code_with_line_numbers_kept():
    text = "# Notes\n\n- 09:12 shipped it <!-- source=ai_inferred agent=claude-code -->\n<!-- a\nnote -->\nafter\n\n```html\n<!-- markup -->\n```\n"
    out = uncommented(text)
    assert out.count("\n") == text.count("\n")  # chunks still point at the right lines
    assert "claude-code" not in out and "note" not in out.split("after")[0]
    assert "<!-- markup -->" in out  # fenced code is shown as written
    chunk = chunk_markdown(text)[0]
    assert chunk.line == 3 and "shipped it" in chunk.text and "ai_inferred" not in chunk.text


def test_a_log_lines_provenance_tag_is_not_searched(root):
    init(root)
    mem = open_memory(root, dense_fallback=False)
    mem.log("Rotated the staging database password.", agent="claude-code", source="ai_inferred")
    assert "agent=claude-code" in next((root / "memory").glob("*.md")).read_text()  # provenance stays in the file
    assert mem.search("claude", kinds=("log",)) == []  # but is not what the line says
    hit = mem.search("staging password", kinds=("log",))[0]
    assert "Rotated" in hit.text and "<!--" not in hit.text

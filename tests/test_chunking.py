import memtool.chunking
from memtool.app import open_memory
from memtool.chunking import chunk_at, chunk_lines, chunk_markdown, uncommented
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
    assert mem.search("claude", kinds=("log",)).hits == []  # but is not what the line says
    hit = mem.search("staging password", kinds=("log",))[0]
    assert "Rotated" in hit.text and "<!--" not in hit.text


SAME_HEADINGS = (
    """# Log

## Notes

first note <!-- tag:
spans lines -->

## Notes

second note under a heading of the same path, merged with the first

```
# a comment in code, no heading

<!-- kept in code -->
```
"""
    + "\n\n".join(f"Paragraph {i} " + "word " * 30 for i in range(8))
    + "\n"
)


def test_chunk_at_is_the_chunk_of_the_whole_file_that_starts_at_a_line():
    for text, target in [(DOC, 1000), (DOC, 10), (SAME_HEADINGS, 70), (SAME_HEADINGS, 1000), ("", 70), ("one line", 70)]:
        chunks = chunk_markdown(text, target)
        starts = {c.line: i for i, c in enumerate(chunks)}
        for line in range(1, len(text.splitlines()) + 2):
            i = starts.get(line)
            expected = (None, None) if i is None else (chunks[i], chunks[i + 1].line if i + 1 < len(chunks) else None)
            assert chunk_at(text, line, target) == expected, (target, line)


def test_chunk_at_counts_only_from_the_last_change_of_heading(monkeypatch):
    sections = [f"## Area {i}\n\n" + "\n".join(f"- Fact {i}.{j}: the cache keeps {j} minutes." for j in range(10)) for i in range(500)]
    text = "# Memory\n\n" + "\n\n".join(sections) + "\n"
    counted: list[str] = []
    real = memtool.chunking.count_tokens
    monkeypatch.setattr(memtool.chunking, "count_tokens", lambda t: counted.append(t) or real(t))
    *_, before, last = chunk_markdown(text)
    counted.clear()
    assert chunk_at(text, before.line) == (before, last.line)
    assert counted == [before.text, last.text], "the blocks of the two chunks asked for, not the whole file"

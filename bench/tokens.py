"""How exact is the offline token count? `memtool.text.count_tokens` against a real tokenizer.

The reference is the Llama-2 SentencePiece tokenizer shipped inside wordllama (offline, no
download); `--reference cl100k_base|o200k_base` takes OpenAI's GPT-4 / GPT-4o vocabularies instead,
from the `bpe-openai` package (`pip install bpe-openai`: the vocabularies ship inside its wheel).
Three corpora:
  turns     every LoCoMo turn text (short chat messages)
  sessions  every LoCoMo session as a transcript ("Speaker: text" lines)
  repo      this repository's Python and Markdown files
and with `--multilingual`, per script (Cyrillic, Greek, Han, Arabic, ...: SCRIPT_LANGUAGES), text
people wrote in other languages that ships with the system:
  messages  translated messages of the programs' catalogs (/usr/share/locale/<lang>/LC_MESSAGES/*.mo,
            read with gettext; a message left in English is skipped), ~3000 characters a text
  prose     Vim's tutor in its translations (/usr/share/vim/vim*/tutor/tutor.<lang>.utf-8; paragraphs
            of prose around commands), ~3000 characters a text

For each text, ratio = offline count / reference count (> 1: the offline count is high). The
report gives the mean and 5th / 95th percentile of that per-text ratio, the aggregate ratio
(sum / sum), and the constant factor that would make the offline count match the reference on
aggregate (reference / offline).

    python bench/tokens.py --data /work/shared/bench/locomo-dev [--repo .] [--min-tokens 5]
                           [--multilingual] [--reference llama2|cl100k_base|o200k_base]

One JSON object goes to stdout.
"""

from __future__ import annotations

import argparse
import gettext
import json
import re
import sys
from pathlib import Path
from typing import Callable

import numpy as np

from memtool.providers.wordllama import load_wordllama
from memtool.text import count_tokens

SESSION_RE = re.compile(r"^session_\d+$")
REPO_SUFFIXES = (".py", ".md")
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".pytest_cache", ".hypothesis", "memory"}
BATCH = 512
SHARE = Path("/usr/share")  # locale/<lang>/LC_MESSAGES/*.mo and TUTOR_GLOB are under it
TUTOR_GLOB = "vim/vim*/tutor/tutor.*.utf-8"
TUTOR_SKIP = {"sr"}  # Vim's Serbian tutor is written in Latin letters, its catalogs in Cyrillic
TEXT_CHARS = 3000  # a multilingual text: messages or paragraphs up to about this many characters
# Languages measured per script (locale names; a tutor's zh_cn / zh_tw count as zh_CN / zh_TW).
SCRIPT_LANGUAGES = {
    "latin": "fr de es it pt pl cs tr hu ro",
    "vietnamese": "vi",  # Latin letters with stacked diacritics
    "cyrillic": "ru uk bg sr be",
    "greek": "el",
    "han": "zh_CN zh_TW",
    "japanese": "ja",
    "hangul": "ko",
    "arabic": "ar fa",
    "hebrew": "he",
    "devanagari": "hi mr",
    "bengali": "bn",
    "tamil": "ta",
    "thai": "th",
    "georgian": "ka",
    "armenian": "hy",
}
REFERENCES = ("llama2", "cl100k_base", "o200k_base")


def locomo_texts(data: Path) -> tuple[list[str], list[str]]:
    """(turn texts, session transcripts) of every conversation file in `data`."""
    turns: list[str] = []
    sessions: list[str] = []
    for path in sorted(data.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        conv = doc.get("conversation", doc)
        for key, value in conv.items():
            if not SESSION_RE.match(key) or not isinstance(value, list):
                continue
            lines = [f"{t['speaker']}: {t['text']}" for t in value if t.get("text")]
            turns.extend(t["text"] for t in value if t.get("text"))
            if lines:
                sessions.append("\n".join(lines))
    return turns, sessions


def repo_texts(repo: Path) -> list[str]:
    out: list[str] = []
    for path in sorted(repo.rglob("*")):
        if path.suffix not in REPO_SUFFIXES or not path.is_file():
            continue
        if any(part in SKIP_DIRS for part in path.relative_to(repo).parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if text.strip():
            out.append(text)
    return out


def chunked(parts: list[str], sep: str) -> list[str]:
    """Consecutive parts joined by `sep` into texts of about TEXT_CHARS characters."""
    out: list[str] = []
    cur: list[str] = []
    size = 0
    for part in parts:
        cur.append(part)
        size += len(part) + len(sep)
        if size >= TEXT_CHARS:
            out.append(sep.join(cur))
            cur, size = [], 0
    if cur:
        out.append(sep.join(cur))
    return out


def catalog_texts(locale_dir: Path, lang: str) -> list[str]:
    """The translated messages of every catalog of `lang`, in texts of about TEXT_CHARS characters."""
    out: list[str] = []
    for path in sorted((locale_dir / lang / "LC_MESSAGES").glob("*.mo")):  # none: no such language
        with path.open("rb") as f:
            try:
                catalog = gettext.GNUTranslations(f)._catalog
            except (OSError, UnicodeDecodeError) as e:  # not a catalog, or not in the charset it names: skipped
                print(f"skipped {path}: {e}", file=sys.stderr)
                continue
        msgs = [v for k, v in catalog.items() if k and v.strip() and v != (k[0] if isinstance(k, tuple) else k)]
        out.extend(chunked(msgs, "\n"))
    return out


def tutor_texts(share: Path) -> dict[str, list[str]]:
    """Vim's tutor per language, in texts of whole paragraphs of about TEXT_CHARS characters."""
    out: dict[str, list[str]] = {}
    for path in sorted(share.glob(TUTOR_GLOB)):
        lang = path.name.split(".")[1]
        lang = lang[:3] + lang[3:].upper() if "_" in lang else lang  # zh_cn -> zh_CN
        if lang in TUTOR_SKIP or lang in out:  # one vim version's tutor per language
            continue
        paragraphs = [p for p in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")) if p.strip()]
        out[lang] = chunked(paragraphs, "\n\n")
    return out


def multilingual(count: Callable[[list[str]], np.ndarray], min_tokens: int, share: Path) -> dict:
    tutors = tutor_texts(share)
    report = {}
    for script, langs in SCRIPT_LANGUAGES.items():
        messages = {lang: catalog_texts(share / "locale", lang) for lang in langs.split()}
        prose = {lang: tutors[lang] for lang in langs.split() if lang in tutors}
        row = {}
        for corpus, by_lang in (("messages", messages), ("prose", prose)):
            by_lang = {lang: texts for lang, texts in by_lang.items() if texts}
            if by_lang:
                row[corpus] = compare(
                    count, [t for texts in by_lang.values() for t in texts], min_tokens, [lang for lang, texts in by_lang.items() for _ in texts]
                )
        report[script] = row
    return report


def reference(name: str) -> Callable[[list[str]], np.ndarray]:
    """Token counts of texts by the named tokenizer."""
    if name == "llama2":
        tokenizer = load_wordllama().tokenizer
        tokenizer.no_padding()
        tokenizer.no_truncation()

        def count(texts: list[str]) -> np.ndarray:
            counts: list[int] = []
            for i in range(0, len(texts), BATCH):
                enc = tokenizer.encode_batch(texts[i : i + BATCH], add_special_tokens=False)
                counts.extend(len(e.ids) for e in enc)
            return np.asarray(counts, dtype=np.float64)

        return count
    import bpe_openai  # not a memtool dependency: pip install bpe-openai

    encoding = bpe_openai.get_encoding(name)
    return lambda texts: np.asarray([len(encoding.encode(t, disallowed_special=())) for t in texts], dtype=np.float64)


def compare(count: Callable[[list[str]], np.ndarray], texts: list[str], min_tokens: int, langs: list[str] | None = None) -> dict:
    """The ratios over `texts`; with `langs` (one per text) also the aggregate ratio per language."""
    ref = count(texts)
    ours = np.asarray([count_tokens(t) for t in texts], dtype=np.float64)
    keep = ref >= min_tokens  # a 2-token text gives a meaningless ratio
    ref, ours = ref[keep], ours[keep]
    if not keep.any():
        return {"texts": 0}
    ratio = ours / ref
    report = {
        "texts": int(keep.sum()),
        "reference_tokens": int(ref.sum()),
        "offline_tokens": int(ours.sum()),
        "mean_ratio": round(float(ratio.mean()), 3),
        "p5_ratio": round(float(np.percentile(ratio, 5)), 3),
        "median_ratio": round(float(np.median(ratio)), 3),
        "p95_ratio": round(float(np.percentile(ratio, 95)), 3),
        "aggregate_ratio": round(float(ours.sum() / ref.sum()), 3),
        "factor_to_match": round(float(ref.sum() / ours.sum()), 3),
    }
    if langs is not None:
        kept = np.asarray(langs)[keep]
        report["by_language"] = {lang: round(float(ours[kept == lang].sum() / ref[kept == lang].sum()), 3) for lang in dict.fromkeys(kept)}
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("/work/shared/bench/locomo-dev"), help="folder of LoCoMo conversation JSON files")
    ap.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent, help="repository whose .py/.md files are measured")
    ap.add_argument("--min-tokens", type=int, default=5, help="leave out texts shorter than this (reference tokens)")
    ap.add_argument("--multilingual", action="store_true", help="also measure per script: translated messages (.mo) and Vim's tutor in other languages")
    ap.add_argument("--share", type=Path, default=SHARE, help="where locale/ and vim/ are (default /usr/share)")
    ap.add_argument("--reference", choices=REFERENCES, default="llama2", help="the tokenizer to compare with (cl100k_base, o200k_base: pip install bpe-openai)")
    args = ap.parse_args(argv)
    if not args.data.is_dir():
        print(f"error: {args.data}: no such folder", file=sys.stderr)
        return 2
    if args.multilingual and not (args.share / "locale").is_dir():
        print(f"error: {args.share / 'locale'}: no such folder (--share)", file=sys.stderr)
        return 2
    try:
        count = reference(args.reference)
    except ImportError:
        print(f"error: --reference {args.reference} needs the bpe-openai package (pip install bpe-openai)", file=sys.stderr)
        return 2
    turns, sessions = locomo_texts(args.data)
    report = {
        "reference": "Llama-2 SentencePiece (wordllama tokenizer)" if args.reference == "llama2" else f"{args.reference} (bpe-openai)",
        "min_tokens": args.min_tokens,
        "locomo_turns": compare(count, turns, args.min_tokens),
        "locomo_sessions": compare(count, sessions, args.min_tokens),
        "repo_py_md": compare(count, repo_texts(args.repo.resolve()), args.min_tokens),
    }
    if args.multilingual:
        report["multilingual"] = multilingual(count, args.min_tokens, args.share)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

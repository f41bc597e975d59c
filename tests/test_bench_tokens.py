"""The token-count harness (bench/tokens.py) on a tiny LoCoMo file and a tiny /usr/share made here:
a real message catalog (.mo, GNU format) and Vim tutors, counted against the real Llama-2 tokenizer."""

from __future__ import annotations

import json
import struct

from bench.tokens import catalog_texts, main, tutor_texts
from memtool.providers.wordllama import load_wordllama
from memtool.text import count_tokens

RU_MESSAGES = {
    "": "Content-Type: text/plain; charset=UTF-8\n",  # the header: gettext decodes by its charset
    "Open the file": "Открыть файл",
    "The server moved to Moscow overnight": "Ночью сервер переехал в Москву",
    "OK": "OK",  # left untranslated: not Russian text
}
TUTOR_RU = "Урок 1.1: ПЕРЕМЕЩЕНИЕ КУРСОРА\n\nЧтобы выйти из редактора, наберите :q! и нажмите <ENTER>.\n"
TUTOR_SR = "Lekcija 1.1: POMERANJE KURSORA\n\nDa biste izašli iz editora, otkucajte :q! i pritisnite <ENTER>.\n"


def write_mo(path, messages: dict[str, str]) -> None:
    """A GNU .mo catalog: header, table of msgids, table of msgstrs, then the strings."""
    keys = sorted(messages)
    ids = [k.encode() for k in keys]
    strs = [messages[k].encode() for k in keys]
    n = len(keys)
    start = 28 + 16 * n
    offsets, blob = [], b""
    for s in ids + strs:
        offsets.append((len(s), start + len(blob)))
        blob += s + b"\0"
    table = b"".join(struct.pack("<2I", *o) for o in offsets)
    path.parent.mkdir(parents=True)
    path.write_bytes(struct.pack("<7I", 0x950412DE, 0, n, 28, 28 + 8 * n, 0, 0) + table + blob)


def make_share(tmp_path):
    share = tmp_path / "share"
    write_mo(share / "locale" / "ru" / "LC_MESSAGES" / "demo.mo", RU_MESSAGES)
    tutor = share / "vim" / "vim90" / "tutor"
    tutor.mkdir(parents=True)
    (tutor / "tutor.ru.utf-8").write_text(TUTOR_RU, encoding="utf-8")
    (tutor / "tutor.sr.utf-8").write_text(TUTOR_SR, encoding="utf-8")  # Serbian in Latin letters: left out
    return share


def make_locomo(tmp_path):
    data = tmp_path / "locomo"
    data.mkdir()
    turns = [
        {"speaker": "Alice", "text": "We moved the main database to the new server last night."},
        {"speaker": "Bob", "text": "Great, did the backups run before the migration started?"},
    ]
    (data / "conv.json").write_text(json.dumps({"conversation": {"session_1": turns}}), encoding="utf-8")
    return data


def test_translated_messages_are_read_and_untranslated_ones_left_out(tmp_path):
    share = make_share(tmp_path)
    assert catalog_texts(share / "locale", "ru") == ["Открыть файл\nНочью сервер переехал в Москву"]
    assert catalog_texts(share / "locale", "el") == []  # no such language here
    assert set(tutor_texts(share)) == {"ru"}


def test_multilingual_report_per_script_and_language(tmp_path, capsys):
    share = make_share(tmp_path)
    assert main(["--data", str(make_locomo(tmp_path)), "--repo", str(tmp_path / "locomo"), "--multilingual", "--share", str(share)]) == 0
    report = json.loads(capsys.readouterr().out)
    cyrillic = report["multilingual"]["cyrillic"]
    assert cyrillic["messages"]["texts"] == 1 and set(cyrillic["messages"]["by_language"]) == {"ru"}
    assert set(cyrillic["prose"]["by_language"]) == {"ru"}
    assert cyrillic["messages"]["offline_tokens"] == count_tokens("Открыть файл\nНочью сервер переехал в Москву")
    ref = load_wordllama().tokenizer.encode("Открыть файл\nНочью сервер переехал в Москву", add_special_tokens=False)
    assert cyrillic["messages"]["reference_tokens"] == len(ref.ids)
    assert report["multilingual"]["greek"] == {}  # nothing of it on this system
    assert report["locomo_turns"]["texts"] == 2


def test_missing_share_is_a_clear_error(tmp_path, capsys):
    assert main(["--data", str(make_locomo(tmp_path)), "--multilingual", "--share", str(tmp_path / "nowhere")]) == 2
    assert "no such folder" in capsys.readouterr().err

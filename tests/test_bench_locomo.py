"""The LoCoMo harness: metric functions on hand-made inputs, and one in-process run on a tiny
synthetic conversation in the LoCoMo format (real local compressor and wordllama embedder)."""

from __future__ import annotations

import json

import pytest

from bench.locomo import (
    RawBM25,
    answer_in,
    evidence_sessions,
    first_rank,
    load_conversations,
    main,
    normalize,
    recall_at,
    reciprocal_rank,
    summarize,
    turn_line,
    window_context,
    windows,
    with_typo,
)
from memtool.text import count_tokens


def turns(n: int, lines: list[tuple[str, str]], caption: dict[int, str] | None = None) -> list[dict]:
    out = []
    for i, (speaker, text) in enumerate(lines, 1):
        t = {"speaker": speaker, "dia_id": f"D{n}:{i}", "text": text}
        if caption and i in caption:
            t["blip_caption"] = caption[i]
        out.append(t)
    return out


def conversation() -> dict:
    return {
        "speaker_a": "Alice",
        "speaker_b": "Bob",
        "session_1_date_time": "1:47 pm on 18 May, 2023",
        "session_1": turns(
            1,
            [
                ("Alice", "Hi Bob! I finally adopted a greyhound called Biscuit from the shelter."),
                ("Bob", "That's wonderful! Greyhounds are gentle dogs."),
                ("Alice", "Biscuit sleeps twenty hours a day on the sofa."),
                ("Bob", "Ha, sounds like a champion napper."),
            ],
            caption={3: "a photo of a grey dog asleep on a red sofa"},
        ),
        "session_2_date_time": "10:00 am on 2 June, 2023",
        "session_2": turns(
            2,
            [
                ("Bob", "I started learning the cello at the community music school."),
                ("Alice", "The cello! What piece are you practising?"),
                ("Bob", "Bach's first cello suite, the prelude. My teacher is strict."),
            ],
        ),
        "session_3_date_time": "7:15 pm on 20 June, 2023",
        "session_3": turns(
            3,
            [
                ("Alice", "We hiked the Pinnacle Trail on Saturday and saw a bald eagle."),
                ("Bob", "An eagle! Did Biscuit come along on the trail?"),
                ("Alice", "Yes, he loved the mountain air."),
            ],
        ),
        "session_4_date_time": "9:00 am on 1 July, 2023",  # a date with no turns: skipped
        "session_1_summary": "GOLD SUMMARY that must never be read",
        "qa": [
            {"question": "What instrument did Bob start learning at the music school?", "answer": "the cello", "evidence": ["D2:1"], "category": 4},
            {"question": "When did Alice adopt the greyhound?", "answer": "May 2023", "evidence": ["D1:1"], "category": 2},
            {"question": "Which places did Biscuit visit?", "answer": "sofa, Pinnacle Trail", "evidence": ["D1:3; D3:2"], "category": 1},
            {"question": "What is Bob's favourite opera?", "adversarial_answer": "Carmen", "evidence": [], "category": 5},
            {"question": "Is Alice outdoorsy?", "answer": "Likely yes", "evidence": [], "category": 3},  # no evidence: skipped
        ],
    }


@pytest.fixture
def data(tmp_path):
    folder = tmp_path / "locomo"
    folder.mkdir()
    (folder / "7.json").write_text(json.dumps(conversation()), encoding="utf-8")
    return folder


# -- metrics ---------------------------------------------------------------------------------------
def test_first_rank_recall_and_mrr():
    assert first_rank([4, 2, 9, 2], {2}) == 2
    assert first_rank([4, 5], {2}) is None
    assert first_rank(list(range(20)), {15}) is None  # beyond depth 10
    assert first_rank(list(range(20)), {15}, depth=20) == 16
    assert [recall_at(3, k) for k in (1, 3, 5)] == [0.0, 1.0, 1.0]
    assert recall_at(None, 10) == 0.0
    assert reciprocal_rank(4) == 0.25 and reciprocal_rank(None) == 0.0


def test_summarize_known_values():
    recs = [
        {"category": 1, "rank": 1, "aic": True},
        {"category": 1, "rank": 4, "aic": False},
        {"category": 4, "rank": None, "aic": False},
        {"category": 4, "rank": 2, "aic": True},
    ]
    s = summarize(recs)
    assert s["R@1"] == 0.25 and s["R@3"] == 0.5 and s["R@5"] == 0.75 and s["R@10"] == 0.75
    assert s["MRR"] == round((1 + 0.25 + 0 + 0.5) / 4, 4)
    assert s["answer_in_context"] == 0.5 and s["n"] == 4
    assert s["by_category"]["1"]["MRR"] == 0.625 and s["by_category"]["4"]["R@1"] == 0.0
    assert s["by_category"]["2"] == {"R@1": None, "R@3": None, "R@5": None, "R@10": None, "MRR": None, "answer_in_context": None, "n": 0}
    assert "answer_in_context" not in summarize(recs, with_context=False)


def test_normalise_and_answer_in():
    assert normalize("The  Cello!") == "cello"
    assert normalize("7 May, 2023.") == "7 may 2023"
    assert normalize("An apple, a pear & the fig") == "apple pear fig"
    assert normalize("Caroline’s “book”") == "carolines book"
    assert answer_in("7 May 2023", "She went on 7 may, 2023 to the group.")
    assert answer_in("the Cello", "Bob: I started learning the cello.")
    assert not answer_in("no", "I know the answer")  # word boundaries, not raw substrings
    assert not answer_in("5", "in 2050")
    assert not answer_in("!!", "anything")  # an answer that normalises to nothing is never found


def test_evidence_ids_are_split_defensively():
    assert evidence_sessions(["D3:5"]) == {3}
    assert evidence_sessions(["D8:6; D9:17", "D10:2"]) == {8, 9, 10}
    assert evidence_sessions(["D:11:26"]) == {11}
    assert evidence_sessions(["D", "", None]) == frozenset()
    assert evidence_sessions("D4:1") == {4}


def test_with_typo_misspells_one_long_word_by_one_edit():
    import random

    from rapidfuzz.distance import OSA

    text = "When did Caroline go to the support group?"
    for seed in range(30):
        typo = with_typo(text, random.Random(seed))
        changed = [(a, b) for a, b in zip(text.split(), typo.split()) if a != b]
        assert len(changed) == 1 and len(typo.split()) == len(text.split())
        before, after = changed[0]
        assert len(before) >= 5 and before[0] == after[0] and OSA.distance(before, after) == 1
    assert with_typo("Who is he?", random.Random(0)) == "Who is he?"  # no word of 5+ letters


def test_turn_line_adds_photo_caption_and_stays_one_line():
    assert turn_line({"speaker": "Ann", "text": "Look\nat this", "blip_caption": "a cat"}) == "Ann: Look at this [shares a photo: a cat]"
    assert turn_line({"speaker": "Ann", "text": "Hi"}) == "Ann: Hi"


# -- loading and baselines ---------------------------------------------------------------------------
def test_load_skips_empty_sessions_category5_and_gold_summaries(data):
    [conv] = load_conversations(data)
    assert conv.cid == "7"
    assert [n for n, _, _ in conv.sessions] == [1, 2, 3]
    assert conv.sessions[0][1].strftime("%Y-%m-%d %H:%M") == "2023-05-18 13:47"
    assert all("GOLD SUMMARY" not in line for _, _, lines in conv.sessions for line in lines)
    assert "[shares a photo: a photo of a grey dog asleep on a red sofa]" in conv.sessions[0][2][2]
    assert [q.category for q in conv.questions] == [4, 2, 1]
    assert conv.questions[2].sessions == {1, 3}
    assert conv.skipped == 1


def test_nested_and_list_files_load(tmp_path):
    sample = conversation()
    nested = {"sample_id": "conv-99", "qa": sample.pop("qa"), "conversation": sample}
    (tmp_path / "all.json").write_text(json.dumps([nested]), encoding="utf-8")
    [conv] = load_conversations(tmp_path)
    assert conv.cid == "99" and len(conv.sessions) == 3 and len(conv.questions) == 3


def test_bm25_raw_finds_the_obvious_session_first(data):
    [conv] = load_conversations(data)
    bm25 = RawBM25(["\n".join(lines) for _, _, lines in conv.sessions])
    assert bm25.ranked(conv.questions[0].text)[0] == 1  # session 2, the cello
    assert bm25.ranked("zzz unknownword") == []


def test_window_context_fits_the_budget(data):
    [conv] = load_conversations(data)
    texts = windows(conv)
    assert len(texts) == 4  # non-overlapping 3-turn windows: 4 turns -> 3 + 1, then 3 and 3
    assert texts[1] == "Bob: Ha, sounds like a champion napper."  # the tail turn is kept, not lost
    bm25 = RawBM25(texts)
    ctx = window_context(bm25, texts, "cello Bach teacher", budget=60)
    assert "cello" in ctx and count_tokens(ctx) <= 60
    assert window_context(bm25, texts, "cello Bach teacher", budget=5) == ""


# -- one run ---------------------------------------------------------------------------------------
def test_main_runs_end_to_end(data, tmp_path, capsys):
    out_file, misses = tmp_path / "out.json", tmp_path / "misses.jsonl"
    (data / "8.json").write_text(json.dumps({"speaker_a": "X", "speaker_b": "Y", "session_1_date_time": "1 May 2023", "qa": []}))
    result = main(["--data", str(data), "--out", str(out_file), "--dump-misses", str(misses), "--per-conversation"])
    line = capsys.readouterr().out.strip()
    assert json.loads(line) == result == json.loads(out_file.read_text())
    assert result["n"] == 3  # categories 1, 2, 4; category 5 and the evidence-less question left out
    assert result["skipped_questions"] == 1 and result["sessions"] == 3
    assert 0.0 <= result["observation_coverage"] <= 1.0 and result["observations"] >= 0
    assert result["conversations"] == ["7"]  # 8.json has no session with turns
    for mode in ("entries", "full"):
        block = result[mode]
        assert set(block) == {"R@1", "R@3", "R@5", "R@10", "MRR", "answer_in_context", "n", "by_category"}
        assert set(block["by_category"]) == {"1", "2", "3", "4"} and block["by_category"]["3"]["n"] == 0
        assert all(0.0 <= block[k] <= 1.0 for k in ("R@1", "R@3", "R@5", "R@10", "MRR", "answer_in_context"))
        assert block["R@10"] == 1.0  # three sessions: every gold session is somewhere in the top 10
    assert result["bm25_raw"]["by_category"]["4"]["R@1"] == 1.0
    assert 0.0 <= result["bm25_windows_context"]["answer_in_context"] <= 1.0
    assert 0.0 <= result["dense_raw"]["MRR"] <= 1.0
    assert result["context_max_tokens"] <= 1000 and result["context_over_budget"] == 0
    assert result["compression_ratio"] > 0 and result["compress_ms"] > 0 and result["first_search_ms"] > 0
    assert result["search_p50_ms"] <= result["search_p95_ms"]
    assert result["per_conversation"]["7"]["entries"]["n"] == 3
    for rec in map(json.loads, misses.read_text().splitlines()):
        assert rec["rank"] is None or rec["rank"] > 5
        assert rec["mode"] in ("entries", "full") and rec["category"] != 5


def test_main_single_mode_and_question_limit(data, capsys):
    result = main(["--data", str(data), "--mode", "entries", "--limit-questions", "1", "--set", "dense_weight=0.0"])
    assert "full" not in result and result["entries"]["n"] == 1 == result["n"]
    assert result["settings"] == {"dense_weight": 0.0}
    with pytest.raises(SystemExit):
        main(["--data", str(data), "--conversations", "12345"])


def test_observation_coverage_counts_the_facts_an_entry_keeps():
    from bench.locomo import observation_coverage, session_observations
    from memtool.models import Entities, Entry

    sample = {
        "conversation": {
            "session_1": [{}],
            "session_1_observation": {
                "Caroline": [["Caroline went to an LGBTQ support group.", "D1:3"], ["Caroline plans to adopt children.", "D1:5"]],
                "Melanie": [["Melanie painted a sunset by the lake.", "D1:8"]],
            },
        }
    }
    facts = session_observations(sample, sample["conversation"], {1})
    assert facts == {1: ["Caroline went to an LGBTQ support group.", "Caroline plans to adopt children.", "Melanie painted a sunset by the lake."]}
    entry = Entry(
        id="ctx-1",
        timestamp="2023-05-08T13:56:00.000Z",
        summary="Caroline told Melanie about the support groups she goes to.",
        keywords=["lgbtq", "painting"],
        entities=Entities(people=["Caroline", "Melanie"]),
    )
    assert observation_coverage(facts[1], entry) == (1, 3)  # "went to an LGBTQ support group": go, lgbtq, support, group


def test_split_between_a_project_and_a_personal_root_finds_what_one_root_finds(data, capsys):
    """--split: the same entries in two roots, searched together, give the merged root's hits, in its order."""
    result = main(["--data", str(data), "--split"])
    assert result["split_personal_entries"] == 2  # sessions 1 and 3 of three
    for mode in ("entries", "full"):
        split = dict(result[f"{mode}_split"])
        assert split.pop("same_hits_as_merged") == 1.0
        assert split == result[mode]  # recall, MRR and answers in context alike


def test_passage_variants_search_again_with_the_passages_vectors_made_another_way(data, capsys):
    with_variants = main(["--data", str(data), "--mode", "full", "--passage-variants", "none,words4"])
    without = main(["--data", str(data), "--mode", "full", "--no-passage-vectors"])
    assert with_variants["full@none"] == without["full"]  # no passage vectors: what --no-passage-vectors measures
    assert set(with_variants["full@words4"]) == set(with_variants["full"]) and with_variants["full@words4"]["n"] == with_variants["full"]["n"]
    costs = with_variants["variant_costs"]
    assert set(costs) == {"full", "none", "words4"} and costs["full"]["passages"] == costs["words4"]["passages"] > 0
    assert costs["none"]["cpu_s"] == 0.0
    with pytest.raises(SystemExit):
        main(["--data", str(data), "--passage-variants", "half"])

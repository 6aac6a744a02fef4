"""Writes the Parquet question file of the `data import` fixture the way the Hugging Face hub
exports datasets: pandas + pyarrow, a list<string> column of options, letter answers, and the
evidence as a list<struct<doc_id, start, end, text>> column whose offsets are Python string
(character) indices, computed here with str.find over the Markdown documents.

    scripts/import_fixture.sh   # creates the venv, runs this, rewrites questions.parquet
"""
import pathlib
import sys

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

root = pathlib.Path(sys.argv[1])
docs = {p.relative_to(root / "docs").as_posix(): p.read_text(encoding="utf-8")
        for p in sorted((root / "docs").rglob("*.md"))}

# (id, question, choices, answer letter, [(doc, excerpt)])
QUESTIONS = [
    ("q1", "Which is the largest glacier in the Alps?",
     ["Rhône Glacier", "Aletsch Glacier", "Mer de Glace", "Gorner Glacier"], "B",
     [("glaciers.md", "The Aletsch Glacier is the largest glacier in the Alps")]),
    ("q2", "What separates the accumulation zone of a glacier from the ablation zone?",
     ["the moraine", "the crevasse field", "the firn line", "the snout"], "C",
     [("glaciers.md", "— in French, « la limite des névés » — separates the accumulation zone")]),
    ("q3", "When did the last eruption of Mount Fuji begin?",
     ["December 1707", "March 1854", "August 1923", "May 1980"], "A",
     [("volcanoes.md", "Its last\neruption, the Hōei eruption, began in December 1707.")]),
    ("q4", "Which rock cools slowly deep underground and grows large crystals?",
     ["basalt", "pumice", "obsidian", "granite"], "D",
     [("volcanoes.md", "Granite, by\ncontrast, cools slowly deep underground")]),
    ("q5", "How does Reykjavík heat most of its buildings?",
     ["coal", "geothermal water", "natural gas", "wind power"], "B",
     [("cities/reykjavik.md", "Reykjavík heats most of its buildings with geothermal water")]),
    ("q6", "Until which year was Kyōto Japan's capital?",
     ["794", "1603", "1869", "1945"], "C",
     [("cities/kyoto.md", "Kyōto was Japan's capital from 794 until 1869")]),
    ("q7", "What are the tides with the largest range called?",
     ["neap tides", "spring tides", "ebb tides", "red tides"], "B",
     [("tides.md", "produce\nspring tides with the largest range")]),
    ("q8", "Where is the largest tidal range in the world?",
     ["the Bay of Fundy", "the Wadden Sea", "the Bristol Channel", "the Gulf of Khambhat"], "A",
     [("tides.md", "The Bay of Fundy in Canada has the largest tidal range in the world"),
      ("tides.md", "up to 16 metres")]),
]

rows = []
for qid, question, choices, letter, ev in QUESTIONS:
    spans = []
    for doc, excerpt in ev:
        start = docs[doc].find(excerpt)
        assert start >= 0 and docs[doc].find(excerpt, start + 1) < 0, (qid, excerpt)
        spans.append({"doc_id": doc, "start": start, "end": start + len(excerpt), "text": excerpt})
    rows.append({"id": qid, "question": question, "choices": choices, "answer": letter,
                 "evidence": spans})

df = pd.DataFrame(rows)
schema = pa.schema([
    ("id", pa.string()), ("question", pa.string()), ("choices", pa.list_(pa.string())),
    ("answer", pa.string()),
    ("evidence", pa.list_(pa.struct([("doc_id", pa.string()), ("start", pa.int64()),
                                     ("end", pa.int64()), ("text", pa.string())]))),
])
pq.write_table(pa.Table.from_pandas(df, schema=schema, preserve_index=False),
               root / "questions.parquet")
print(f"wrote {len(rows)} questions to {root / 'questions.parquet'}")

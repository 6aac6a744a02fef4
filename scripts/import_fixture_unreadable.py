"""Writes crates/tables/tests/data/import/unreadable_columns.parquet: two multiple-choice
questions as the Hugging Face hub exports them, plus two columns polars cannot read — a
timestamp with a time zone (polars is built without its `timezones` feature) and a 50-digit
decimal (polars reads at most 38) — that an import must ignore unless it maps them (issue 56,
case 15). Written with pyarrow (22.0.0 when committed):

    python3 scripts/import_fixture_unreadable.py crates/tables/tests/data/import
"""
import datetime
import decimal
import pathlib
import sys

import pyarrow as pa
import pyarrow.parquet as pq

out = pathlib.Path(sys.argv[1]) / "unreadable_columns.parquet"
utc = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
table = pa.table({
    "id": ["q1", "q2"],
    "question": ["Which is the largest glacier in the Alps?", "How does Reykjavík heat its buildings?"],
    "options": [["Rhône Glacier", "Aletsch Glacier"], ["coal", "geothermal water"]],
    "answer": [1, 1],
    "created": pa.array([utc, utc], type=pa.timestamp("us", tz="UTC")),
    "score": pa.array([decimal.Decimal("1.50")] * 2, type=pa.decimal256(50, 2)),
})
pq.write_table(table, out)
print(out)

//! `data import` tables: any bytes as a question table (JSON lines, CSV or Parquet, chosen by
//! the first byte) imported against a fixed documents table give a dataset that loads back, or
//! an error; never a panic, a hang or unbounded memory.
#![no_main]
use clap::Parser;
use libfuzzer_sys::fuzz_target;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: tables::ImportArgs,
}

const DOCS: &str = "{\"id\":\"d1\",\"text\":\"Valve V2 was replaced in March.\"}\n{\"id\":\"d2\",\"text\":\"Pump P3 failed in May.\"}\n";

fuzz_target!(|data: &[u8]| {
    let Some((&kind, body)) = data.split_first() else {
        return;
    };
    let ext = match kind % 3 {
        0 => "jsonl",
        1 => "csv",
        _ => "parquet",
    };
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs.jsonl");
    std::fs::write(&docs, DOCS).unwrap();
    let q = dir.path().join(format!("q.{ext}"));
    std::fs::write(&q, body).unwrap();
    // The reader alone, then an import with an MCQ mapping and one with evidence.
    let _ = tables::table::read_table(&q);
    let store = dir.path().join("store");
    for mapping in [
        &[
            "--options",
            "options",
            "--answer",
            "answer",
            "--answer-format",
            "index",
        ][..],
        &[
            "--option-columns",
            "a,b,c",
            "--answer",
            "answer",
            "--answer-format",
            "letter",
        ][..],
        &[
            "--evidence-text",
            "excerpt",
            "--answers",
            "answers",
            "--scope",
            "scope",
        ][..],
        &[
            "--evidence",
            "evidence",
            "--evidence-units",
            "chars",
            "--answers",
            "answers",
        ][..],
    ] {
        let mut argv = vec![
            "import".to_string(),
            "--documents".into(),
            docs.display().to_string(),
            "--questions".into(),
            q.display().to_string(),
        ];
        argv.extend(mapping.iter().map(|s| s.to_string()));
        let cli = Cli::try_parse_from(argv).expect("a valid mapping");
        if let Ok((m, _)) = tables::import("fuzz", &cli.args, &store, true) {
            let ds = datasets::Dataset::load(&store.join("fuzz")).expect("an import loads back");
            assert_eq!(ds.manifest.name, m.name);
        }
    }
});

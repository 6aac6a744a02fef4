//! `compare` end to end on synthetic run directories: the pipeline's resolved configs and cell
//! ids (`evaluator`), the records and the gate (`reporting`).

use datasets::io::{write_atomic, write_json};
use evaluator::config::resolved_run;
use evaluator::RunConfig;
use records::{summarize, CellRecord, QuestionRow};
use reporting::compare::{
    compare_runs, render_markdown, write_report, CellComparison, CompareReport, PairedBy, Pairing,
    Tolerances, Verdict,
};
use std::collections::HashMap;
use std::path::Path;

const CONFIG: &str = "name: synth
datasets: [toy]
strategies:
  a: {kind: fixed, unit: words, size: 50, overlap: 0}
  b: {kind: fixed, unit: words, size: 80, overlap: 0}
  c: {kind: fixed, unit: words, size: 120, overlap: 0}
retrievers:
  bm25: {kind: bm25}
k: [3]
readers:
  lexical: {kind: lexical}
bootstrap_resamples: 200
";

/// One cell's answers: per question (correct, words).
type Answers = Vec<(u8, usize)>;

/// Writes a run directory with one cell per strategy of CONFIG (in order), each holding
/// the given answers, computed on a dataset whose manifest hashes to `sha`.
fn write_run(dir: &Path, cfg: &RunConfig, answers: &[Answers], sha: &str) {
    let row = |i: usize, so_far: &[QuestionRow]| {
        let (correct, words) = answers[i][so_far.len()];
        QuestionRow {
            gold: Some(0),
            choice: Some(usize::from(correct == 0)),
            correct: Some(correct),
            words,
            unique_words: words,
            ..QuestionRow::default()
        }
    };
    write_cells(dir, cfg, sha, row, |i| answers[i].len(), answers.len());
}

/// Writes `config.json` and, for each of the first `n_cells` cells of `cfg`, `count(i)` rows
/// made by `row(i, rows so far)` with the cell's coordinates and question ids filled in.
fn write_cells(
    dir: &Path,
    cfg: &RunConfig,
    sha: &str,
    row: impl Fn(usize, &[QuestionRow]) -> QuestionRow,
    count: impl Fn(usize) -> usize,
    n_cells: usize,
) {
    write_json(&dir.join("config.json"), cfg).unwrap();
    for (i, cell) in cfg.cells().iter().enumerate().take(n_cells) {
        let id = cell.id();
        let mut rows: Vec<QuestionRow> = Vec::new();
        for q in 0..count(i) {
            let r = QuestionRow {
                cell_id: id.clone(),
                dataset: cell.dataset.clone(),
                strategy: cell.strategy.clone(),
                retriever: cell.retriever.clone(),
                k: cell.k,
                reader: cell.reader.clone(),
                question_id: format!("q{q:04}"),
                tied: 1,
                ..row(i, &rows)
            };
            rows.push(r);
        }
        let mut w = csv::Writer::from_writer(Vec::new());
        for r in &rows {
            w.serialize(r).unwrap();
        }
        let csv = w.into_inner().unwrap();
        write_atomic(&dir.join("cells").join(format!("{id}.csv")), &csv).unwrap();
        let rec = CellRecord {
            id: id.clone(),
            cell: cell.key(),
            dataset_manifest_sha256: sha.into(),
            code: String::new(),
            inputs: Default::default(),
            tokens_by: String::new(),
            rows_sha256: datasets::io::sha256_hex(&csv),
            summary: summarize(&rows),
            record_sha256: String::new(),
        };
        records::write_cell_record(&dir.join("cells").join(format!("{id}.json")), &rec).unwrap();
    }
}

/// [`compare_runs`] of runs `b` (baseline) and `c` with the default tolerances and pairing,
/// the runs' rules read through [`resolved_run`].
fn compare_default(b: &Path, c: &Path) -> anyhow::Result<CompareReport> {
    compare_runs(
        b,
        c,
        &Tolerances::default(),
        &Pairing::default(),
        &resolved_run,
    )
}

fn cfg() -> RunConfig {
    RunConfig::parse(CONFIG, "synth.yaml").unwrap()
}

/// `n` questions, the first `correct` of them right, each retrieving `words` words.
fn answers(n: usize, correct: usize, words: usize) -> Answers {
    (0..n).map(|i| (u8::from(i < correct), words)).collect()
}

#[test]
fn identical_runs_pass_with_zero_deltas() {
    let t = tempfile::tempdir().unwrap();
    let a = answers(200, 150, 100);
    let (b, c) = (t.path().join("b"), t.path().join("c"));
    for d in [&b, &c] {
        write_run(d, &cfg(), &[a.clone(), a.clone(), a.clone()], "sha");
    }
    let r = compare_default(&b, &c).unwrap();
    assert_eq!(r.verdict, Verdict::Ok);
    assert_eq!(r.cells.len(), 3);
    for c in &r.cells {
        assert_eq!(c.delta_points, Some(0.0));
        let m = c.mcnemar.unwrap();
        assert_eq!((m.b, m.c), (0, 0));
        assert_eq!(c.holm_p, Some(1.0));
        assert_eq!(c.words_change_pct, Some(0.0));
        assert_eq!(c.baseline, c.candidate);
    }
    let md = render_markdown(&r);
    assert!(
        md.contains("no regression") && !md.contains("REGRESSION"),
        "{md}"
    );
    assert!(!md.contains("+-") && !md.contains("-0.0"), "{md}");
}

#[test]
fn holm_is_applied_over_all_matched_cells() {
    // Three cells whose raw McNemar exact p straddles alpha: cell a loses 9 questions
    // (p = 2/2^9 = 0.0039), b loses 7 (p = 0.0156), c loses 6 (p = 0.03125). Raw, all
    // three are below 0.05; Holm multiplies by 3, 2 and 1 with monotonicity:
    // a 0.0117, b 0.03125, c 0.03125.
    let t = tempfile::tempdir().unwrap();
    let (b, c) = (t.path().join("b"), t.path().join("c"));
    let base = answers(100, 60, 100);
    write_run(&b, &cfg(), &[base.clone(), base.clone(), base.clone()], "s");
    let cand: Vec<Answers> = [9, 7, 6]
        .iter()
        .map(|&lost| answers(100, 60 - lost, 100))
        .collect();
    write_run(&c, &cfg(), &cand, "s");
    let r = compare_default(&b, &c).unwrap();
    let by_strategy: HashMap<&str, &CellComparison> =
        r.cells.iter().map(|c| (c.strategy.as_str(), c)).collect();
    let close = |x: f64, y: f64| assert!((x - y).abs() < 1e-12, "{x} != {y}");
    close(by_strategy["a"].mcnemar.unwrap().exact_p, 2.0 / 512.0);
    close(by_strategy["a"].holm_p.unwrap(), 3.0 * 2.0 / 512.0);
    close(by_strategy["b"].holm_p.unwrap(), 2.0 * 2.0 / 128.0);
    close(by_strategy["c"].holm_p.unwrap(), 2.0 * 2.0 / 128.0);
    assert!(r.cells.iter().all(|c| c.verdict == Verdict::Regression));
    // With alpha 0.02 only cell a stays significant after Holm (raw p of b would pass).
    let strict = Tolerances {
        alpha: Some(0.02),
        ..Tolerances::default()
    };
    let r = compare_runs(&b, &c, &strict, &Pairing::default(), &resolved_run).unwrap();
    let flagged: Vec<&str> = r
        .cells
        .iter()
        .filter(|c| c.verdict == Verdict::Regression)
        .map(|c| c.strategy.as_str())
        .collect();
    assert_eq!(flagged, ["a"]);
    assert!(by_strategy["b"].mcnemar.unwrap().exact_p < 0.02);
    assert_eq!(r.regressions, 1);
    assert!(r.is_regression());
    let md = render_markdown(&r);
    assert!(md.contains("REGRESSION in 1 of 3"), "{md}");
    assert!(md.contains("accuracy -9.0 points"), "{md}");
}

#[test]
fn words_increase_and_its_interval() {
    let t = tempfile::tempdir().unwrap();
    let (b, c) = (t.path().join("b"), t.path().join("c"));
    let base = answers(50, 25, 100);
    write_run(&b, &cfg(), &[base.clone(), base.clone(), base.clone()], "s");
    // +5 % exactly, +6 %, and -20 %.
    let cand = vec![
        answers(50, 25, 105),
        answers(50, 25, 106),
        answers(50, 25, 80),
    ];
    write_run(&c, &cfg(), &cand, "s");
    let r = compare_default(&b, &c).unwrap();
    let v: Vec<(Option<f64>, Verdict)> = r
        .cells
        .iter()
        .map(|c| (c.words_change_pct, c.verdict))
        .collect();
    assert_eq!(v[0].1, Verdict::Ok);
    assert_eq!(v[1].1, Verdict::Regression);
    assert_eq!(v[2].1, Verdict::Ok);
    assert!((v[1].0.unwrap() - 6.0).abs() < 1e-9);
    assert!((v[2].0.unwrap() + 20.0).abs() < 1e-9);
    // Constant words per question: the bootstrap interval collapses onto the estimate.
    let ci = r.cells[1].words_change_ci.unwrap();
    assert!((ci.lower - 6.0).abs() < 1e-9 && (ci.upper - 6.0).abs() < 1e-9);
    assert!(r.cells[1].reasons[0].contains("+6.0 %"));
}

/// Issue 38: a changed chunk size changes the cell id; the gate pairs the cells by their
/// coordinates and shows the change instead of passing an "unmatched" cell silently.
#[test]
fn a_changed_cell_is_paired_by_its_coordinates_and_the_change_shown() {
    let t = tempfile::tempdir().unwrap();
    let (b, c) = (t.path().join("b"), t.path().join("c"));
    let a = answers(200, 150, 5);
    write_run(&b, &cfg(), &[a.clone(), a.clone(), a.clone()], "s");
    // The candidate changed strategy c's size and lost 30 questions on it.
    let changed =
        RunConfig::parse(&CONFIG.replace("size: 120", "size: 130"), "changed.yaml").unwrap();
    let worse = answers(200, 120, 5);
    write_run(&c, &changed, &[a.clone(), a.clone(), worse], "s");
    let r = compare_default(&b, &c).unwrap();
    assert_eq!(r.cells.len(), 3);
    assert!(r.only_in_baseline.is_empty() && r.only_in_candidate.is_empty());
    let moved = r.cells.iter().find(|x| x.strategy == "c").unwrap();
    assert_eq!(moved.paired_by, PairedBy::Coordinates);
    assert_eq!(
        moved.changed,
        ["strategy_config.size: 120 → 130".to_string()]
    );
    assert_ne!(moved.cell_id, moved.baseline_cell_id);
    assert_eq!(
        moved.verdict,
        Verdict::Regression,
        "a real drop fails the gate"
    );
    assert_eq!(r.verdict, Verdict::Regression);
    let md = render_markdown(&r);
    assert!(md.contains("strategy\\_config.size: 120 → 130"), "{md}");
    // The same change without a drop passes, and still shows the change.
    write_run(&c, &changed, &[a.clone(), a.clone(), a.clone()], "s");
    let r = compare_default(&b, &c).unwrap();
    assert_eq!(r.verdict, Verdict::Ok, "{}", render_markdown(&r));
    assert_eq!(r.cells.iter().filter(|x| !x.changed.is_empty()).count(), 1);
}

/// A baseline cell with no partner fails the gate unless `allow_missing`.
#[test]
fn a_baseline_cell_without_a_partner_fails_the_gate() {
    let t = tempfile::tempdir().unwrap();
    let (b, c) = (t.path().join("b"), t.path().join("c"));
    let a = answers(50, 30, 5);
    write_run(&b, &cfg(), &[a.clone(), a.clone(), a.clone()], "s");
    write_run(&c, &cfg(), &[a.clone(), a.clone(), a.clone()], "s");
    let gone = std::fs::read_dir(c.join("cells"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    std::fs::remove_file(&gone).unwrap();
    let r = compare_default(&b, &c).unwrap();
    assert_eq!((r.missing, r.regressions), (1, 0));
    assert_eq!(r.verdict, Verdict::Regression);
    assert!(render_markdown(&r).contains("FAILED"));
    let allow = Pairing {
        allow_missing: true,
        ..Pairing::default()
    };
    let r = compare_runs(&b, &c, &Tolerances::default(), &allow, &resolved_run).unwrap();
    assert_eq!(r.verdict, Verdict::Ok);
    assert_eq!(r.only_in_baseline.len(), 1);
}

#[test]
fn unusable_inputs_are_errors_naming_the_path_and_fix() {
    let t = tempfile::tempdir().unwrap();
    let (b, c) = (t.path().join("b"), t.path().join("c"));
    let a = answers(20, 10, 5);
    write_run(&b, &cfg(), &[a.clone(), a.clone(), a.clone()], "s");
    let err = |x: &Path, y: &Path| {
        format!(
            "{:#}",
            compare_runs(
                x,
                y,
                &Tolerances::default(),
                &Pairing::default(),
                &resolved_run
            )
            .unwrap_err()
        )
    };
    // Missing directory.
    let e = err(&b, &t.path().join("nope"));
    assert!(e.contains("nope") && e.contains("does not exist"), "{e}");
    // Different dataset manifest.
    write_run(&c, &cfg(), &[a.clone(), a.clone(), a.clone()], "other");
    let e = err(&b, &c);
    assert!(
        e.contains("different datasets") && e.contains("other"),
        "{e}"
    );
    // Different questions: drop one row from every candidate cell.
    std::fs::remove_dir_all(&c).unwrap();
    let short = answers(19, 10, 5);
    write_run(&c, &cfg(), &[short.clone(), short.clone(), short], "s");
    let e = err(&b, &c);
    assert!(
        e.contains("different questions") && e.contains("q0019"),
        "{e}"
    );
    // A different limit changes every id: on the same questions the cells pair by their
    // coordinates and the change is shown (issue 38).
    std::fs::remove_dir_all(&c).unwrap();
    let limited = RunConfig::parse(&format!("{CONFIG}limit: 20\n"), "l.yaml").unwrap();
    write_run(&c, &limited, &[a.clone(), a.clone(), a.clone()], "s");
    let r = compare_default(&b, &c).unwrap();
    assert!(
        r.cells
            .iter()
            .all(|x| x.paired_by == PairedBy::Coordinates && x.changed == ["limit: null → 20"]),
        "{}",
        render_markdown(&r)
    );
    // No cell in common: another dataset.
    std::fs::remove_dir_all(&c).unwrap();
    let other = RunConfig::parse(&CONFIG.replace("[toy]", "[toy2]"), "o.yaml").unwrap();
    write_run(&c, &other, &[a.clone(), a.clone(), a.clone()], "s");
    let e = err(&b, &c);
    assert!(e.contains("no cell in common") && e.contains("toy2"), "{e}");
    // Rows edited without the record: not the file the record was written with.
    std::fs::remove_dir_all(&c).unwrap();
    write_run(&c, &cfg(), &[a.clone(), a.clone(), a.clone()], "s");
    let id = cfg().cells()[0].id();
    let csv_path = c.join("cells").join(format!("{id}.csv"));
    let text = std::fs::read_to_string(&csv_path).unwrap();
    std::fs::write(&csv_path, text.replacen(",0,1,1,", ",0,0,1,", 1)).unwrap();
    let e = err(&b, &c);
    assert!(e.contains("edited") && e.contains(&id), "{e}");
    // Rows and checksum edited together, record summary untouched: the files disagree.
    let mut rec: CellRecord =
        serde_json::from_slice(&std::fs::read(c.join("cells").join(format!("{id}.json"))).unwrap())
            .unwrap();
    rec.rows_sha256 = datasets::io::sha256_hex(&std::fs::read(&csv_path).unwrap());
    records::write_cell_record(&c.join("cells").join(format!("{id}.json")), &rec).unwrap();
    let e = err(&b, &c);
    assert!(e.contains("disagree") && e.contains(&id), "{e}");
    // The record's summary edited (its own checksum not updated): refused as edited.
    let json = c.join("cells").join(format!("{id}.json"));
    let text = std::fs::read_to_string(&json).unwrap();
    let edited = text.replacen("\"correct\": ", "\"correct\": 1", 1);
    assert_ne!(edited, text);
    std::fs::write(&json, edited).unwrap();
    let e = err(&b, &c);
    assert!(e.contains("edited") && e.contains(&id), "{e}");
    // Not a run directory.
    let e = err(&b, t.path());
    assert!(e.contains("config.json"), "{e}");
    // Invalid tolerances.
    let bad = Tolerances {
        alpha: Some(2.0),
        ..Tolerances::default()
    };
    assert!(compare_runs(&b, &b, &bad, &Pairing::default(), &resolved_run).is_err());
}

#[test]
fn report_files_are_written_and_round_trip() {
    let t = tempfile::tempdir().unwrap();
    let b = t.path().join("b");
    let a = answers(30, 20, 7);
    write_run(&b, &cfg(), &[a.clone(), a.clone(), a], "s");
    let r = compare_runs(
        &b,
        &b,
        &Tolerances::default(),
        &Pairing::default(),
        &resolved_run,
    )
    .unwrap();
    let out = t.path().join("out");
    let (md, json) = write_report(&out, &r).unwrap();
    assert_eq!(std::fs::read_to_string(md).unwrap(), render_markdown(&r));
    let back: CompareReport = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    assert_eq!(back, r);
}

/// Issue 36 case 3: a drop of exactly 69 of 3000 questions is exactly 2.3 points, which
/// `--max-accuracy-drop 2.3` must pass; it was a REGRESSION because `2.3 * 3000` was compared
/// in f64 (6899.999…). One more question lost is a regression.
#[test]
fn a_drop_of_exactly_the_tolerance_passes() {
    let t = tempfile::tempdir().unwrap();
    let (b, c) = (t.path().join("b"), t.path().join("c"));
    let base = answers(3000, 2000, 100);
    write_run(
        &b,
        &cfg(),
        &[base.clone(), base.clone(), base.clone()],
        "sha",
    );
    let tol = Tolerances {
        max_accuracy_drop_pts: 2.3,
        ..Tolerances::default()
    };
    let at = answers(3000, 1931, 100);
    write_run(&c, &cfg(), &[at.clone(), at.clone(), at], "sha");
    let r = compare_runs(&b, &c, &tol, &Pairing::default(), &resolved_run).unwrap();
    assert_eq!(r.verdict, Verdict::Ok, "{}", render_markdown(&r));
    assert!(
        r.cells.iter().all(|c| c.holm_p.unwrap() < 0.05),
        "the drop is significant"
    );
    let over = answers(3000, 1930, 100);
    write_run(&c, &cfg(), &[over.clone(), over.clone(), over], "sha");
    let r = compare_runs(&b, &c, &tol, &Pairing::default(), &resolved_run).unwrap();
    assert_eq!(r.verdict, Verdict::Regression);
}

/// The candidate's config with `extra` YAML lines appended (its cell ids are unchanged: the
/// verdict rules are not part of a cell's identity).
fn cfg_with(extra: &str) -> RunConfig {
    RunConfig::parse(&format!("{CONFIG}{extra}"), "synth.yaml").unwrap()
}

/// Issue 55 case 1: a candidate that lost 69 of 3000 questions fails the gate, and naming
/// another primary metric, dropping its reader or widening the margin in its own config does
/// not make it pass: the rules are the baseline's and the flags'. A declared difference is
/// refused (exit 2, each named) unless --allow-rule-change, and the gate then still judges by
/// its own rules.
#[test]
fn the_candidates_config_cannot_loosen_the_gate() {
    let t = tempfile::tempdir().unwrap();
    let (b, c) = (t.path().join("b"), t.path().join("c"));
    let base = answers(3000, 2000, 100);
    write_run(&b, &cfg(), &[base.clone(), base.clone(), base.clone()], "s");
    let lost = answers(3000, 1931, 100);
    let three = [lost.clone(), lost.clone(), lost];
    write_run(&c, &cfg(), &three, "s");
    let plain = compare_default(&b, &c).unwrap();
    assert_eq!(
        plain.verdict,
        Verdict::Regression,
        "{}",
        render_markdown(&plain)
    );
    assert_eq!(plain.primary, "accuracy");
    let md = render_markdown(&plain);
    assert!(
        md.contains(
            "primary metric `accuracy` — baseline config, default over its cells: they were read"
        ),
        "{md}"
    );
    for (extra, rule) in [
        ("primary: answer_recall\n", "primary"),
        ("margin: 5\n", "margin"),
        ("alpha: 0.001\n", "alpha"),
        ("resample: question\n", "resample"),
        ("planned: {strategy: b}\n", "planned"),
    ] {
        write_run(&c, &cfg_with(extra), &three, "s");
        let err = compare_default(&b, &c).unwrap_err().to_string();
        assert!(
            err.contains(&format!("{rule}:")) && err.contains("--allow-rule-change"),
            "{extra}: {err}"
        );
        let allowed = Tolerances {
            allow_rule_change: true,
            require: Some(reporting::compare::Requirement::Superior),
            ..Tolerances::default()
        };
        let r = compare_runs(&b, &c, &allowed, &Pairing::default(), &resolved_run).unwrap();
        assert_eq!(r.primary, "accuracy", "{extra}");
        assert_eq!(r.margin_pts, 0.0, "{extra}");
        assert_eq!(r.rules.alpha, 0.05, "{extra}");
        assert_eq!(r.verdict, Verdict::Regression, "{extra}");
        assert!(r.cells.iter().all(|c| c.judgement.accuracy), "{extra}");
        let md = render_markdown(&r);
        assert!(
            md.contains("The candidate's config declares other rules"),
            "{md}"
        );
    }
    // Dropping the reader declares no other rule: the pair is formed by its coordinates, the
    // candidate has no accuracy, and the gate (accuracy, from the baseline) fails it.
    let text = CONFIG.replace("lexical: {kind: lexical}", "lexical: {kind: none}");
    let dropped = RunConfig::parse(&text, "synth.yaml").unwrap();
    std::fs::remove_dir_all(&c).unwrap();
    write_run_unread(&c, &dropped, 3000);
    let r = compare_default(&b, &c).unwrap();
    assert_eq!(r.verdict, Verdict::Regression);
    assert!(r.cells.iter().all(|c| c.judgement.primary_missing));
    assert!(r.cells.iter().all(|c| c.baseline.primary_mean.is_some()));
    assert!(render_markdown(&r).contains("the candidate has no accuracy here"));
    // A primary metric the baseline has no value of judges nothing: unusable input.
    let recall = Tolerances {
        primary: Some("recall".into()),
        ..Tolerances::default()
    };
    let err = compare_runs(&b, &c, &recall, &Pairing::default(), &resolved_run)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no value in any of the baseline's cells"),
        "{err}"
    );
    // Resampling by subject where no question has a subject would be by question: refused.
    let subject = Tolerances {
        resample: Some(reporting::compare::Resample::Subject),
        ..Tolerances::default()
    };
    let err = compare_runs(&b, &b, &subject, &Pairing::default(), &resolved_run)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("resamples by subject") && err.contains("--resample question"),
        "{err}"
    );
    // A flag is the reviewer's: with --margin 5 the candidate's `margin: 5` (which the
    // baseline's config lacks) is shown, not refused, and the gate's margin is the flag's.
    write_run(&c, &cfg_with("margin: 5\n"), &three, "s");
    let flagged = Tolerances {
        margin_pts: Some(5.0),
        ..Tolerances::default()
    };
    let r = compare_runs(&b, &c, &flagged, &Pairing::default(), &resolved_run).unwrap();
    assert_eq!(r.rules.margin_from, "--margin");
    assert_eq!(r.rule_differences.len(), 1);
    assert!(r.rule_differences[0].by_flag);
}

/// A run whose cells have no reader: `n` questions, no `correct`, 100 words each.
fn write_run_unread(dir: &Path, cfg: &RunConfig, n: usize) {
    let cells = cfg.cells().len();
    write_cells(
        dir,
        cfg,
        "s",
        |_, _| QuestionRow {
            words: 100,
            unique_words: 100,
            ..QuestionRow::default()
        },
        |_| n,
        cells,
    );
}

/// Issue 55 cases 2 and 3: one α everywhere (the verdict column and --require follow
/// --alpha), and --require non-inferior without a margin is unusable input naming the fix,
/// while a failure with a margin says what would settle it.
#[test]
fn one_alpha_and_a_require_that_can_be_met() {
    let t = tempfile::tempdir().unwrap();
    let (b, c) = (t.path().join("b"), t.path().join("c"));
    let base = answers(100, 60, 100);
    write_run(&b, &cfg(), &[base.clone(), base.clone(), base.clone()], "s");
    // Each loses 7: McNemar exact p = 2/128 = 0.0156, Holm over three tied = 0.047.
    let lost = answers(100, 53, 100);
    write_run(&c, &cfg(), &[lost.clone(), lost.clone(), lost], "s");
    let at = |alpha: f64| {
        let tol = Tolerances {
            alpha: Some(alpha),
            max_accuracy_drop_pts: 10.0,
            ..Tolerances::default()
        };
        compare_runs(&b, &c, &tol, &Pairing::default(), &resolved_run).unwrap()
    };
    let r = at(0.05);
    assert!(r
        .cells
        .iter()
        .all(|c| c.primary.as_ref().unwrap().verdict == stats::Verdict::Inferior));
    // Within the 10-point tolerance: ok, and the row says why beside "inferior".
    assert_eq!(r.verdict, Verdict::Ok);
    assert!(render_markdown(&r).contains("within the 10.0-point tolerance"));
    let r = at(0.01);
    assert_eq!(r.rules.alpha, 0.01);
    assert!(r
        .cells
        .iter()
        .all(|c| c.primary.as_ref().unwrap().verdict == stats::Verdict::Inconclusive));
    assert!(render_markdown(&r).contains("α = 0.01 family-wise — --alpha"));
    // --require non-inferior without a margin cannot be met: exit 2 with the fix.
    let req = Tolerances {
        require: Some(reporting::compare::Requirement::NonInferior),
        ..Tolerances::default()
    };
    let err = compare_runs(&b, &b, &req, &Pairing::default(), &resolved_run)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--margin") && err.contains("no margin"),
        "{err}"
    );
    // With a margin of 2 points, identical cells of 100 questions are not yet non-inferior:
    // the failure names the questions that would settle it.
    let req = Tolerances {
        margin_pts: Some(2.0),
        ..req
    };
    let r = compare_runs(&b, &b, &req, &Pairing::default(), &resolved_run).unwrap();
    assert_eq!(r.verdict, Verdict::Regression);
    let reason = &r.cells[0].reasons[0];
    assert!(
        reason.contains("non-inferiority at −2.0 points needs ≈")
            && reason.contains("this set has 100"),
        "{reason}"
    );
}

/// Issue 55 case 10: a baseline without the `question_doc` column cannot be resampled by
/// document, so the gate refuses it (exit 2) naming the refresh, unless --resample question;
/// and a renamed strategy without --pair is told about --pair.
#[test]
fn a_baseline_without_question_docs_is_refused_and_renames_suggest_pair() {
    let t = tempfile::tempdir().unwrap();
    let (b, c) = (t.path().join("b"), t.path().join("c"));
    let a = answers(100, 60, 100);
    write_run(&b, &cfg(), &[a.clone(), a.clone(), a.clone()], "s");
    write_run(&c, &cfg(), &[a.clone(), a.clone(), a.clone()], "s");
    // Strip the column from the baseline's CSVs (as an older version wrote them).
    for e in std::fs::read_dir(b.join("cells")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "csv") {
            let mut r = csv::Reader::from_path(&p).unwrap();
            let h = r.headers().unwrap().clone();
            let keep: Vec<usize> = (0..h.len()).filter(|&i| &h[i] != "question_doc").collect();
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record(keep.iter().map(|&i| &h[i])).unwrap();
            for rec in r.records() {
                let rec = rec.unwrap();
                w.write_record(keep.iter().map(|&i| &rec[i])).unwrap();
            }
            let bytes = w.into_inner().unwrap();
            std::fs::write(&p, &bytes).unwrap();
            let json = p.with_extension("json");
            let mut rec: CellRecord =
                serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
            rec.rows_sha256 = datasets::io::sha256_hex(&bytes);
            records::write_cell_record(&json, &rec).unwrap();
        }
    }
    let err = compare_default(&b, &c).unwrap_err().to_string();
    assert!(
        err.contains("question_doc")
            && err.contains("--resample question")
            && err.contains("chunkbench run"),
        "{err}"
    );
    let by_question = Tolerances {
        resample: Some(reporting::compare::Resample::Question),
        ..Tolerances::default()
    };
    let r = compare_runs(&b, &c, &by_question, &Pairing::default(), &resolved_run).unwrap();
    assert_eq!(r.verdict, Verdict::Ok);
    // A rename: strategy `a` becomes `a2` in the candidate.
    let text = CONFIG.replace("  a: {", "  a2: {");
    let renamed = RunConfig::parse(&text, "synth.yaml").unwrap();
    let c2 = t.path().join("c2");
    write_run(&c2, &renamed, &[a.clone(), a.clone(), a], "s");
    let r = compare_runs(&b, &c2, &by_question, &Pairing::default(), &resolved_run).unwrap();
    assert_eq!(
        r.verdict,
        Verdict::Regression,
        "a baseline cell lost its partner"
    );
    assert!(
        render_markdown(&r).contains("--pair a=a2"),
        "{}",
        render_markdown(&r)
    );
}

/// Issue 55 case 11: the baseline's `planned:` makes the gate's family; pairs outside it are
/// exploratory, shown with an unadjusted p and not judged on the primary metric.
#[test]
fn the_baselines_planned_family_is_the_gates() {
    let t = tempfile::tempdir().unwrap();
    let (b, c) = (t.path().join("b"), t.path().join("c"));
    let planned = cfg_with("planned: {strategy: b}\n");
    let base = answers(300, 200, 100);
    write_run(
        &b,
        &planned,
        &[base.clone(), base.clone(), base.clone()],
        "s",
    );
    let lost = answers(300, 180, 100);
    write_run(&c, &planned, &[lost.clone(), lost.clone(), lost], "s");
    let r = compare_default(&b, &c).unwrap();
    assert_eq!(r.confirmatory, 1);
    let by: HashMap<&str, &CellComparison> =
        r.cells.iter().map(|c| (c.strategy.as_str(), c)).collect();
    assert!(by["b"].confirmatory && by["b"].judgement.accuracy);
    for s in ["a", "c"] {
        assert!(!by[s].confirmatory && !by[s].judgement.accuracy, "{s}");
        assert!(by[s].primary.as_ref().unwrap().exploratory);
    }
    assert_eq!(r.regressions, 1);
    let md = render_markdown(&r);
    assert!(
        md.contains("planned family: 1 of 3 pairs, strategy b — baseline config `planned:`"),
        "{md}"
    );
    assert!(md.contains("exploratory"), "{md}"); // Renaming the planned strategy does not take it out of the family: the plan is read in
                                                 // the baseline's names (here with --pair; without it the baseline cell lacks a partner).
    let renamed = RunConfig::parse(&CONFIG.replace("  b: {", "  b2: {"), "synth.yaml").unwrap();
    let lost = answers(300, 180, 100);
    let c2 = t.path().join("c2");
    write_run(&c2, &renamed, &[lost.clone(), lost.clone(), lost], "s");
    let pairing = Pairing {
        renames: vec![("b".into(), "b2".into())],
        ..Pairing::default()
    };
    let allowed = Tolerances {
        allow_rule_change: true,
        ..Tolerances::default()
    };
    let r = compare_runs(&b, &c2, &allowed, &pairing, &resolved_run).unwrap();
    let b2 = r.cells.iter().find(|c| c.strategy == "b2").unwrap();
    assert!(
        b2.confirmatory && b2.judgement.accuracy,
        "{}",
        render_markdown(&r)
    );
    assert_eq!(r.verdict, Verdict::Regression);
    // A plan naming a strategy the baseline's config does not have is unusable input.
    let cfg_path = b.join("config.json");
    let text = std::fs::read_to_string(&cfg_path).unwrap();
    assert!(text.contains("\"strategy\": \"b\""), "{text}");
    std::fs::write(
        &cfg_path,
        text.replace("\"strategy\": \"b\"", "\"strategy\": \"zz\""),
    )
    .unwrap();
    let err = compare_default(&b, &c).unwrap_err();
    assert!(format!("{err:#}").contains("planned.strategy"), "{err:#}");
}

//! End-to-end tests of `chunkbench compare` (the regression gate) on real quickstart runs.
//!
//! Each test runs the real quickstart pipeline (SciQ, fixed 100/200 words, BM25 top-3/8, the
//! lexical reader) on the first 300 questions, then derives candidates from it: an identical
//! re-run, answers deliberately flipped, words inflated, a different dataset manifest, a
//! different `limit`. They need the converted datasets in the store (`data/` at the workspace
//! root, or `CHUNKBENCH_STORE`); `scripts/test.sh` fetches them first.

use records::CellRecord;
use std::path::Path;

mod common;
use common::{cell, chunkbench, copy_dir, quickstart, rewrite_cell, store, workspace};

const LIMIT: usize = 300;

fn compare(baseline: &Path, candidate: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let mut args = vec![
        "compare",
        baseline.to_str().unwrap(),
        candidate.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = chunkbench(&args);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Flips the first `n` correct answers of the cell to a wrong option.
fn flip_answers(run: &Path, rec: &CellRecord, n: usize) {
    let mut left = n;
    rewrite_cell(run, rec, |r| {
        if left == 0 || r.correct == Some(0) {
            return false;
        }
        left -= 1;
        r.choice = Some((r.gold.unwrap() + 1) % r.scores.len());
        r.correct = Some(0);
        true
    });
    assert_eq!(left, 0, "the cell has fewer than {n} correct answers");
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn identical_runs_pass() {
    let t = tempfile::tempdir().unwrap();
    let base = quickstart(&t.path().join("a"), LIMIT, &store());
    let cand = quickstart(&t.path().join("b"), LIMIT, &store());
    let (code, stdout, stderr) = compare(&base, &cand, &[]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("no regression"), "{stdout}");
    assert!(!stdout.contains("REGRESSION"), "{stdout}");
    // The reports land in the candidate run directory by default, and agree.
    let md = std::fs::read_to_string(cand.join("compare.md")).unwrap();
    assert_eq!(md.trim_end(), stdout.trim_end());
    let json = read_json(&cand.join("compare.json"));
    assert_eq!(json["verdict"], "ok");
    assert_eq!(json["cells"].as_array().unwrap().len(), 4);
    for c in json["cells"].as_array().unwrap() {
        assert_eq!(c["n"], LIMIT);
        assert_eq!(c["delta_points"], 0.0);
        assert_eq!(c["words_change_pct"], 0.0);
        assert_eq!(c["verdict"], "ok");
    }
    assert!(json["only_in_baseline"].as_array().unwrap().is_empty());
    // Deterministic: comparing again gives byte-identical reports.
    let before = std::fs::read(cand.join("compare.json")).unwrap();
    assert_eq!(compare(&base, &cand, &[]).0, Some(0));
    assert_eq!(std::fs::read(cand.join("compare.json")).unwrap(), before);
}

#[test]
fn flipped_answers_regress_unless_within_tolerance() {
    let t = tempfile::tempdir().unwrap();
    let base = quickstart(&t.path().join("a"), LIMIT, &store());
    let cand = t.path().join("cand");
    copy_dir(&base, &cand);
    let rec = cell(&cand, "fixed-100", 3);
    // 30 of 300 questions: exactly 10 accuracy points lost, McNemar b = 30, c = 0.
    flip_answers(&cand, &rec, 30);
    let out = t.path().join("reports");
    let (code, stdout, stderr) = compare(&base, &cand, &["--output", out.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stderr.contains("regression: 1 of 4"), "{stderr}");
    assert!(
        !cand.join("compare.md").exists(),
        "--output was not honoured"
    );
    let json = read_json(&out.join("compare.json"));
    assert_eq!(json["verdict"], "REGRESSION");
    let cells = json["cells"].as_array().unwrap();
    let flagged: Vec<&serde_json::Value> = cells
        .iter()
        .filter(|c| c["verdict"] == "REGRESSION")
        .collect();
    assert_eq!(flagged.len(), 1);
    let c = flagged[0];
    assert_eq!(c["cell_id"], rec.id.as_str());
    assert_eq!(c["delta_points"], -10.0);
    assert_eq!(
        (c["mcnemar"]["b"].as_u64(), c["mcnemar"]["c"].as_u64()),
        (Some(30), Some(0))
    );
    assert!(c["holm_p"].as_f64().unwrap() < 1e-6);
    assert_eq!(c["judgement"]["accuracy"], true);
    assert_eq!(c["judgement"]["words"], false);
    let md = std::fs::read_to_string(out.join("compare.md")).unwrap();
    let row = md
        .lines()
        .find(|l| l.contains("REGRESSION") && l.contains("| fixed-100 |"))
        .unwrap_or_else(|| panic!("no REGRESSION row for fixed-100:\n{md}"));
    assert!(row.contains("| 3 |") && row.contains("-10.0"), "{row}");
    assert!(md.contains(&format!("`{}`", rec.id)), "{md}");
    // A drop of exactly the tolerance passes; just below it, it does not.
    let (code, stdout, _) = compare(&base, &cand, &["--max-accuracy-drop", "10"]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("no regression"), "{stdout}");
    let (code, _, _) = compare(&base, &cand, &["--max-accuracy-drop", "9.9"]);
    assert_eq!(code, Some(1));
    // An α below what the tests can reach in bounded time is unusable input naming the flag
    // (it passed before: nothing could be significant at 1e-12).
    let (code, _, stderr) = compare(&base, &cand, &["--alpha", "1e-12"]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("--alpha 0.000000000001") || stderr.contains("--alpha 1e-12"),
        "{stderr}"
    );
}

#[test]
fn inflated_words_regress() {
    let t = tempfile::tempdir().unwrap();
    let base = quickstart(&t.path().join("a"), LIMIT, &store());
    let cand = t.path().join("cand");
    copy_dir(&base, &cand);
    let rec = cell(&cand, "fixed-200", 8);
    // +10 % words on every question (answers unchanged).
    rewrite_cell(&cand, &rec, |r| {
        r.words = r.words * 11 / 10;
        r.unique_words = r.unique_words * 11 / 10;
        true
    });
    let (code, stdout, stderr) = compare(&base, &cand, &[]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    let json = read_json(&cand.join("compare.json"));
    let c = json["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cell_id"] == rec.id.as_str())
        .unwrap();
    assert_eq!(c["verdict"], "REGRESSION");
    assert_eq!(c["judgement"]["words"], true);
    assert_eq!(c["judgement"]["accuracy"], false);
    let pct = c["words_change_pct"].as_f64().unwrap();
    assert!((9.0..=10.0).contains(&pct), "{pct}");
    assert!(stdout.contains("mean words retrieved +"), "{stdout}");
    // Within a 15 % tolerance the same candidate passes.
    let (code, _, _) = compare(&base, &cand, &["--max-words-increase", "15"]);
    assert_eq!(code, Some(0));
}

/// A baseline cell the candidate lacks fails the gate (issue 38: a gate that passes when the
/// cell it guards disappeared guards nothing), unless --allow-missing.
#[test]
fn a_missing_cell_fails_the_gate_unless_allowed() {
    let t = tempfile::tempdir().unwrap();
    let base = quickstart(&t.path().join("a"), LIMIT, &store());
    let cand = t.path().join("cand");
    copy_dir(&base, &cand);
    let rec = cell(&cand, "fixed-200", 3);
    for ext in ["json", "csv"] {
        std::fs::remove_file(cand.join("cells").join(format!("{}.{ext}", rec.id))).unwrap();
    }
    let (code, stdout, stderr) = compare(&base, &cand, &[]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!("only in the baseline: `{}`", rec.id))
            && stdout.contains("FAILED"),
        "{stdout}"
    );
    assert!(stderr.contains("no partner"), "{stderr}");
    let json = read_json(&cand.join("compare.json"));
    assert_eq!(json["cells"].as_array().unwrap().len(), 3);
    assert_eq!(json["only_in_baseline"][0]["cell_id"], rec.id.as_str());
    assert_eq!(json["missing"], 1);
    let (code, stdout, stderr) = compare(&base, &cand, &["--allow-missing"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
}

#[test]
fn unusable_inputs_exit_2_naming_the_path() {
    let t = tempfile::tempdir().unwrap();
    let base = quickstart(&t.path().join("a"), LIMIT, &store());
    // A missing directory.
    let missing = t.path().join("no-such-run");
    let (code, _, stderr) = compare(&base, &missing, &[]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("no-such-run") && stderr.contains("does not exist"),
        "{stderr}"
    );
    // Another limit changes every cell id: the cells pair by their coordinates, but they hold
    // other questions, so they cannot be compared; the message says which field changed.
    let other = quickstart(&t.path().join("b"), 100, &store());
    let (code, _, stderr) = compare(&base, &other, &[]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("different questions") && stderr.contains("limit: "),
        "{stderr}"
    );
    // Different dataset manifests: the same questions from a store whose manifest differs.
    let store2 = t.path().join("store");
    std::fs::create_dir_all(store2.join("sciq")).unwrap();
    for f in ["documents.jsonl", "questions.jsonl"] {
        std::fs::copy(store().join("sciq").join(f), store2.join("sciq").join(f)).unwrap();
    }
    let mut m = read_json(&store().join("sciq/manifest.json"));
    m["notes"]
        .as_array_mut()
        .unwrap()
        .push("re-converted elsewhere".into());
    std::fs::write(
        store2.join("sciq/manifest.json"),
        serde_json::to_vec_pretty(&m).unwrap(),
    )
    .unwrap();
    let moved = quickstart(&t.path().join("c"), LIMIT, &store2);
    let (code, _, stderr) = compare(&base, &moved, &[]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("different datasets") && stderr.contains(&moved.display().to_string()),
        "{stderr}"
    );
    // Bad flags are unusable input too.
    let (code, _, stderr) = compare(&base, &base, &["--alpha", "0"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--alpha"), "{stderr}");
    // Nothing was written for unusable input.
    assert!(!moved.join("compare.md").exists());
}

/// The GitHub Actions workflow README offers teams (examples/github-actions) calls `run` and
/// `compare` only with flags the binary has, so the template cannot rot silently.
#[test]
fn the_team_workflow_template_uses_existing_flags() {
    let text =
        std::fs::read_to_string(workspace().join("examples/github-actions/chunkbench-gate.yml"))
            .unwrap();
    let wf: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    assert!(wf["jobs"]["gate"]["steps"]
        .as_sequence()
        .is_some_and(|s| s.len() >= 5));
    for sub in ["run", "compare"] {
        let help = String::from_utf8_lossy(&chunkbench(&[sub, "--help"]).stdout).into_owned();
        let calls: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.contains(&format!("chunkbench {sub} ")))
            .take_while(|l| !l.trim().is_empty())
            .take(3)
            .collect();
        assert!(!calls.is_empty(), "no `chunkbench {sub}` in the template");
        for flag in calls
            .iter()
            .flat_map(|l| l.split_whitespace())
            .filter(|w| w.starts_with("--"))
        {
            assert!(
                help.contains(flag),
                "{flag} is not a flag of `chunkbench {sub}`:\n{help}"
            );
        }
    }
    let help = String::from_utf8_lossy(&chunkbench(&["compare", "--help"]).stdout).into_owned();
    for flag in ["--require", "--margin", "--pair", "--allow-missing"] {
        assert!(help.contains(flag), "{flag}");
        assert!(text.contains(flag), "the template documents {flag}");
    }
}

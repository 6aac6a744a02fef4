//! report.html and compare.html in a real headless Chromium (Debian's `chromium`, driven over
//! the DevTools protocol; `common::cdp`).
//!
//! A real run (SciQ, fixed 100/200-word chunks and EAR windows, BM25 top-3, the lexical
//! reader) writes report.html; the test opens it and fails when
//! - the page throws, logs an error, or requests anything outside the file;
//! - the explorer shows a passage (retrieved or gold evidence) whose text is not the exact
//!   byte slice of its document, or shows other passages than the cell's row lists;
//! - the flip filter's lost / gained counts differ from McNemar's b and c (counted by
//!   `stats::discordant_counts` on the cells' rows), or the summary table's;
//! - the outcome filter, the side-by-side view or the table sort do not do what they say.
//!
//! Screenshots at a laptop (1366 px) and a phone (390 px) width are written to
//! `CARGO_TARGET_TMPDIR/report-screenshots/` for inspection.

use records::{read_rows_csv, CellRecord, QuestionRow};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

mod common;
use common::cdp::Browser;
use common::{
    cell, chunkbench, copy_dir, documents, quickstart, rewrite_cell, run_yaml, store, workspace,
};

const CONFIG: &str = "name: report
datasets: [sciq]
strategies:
  fixed-100: {kind: fixed, unit: words, size: 100, overlap: 0}
  fixed-200: {kind: fixed, unit: words, size: 200, overlap: 0}
  ear-windows: {kind: ear}
retrievers:
  bm25: {kind: bm25, query: question+options, k1: 1.2, b: 0.75}
k: [3]
readers:
  lexical: {kind: lexical}
baseline: fixed-100
limit: 120
seed: 0
";

fn shots() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots")
}

fn cells(run: &Path) -> Vec<(CellRecord, Vec<QuestionRow>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(run.join("cells")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            let rec: CellRecord = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            let csv = p.with_extension("csv");
            let rows = read_rows_csv(&std::fs::read(&csv).unwrap(), "cell").unwrap();
            out.push((rec, rows));
        }
    }
    out.sort_by(|a, b| a.0.cell.strategy.cmp(&b.0.cell.strategy));
    out
}

/// Sets a `<select>` of the explorer and fires its change event.
fn set(b: &mut Browser, id: &str, value: &str) {
    b.eval(&format!(
        "(() => {{ const s = document.getElementById({id:?}); s.value = {value:?}; \
         s.dispatchEvent(new Event('change')); return s.value; }})()"
    ));
}

/// Every passage the explorer shows for every question of the selected cell: clicks each
/// list item and returns, per question, its id and the passages of each column
/// (`{doc, start, end, kind, text, missing, cell}`).
const WALK: &str = r#"(() => {
  const out = [];
  const items = Array.from(document.querySelectorAll('#qlist li'));
  for (const li of items) {
    li.click();
    const ps = Array.from(document.querySelectorAll('#detail .passage')).map(p => ({
      doc: p.dataset.doc, start: +p.dataset.start, end: +p.dataset.end,
      kind: p.dataset.kind || 'retrieved',
      text: p.querySelector('.ptext').textContent,
      missing: p.querySelector('.ptext').dataset.missing === '1',
      cell: p.closest('.cellcol') ? p.closest('.cellcol').dataset.cell : null,
    }));
    out.push({ qid: li.dataset.qid, passages: ps });
  }
  return out;
})()"#;

/// Clicks every question of the selected cell (after resetting the filters) and checks what
/// the explorer shows: for each question exactly the row's passages in the row's order, and
/// every passage shown (retrieved or gold evidence) the exact byte slice of its document.
/// Returns the number of passages checked.
fn walk_cell(
    b: &mut Browser,
    docs: &HashMap<String, String>,
    rec: &CellRecord,
    rows: &[QuestionRow],
) -> usize {
    set(b, "cell", &rec.id);
    set(b, "beside", "");
    set(b, "outcome", "all");
    set(b, "flip", "all");
    assert_eq!(count_items(b), rows.len() as u64, "{}", rec.cell.strategy);
    let walked: Vec<Value> = serde_json::from_value(b.eval(WALK)).unwrap();
    assert_eq!(walked.len(), rows.len());
    let mut checked = 0;
    for (w, row) in walked.iter().zip(rows) {
        assert_eq!(w["qid"], row.question_id.as_str());
        let shown: Vec<String> = w["passages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["kind"] == "retrieved")
            .map(|p| format!("{}:{}-{}", p["doc"].as_str().unwrap(), p["start"], p["end"]))
            .collect();
        let stored: Vec<String> = row.passages.iter().map(|p| p.to_string()).collect();
        assert_eq!(shown, stored, "{} {}", rec.cell.strategy, row.question_id);
        for p in w["passages"].as_array().unwrap() {
            let doc = &docs[p["doc"].as_str().unwrap()];
            let (s, e) = (
                p["start"].as_u64().unwrap() as usize,
                p["end"].as_u64().unwrap() as usize,
            );
            assert_eq!(p["missing"], false, "{p}");
            assert_eq!(
                p["text"].as_str().unwrap(),
                &doc[s..e],
                "{}: the explorer's text of {}:{s}-{e} is not its byte slice",
                rec.cell.strategy,
                p["doc"]
            );
            checked += 1;
        }
    }
    checked
}

fn count_items(b: &mut Browser) -> u64 {
    b.eval("document.querySelectorAll('#qlist li').length")
        .as_u64()
        .unwrap()
}

#[test]
fn the_report_works_in_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store();
    let run = run_yaml(tmp.path(), "report", CONFIG, &store);
    let page = run.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.len() < 10 << 20, "report.html is {} bytes", html.len());
    // Self-contained: nothing is loaded from elsewhere.
    for needle in ["<link", " src=", "url(http", "@import"] {
        assert!(!html.contains(needle), "report.html contains {needle:?}");
    }
    let docs = documents("sciq");
    let cells = cells(&run);
    let by_id: HashMap<&str, &(CellRecord, Vec<QuestionRow>)> =
        cells.iter().map(|c| (c.0.id.as_str(), c)).collect();

    let mut b = Browser::launch();
    let ms = b.open(&page);
    eprintln!("report.html ({} bytes) loaded in {ms:.0} ms", html.len());
    assert_eq!(
        b.eval("document.body.dataset.ready"),
        "1",
        "the explorer did not start"
    );
    assert_eq!(b.errors(), Vec::<String>::new(), "the page reported errors");
    b.screenshot(&shots().join("report-laptop.png"), 1366, false);
    b.screenshot(&shots().join("report-phone.png"), 390, true);

    let uids: Vec<String> = serde_json::from_value(
        b.eval("Array.from(document.querySelectorAll('#cell option')).map(o => o.value)"),
    )
    .unwrap();
    assert_eq!(uids.len(), 3);
    let mut checked = 0;
    for uid in &uids {
        let (rec, rows) = by_id[uid.as_str()];
        checked += walk_cell(&mut b, &docs, rec, rows);
        // Outcome filter: exactly the correct rows.
        set(&mut b, "outcome", "correct");
        assert_eq!(count_items(&mut b), rec.summary.correct as u64);
        // Evidence filter: exactly the rows whose gold evidence was not all retrieved.
        set(&mut b, "outcome", "missed");
        let missed = rows
            .iter()
            .filter(|r| r.metrics.get("recall").is_some_and(|x| x < 1.0))
            .count();
        assert_eq!(count_items(&mut b), missed as u64);
        set(&mut b, "outcome", "all");
        // Flip filter against the baseline cell: McNemar's b and c.
        if rec.cell.strategy != "fixed-100" {
            let base = cells
                .iter()
                .find(|c| c.0.cell.strategy == "fixed-100")
                .unwrap();
            let base_correct: HashMap<&str, bool> = base
                .1
                .iter()
                .map(|r| (r.question_id.as_str(), r.correct == Some(1)))
                .collect();
            let cand: Vec<bool> = rows.iter().map(|r| r.correct == Some(1)).collect();
            let basev: Vec<bool> = rows
                .iter()
                .map(|r| base_correct[r.question_id.as_str()])
                .collect();
            let (bb, cc) = stats::discordant_counts(&basev, &cand).unwrap();
            set(&mut b, "flip", "lost");
            let lost = count_items(&mut b);
            assert_eq!(
                b.eval("+document.getElementById('flip-lost').textContent"),
                bb
            );
            set(&mut b, "flip", "gained");
            let gained = count_items(&mut b);
            set(&mut b, "flip", "discordant");
            let either = count_items(&mut b);
            eprintln!(
                "{}: lost {lost}, gained {gained} (McNemar b {bb}, c {cc})",
                rec.cell.strategy
            );
            assert_eq!(
                (lost, gained, either),
                (bb, cc, bb + cc),
                "{}",
                rec.cell.strategy
            );
            // The cell's row in its summary table (the verdict table above it opens the same
            // cell; the summary table comes last).
            let table = b.eval(&format!(
                "Array.from(document.querySelectorAll('tr[data-cell=\"{uid}\"]')).pop()\
                 .querySelector('td:nth-child(11)').textContent"
            ));
            assert_eq!(
                table,
                format!("{bb} / {cc}"),
                "summary table's lost / gained"
            );
            set(&mut b, "flip", "all");
        }
    }
    assert!(checked > 300, "only {checked} passages checked");

    // Side by side: EAR beside the baseline on one question, both columns exact.
    let ear = cells
        .iter()
        .find(|c| c.0.cell.strategy == "ear-windows")
        .unwrap();
    let base = cells
        .iter()
        .find(|c| c.0.cell.strategy == "fixed-100")
        .unwrap();
    set(&mut b, "cell", &ear.0.id);
    assert_eq!(
        b.eval("document.getElementById('beside').value"),
        base.0.id.as_str(),
        "the paired (baseline) cell is beside by default"
    );
    b.eval("document.querySelector('#qlist li').click()");
    let cols: Vec<String> = serde_json::from_value(b.eval(
        "Array.from(document.querySelectorAll('#detail .cellcol')).map(c => c.dataset.cell)",
    ))
    .unwrap();
    assert_eq!(cols, [ear.0.id.clone(), base.0.id.clone()]);
    let anchors = b.eval("document.querySelectorAll('#detail mark.anc').length");
    let evidence = b.eval("document.querySelectorAll('#detail mark.ev').length");
    eprintln!("first EAR question: {anchors} anchor marks, {evidence} evidence marks");
    b.screenshot(&shots().join("report-side-by-side.png"), 1366, false);

    // Sorting a numeric column orders its values: in the verdict table (first) and in the
    // summary table (last).
    for which in [
        "[0]",
        "[document.querySelectorAll('table.sortable').length - 1]",
    ] {
        let t = format!("document.querySelectorAll('table.sortable'){which}");
        b.eval(&format!("{t}.querySelectorAll('th')[4].click()"));
        let vals: Vec<f64> = serde_json::from_value(b.eval(&format!(
            "Array.from({t}.querySelectorAll('tbody tr')).map(r => +r.cells[4].dataset.v)"
        )))
        .unwrap();
        assert!(
            vals.len() > 1 && vals.windows(2).all(|w| w[0] <= w[1]),
            "{which}: {vals:?}"
        );
    }
    assert!(
        b.eval("document.querySelector('h3').textContent")
            .as_str()
            .is_some_and(|t| t.contains("Verdict: accuracy against the baseline")),
        "the verdict table comes first"
    );
    assert_eq!(b.errors(), Vec::<String>::new(), "the page reported errors");
    assert_eq!(
        b.outside_requests(),
        Vec::<String>::new(),
        "requests outside the file"
    );

    // The URL hash: a link to a cell and question opens it; a malformed or unknown pair is
    // ignored; a hash set on the open page (a pasted link) shows its view.
    let q = &cells[1].1[5].question_id;
    b.open_at(&page, &format!("cell={}&q={q}", cells[1].0.id));
    assert_eq!(
        b.eval("document.getElementById('cell').value"),
        cells[1].0.id.as_str()
    );
    assert_eq!(
        b.eval("document.querySelector('#qlist li.sel').dataset.qid"),
        q.as_str()
    );
    b.open_at(&page, "search=%E0%A4%A&outcome=bogus&flip=lost");
    assert_eq!(b.eval("document.body.dataset.ready"), "1");
    assert_eq!(b.eval("document.getElementById('outcome').value"), "all");
    assert_eq!(
        b.errors(),
        Vec::<String>::new(),
        "a malformed hash broke the page"
    );
    b.eval(&format!(
        "location.hash = 'cell={}&q={q}'; new Promise(r => setTimeout(r, 200))",
        cells[2].0.id
    ));
    assert_eq!(
        b.eval("document.getElementById('cell').value"),
        cells[2].0.id.as_str()
    );
    assert_eq!(
        b.eval("document.querySelector('#qlist li.sel').dataset.qid"),
        q.as_str()
    );

    // `chunkbench report` rebuilds the same page; without the store it says why and shows
    // no text rather than a wrong one.
    let o = chunkbench(&[
        "report",
        run.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(&page).unwrap(),
        html,
        "report rebuilt differently"
    );
    let moved = tmp.path().join("moved");
    copy_dir(&run, &moved);
    let o = chunkbench(&[
        "report",
        moved.to_str().unwrap(),
        "--store",
        "/nonexistent-store",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    b.open(&moved.join("report.html"));
    assert_eq!(b.errors(), Vec::<String>::new());
    assert!(b
        .eval("document.querySelector('.note').textContent")
        .as_str()
        .unwrap()
        .contains("not shown"));
    let missing = b.eval("document.querySelectorAll('#detail .ptext[data-missing=\"1\"]').length");
    let all = b.eval("document.querySelectorAll('#detail .ptext').length");
    assert_eq!(missing, all, "every passage is marked as not shown");
    assert!(all.as_u64().unwrap() > 0);
    let _ = workspace();
}

/// compare.html of a quickstart baseline against a candidate whose fixed-100 top-3 cell lost
/// 20 questions and gained 3: the page loads without errors, names the regression, and its
/// flip filter lists exactly the lost and gained questions (compare.json's McNemar b and c),
/// each passage its document's byte slice.
#[test]
fn the_compare_page_works_in_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store();
    let base = quickstart(&tmp.path().join("runs"), 200, &store);
    let cand = tmp.path().join("candidate");
    copy_dir(&base, &cand);
    let rec = cell(&cand, "fixed-100", 3);
    let (mut lost, mut gained) = (20, 3);
    rewrite_cell(&cand, &rec, |r| {
        let g = r.gold.unwrap();
        if r.correct == Some(1) && lost > 0 {
            lost -= 1;
            r.choice = Some((g + 1) % r.scores.len());
            r.correct = Some(0);
            r.failure = Some(records::Failure::Reading);
            true
        } else if r.correct == Some(0) && gained > 0 {
            gained -= 1;
            r.choice = Some(g);
            r.correct = Some(1);
            (r.tied, r.invalid) = (1, 0);
            r.failure = Some(records::Failure::Correct);
            true
        } else {
            false
        }
    });
    let report_dir = tmp.path().join("compare");
    let o = chunkbench(&[
        "compare",
        base.to_str().unwrap(),
        cand.to_str().unwrap(),
        "--output",
        report_dir.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let json: Value =
        serde_json::from_slice(&std::fs::read(report_dir.join("compare.json")).unwrap()).unwrap();
    let page = report_dir.join("compare.html");
    let html = std::fs::read_to_string(&page).unwrap();
    for needle in ["<link", " src=", "url(http", "@import"] {
        assert!(!html.contains(needle), "compare.html contains {needle:?}");
    }
    let docs = documents("sciq");
    let mut b = Browser::launch();
    b.open(&page);
    assert_eq!(b.errors(), Vec::<String>::new(), "the page reported errors");
    assert!(b
        .eval("document.querySelector('h1').textContent")
        .as_str()
        .unwrap()
        .contains("REGRESSION in 1 of 4"));
    b.screenshot(&shots().join("compare-laptop.png"), 1366, false);
    b.screenshot(&shots().join("compare-phone.png"), 390, true);
    for c in json["cells"].as_array().unwrap() {
        let uid = format!("candidate:{}", c["cell_id"].as_str().unwrap());
        set(&mut b, "cell", &uid);
        assert_eq!(
            b.eval("document.getElementById('beside').value"),
            format!("baseline:{}", c["cell_id"].as_str().unwrap()).as_str()
        );
        set(&mut b, "flip", "lost");
        let lost = count_items(&mut b);
        set(&mut b, "flip", "gained");
        let gained = count_items(&mut b);
        assert_eq!(
            (Some(lost), Some(gained)),
            (c["mcnemar"]["b"].as_u64(), c["mcnemar"]["c"].as_u64()),
            "{}",
            c["strategy"]
        );
        set(&mut b, "flip", "discordant");
        let walked: Vec<Value> = serde_json::from_value(b.eval(WALK)).unwrap();
        assert_eq!(walked.len() as u64, lost + gained);
        for w in &walked {
            let cols: Vec<&str> = w["passages"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|p| p["cell"].as_str())
                .collect();
            assert!(
                cols.iter().any(|c| c.starts_with("baseline:")),
                "both runs side by side"
            );
            for p in w["passages"].as_array().unwrap() {
                let doc = &docs[p["doc"].as_str().unwrap()];
                let (s, e) = (
                    p["start"].as_u64().unwrap() as usize,
                    p["end"].as_u64().unwrap() as usize,
                );
                assert_eq!(p["text"].as_str().unwrap(), &doc[s..e]);
            }
        }
        set(&mut b, "flip", "all");
    }
    set(&mut b, "cell", &format!("candidate:{}", rec.id));
    set(&mut b, "flip", "lost");
    b.screenshot(&shots().join("compare-lost.png"), 1366, false);
    assert_eq!(b.errors(), Vec::<String>::new());
    assert_eq!(b.outside_requests(), Vec::<String>::new());
}

/// The report of the EAR textbook study (configs/ear.yaml on the 153 supported MMLU
/// questions, lexical reader, every strategy but Max-Min, whose cold embedding of the four
/// books takes minutes: 10 cells): under 10 MB, no page error, every passage of every
/// question of every cell its document's byte slice, EAR's anchor occurrences marked.
/// `scripts/bench_report.sh` measures the full 12-cell page.
#[test]
fn the_textbook_report_is_small_and_exact() {
    let tmp = tempfile::tempdir().unwrap();
    let store = common::store_with(&["openstax-mmlu-153"]);
    let yaml = std::fs::read_to_string(workspace().join("configs/ear.yaml"))
        .unwrap()
        .replace("  max-min: {kind: max-min, size: 260, unit: words}\n", "")
        .replace("  smollm2: {kind: llm, llm: {scoring: cloze}}\n", "")
        .replace("name: ear\n", "name: ear-textbook\n");
    assert!(
        !yaml.contains("max-min") && !yaml.contains("smollm2"),
        "configs/ear.yaml changed"
    );
    let run = run_yaml(tmp.path(), "ear-textbook", &yaml, &store);
    let page = run.join("report.html");
    let size = std::fs::metadata(&page).unwrap().len();
    assert!(size < 10 << 20, "report.html is {size} bytes");
    let docs = common::documents_in(&store, "openstax-mmlu-153");
    let cells = cells(&run);
    assert_eq!(cells.len(), 10);
    let mut b = Browser::launch();
    let ms = b.open(&page);
    let ready = b.eval("+document.body.dataset.readyMs");
    eprintln!(
        "textbook report.html: {size} bytes, load event {ms:.0} ms, explorer ready {ready} ms"
    );
    assert_eq!(b.errors(), Vec::<String>::new(), "the page reported errors");
    let mut checked = 0;
    for (rec, rows) in &cells {
        checked += walk_cell(&mut b, &docs, rec, rows);
    }
    eprintln!("{checked} passages checked");
    let ear = cells
        .iter()
        .find(|c| c.0.cell.strategy == "ear-windows" && c.0.cell.k == 8)
        .unwrap();
    set(&mut b, "cell", &ear.0.id);
    // Some question shows EAR's matched anchor occurrences marked in its passages.
    let marked = b.eval(
        "(() => { for (const li of document.querySelectorAll('#qlist li')) { li.click(); \
         if (document.querySelectorAll('#detail mark.anc').length) return li.dataset.qid; } \
         return null; })()",
    );
    assert!(
        marked.is_string(),
        "no EAR question shows a marked anchor occurrence"
    );
    b.screenshot(&shots().join("textbook-laptop.png"), 1366, false);
    assert_eq!(b.errors(), Vec::<String>::new(), "the page reported errors");
}

/// Benchmark, run by `scripts/bench_report.sh` (not by the suite): opens the page named by
/// `CHUNKBENCH_REPORT_PAGE` three times and prints its size, the milliseconds from navigation
/// to the load event and to the explorer being usable (`data-ready-ms`), and the mean
/// milliseconds to switch the explorer to another cell and to apply a filter. Fails when the
/// page reports errors.
#[test]
#[ignore = "benchmark: scripts/bench_report.sh"]
fn bench_report_page() {
    let page = PathBuf::from(
        std::env::var("CHUNKBENCH_REPORT_PAGE")
            .expect("set CHUNKBENCH_REPORT_PAGE to a report.html"),
    );
    let size = std::fs::metadata(&page).unwrap().len();
    let mut b = Browser::launch();
    for round in 1..=3 {
        let load = b.open(&page);
        let ready = b.eval("+document.body.dataset.readyMs");
        let switch = b.eval(
            "(() => { const s = document.getElementById('cell'); const t0 = performance.now(); \
             for (const o of s.options) { s.value = o.value; s.dispatchEvent(new Event('change')); } \
             return (performance.now() - t0) / s.options.length; })()",
        );
        let filter = b.eval(
            "(() => { const f = document.getElementById('outcome'); const t0 = performance.now(); \
             for (const v of ['wrong', 'correct', 'all']) { f.value = v; f.dispatchEvent(new Event('change')); } \
             return (performance.now() - t0) / 3; })()",
        );
        let cells = b.eval("document.getElementById('cell').options.length");
        println!(
            "report-bench round {round}: {size} bytes, {cells} cells, load event {load:.0} ms, \
             explorer ready {ready} ms, cell switch {:.1} ms, filter {:.1} ms",
            switch.as_f64().unwrap(),
            filter.as_f64().unwrap()
        );
        assert_eq!(b.errors(), Vec::<String>::new());
    }
}

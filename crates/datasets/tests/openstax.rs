//! The OpenStax textbook corpus and its MMLU question sets, on the real mirrored books
//! (`../shared/datasets/openstax`, or `$CHUNKBENCH_DATA/openstax`) and the converted MMLU test
//! split (`data/mmlu-test`, or `$CHUNKBENCH_STORE/mmlu-test`).
//!
//! A missing prerequisite fails the test with the command that provides it (`scripts/test.sh`
//! fetches everything first).

use datasets::dataset::Dataset;
use datasets::openstax::{self, support, Corpus, Reason};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use testkit::workspace;

fn mirror() -> PathBuf {
    let p = std::env::var_os("CHUNKBENCH_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("../shared/datasets"))
        .join("openstax");
    assert!(
        p.join("osbooks-us-history/SOURCE_COMMIT").exists(),
        "OpenStax mirror not found at {}: set CHUNKBENCH_DATA to the directory holding openstax/",
        p.display()
    );
    p
}

fn mmlu() -> Dataset {
    let store = std::env::var_os("CHUNKBENCH_STORE")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("data"));
    Dataset::load(&store.join("mmlu-test")).unwrap_or_else(|e| {
        panic!("{e:#}\nrun `scripts/test.sh` or `cargo run -p chunkbench -- data fetch` first")
    })
}

/// A corpus of the repository's books file.
fn spec(name: &str) -> openstax::CorpusSpec {
    openstax::BooksFile::builtin()
        .corpus(name)
        .unwrap_or_else(|| panic!("no corpus {name} in the books file"))
        .clone()
}

fn load(name: &str) -> Corpus {
    openstax::load_corpus(&mirror(), &spec(name), openstax::LoadOptions::default())
        .unwrap_or_else(|e| panic!("{e:#}"))
}

/// The EAR corpus (`openstax`), cleaned once per test binary.
fn corpus() -> &'static Corpus {
    static C: OnceLock<Corpus> = OnceLock::new();
    C.get_or_init(|| load("openstax"))
}

#[test]
fn page_counts_equal_the_order_files() {
    let c = corpus();
    let root = mirror();
    let module_re = regex::Regex::new(r#"<col:module document="m[0-9]+""#).unwrap();
    let link_re = regex::Regex::new(r"\]\(contents/m[0-9]+\.md\)").unwrap();
    for book in &c.books {
        let dir = root.join(&book.spec.folder);
        let expected = match book.spec.format {
            openstax::Format::Cnxml => {
                let coll = std::fs::read_dir(dir.join("collections"))
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .find(|p| p.to_string_lossy().ends_with(".collection.xml"))
                    .unwrap();
                module_re
                    .find_iter(&std::fs::read_to_string(coll).unwrap())
                    .count()
            }
            openstax::Format::Markdown => link_re
                .find_iter(&std::fs::read_to_string(dir.join("SUMMARY.md")).unwrap())
                .count(),
        };
        assert_eq!(book.pages.len(), expected, "{}", book.spec.slug);
        // Every page is a distinct module.
        let ids: HashSet<String> = book.pages.iter().map(|p| p.doc_id()).collect();
        assert_eq!(ids.len(), book.pages.len(), "{}", book.spec.slug);
        assert_eq!(book.commit.len(), 40);
    }
    let pages: Vec<usize> = c.books.iter().map(|b| b.pages.len()).collect();
    assert_eq!(pages, [177, 105, 199, 257]);
}

#[test]
fn counts_of_the_pinned_mirror() {
    // The cleaned corpus of the mirrored commits (datasets/README.md reports these numbers).
    let (per, total) = corpus().counts();
    let row = |c: &openstax::Counts| (c.pages, c.narrative_pages, c.blocks_kept, c.blocks_removed);
    let got: BTreeMap<&str, (u64, u64, u64, u64)> = per.iter().map(|(s, c)| (*s, row(c))).collect();
    assert_eq!(got["us-history"], (177, 171, 3065, 3809));
    assert_eq!(got["psychology"], (105, 104, 1866, 5277));
    assert_eq!(got["astronomy"], (199, 190, 3325, 5707));
    assert_eq!(got["biology"], (257, 253, 3685, 11058));
    assert_eq!(row(&total), (738, 718, 11941, 25851));
    let r = &total.removed_by_reason;
    assert_eq!(r.values().sum::<u64>(), total.blocks_removed);
    assert_eq!(r[&Reason::Exercise], 7644);
    assert_eq!(r[&Reason::Figure], 2596);
    assert_eq!(r[&Reason::Glossary], 4164);
    assert_eq!(r[&Reason::Summary], 1291);
}

#[test]
fn documents_are_narrative_and_spans_slice_their_blocks() {
    let c = corpus();
    let docs = c.documents();
    assert_eq!(docs.len(), 718);
    let mut n = 0;
    for book in &c.books {
        for p in book.pages.iter().filter(|p| p.is_narrative()) {
            let doc = &docs[n];
            n += 1;
            assert_eq!(doc.id, p.doc_id());
            assert!(!doc.text.trim().is_empty(), "{} is empty", doc.id);
            assert!(!doc.title.is_empty(), "{} has no title", doc.id);
            let (_, spans) = p.text_and_spans();
            for (b, s) in p.blocks.iter().zip(&spans) {
                match s {
                    Some(s) => {
                        assert_eq!(&doc.text[s.start..s.end], b.text, "{}:{}", p.path, b.line);
                        assert!(!b.text.is_empty() && !b.text.contains("\n\n"));
                    }
                    None => assert!(!b.kept()),
                }
            }
        }
    }
    // Non-narrative pages keep nothing: the preface, the maps, the reference appendices.
    let empty: Vec<String> = c
        .books
        .iter()
        .flat_map(|b| &b.pages)
        .filter(|p| !p.is_narrative())
        .map(|p| p.doc_id())
        .collect();
    assert_eq!(empty.len(), 20);
    assert!(empty.contains(&"openstax-us-history-m51702".to_string())); // Further Reading
    assert!(empty.contains(&"openstax-biology-m46078".to_string())); // Preface
}

#[test]
fn no_caption_exercise_or_glossary_text_leaks() {
    let c = corpus();
    let docs = c.documents();
    let text_of = |id: &str| &docs.iter().find(|d| d.id == id).unwrap().text;
    // (document, text that must not be kept, text that must be kept)
    let cases = [
        (
            "openstax-us-history-m49986",
            vec![
                "The Olmec carved heads from giant boulders", // figure caption
                "Which of the following Native peoples built homes in cliff dwellings", // review question
                "Incan relay runners used to send messages over great distances",       // glossary
                "Great civilizations had risen and fallen in the Americas", // section summary
                "surviving Mayan codices",                                  // click-and-explore
                "By the end of this section, you will be able to",
                "Locate on a map the major American civilizations", // learning objectives
            ],
            "Flourishing along the hot Gulf Coast of Mexico from about 1200 to about 400 BCE",
        ),
        (
            "openstax-biology-m44388",
            vec![
                "Tissues exist within organs which exist within organ systems", // art connection
                "Select two items that biologists agree are necessary",         // free response
                "Living things are highly organized parts of a hierarchy",      // section summary
                "to see how plants respond to a stimulus",                      // link to learning
                "smallest fundamental unit of structure and function in living things", // glossary
                "Identify and describe the properties of life",                 // abstract
                "Link to Learning",
                "fig-ch01",
            ],
            "Organisms respond to diverse stimuli.",
        ),
        (
            "openstax-biology-m44402",
            // An art connection marked with data-element-type instead of class.
            vec!["Which categories of amino acid would you expect to find on the surface"],
            "Proteins are one of the most abundant organic molecules in living systems",
        ),
        (
            "openstax-astronomy-m59862",
            vec!["The area in this picture is only 15 kilometers across"],
            "If Europa really has a large ocean of liquid water under its ice",
        ),
        (
            "openstax-astronomy-m59751",
            vec!["Express this amount in scientific notation"], // worked example
            "5×10^8",
        ),
        (
            "openstax-psychology-m82161",
            vec!["American Board of Forensic Psychology. (2014)"], // references
            "Clive Wearing is an accomplished musician",
        ),
        (
            "openstax-psychology-m82162",
            vec!["Why do you think psychology courses like this one are often requirements"],
            "",
        ),
    ];
    for (id, gone, kept) in cases {
        let text = text_of(id);
        for g in gone {
            assert!(!text.contains(g), "{id}: removed text {g:?} leaked");
        }
        assert!(text.contains(kept), "{id}: narrative {kept:?} missing");
    }
    // Nothing of the markup survives anywhere.
    for d in &docs {
        for bad in ["{:", "<para", "</", "![", "[link]", "&#x", "&quot;", "\\_"] {
            if d.id == "openstax-biology-m44882" && bad == "\\_" {
                continue; // the source writes `B45\\\_04` (a literal backslash in the book)
            }
            assert!(
                !d.text.contains(bad),
                "{}: markup {bad:?} in the text",
                d.id
            );
        }
    }
}

#[test]
fn removed_blocks_reappear_only_where_the_book_repeats_itself() {
    // A removed block of 8+ words whose text is also in its page's kept text would be a
    // cleaning bug, except where the book repeats a sentence (a solution quoting the text, a
    // glossary entry written as a sentence, a title repeated in a paragraph).
    let known: HashSet<(&str, usize)> = [
        ("openstax-psychology-m82213", 299),
        ("openstax-astronomy-m59972", 175),
        ("openstax-astronomy-m59977", 105),
        ("openstax-biology-m44638", 191),
        ("openstax-biology-m44797", 206),
    ]
    .into_iter()
    .collect();
    let mut found = Vec::new();
    for p in corpus().books.iter().flat_map(|b| &b.pages) {
        let (text, _) = p.text_and_spans();
        for b in p.blocks.iter().filter(|b| !b.kept()) {
            if chunker::count_words(&b.text) >= 8 && text.contains(&b.text) {
                found.push((p.doc_id(), b.line));
            }
        }
    }
    let found: HashSet<(&str, usize)> = found.iter().map(|(d, l)| (d.as_str(), *l)).collect();
    assert_eq!(found, known);
}

#[test]
fn cleaning_is_deterministic() {
    let again = load("openstax");
    let c = corpus();
    assert_eq!(again.counts(), c.counts());
    assert_eq!(again.documents(), c.documents());
    assert_eq!(again.input_sha256, c.input_sha256);
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let ma = openstax::write_corpus(c, a.path()).unwrap();
    let mb = openstax::write_corpus(&again, b.path()).unwrap();
    assert_eq!(ma.files, mb.files);
    assert_eq!(ma.counts["documents"], 718);
    let ds = Dataset::load(&a.path().join("openstax")).unwrap();
    assert_eq!(ds.documents.len(), 718);
    // The block log has one row per block, with spans for kept blocks.
    let log = std::fs::read_to_string(a.path().join("openstax/blocks.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 11941 + 25851);
    let first: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(
        first["file"],
        "osbooks-us-history/modules/m52490/index.cnxml"
    );
    assert_eq!(first["reason"], "front-matter");
}

/// Question sets, written once per test binary.
fn question_sets() -> &'static (tempfile::TempDir, Vec<datasets::dataset::DatasetManifest>) {
    static Q: OnceLock<(tempfile::TempDir, Vec<datasets::dataset::DatasetManifest>)> =
        OnceLock::new();
    Q.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let ms = openstax::write_mmlu(corpus(), &mmlu(), dir.path(), 153, 0).unwrap();
        (dir, ms)
    })
}

#[test]
fn support_audit_lists_every_considered_question_once() {
    let (dir, ms) = question_sets();
    let mmlu = mmlu();
    let subjects: HashSet<&str> = corpus().spec.subjects().collect();
    let considered: Vec<&str> = mmlu
        .questions
        .iter()
        .filter(|q| subjects.contains(q.subject.as_deref().unwrap()))
        .map(|q| q.id.as_str())
        .collect();
    assert_eq!(considered.len(), 204 + 545 + 152 + 310 + 144);
    let audit = std::fs::read_to_string(dir.path().join("openstax-mmlu/support.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> = audit
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids, considered,
        "one row per considered question, in MMLU order"
    );
    let all = Dataset::load(&dir.path().join("openstax-mmlu")).unwrap();
    let supported: Vec<&str> = rows
        .iter()
        .filter(|r| r["supported"] == true)
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let kept: Vec<&str> = all.questions.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(kept, supported);
    assert_eq!(ms[0].counts["questions"], supported.len() as u64);
    // Every cited occurrence is a real span of a document holding the anchor's words.
    for r in &rows {
        for a in r["gold_anchors"].as_array().unwrap() {
            if let Some(at) = a.get("at") {
                let doc = all.document(at["doc_id"].as_str().unwrap()).unwrap();
                let (s, e) = (
                    at["start"].as_u64().unwrap() as usize,
                    at["end"].as_u64().unwrap() as usize,
                );
                let slice = &doc.text[s..e];
                assert_eq!(
                    chunker::anchor::normalize(slice),
                    a["norm"].as_str().unwrap(),
                    "{}: {slice:?}",
                    r["id"]
                );
            }
        }
        for a in r["question_anchors"].as_array().unwrap() {
            let at = &a["at"];
            let doc = all.document(at["doc_id"].as_str().unwrap()).unwrap();
            let book = r["book"].as_str().unwrap();
            assert!(
                doc.id.starts_with(&format!("openstax-{book}-")),
                "{}",
                r["id"]
            );
        }
    }
    // The per-subject counts of the manifest add up.
    let per: u64 = subjects
        .iter()
        .map(|s| ms[0].counts[&format!("supported.{s}")])
        .sum();
    assert_eq!(per, supported.len() as u64);
}

#[test]
fn support_rule_on_known_questions() {
    let c = corpus();
    let mmlu = mmlu();
    let ds = support::decide_all(c, &mmlu.questions).unwrap();
    let get = |id: &str| ds.iter().find(|d| d.id == id).unwrap();
    // "Why do Uranus and Neptune have blue methane clouds but Jupiter and Saturn do not?"
    let d = get("mmlu-test-astronomy-0130");
    assert!(d.supported, "{d:?}");
    assert_eq!(d.gold_support, support::GoldSupport::AnchorExact);
    // "omission training." is nowhere in Psychology 2e.
    let d = get("mmlu-test-high_school_psychology-0296");
    assert!(!d.supported);
    assert_eq!(d.gold_support, support::GoldSupport::None);
    // Deterministic: the same decisions twice.
    assert_eq!(ds, support::decide_all(c, &mmlu.questions).unwrap());
}

#[test]
fn sample_of_153_is_stratified_and_reproducible() {
    let (dir, ms) = question_sets();
    let sampled = Dataset::load(&dir.path().join("openstax-mmlu-153")).unwrap();
    assert_eq!(sampled.questions.len(), 153);
    assert_eq!(ms[1].counts["questions"], 153);
    assert_eq!(sampled.documents.len(), 718);
    let all = Dataset::load(&dir.path().join("openstax-mmlu")).unwrap();
    let again = openstax::stratified_sample(&all.questions, 153, 0);
    let ids: Vec<&str> = again
        .iter()
        .map(|&i| all.questions[i].id.as_str())
        .collect();
    let got: Vec<&str> = sampled.questions.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(ids, got, "the sample is reproducible from the seed");
    let other = openstax::stratified_sample(&all.questions, 153, 1);
    assert_ne!(again, other, "another seed gives another sample");
    // Proportional: each subject within one question of its share.
    let n = all.questions.len() as f64;
    let count = |qs: &[datasets::Question], s: &str| {
        qs.iter()
            .filter(|q| q.subject.as_deref() == Some(s))
            .count() as f64
    };
    for s in [
        "high_school_us_history",
        "high_school_psychology",
        "astronomy",
        "high_school_biology",
        "college_biology",
    ] {
        let share = 153.0 * count(&all.questions, s) / n;
        assert!((count(&sampled.questions, s) - share).abs() < 1.0, "{s}");
    }
    // A cap above the supported count keeps everything.
    assert_eq!(
        openstax::stratified_sample(&all.questions, 100_000, 0).len(),
        all.questions.len()
    );
}

fn cnxml(body: &str) -> openstax::Page {
    let doc = format!(
        r#"<document xmlns="http://cnx.rice.edu/cnxml" xmlns:m="http://www.w3.org/1998/Math/MathML"><title>T</title><metadata xmlns:md="http://cnx.rice.edu/mdml"><md:abstract><para>By the end of this section</para><list><item>Explain</item></list></md:abstract></metadata><content>{body}</content><glossary><definition><term>atom</term><meaning>smallest unit</meaning></definition></glossary></document>"#
    );
    openstax::clean_cnxml(&doc, Path::new("snippet.cnxml")).unwrap_or_else(|e| panic!("{e:#}"))
}

fn reasons(p: &openstax::Page) -> Vec<(String, Option<Reason>)> {
    p.blocks
        .iter()
        .map(|b| (b.element.clone(), b.removed))
        .collect()
}

/// Generation 3 (issue 39) on the markup of the catalogue's other books, written here in
/// their shapes: American Government's inline endnote citation (`<cite><note
/// class="reference">` inside a paragraph) and untitled suggested-reading section, two-token
/// book markers, Sociology's section summary and "Further Research" prompt, College Physics'
/// PhET note with an iframe, an Anatomy video pointer, an "Insider Perspective" feature box.
#[test]
fn generation_3_cleans_the_catalogues_classes() {
    let p = cnxml(concat!(
        r#"<para>AARP had done its job as an advocate for seniors.<cite target-id="rf-18"><note class="reference" id="rf-18">Oliver, Lee and Lipton. 2004. “A Political History of Medicare,” http://www.ncbi.nlm.nih.gov/pmc/articles/PMC2690175/.</note></cite></para>"#,
        r#"<note class="american government insider-perspective"><title>Inside</title><para>The budget is negotiated for months.</para></note>"#,
        r#"<note class="american government link-to-learning"><para>Visit the RAND site.</para></note>"#,
        r#"<note class="anatomy interactive"><label/><para>Watch this video to observe the formation of a disaccharide.</para></note>"#,
        r#"<note class="interactive"><title>Projectile Motion</title><para>Blast a Buick out of a cannon!<newline/><figure><media alt="sim"><iframe src="https://openstax.org/l/28prjctilemtion"/></media></figure></para></note>"#,
        r#"<section class="section-summary"><title>Summary</title><para>Sociologists develop theories.</para></section>"#,
        r#"<section class="further-research"><title>Further Research</title><para>Learn more at http://openstax.org/l/ae-institution</para></section>"#,
        r#"<section class="suggested-reading"><para>Alesina, Alberto and Howard Rosenthal. 1995. Partisan Politics.</para></section>"#,
        r#"<section class="conceptual-questions"><exercise class="unnumbered"><problem><para>Give an example.</para></problem></exercise></section>"#,
    ));
    let kept: Vec<&str> = p
        .blocks
        .iter()
        .filter(|b| b.kept())
        .map(|b| b.text.as_str())
        .collect();
    assert_eq!(
        kept,
        [
            "AARP had done its job as an advocate for seniors.",
            "The budget is negotiated for months."
        ]
    );
    assert!(p.unknown.is_empty(), "{:?}", p.unknown);
    let removed_as = |text: &str| {
        p.blocks
            .iter()
            .find(|b| b.text.contains(text))
            .and_then(|b| b.removed)
    };
    assert_eq!(removed_as("A Political History"), Some(Reason::References));
    assert_eq!(removed_as("Partisan Politics"), Some(Reason::References));
    assert_eq!(removed_as("Sociologists develop"), Some(Reason::Summary));
    assert_eq!(removed_as("ae-institution"), Some(Reason::LinkToLearning));
    assert_eq!(removed_as("Blast a Buick"), Some(Reason::LinkToLearning));
    assert_eq!(removed_as("disaccharide"), Some(Reason::LinkToLearning));
}

#[test]
fn cnxml_snippets_for_each_drop_reason() {
    use Reason::*;
    let p = cnxml(concat!(
        r#"<section><title>Origins</title>"#,
        r#"<para>In <emphasis effect="italics">1492</emphasis>, Columbus sailed (<link target-id="f1"/>) to the <term>Caribbean</term>.<footnote>A note.</footnote></para>"#,
        r#"<figure id="f1"><media alt="a ship"><image src="x.jpg"/></media><caption>The Santa Maria.</caption></figure>"#,
        r#"<table><tgroup cols="1"><tbody><row><entry>1492</entry></row></tbody></tgroup></table>"#,
        r#"<equation><m:math><m:mi>E</m:mi></m:math></equation>"#,
        r#"<media alt="video"><iframe src="v"/></media>"#,
        r#"<code display="block">let x = 1;</code>"#,
        r#"<list><item>one</item><item>two</item></list>"#,
        r#"<note class="history click-and-explore"><label>Click and Explore</label><para>Visit the library.</para></note>"#,
        r#"<note class="history my-story"><title>A story</title><para>Said the captain, “land ho.”</para></note>"#,
        r#"<example><para>How far is it?</para></example>"#,
        r#"<para>The mass is <m:math><m:mn>3</m:mn><m:mo>×</m:mo><m:msup><m:mn>10</m:mn><m:mn>5</m:mn></m:msup></m:math> km, or 10<sup>8</sup> m.</para>"#,
        r#"<para>   </para>"#,
        r#"</section>"#,
        r#"<section class="summary"><title>Section Summary</title><para>Columbus sailed.</para></section>"#,
        r#"<section class="review-questions"><exercise><problem><para>Who sailed?</para></problem><solution><para>C</para></solution></exercise></section>"#,
        r#"<section class="critical-thinking"><exercise><problem><para>Why?</para></problem></exercise></section>"#,
        r#"<section class="references"><para>Smith, J. (2001).</para></section>"#,
        r#"<section class="learning-objectives"><para>Explain tides</para></section>"#,
    ));
    let kept: Vec<&str> = p
        .blocks
        .iter()
        .filter(|b| b.kept())
        .map(|b| b.text.as_str())
        .collect();
    assert_eq!(
        kept,
        [
            "In 1492, Columbus sailed to the Caribbean.",
            "Said the captain, “land ho.”",
            "The mass is 3×10^5 km, or 10^8 m.",
        ]
    );
    let r = reasons(&p);
    let expect = [
        ("para", LearningObjectives),
        ("list", LearningObjectives),
        ("title", Heading),
        ("footnote", Footnote),
        ("figure", Figure),
        ("table", Table),
        ("equation", Equation),
        ("media", Media),
        ("code", Code),
        ("list", List),
        ("label", LinkToLearning),
        ("para", LinkToLearning),
        ("title", Heading),
        ("para", Exercise),
        ("para", Empty),
        ("title", Summary),
        ("para", Summary),
        ("exercise", Exercise),
        ("exercise", Exercise),
        ("para", References),
        ("para", LearningObjectives),
        ("definition", Glossary),
    ];
    let removed: Vec<(String, Option<Reason>)> = r.into_iter().filter(|x| x.1.is_some()).collect();
    let expect: Vec<(String, Option<Reason>)> = expect
        .iter()
        .map(|(e, r)| (e.to_string(), Some(*r)))
        .collect();
    assert_eq!(removed, expect);
    // The dropped container is named.
    let ctx: Vec<Option<&str>> = p.blocks.iter().map(|b| b.context.as_deref()).collect();
    assert!(ctx.contains(&Some("section.review-questions")));
    assert!(ctx.contains(&Some("note.click-and-explore")));
}

#[test]
fn cnxml_errors_name_file_line_and_element() {
    let e = format!(
        "{:#}",
        openstax::clean_cnxml(
            "<document><title>T</title><content><para>x</content>",
            Path::new("bad.cnxml")
        )
        .unwrap_err()
    );
    assert!(
        e.contains("bad.cnxml") && e.contains("not well-formed"),
        "{e}"
    );
    let e = format!(
        "{:#}",
        openstax::clean_cnxml(
            "<document><title>T</title><content>\n<para>ok</para>\n<blink>x</blink></content></document>",
            Path::new("odd.cnxml")
        )
        .unwrap_err()
    );
    assert!(e.contains("odd.cnxml:3") && e.contains("<blink>"), "{e}");
    let e = format!(
        "{:#}",
        openstax::clean_cnxml(
            "<document><title>T</title></document>",
            Path::new("x.cnxml")
        )
        .unwrap_err()
    );
    assert!(e.contains("no <content>"), "{e}");
}

#[test]
fn markdown_snippets_for_each_drop_reason() {
    use Reason::*;
    let md = r#"---
title: "Cells \"and\" Life"
layout: page
---

<div data-type="abstract" markdown="1">
By the end of this section, you will be able to:
* Describe cells

</div>

The **cell**{: data-type="term"} is the unit of life ([\[link\]](#fig-1)). See [this video][1]{: target="_window"}.

 ![A cell.](../resources/cell.jpg "A cell (credit: A)"){: #fig-1}

<div data-type="note" data-has-label="true" class="interactive" data-label="" markdown="1">
<div data-type="title">
Link to Learning
</div>
Watch a video.

</div>

<div data-type="note" class="evolution" markdown="1">
<div data-type="title">
Evolution Connection
</div>
<span data-type="title">Woese</span>Woese built a tree.

</div>

<div data-type="note" data-element-type="art-connection" markdown="1">
Which is false?

</div>

<table><thead>
<tr><th>a</th></tr>
</thead></table>

### Section Summary

Cells are small.

### Review Questions

<div data-type="exercise">
<div data-type="problem" markdown="1">
What is a cell?

1.  a unit
2.  a tissue
{: type="a"}

</div>
</div>

<div data-type="glossary" markdown="1">
### Glossary
{: data-type="glossary-title"}

cell
: the unit of life
^

</div>

[1]: http://example.org
"#;
    let p = openstax::clean_markdown(md, Path::new("m1.md")).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(p.title, "Cells \"and\" Life");
    let kept: Vec<&str> = p
        .blocks
        .iter()
        .filter(|b| b.kept())
        .map(|b| b.text.as_str())
        .collect();
    assert_eq!(
        kept,
        [
            "The cell is the unit of life. See this video.",
            "Woese built a tree."
        ]
    );
    let removed: Vec<(String, Reason)> = p
        .blocks
        .iter()
        .filter_map(|b| b.removed.map(|r| (b.element.clone(), r)))
        .collect();
    let expect = [
        ("paragraph", LearningObjectives),
        ("list", LearningObjectives),
        ("image", Figure),
        ("paragraph", LinkToLearning), // the box title: the outer container wins
        ("paragraph", LinkToLearning),
        ("paragraph", Heading),
        ("span.title", Heading),
        ("paragraph", Exercise),
        ("table", Table),
        ("heading", Summary),
        ("paragraph", Summary),
        ("heading", Exercise),
        ("paragraph", Exercise),
        ("list", Exercise),
        ("heading", Glossary), // "### Glossary" ends "Review Questions" (same level)
        ("definition", Glossary),
    ];
    let expect: Vec<(String, Reason)> = expect.iter().map(|(e, r)| (e.to_string(), *r)).collect();
    assert_eq!(removed, expect);
    // Line numbers point into the file.
    let first = &p.blocks[0];
    assert_eq!(first.line, 7);
}

#[test]
fn markdown_errors_name_file_and_line() {
    let e = format!(
        "{:#}",
        openstax::clean_markdown("no front matter", Path::new("a.md")).unwrap_err()
    );
    assert!(e.contains("a.md:1") && e.contains("front matter"), "{e}");
    let e = format!(
        "{:#}",
        openstax::clean_markdown(
            "---\ntitle: x\n---\n\n<div data-type=\"note\">\ntext\n",
            Path::new("b.md")
        )
        .unwrap_err()
    );
    assert!(e.contains("b.md:5") && e.contains("never closed"), "{e}");
    let e = format!(
        "{:#}",
        openstax::clean_markdown(
            "---\ntitle: x\n---\n<div data-type=\"mystery\">\n</div>\n",
            Path::new("c.md")
        )
        .unwrap_err()
    );
    assert!(e.contains("c.md:4") && e.contains("mystery"), "{e}");
}

#[test]
fn a_missing_module_is_an_error_naming_the_collection_line() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("openstax");
    // Copy the mirror's small files, then drop one module of U.S. History.
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let t = to.join(e.file_name());
            if e.path().is_dir() {
                copy(&e.path(), &t);
            } else {
                std::fs::copy(e.path(), t).unwrap();
            }
        }
    }
    copy(&mirror(), &root);
    std::fs::remove_dir_all(root.join("osbooks-us-history/modules/m49967")).unwrap();
    let e = format!(
        "{:#}",
        openstax::load_corpus(&root, &spec("openstax"), openstax::LoadOptions::default())
            .unwrap_err()
    );
    assert!(
        e.contains("us-history.collection.xml:") && e.contains("m49967") && e.contains("missing"),
        "{e}"
    );
}

#[test]
fn markdown_inline_markup_is_flattened() {
    let page = |body: &str| {
        let md = format!("---\ntitle: T\n---\n\n{body}\n");
        let p =
            openstax::clean_markdown(&md, Path::new("t.md")).unwrap_or_else(|e| panic!("{e:#}"));
        p.blocks
            .iter()
            .filter(|b| b.kept())
            .map(|b| b.text.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        page(
            r#"See ![alt](../x.jpg "cap (credit: A)"){: #f} the **atom**{: data-type="term"} ([\[link\]](#fig-1)) and [this video][1]{: target="_window"} \_\_ 5 \* 3."#
        ),
        ["See the atom and this video __ 5 * 3."]
    );
    assert_eq!(
        page("H<sub>2</sub>O and 10<sup>8</sup> &#x201C;q&#x201D; &amp; <math xmlns=\"http://www.w3.org/1998/Math/MathML\"><msup><mi>x</mi><mn>2</mn></msup></math>.<sup><sup data-type=\"footnote-number\" id=\"r1\">[1](#fn1){: data-type=\"footnote-link\"}</sup></sup>"),
        ["H2O and 10^8 “q” & x^2."]
    );
    let e = format!(
        "{:#}",
        openstax::clean_markdown(
            "---\ntitle: T\n---\n\nA <math><mi>x</math>.\n",
            Path::new("m.md")
        )
        .unwrap_err()
    );
    assert!(e.contains("m.md:5") && e.contains("MathML"), "{e}");
}

/// The EAR corpus is byte for byte what every earlier release made: same input identity, rules
/// version, documents, block log and question sets (results/ear depends on them).
#[test]
fn the_ear_corpus_and_its_question_sets_are_unchanged() {
    let c = corpus();
    assert_eq!(c.rules_version(), "openstax-clean-1");
    assert_eq!(
        c.input_sha256,
        "99bcb278f2f0a72562117724403a9b8fbd899eaa2afc3635ee815d12602a5fa8"
    );
    assert_eq!(c.unknown().count(), 0);
    let tmp = tempfile::tempdir().unwrap();
    let m = openstax::write_corpus(c, tmp.path()).unwrap();
    assert_eq!(m.name, "openstax");
    assert!(m
        .version
        .starts_with("openstax-clean-1; osbooks-astronomy@63157f37"));
    assert_eq!(
        m.files["documents.jsonl"],
        "4c6668e6708e93ff1fb3fb8ba82c8583e36bf298f83c73c71d8709e219c73cda"
    );
    assert_eq!(
        m.files["blocks.jsonl"],
        "7a83fe523b3117f5785599606bafabdd0762555d80b84a8022ff9b07ab27e035"
    );
    assert!(!m.counts.keys().any(|k| k.contains("unknown")));
    // A subject MMLU does not have is an error naming it, not an empty question set.
    let mut typo = spec("openstax");
    typo.books[2].subjects = vec!["astronmy".into()];
    let bad = Corpus {
        spec: typo.clone(),
        books: c
            .books
            .iter()
            .zip(&typo.books)
            .map(|(b, s)| openstax::Book {
                spec: s.clone(),
                ..b.clone()
            })
            .collect(),
        ..c.clone()
    };
    let e = format!(
        "{:#}",
        openstax::write_mmlu(&bad, &mmlu(), tmp.path(), 153, 0).unwrap_err()
    );
    assert!(
        e.contains("book astronomy: subject \"astronmy\" has no question in mmlu-test"),
        "{e}"
    );
    let (_, ms) = question_sets();
    assert_eq!(ms[0].name, "openstax-mmlu");
    assert_eq!(ms[1].name, "openstax-mmlu-153");
    assert!(ms[1]
        .version
        .starts_with("openstax-clean-1; openstax-support-1;"));
}

#[test]
fn the_books_file_names_six_folders_at_their_pinned_commits() {
    let file = openstax::BooksFile::builtin();
    let names: Vec<&str> = file.corpora.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["openstax", "openstax-chemistry", "openstax-economics"]
    );
    let report = openstax::mirror_report(&mirror(), &file).unwrap();
    assert_eq!(
        report,
        openstax::MirrorReport::default(),
        "{:?}",
        report.lines()
    );
    let subjects: Vec<&str> = file.corpora.iter().flat_map(|c| c.subjects()).collect();
    assert_eq!(
        subjects,
        [
            "high_school_us_history",
            "high_school_psychology",
            "astronomy",
            "high_school_biology",
            "college_biology",
            "high_school_chemistry",
            "college_chemistry",
            "high_school_macroeconomics",
            "high_school_microeconomics"
        ]
    );
    // Every known class is documented in datasets/README.md.
    let readme = std::fs::read_to_string(workspace().join("datasets/README.md")).unwrap();
    for (element, class) in openstax::known_classes() {
        assert!(
            readme.contains(&format!("`{class}`")),
            "datasets/README.md does not document {element}.{class}"
        );
    }
}

#[test]
fn books_file_errors_name_the_file_the_field_and_the_fix() {
    let good = openstax::BUILTIN_BOOKS_FILE;
    let err = |text: &str| {
        format!(
            "{:#}",
            openstax::BooksFile::parse(text, "my-books.yaml").unwrap_err()
        )
    };
    let e = err(&good.replacen(
        "        slug: psychology",
        "        slug: psychology\n        folders: x",
        1,
    ));
    assert!(e.contains("my-books.yaml:") && e.contains("folders"), "{e}");
    let e = err(&good.replacen("slug: psychology", "slug: us-history", 1));
    assert!(e.contains("slug \"us-history\" is already used"), "{e}");
    let e = err(&good.replacen(
        "subjects: [astronomy]",
        "subjects: [high_school_psychology]",
        1,
    ));
    assert!(
        e.contains("already supported by book \"psychology\""),
        "{e}"
    );
    let e = err(&good.replacen("32c719622fbb7a0ca729cd645c1df4cf4e7d5b3a", "32c7196", 1));
    assert!(e.contains("chemistry") && e.contains("40-hex-digit"), "{e}");
    let e = err(&good.replacen("rules: 1", "rules: 4", 1));
    assert!(e.contains("rules: 4") && e.contains("from 1 to 3"), "{e}");
    let e = err(&good.replacen("support: 1", "support: 3", 1));
    assert!(e.contains("support: 3") && e.contains("from 1 to 2"), "{e}");
    // Class rules: a remove without a reason, a reason that is not one, a reason on keep,
    // two rules for one class, no `why`, and rules on a Markdown book.
    let with_rules = |rules: &str| {
        good.replacen(
            "    support: 1\n",
            &format!("    support: 1\n    classes:\n{rules}"),
            1,
        )
    };
    let e = err(&with_rules(
        "      - {element: note, class: reference, rule: remove, why: citations}\n",
    ));
    assert!(
        e.contains("classes[0]") && e.contains("needs a reason"),
        "{e}"
    );
    let e = err(&with_rules(
        "      - {element: note, class: reference, rule: remove, reason: cites, why: a reason}\n",
    ));
    assert!(
        e.contains("\"cites\" is not one of") && e.contains("references"),
        "{e}"
    );
    let e = err(&with_rules(
        "      - {element: note, class: x, rule: keep, reason: references, why: a reason}\n",
    ));
    assert!(e.contains("rule remove only"), "{e}");
    let e = err(&with_rules(
        "      - {element: note, class: x, rule: keep, why: one reason}\n      - {element: note, class: x, rule: marker, why: another reason}\n",
    ));
    assert!(
        e.contains("classes[1]") && e.contains("note.x has two rules"),
        "{e}"
    );
    let e = err(&with_rules(
        "      - {element: note, class: x, rule: keep}\n",
    ));
    assert!(e.contains("why"), "{e}");
    let e = err(&with_rules(
        "      - {element: note, class: x, rule: keep, why: \".\"}\n",
    ));
    assert!(e.contains("why: say in a sentence"), "{e}");
    // The warnings print ELEMENT.CLASS; a rule written that way is refused with the fix.
    let e = err(&with_rules(
        "      - {element: section, class: section.endnotes, rule: keep, why: prose}\n",
    ));
    assert!(e.contains("write element: section, class: endnotes"), "{e}");
    let e = err(&with_rules(
        "      - {element: sektion, class: endnotes, rule: keep, why: prose}\n",
    ));
    assert!(
        e.contains("element \"sektion\"") && e.contains("section, note"),
        "{e}"
    );
    let e = err(&good.replacen(
        "        format: markdown\n",
        "        format: markdown\n        classes: [{element: div, class: x, rule: keep, why: a reason}]\n",
        1,
    ));
    assert!(e.contains("CNXML books only"), "{e}");
    assert!(openstax::BooksFile::parse(
        &with_rules("      - {element: note, class: reference, rule: remove, reason: references, why: citations}\n"),
        "ok.yaml"
    )
    .is_ok());
    let e = err(&good.replacen("name: openstax-economics", "name: openstax", 1));
    assert!(e.contains("listed twice"), "{e}");
    // Names that would overwrite another dataset of the store.
    for taken in ["mmlu-test", "openstax-mmlu", "sciq", "x-mmlu-153"] {
        let e = err(&good.replacen("name: openstax-economics", &format!("name: {taken}"), 1));
        assert!(
            e.contains("would overwrite another dataset"),
            "{taken}: {e}"
        );
    }
    let e = err(&good.replacen("name: openstax-economics", "name: \"-a\"", 1));
    assert!(e.contains("lowercase words"), "{e}");
    // One folder is one book, also within a corpus.
    let e = err(&good.replacen(
        "folder: osbooks-psychology",
        "folder: osbooks-us-history",
        1,
    ));
    assert!(
        e.contains("folder \"osbooks-us-history\" is already a book"),
        "{e}"
    );
    let e = err(&good.replacen(
        "32c719622fbb7a0ca729cd645c1df4cf4e7d5b3a",
        "32C719622FBB7A0CA729CD645C1DF4CF4E7D5B3A",
        1,
    ));
    assert!(e.contains("lowercase"), "{e}");
    // A collection missing from books.xml is found when the book is read.
    let file = openstax::BooksFile::parse(
        &good.replacen(
            "collections: [chemistry-2e]",
            "collections: [chemistry-3e]",
            1,
        ),
        "my-books.yaml",
    )
    .unwrap();
    let e = format!(
        "{:#}",
        openstax::load_corpus(
            &mirror(),
            file.corpus("openstax-chemistry").unwrap(),
            openstax::LoadOptions::default()
        )
        .unwrap_err()
    );
    assert!(
        e.contains("META-INF/books.xml")
            && e.contains("chemistry-3e")
            && e.contains("chemistry-2e, chemistry-atoms-first-2e"),
        "{e}"
    );
}

/// The two bundles: only the chosen collections, a module shared by two of them once (where
/// the first puts it), every class met has a rule, and the counts of the pinned commits.
#[test]
fn bundles_read_the_chosen_collections_with_shared_modules_once() {
    let chem = load("openstax-chemistry");
    let econ = load("openstax-economics");
    for c in [&chem, &econ] {
        assert_eq!(c.rules_version(), "openstax-clean-2");
        let unknown: Vec<String> = c
            .unknown()
            .map(|(_, p, u)| format!("{} {}:{}", u.class, p.path, u.line))
            .collect();
        assert!(unknown.is_empty(), "{unknown:?}");
        let ids: HashSet<String> = c.books[0].pages.iter().map(|p| p.doc_id()).collect();
        assert_eq!(ids.len(), c.books[0].pages.len(), "{}", c.spec.name);
    }
    // Chemistry 2e: 149 modules; no module of Atoms First alone (its 27 copies are m71xxx).
    assert_eq!(chem.books[0].pages.len(), 149);
    assert!(chem.books[0]
        .pages
        .iter()
        .all(|p| !p.module.starts_with("m71")));
    // Macroeconomics 3e (119) and Microeconomics 3e (100) share 36 modules: 183 pages.
    let root = mirror().join("osbooks-principles-economics-bundle/collections");
    let modules = |f: &str| -> Vec<String> {
        let t = std::fs::read_to_string(root.join(f)).unwrap();
        regex::Regex::new(r#"document="(m[0-9]+)""#)
            .unwrap()
            .captures_iter(&t)
            .map(|c| c[1].to_string())
            .collect()
    };
    let macro_ = modules("principles-macroeconomics-3e.collection.xml");
    let micro = modules("principles-microeconomics-3e.collection.xml");
    let shared: Vec<&String> = micro.iter().filter(|m| macro_.contains(m)).collect();
    assert_eq!((macro_.len(), micro.len(), shared.len()), (119, 100, 36));
    let pages = &econ.books[0].pages;
    assert_eq!(pages.len(), 183);
    let order: Vec<&str> = pages.iter().map(|p| p.module.as_str()).collect();
    assert_eq!(
        order[..119],
        macro_.iter().map(String::as_str).collect::<Vec<_>>()[..]
    );
    // A shared module sits where Macroeconomics puts it, under its chapter title.
    let first_shared = shared[0];
    let at = order.iter().position(|m| m == first_shared).unwrap();
    assert!(at < 119);
    // Counts at the pinned commits (datasets/README.md).
    let (_, chem_total) = chem.counts();
    let (_, econ_total) = econ.counts();
    let key = |c: &openstax::Counts| {
        (
            c.pages,
            c.narrative_pages,
            c.blocks_kept,
            c.blocks_removed,
            c.words_kept,
        )
    };
    assert_eq!(key(&chem_total), (149, 136, 2491, 9630, 180743));
    assert_eq!(key(&econ_total), (183, 181, 3017, 5383, 285520));
    // The generation-2 class rules remove what is not narrative.
    let removed_as = |c: &Corpus, ctx: &str| -> BTreeMap<Reason, usize> {
        let mut m = BTreeMap::new();
        for p in &c.books[0].pages {
            for b in p
                .blocks
                .iter()
                .filter(|b| b.context.as_deref() == Some(ctx))
            {
                *m.entry(b.removed.unwrap()).or_default() += 1;
            }
        }
        m
    };
    for (c, ctx, reason) in [
        (&econ, "note.workout", Reason::Exercise),
        (&econ, "note.linkup", Reason::LinkToLearning),
        (&econ, "note.chapter-objectives", Reason::LearningObjectives),
        (&econ, "section.self-check-questions", Reason::Exercise),
        (&econ, "section.problems", Reason::Exercise),
        (&econ, "section.References", Reason::References),
        (&econ, "section[title=References]", Reason::References),
        (
            &econ,
            "section[title=Key Concepts and Summary]",
            Reason::Summary,
        ),
        (&chem, "section.exercises", Reason::Exercise),
        (&chem, "section.key-equations", Reason::Summary),
    ] {
        let m = removed_as(c, ctx);
        assert!(m.len() == 1 && m.contains_key(&reason), "{ctx}: {m:?}");
    }
    // Kept feature boxes: prose of the book.
    let kept_in = |c: &Corpus, class: &str| {
        c.books[0].pages.iter().any(|p| {
            let t = std::fs::read_to_string(mirror().join(&c.books[0].spec.folder).join(&p.path))
                .unwrap();
            t.contains(&format!("{class}\"")) && p.blocks.iter().any(|b| b.kept())
        })
    };
    for class in ["everyday-life", "sciences-interconnect", "chemist-portrait"] {
        assert!(kept_in(&chem, class), "{class}");
    }
    // Isotopes in kept chemistry text read ^14_6C, not `_ 6^14C`.
    let text: String = chem.documents().into_iter().map(|d| d.text).collect();
    assert!(text.contains("^14_6C") && !text.contains("_ 6^14C"));
}

/// A book the rules have not seen: its unknown section class is counted and logged; strict
/// mode fails naming the file, the line and the class.
#[test]
fn an_unknown_section_class_is_reported_and_strict_mode_fails_on_it() {
    // tests/data/openstax-fixture: one book (osbooks-fixture, with a `section.endnotes`) in
    // its books file, and a fifth folder (osbooks-fifth) the file does not name.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/openstax-fixture");
    let root = fixture.join("openstax");
    let file = openstax::BooksFile::load(&fixture.join("books.yaml")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let report = openstax::mirror_report(&root, &file).unwrap();
    assert_eq!(report.not_in_file, ["osbooks-fifth"]);
    assert!(report.lines()[0].contains("osbooks-fifth/ is in the mirror but not in the books file"));
    let spec = &file.corpora[0];
    let c = openstax::load_corpus(&root, spec, openstax::LoadOptions::default()).unwrap();
    let unknown: Vec<(String, usize)> = c
        .unknown()
        .map(|(_, _, u)| (u.class.clone(), u.line))
        .collect();
    assert_eq!(unknown, [("section.endnotes".to_string(), 4)]);
    // Kept as prose (not guessed away), and marked in the block log and the manifest.
    let page = &c.books[0].pages[0];
    let cite = page
        .blocks
        .iter()
        .find(|b| b.text.contains("citation"))
        .unwrap();
    assert!(cite.kept());
    assert_eq!(cite.unknown, ["section.endnotes"]);
    let store = tmp.path().join("store");
    let m = openstax::write_corpus(&c, &store).unwrap();
    assert_eq!(m.counts["unknown_classes"], 1);
    assert_eq!(m.counts["fixture.unknown.section.endnotes"], 1);
    let log = std::fs::read_to_string(store.join("fixture/blocks.jsonl")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("\"unknown\":[\"section.endnotes\"]")),
        "{log}"
    );
    // Strict: an error naming the file, the line and the class.
    let e = format!(
        "{:#}",
        openstax::load_corpus(&root, spec, openstax::LoadOptions { strict: true }).unwrap_err()
    );
    assert!(
        e.contains("osbooks-fixture/modules/m10001/index.cnxml:4")
            && e.contains("\"endnotes\"")
            && e.contains("<section>")
            && e.contains("--openstax-strict"),
        "{e}"
    );
}

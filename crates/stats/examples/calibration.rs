//! Calibration of the verdict by simulation (docs/reference.md §5 "The verdict"):
//! family-wise error rates under no true difference, with and without clustered questions,
//! and interval coverage under a known difference, for the methods `stats::plan_family` uses.
//!
//! Run: `scripts/calibrate_verdicts.sh` (or `cargo run --release -p stats --example
//! calibration -- [RUNS]`); prints a Markdown table. Each scenario draws `RUNS` (default
//! 1,000) simulated runs from one seeded stream, so the table is reproducible.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use stats::{plan_family, Clusters, FamilySettings, PairedInput, Verdict};

/// One simulated run: the baseline's values and `m` candidates', with each question's cluster.
struct Run {
    baseline: Vec<f64>,
    candidates: Vec<Vec<f64>>,
    clusters: Vec<usize>,
}

/// How a question's pair is drawn.
#[derive(Clone, Copy)]
enum Model {
    /// 0/1 values: the baseline right with p = 0.6; the candidate flips a right answer with
    /// probability `q10 / 0.6` and a wrong one with `q01 / 0.4`. Δ = q01 − q10, ψ = q10 + q01.
    Binary { q10: f64, q01: f64 },
    /// 0/1 values with a per-(document, candidate) effect: on half of the documents the
    /// candidate is better (`good`), on the other half worse (`bad`), each (q10, q01).
    ClusteredBinary { good: (f64, f64), bad: (f64, f64) },
    /// Continuous values: baseline U(0, 1); difference 0 with probability 1/2 (ties, as in
    /// recall@k), else Normal(shift·2, 0.3), so the mean difference is `shift`.
    Continuous { shift: f64 },
    /// Continuous values with a per-(document, candidate) shift ±0.15 plus `shift`.
    ClusteredContinuous { shift: f64 },
}

fn normal(rng: &mut ChaCha8Rng) -> f64 {
    // Box–Muller.
    let u1: f64 = rng.random_range(f64::EPSILON..1.0);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

fn flip(rng: &mut ChaCha8Rng, base: f64, q10: f64, q01: f64) -> f64 {
    if base == 1.0 {
        f64::from(rng.random::<f64>() >= q10 / 0.6)
    } else {
        f64::from(rng.random::<f64>() < q01 / 0.4)
    }
}

fn simulate(rng: &mut ChaCha8Rng, model: Model, docs: usize, per_doc: usize, m: usize) -> Run {
    let n = docs * per_doc;
    let clusters: Vec<usize> = (0..n).map(|i| i / per_doc).collect();
    let baseline: Vec<f64> = (0..n)
        .map(|_| match model {
            Model::Binary { .. } | Model::ClusteredBinary { .. } => {
                f64::from(rng.random::<f64>() < 0.6)
            }
            _ => rng.random(),
        })
        .collect();
    let candidates = (0..m)
        .map(|_| {
            let doc_good: Vec<bool> = (0..docs).map(|_| rng.random()).collect();
            baseline
                .iter()
                .zip(&clusters)
                .map(|(&b, &k)| match model {
                    Model::Binary { q10, q01 } => flip(rng, b, q10, q01),
                    Model::ClusteredBinary { good, bad } => {
                        let (q10, q01) = if doc_good[k] { good } else { bad };
                        flip(rng, b, q10, q01)
                    }
                    Model::Continuous { shift } => {
                        if rng.random::<bool>() {
                            b
                        } else {
                            b + 2.0 * shift + 0.3 * normal(rng)
                        }
                    }
                    Model::ClusteredContinuous { shift } => {
                        let doc = if doc_good[k] { 0.15 } else { -0.15 };
                        b + shift + doc + 0.2 * normal(rng)
                    }
                })
                .collect()
        })
        .collect();
    Run {
        baseline,
        candidates,
        clusters,
    }
}

struct Scenario {
    name: &'static str,
    model: Model,
    docs: usize,
    per_doc: usize,
    m: usize,
    /// True difference of every candidate.
    truth: f64,
    margin: f64,
    /// Resample by document (true) or by question.
    by_document: bool,
}

#[derive(Default)]
struct Tally {
    runs: usize,
    holm_any: usize,
    gate_any: usize,
    false_non_inferior: usize,
    covered: usize,
    intervals: usize,
    simultaneous_all: usize,
}

fn run_scenario(s: &Scenario, runs: usize, seed: u64) -> Tally {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = Tally::default();
    for r in 0..runs {
        let run = simulate(&mut rng, s.model, s.docs, s.per_doc, s.m);
        let clusters = if s.by_document {
            Clusters::from_keys(run.clusters.iter().copied())
        } else {
            Clusters::singletons(run.baseline.len())
        };
        let inputs: Vec<PairedInput<'_>> = run
            .candidates
            .iter()
            .map(|c| PairedInput {
                baseline: &run.baseline,
                candidate: c,
                clusters: &clusters,
            })
            .collect();
        let settings = FamilySettings {
            alpha: 0.05,
            power: 0.8,
            margin: s.margin,
            resamples: 2000,
            seed: seed.wrapping_mul(31).wrapping_add(r as u64),
        };
        let family = plan_family(&inputs, &settings).expect("simulated input is valid");
        t.runs += 1;
        t.holm_any += usize::from(family.iter().any(|c| c.holm_p < 0.05));
        t.gate_any += usize::from(family.iter().any(|c| c.verdict == Verdict::Inferior));
        t.false_non_inferior += usize::from(
            family
                .iter()
                .any(|c| c.verdict.at_least_non_inferior() && c.verdict != Verdict::Superior),
        );
        let mut all = true;
        for c in &family {
            if let Some(i) = c.interval {
                t.intervals += 1;
                t.covered += usize::from(i.contains(s.truth));
            }
            all &= c.simultaneous.is_some_and(|i| i.contains(s.truth));
        }
        t.simultaneous_all += usize::from(all);
    }
    t
}

fn pct(k: usize, n: usize) -> String {
    if n == 0 {
        return "–".into();
    }
    let p = k as f64 / n as f64;
    let se = (p * (1.0 - p) / n as f64).sqrt();
    format!("{:.1} ± {:.1}", 100.0 * p, 100.0 * 1.96 * se)
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let null_bin = Model::Binary { q10: 0.1, q01: 0.1 };
    let null_cl_bin = Model::ClusteredBinary {
        good: (0.04, 0.20),
        bad: (0.20, 0.04),
    };
    let scenarios = [
        Scenario {
            name: "no difference, 0/1, 150 independent questions, m = 4",
            model: null_bin,
            docs: 150,
            per_doc: 1,
            m: 4,
            truth: 0.0,
            margin: 0.0,
            by_document: false,
        },
        Scenario {
            name: "no difference, 0/1, 40 independent questions, m = 3",
            model: null_bin,
            docs: 40,
            per_doc: 1,
            m: 3,
            truth: 0.0,
            margin: 0.0,
            by_document: false,
        },
        Scenario {
            name: "no difference, continuous with ties, 150 questions, m = 4",
            model: Model::Continuous { shift: 0.0 },
            docs: 150,
            per_doc: 1,
            m: 4,
            truth: 0.0,
            margin: 0.0,
            by_document: false,
        },
        Scenario {
            name: "no difference, 0/1, 40 documents × 4 questions, by document",
            model: null_cl_bin,
            docs: 40,
            per_doc: 4,
            m: 4,
            truth: 0.0,
            margin: 0.0,
            by_document: true,
        },
        Scenario {
            name: "same, resampled by question (ignoring the clusters)",
            model: null_cl_bin,
            docs: 40,
            per_doc: 4,
            m: 4,
            truth: 0.0,
            margin: 0.0,
            by_document: false,
        },
        Scenario {
            name: "no difference, continuous, 40 documents × 4, by document",
            model: Model::ClusteredContinuous { shift: 0.0 },
            docs: 40,
            per_doc: 4,
            m: 4,
            truth: 0.0,
            margin: 0.0,
            by_document: true,
        },
        Scenario {
            name: "true Δ = −margin (0.05), 0/1, 150 questions: false non-inferiority",
            model: Model::Binary {
                q10: 0.125,
                q01: 0.075,
            },
            docs: 150,
            per_doc: 1,
            m: 4,
            truth: -0.05,
            margin: 0.05,
            by_document: false,
        },
        Scenario {
            name: "known Δ = +0.05, 0/1, 150 questions (Tango)",
            model: Model::Binary {
                q10: 0.075,
                q01: 0.125,
            },
            docs: 150,
            per_doc: 1,
            m: 1,
            truth: 0.05,
            margin: 0.0,
            by_document: false,
        },
        Scenario {
            name: "known Δ = +0.05, 0/1, 40 questions (Tango)",
            model: Model::Binary {
                q10: 0.075,
                q01: 0.125,
            },
            docs: 40,
            per_doc: 1,
            m: 1,
            truth: 0.05,
            margin: 0.0,
            by_document: false,
        },
        Scenario {
            name: "known Δ = +0.05, continuous, 40 questions (bootstrap)",
            model: Model::Continuous { shift: 0.05 },
            docs: 40,
            per_doc: 1,
            m: 1,
            truth: 0.05,
            margin: 0.0,
            by_document: false,
        },
        Scenario {
            name: "known Δ = +0.05, 0/1, 40 documents × 4 (cluster bootstrap)",
            model: Model::ClusteredBinary {
                good: (0.05, 0.30),
                bad: (0.20, 0.05),
            },
            docs: 40,
            per_doc: 4,
            m: 1,
            truth: 0.05,
            margin: 0.0,
            by_document: true,
        },
        Scenario {
            name: "known Δ = +0.05, continuous, 40 documents × 4 (cluster bootstrap)",
            model: Model::ClusteredContinuous { shift: 0.05 },
            docs: 40,
            per_doc: 4,
            m: 1,
            truth: 0.05,
            margin: 0.0,
            by_document: true,
        },
    ];
    println!(
        "{runs} simulated runs per scenario, α = 0.05, seed 2026; rates in % ± 1.96·SE.\n\n\
         | scenario | Holm family: any p < α | gate: any inferior | any false non-inferior | 95 % interval coverage | simultaneous coverage (all m) |\n\
         |---|---:|---:|---:|---:|---:|"
    );
    for (i, s) in scenarios.iter().enumerate() {
        let t = run_scenario(s, runs, 2026 + i as u64);
        let ni = if s.margin > 0.0 {
            pct(t.false_non_inferior, t.runs)
        } else {
            "–".into()
        };
        println!(
            "| {} | {} | {} | {ni} | {} | {} |",
            s.name,
            pct(t.holm_any, t.runs),
            pct(t.gate_any, t.runs),
            pct(t.covered, t.intervals),
            pct(t.simultaneous_all, t.runs)
        );
    }
}

//! Calibration of the verdict by simulation (docs/reference.md §5 "The verdict"): for exactly
//! the code the reports run (`stats::plan_family`), over 0/1, continuous and sparse continuous
//! differences, 10, 20 and 40 resampling units with and without clustering, and families of
//! m = 2, 4, 8 and 16 comparisons:
//!
//! - under no difference: the family-wise error rate (any Holm p < α), the gate's false alarms
//!   (any "inferior") and the simultaneous coverage (all m intervals at 1 − α/m hold 0);
//! - at a true difference equal to the margin: false "non-inferior" (Δ = −δ) and false
//!   "equivalent" (Δ = +δ) in any comparison of the family;
//! - under a known difference: the coverage of the 95 % interval and of the simultaneous ones.
//!
//! Run: `scripts/calibrate_verdicts.sh` (or `cargo run --release -p stats --example
//! calibration -- [RUNS]`); prints Markdown tables. Each scenario draws `RUNS` (default 1,000)
//! simulated runs from its own seeded stream, so the tables are reproducible.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use stats::{plan_family, Clusters, FamilySettings, PairedInput, Verdict};

/// How a question's pair of values is drawn.
#[derive(Clone, Copy)]
enum Data {
    /// 0/1 values: each document has a baseline accuracy in [0.35, 0.65]; the candidate flips
    /// a right answer or a wrong one so that P(lost) = q10 and P(gained) = q01 in the
    /// document. Clustered: each (document, candidate) is "good" (q10 − 0.06, q01 + 0.06) or
    /// "bad" (the reverse) with probability 1/2; independent: every question its own document.
    Binary,
    /// Continuous differences with ties (recall@k, nDCG): 0 with probability 1/2, else
    /// `2·shift + U(−0.6, 0.6)`; clustered: plus ±0.15 per (document, candidate).
    Continuous,
    /// Sparse fractional differences (span recall with several evidence spans): 0 with
    /// probability 0.85, else ±{0.25, 0.5, 1} with a sign that makes the mean `shift`;
    /// clustered: the sign's bias ±0.3 per (document, candidate).
    Sparse,
}

impl Data {
    fn name(self) -> &'static str {
        match self {
            Data::Binary => "0/1",
            Data::Continuous => "continuous",
            Data::Sparse => "sparse continuous",
        }
    }
}

/// One simulated run: the baseline's values and `m` candidates', with each question's cluster.
struct Run {
    baseline: Vec<f64>,
    candidates: Vec<Vec<f64>>,
    clusters: Vec<usize>,
}

fn uniform(rng: &mut ChaCha8Rng, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * rng.random::<f64>()
}

/// A candidate's value for a 0/1 baseline value `b` in a document of accuracy `p`.
fn flip(rng: &mut ChaCha8Rng, b: f64, p: f64, q10: f64, q01: f64) -> f64 {
    if b == 1.0 {
        f64::from(rng.random::<f64>() >= q10 / p)
    } else {
        f64::from(rng.random::<f64>() < q01 / (1.0 - p))
    }
}

/// A run of `units` resampling units (documents of `per` questions) and `m` candidates whose
/// true difference from the baseline is `shift` (0/1: `shift` = q01 − q10 around ψ = 0.2).
fn simulate(
    rng: &mut ChaCha8Rng,
    data: Data,
    units: usize,
    per: usize,
    m: usize,
    shift: f64,
) -> Run {
    let n = units * per;
    let clusters: Vec<usize> = (0..n).map(|i| i / per).collect();
    let clustered = per > 1;
    let doc_p: Vec<f64> = (0..units).map(|_| uniform(rng, 0.35, 0.65)).collect();
    let baseline: Vec<f64> = clusters
        .iter()
        .map(|&k| match data {
            Data::Binary => f64::from(rng.random::<f64>() < doc_p[k]),
            _ => rng.random(),
        })
        .collect();
    let candidates = (0..m)
        .map(|_| {
            let side: Vec<f64> = (0..units)
                .map(|_| if rng.random::<bool>() { 1.0 } else { -1.0 })
                .collect();
            baseline
                .iter()
                .zip(&clusters)
                .map(|(&b, &k)| {
                    let doc = if clustered { side[k] } else { 0.0 };
                    match data {
                        Data::Binary => {
                            let (q10, q01) = (0.1 - shift / 2.0, 0.1 + shift / 2.0);
                            let tilt = 0.06 * doc;
                            flip(rng, b, doc_p[k], q10 - tilt, q01 + tilt)
                        }
                        Data::Continuous => {
                            let d = if rng.random::<bool>() {
                                0.0
                            } else {
                                2.0 * shift + uniform(rng, -0.6, 0.6)
                            };
                            b + d + 0.15 * doc
                        }
                        Data::Sparse => {
                            if rng.random::<f64>() < 0.85 {
                                b
                            } else {
                                let size = [0.25, 0.5, 1.0][rng.random_range(0..3)];
                                // E[size] = 7/12; P(+) chosen so the mean is `shift`.
                                let bias = (shift / 0.15 / (7.0 / 12.0)).clamp(-1.0, 1.0);
                                let up = 0.5 * (1.0 + bias) + 0.3 * doc * 0.5;
                                let sign = if rng.random::<f64>() < up.clamp(0.0, 1.0) {
                                    1.0
                                } else {
                                    -1.0
                                };
                                b + sign * size
                            }
                        }
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
    data: Data,
    units: usize,
    per: usize,
    m: usize,
    truth: f64,
    margin: f64,
}

#[derive(Default)]
struct Tally {
    runs: usize,
    holm_any: usize,
    inferior_any: usize,
    false_non_inferior: usize,
    false_equivalent: usize,
    covered: usize,
    intervals: usize,
    simultaneous_all: usize,
    unsettled: usize,
}

fn run_scenario(s: &Scenario, runs: usize, seed: u64) -> Tally {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = Tally::default();
    for r in 0..runs {
        let run = simulate(&mut rng, s.data, s.units, s.per, s.m, s.truth);
        let clusters = Clusters::from_keys(run.clusters.iter().copied());
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
            effect: 0.0,
            resamples: 2000,
            seed: seed.wrapping_mul(31).wrapping_add(r as u64),
        };
        let family = plan_family(&inputs, &settings).expect("simulated input is valid");
        t.runs += 1;
        t.holm_any += usize::from(family.iter().any(|c| c.holm_p < 0.05));
        t.inferior_any += usize::from(family.iter().any(|c| c.verdict == Verdict::Inferior));
        t.false_non_inferior += usize::from(
            family
                .iter()
                .any(|c| matches!(c.verdict, Verdict::NonInferior | Verdict::Equivalent)),
        );
        t.false_equivalent += usize::from(family.iter().any(|c| c.verdict == Verdict::Equivalent));
        t.unsettled += family.iter().filter(|c| !c.p_settled).count();
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

fn units_label(s: &Scenario) -> String {
    if s.per > 1 {
        format!("{} documents × {}", s.units, s.per)
    } else {
        format!("{} independent questions", s.units)
    }
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    // An optional second argument runs one table: `null`, `margin` or `known`.
    let only = std::env::args().nth(2);
    let wants = |t: &str| only.as_deref().is_none_or(|o| o == t);
    let datas = [Data::Binary, Data::Continuous, Data::Sparse];
    let layouts = [(10, 1), (20, 1), (40, 1), (10, 4), (20, 4), (40, 4)];
    println!(
        "{runs} simulated runs per row, α = 0.05, seeds 2026 + row; rates in % ± 1.96·SE \
         (Monte Carlo error).\n\n\
         ### No difference\n\n\
         Family-wise error: any Holm p < α in the family; gate: any \"inferior\"; simultaneous \
         coverage: all m intervals at 1 − α/m hold the true 0 (target ≥ 95 %).\n\n\
         | data | units | m | family-wise error | any inferior | simultaneous coverage | 95 % coverage | unsettled p |\n\
         |---|---|---:|---:|---:|---:|---:|---:|"
    );
    let mut row = 0u64;
    for data in datas.into_iter().filter(|_| wants("null")) {
        for (units, per) in layouts {
            for m in [2, 4, 8, 16] {
                let s = Scenario {
                    data,
                    units,
                    per,
                    m,
                    truth: 0.0,
                    margin: 0.0,
                };
                let t = run_scenario(&s, runs, 2026 + row);
                row += 1;
                println!(
                    "| {} | {} | {m} | {} | {} | {} | {} | {} |",
                    data.name(),
                    units_label(&s),
                    pct(t.holm_any, t.runs),
                    pct(t.inferior_any, t.runs),
                    pct(t.simultaneous_all, t.runs),
                    pct(t.covered, t.intervals),
                    t.unsettled
                );
            }
        }
    }
    println!(
        "\n### At the margin\n\n\
         δ = 5 points. False non-inferior: the true difference is −δ and some comparison of the \
         family is called non-inferior or equivalent (target ≤ α = 5 %; by construction ≤ α/2). \
         False equivalent: the true difference is +δ and some comparison is called equivalent.\n\n\
         | data | units | m | false non-inferior (Δ = −δ) | false equivalent (Δ = +δ) | simultaneous coverage (Δ = −δ) |\n\
         |---|---|---:|---:|---:|---:|"
    );
    row = 72;
    for data in datas.into_iter().filter(|_| wants("margin")) {
        for (units, per) in [(40, 1), (10, 4), (40, 4)] {
            for m in [2, 8] {
                let at = |truth: f64, row: u64| {
                    let s = Scenario {
                        data,
                        units,
                        per,
                        m,
                        truth,
                        margin: 0.05,
                    };
                    (run_scenario(&s, runs, 5026 + row), s)
                };
                let (low, s) = at(-0.05, row);
                let (high, _) = at(0.05, row + 1);
                row += 2;
                println!(
                    "| {} | {} | {m} | {} | {} | {} |",
                    data.name(),
                    units_label(&s),
                    pct(low.false_non_inferior, low.runs),
                    pct(high.false_equivalent, high.runs),
                    pct(low.simultaneous_all, low.runs)
                );
            }
        }
    }
    println!(
        "\n### Under a known difference\n\n\
         True difference +5 points, one comparison (m = 1): coverage of the 95 % interval.\n\n\
         | data | units | 95 % coverage | power (Holm p < α) |\n\
         |---|---|---:|---:|"
    );
    row = 108;
    for data in datas.into_iter().filter(|_| wants("known")) {
        for (units, per) in [(40, 1), (160, 1), (10, 4), (40, 4)] {
            let s = Scenario {
                data,
                units,
                per,
                m: 1,
                truth: 0.05,
                margin: 0.0,
            };
            let t = run_scenario(&s, runs, 9026 + row);
            row += 1;
            println!(
                "| {} | {} | {} | {} |",
                data.name(),
                units_label(&s),
                pct(t.covered, t.intervals),
                pct(t.holm_any, t.runs)
            );
        }
    }
}

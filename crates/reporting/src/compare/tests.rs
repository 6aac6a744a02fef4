use super::*;

fn figures(n: u64, base: u64, cand: u64, holm_p: f64, bw: u64, cw: u64) -> GateFigures {
    GateFigures {
        n,
        baseline_correct: base,
        candidate_correct: cand,
        holm_p,
        baseline_words: bw,
        candidate_words: cw,
    }
}

#[test]
fn accuracy_drop_of_exactly_the_tolerance_passes() {
    let tol = Tolerances::default();
    // 10 of 1000 questions = exactly 1.0 point.
    let at = judge(&figures(1000, 800, 790, 1e-6, 100, 100), &tol, 0.05);
    assert!(!at.accuracy && !at.is_regression());
    let over = judge(&figures(1000, 800, 789, 1e-6, 100, 100), &tol, 0.05);
    assert!(over.accuracy && over.is_regression());
    // 3 of 300 is also exactly one point; 0.1 of a point is not representable exactly in
    // the drop but is in the counts.
    assert!(!judge(&figures(300, 200, 197, 0.0, 1, 1), &tol, 0.05).accuracy);
    assert!(judge(&figures(300, 200, 196, 0.0, 1, 1), &tol, 0.05).accuracy);
}

/// Issue 36 case 3: 69 of 3000 questions is exactly 2.3 points, which `2.3 * 3000` in
/// f64 (6899.999…) called a regression.
#[test]
fn tolerance_boundaries_are_exact_decimals() {
    let tol = |pts: f64, pct: f64| Tolerances {
        max_accuracy_drop_pts: pts,
        max_words_increase_pct: pct,
        ..Tolerances::default()
    };
    assert!(!judge(&figures(3000, 2000, 1931, 0.0, 1, 1), &tol(2.3, 5.0), 0.05).accuracy);
    assert!(judge(&figures(3000, 2000, 1930, 0.0, 1, 1), &tol(2.3, 5.0), 0.05).accuracy);
    // Every drop of i questions in n at the tolerance 100·i/n printed as a decimal.
    for n in [7u64, 30, 153, 1000, 3000, 14042] {
        for i in 1..=n.min(200) {
            let pts: f64 = format!("{:.10}", 100.0 * i as f64 / n as f64)
                .parse()
                .unwrap();
            let exact = (100 * u128::from(i)) * 10u128.pow(10)
                == exact_decimal(pts)
                    .map(|(m, s)| m * 10u128.pow(10 - s))
                    .unwrap()
                    * u128::from(n);
            let j = judge(&figures(n, n, n - i, 0.0, 1, 1), &tol(pts, 5.0), 0.05);
            if exact {
                assert!(!j.accuracy, "n {n} drop {i} at {pts}");
            }
        }
    }
    // Words: 1000 -> 1023 is exactly +2.3 %.
    assert!(!judge(&figures(10, 5, 5, 1.0, 1000, 1023), &tol(1.0, 2.3), 0.05).words);
    assert!(judge(&figures(10, 5, 5, 1.0, 1000, 1024), &tol(1.0, 2.3), 0.05).words);
    assert_eq!(exact_decimal(2.3), Some((23, 1)));
    assert_eq!(exact_decimal(5.0), Some((5, 0)));
    assert_eq!(exact_decimal(0.05), Some((5, 2)));
    assert_eq!(exact_decimal(-1.0), None);
    // Absurd tolerances fall back to f64 and still decide.
    assert!(!judge(&figures(10, 10, 0, 0.0, 1, 1), &tol(1e300, 1e300), 0.05).accuracy);
}

#[test]
fn accuracy_drop_needs_significance_below_alpha() {
    let tol = Tolerances::default();
    assert!(!judge(&figures(1000, 800, 700, 0.05, 1, 1), &tol, 0.05).accuracy);
    assert!(judge(&figures(1000, 800, 700, 0.0499, 1, 1), &tol, 0.05).accuracy);
    // Improvements never regress, however significant.
    assert!(!judge(&figures(1000, 700, 800, 0.0, 1, 1), &tol, 0.05).accuracy);
}

#[test]
fn words_increase_of_exactly_the_tolerance_passes() {
    let tol = Tolerances::default();
    // 1000 -> 1050 words is exactly +5 %.
    assert!(!judge(&figures(10, 5, 5, 1.0, 1000, 1050), &tol, 0.05).words);
    assert!(judge(&figures(10, 5, 5, 1.0, 1000, 1051), &tol, 0.05).words);
    // Fewer words never regress.
    assert!(!judge(&figures(10, 5, 5, 1.0, 1000, 10), &tol, 0.05).words);
    // From nothing to something is beyond any tolerance; nothing to nothing is fine.
    let wide = Tolerances {
        max_words_increase_pct: 1e9,
        ..tol.clone()
    };
    assert!(judge(&figures(10, 5, 5, 1.0, 0, 1), &wide, 0.05).words);
    assert!(!judge(&figures(10, 5, 5, 1.0, 0, 0), &wide, 0.05).words);
    // A tolerance of 0 flags any increase.
    let zero = Tolerances {
        max_words_increase_pct: 0.0,
        ..tol
    };
    assert!(judge(&figures(10, 5, 5, 1.0, 1000, 1001), &zero, 0.05).words);
    assert!(!judge(&figures(10, 5, 5, 1.0, 1000, 1000), &zero, 0.05).words);
}

#[test]
fn invalid_tolerances_name_the_flag() {
    let bad = |t: Tolerances| t.validate().unwrap_err().to_string();
    let d = Tolerances::default();
    assert!(bad(Tolerances {
        max_accuracy_drop_pts: -1.0,
        ..d.clone()
    })
    .contains("--max-accuracy-drop"));
    assert!(bad(Tolerances {
        max_words_increase_pct: f64::NAN,
        ..d.clone()
    })
    .contains("--max-words-increase"));
    for a in [0.0, 1e-17, 0.5, 0.999_999, 1.0, 1.5] {
        assert!(bad(Tolerances {
            alpha: Some(a),
            ..d.clone()
        })
        .contains("--alpha"));
    }
    assert!(bad(Tolerances {
        primary: Some("acuracy".into()),
        ..d.clone()
    })
    .contains("--primary"));
    d.validate().unwrap();
}

//! How numbers print, once for every writer (summary.md, compare.md, report.html,
//! compare.html, `explain` and the CLI's lines): p-values, signed intervals, accuracies and
//! tolerances. CSV and JSON files carry full-precision values instead. Also the one natural order
//! of names ([`natural_key`]) every table and plot sorts by.

use records::CellSummary;

/// A p-value with three decimals, or `< 0.001` (so a p of 0.0004 is never shown as `0.000`).
pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// An interval as `[lo, hi]` with signs and one decimal (points or %), or `–` when absent.
pub fn signed_interval(i: Option<stats::Interval>) -> String {
    i.map_or("–".into(), |i| {
        // `0.0 +` turns −0.0 into 0.0, so an interval never prints `-0.0`.
        format!("[{:+.1}, {:+.1}]", 0.0 + i.lower, 0.0 + i.upper)
    })
}

/// Accuracy as shown in reports: `83.4 %`, `–` for a cell with no questions (an accuracy of
/// nothing is not 0 %), or `not read (retrieval only)` for a cell without a reader.
pub fn accuracy(s: &CellSummary) -> String {
    match s.accuracy {
        Some(a) => format!("{:.1} %", 100.0 * a),
        None if s.n == 0 => "–".into(),
        None => "not read (retrieval only)".into(),
    }
}

/// The confidence level of an interval at `1 − alpha`, in percent as headers print it: `95`,
/// `99`, `97.5`, `99.99` (to 4 decimals, trailing zeros dropped).
pub fn level(alpha: f64) -> String {
    let pct = (100.0 * (1.0 - alpha) * 1e4).round() / 1e4;
    format!("{pct}")
}

/// A tolerance as the user gave it, with at least one decimal (`1.0`, `0.25`, `5.0`).
pub fn tolerance(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// Sort key of a name with numbers compared as numbers: `fixed[size=64]` before
/// `fixed[size=128]`, `t=0.3` before `t=0.45` before `t=0.6`. Each part is the text before a
/// number and the number's value (as ordered bits of a non-negative `f64`).
pub fn natural_key(s: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut chars = s.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch.is_ascii_digit() {
            let mut num = String::from(ch);
            while let Some(&c) = chars.peek() {
                let decimal_point = c == '.' && !num.contains('.');
                if c.is_ascii_digit() || decimal_point {
                    num.push(c);
                    chars.next();
                } else {
                    break;
                }
            }
            let value = num.trim_end_matches('.').parse::<f64>().unwrap_or(f64::MAX);
            out.push((std::mem::take(&mut word), value.to_bits()));
            if num.ends_with('.') {
                word.push('.');
            }
        } else {
            word.push(ch);
        }
    }
    out.push((word, 0));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_values_below_the_last_decimal_say_so() {
        assert_eq!(p_value(0.0004), "< 0.001");
        assert_eq!(p_value(0.001), "0.001");
        assert_eq!(p_value(1.0), "1.000");
    }

    #[test]
    fn levels_print_as_the_percent_they_are() {
        assert_eq!(level(0.05), "95");
        assert_eq!(level(0.01), "99");
        assert_eq!(level(0.025), "97.5");
        assert_eq!(level(0.0001), "99.99");
    }

    #[test]
    fn intervals_never_print_negative_zero() {
        let i = stats::Interval {
            lower: -0.0,
            upper: 2.04,
        };
        assert_eq!(signed_interval(Some(i)), "[+0.0, +2.0]");
        assert_eq!(signed_interval(None), "–");
    }
}

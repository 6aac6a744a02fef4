//! The progress line of a run (indicatif): cells done, reused and to go.

/// Progress display: on a terminal, a bar over the run's cells and a bar over the questions
/// of the current stage, both with ETAs (indicatif); otherwise plain log lines on stderr.
pub(super) struct Progress {
    pub(super) multi: Option<indicatif::MultiProgress>,
    pub(super) cells: indicatif::ProgressBar,
}

impl Progress {
    pub(super) fn new(total_cells: usize) -> Self {
        use std::io::IsTerminal;
        if std::io::stderr().is_terminal() {
            let multi = indicatif::MultiProgress::new();
            let cells = multi.add(indicatif::ProgressBar::new(total_cells as u64));
            cells.set_style(
                indicatif::ProgressStyle::with_template(
                    "cells  {bar:30} {pos}/{len} [{elapsed_precise} < {eta}] {msg}",
                )
                .expect("static template"),
            );
            Progress {
                multi: Some(multi),
                cells,
            }
        } else {
            Progress {
                multi: None,
                cells: indicatif::ProgressBar::hidden(),
            }
        }
    }

    /// A bar over `n` questions for one stage (hidden when not on a terminal).
    pub(super) fn stage(&self, name: &str, n: usize) -> indicatif::ProgressBar {
        match &self.multi {
            Some(m) => {
                let b = m.add(indicatif::ProgressBar::new(n as u64));
                b.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{prefix:>10} {bar:30} {pos}/{len} [{elapsed_precise} < {eta}]",
                    )
                    .expect("static template"),
                );
                b.set_prefix(name.to_string());
                b
            }
            None => indicatif::ProgressBar::hidden(),
        }
    }

    /// A log line: above the bars on a terminal, plain stderr otherwise; through the
    /// redaction layer ([`httpio::redact`]).
    pub(super) fn log(&self, line: String) {
        let line = httpio::redact(&line);
        match &self.multi {
            Some(m) => {
                let _ = m.println(line);
            }
            None => eprintln!("{line}"),
        }
    }
}

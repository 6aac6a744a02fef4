//! Run plots with plotters, each written as PNG and SVG under `plots/`.
//!
//! - `accuracy-vs-words--DATASET--READER`: mean words retrieved (x) against accuracy (y) with
//!   Wilson 95 % error bars, one point per strategy × retriever × k, the Pareto front (no other
//!   cell has fewer words and higher accuracy) joined by a line.
//! - `forest--DATASET--READER`: accuracy delta against the baseline in points with its paired
//!   bootstrap 95 % interval, one row per comparison, and the line Δ = 0.
//! - `size-sweep--DATASET--READER`: accuracy and recall@k against chunk size, one line
//!   per strategy family × retriever × k, when a strategy was swept over `size`.
//! - `chunk-lengths--DATASET`: histogram of words per chunk, one panel per strategy.
//!
//! Text needs a TrueType font: DejaVu Sans from the system (Debian `fonts-dejavu-core`) or
//! the file named by `CHUNKBENCH_FONT`.

use crate::records::{CellRecord, ChunkLengths, Comparison};
use anyhow::{anyhow, bail, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::OnceLock;

const FONT_CANDIDATES: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

/// Registers the font once per process.
fn ensure_font() -> Result<()> {
    static FONT: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let path = std::env::var("CHUNKBENCH_FONT")
            .ok()
            .or_else(|| {
                FONT_CANDIDATES
                    .iter()
                    .find(|p| Path::new(p).exists())
                    .map(|p| p.to_string())
            })
            .ok_or_else(|| {
                "no TrueType font for plots: install Debian's fonts-dejavu-core or set \
                 CHUNKBENCH_FONT to a .ttf file"
                    .to_string()
            })?;
        let bytes = std::fs::read(&path).map_err(|e| format!("cannot read font {path}: {e}"))?;
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        for style in [FontStyle::Normal, FontStyle::Bold] {
            plotters::style::register_font("sans-serif", style, bytes)
                .map_err(|_| format!("{path} is not a usable TrueType font"))?;
        }
        Ok(())
    })
    .clone()
    .map_err(|e| anyhow!(e))
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plotting failed: {e:?}")
}

/// Renders one drawing into `stem.png` and `stem.svg`.
macro_rules! render {
    ($stem:expr, $w:expr, $h:expr, $draw:ident, $($arg:expr),*) => {{
        let png = format!("{}.png", $stem);
        let svg = format!("{}.svg", $stem);
        {
            let root = BitMapBackend::new(&png, ($w, $h)).into_drawing_area();
            $draw(&root, $($arg),*)?;
            root.present().map_err(err)?;
        }
        {
            let root = SVGBackend::new(&svg, ($w, $h)).into_drawing_area();
            $draw(&root, $($arg),*)?;
            root.present().map_err(err)?;
        }
    }};
}

fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A point of the accuracy-vs-words plot.
struct Point {
    label: String,
    words: f64,
    acc: f64,
    lo: f64,
    hi: f64,
}

fn draw_pareto<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    pts: &[Point],
) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let xmax = pts.iter().map(|p| p.words).fold(1.0, f64::max) * 1.3;
    let ymin = pts.iter().map(|p| p.lo).fold(1.0, f64::min);
    let ymax = pts.iter().map(|p| p.hi).fold(0.0, f64::max);
    let pad = ((ymax - ymin) * 0.15).max(0.02);
    let (y0, y1) = ((ymin - pad).max(0.0) * 100.0, (ymax + pad).min(1.0) * 100.0);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..xmax, y0..y1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("mean words retrieved per question")
        .y_desc("accuracy (%)")
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .draw()
        .map_err(err)?;
    // Pareto front: sorted by words, keep points whose accuracy beats all cheaper ones.
    let mut order: Vec<&Point> = pts.iter().collect();
    order.sort_by(|a, b| a.words.total_cmp(&b.words).then(b.acc.total_cmp(&a.acc)));
    let mut front = Vec::new();
    let mut best = f64::NEG_INFINITY;
    for p in order {
        if p.acc > best {
            best = p.acc;
            front.push((p.words, p.acc * 100.0));
        }
    }
    chart
        .draw_series(LineSeries::new(
            front.clone(),
            ShapeStyle::from(&RED).stroke_width(2),
        ))
        .map_err(err)?
        .label("Pareto front (fewer words, higher accuracy)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(2)));
    chart
        .draw_series(pts.iter().map(|p| {
            ErrorBar::new_vertical(
                p.words,
                p.lo * 100.0,
                p.acc * 100.0,
                p.hi * 100.0,
                BLUE.filled(),
                6,
            )
        }))
        .map_err(err)?
        .label("cell: accuracy with Wilson 95 % interval")
        .legend(|(x, y)| Circle::new((x + 10, y), 4, BLUE.filled()));
    chart
        .draw_series(pts.iter().map(|p| {
            EmptyElement::at((p.words, p.acc * 100.0))
                + Circle::new((0, 0), 4, BLUE.filled())
                + Text::new(p.label.clone(), (6, -16), ("sans-serif", 13).into_font())
        }))
        .map_err(err)?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    Ok(())
}

/// A row of the forest plot.
struct ForestRow {
    label: String,
    delta: f64,
    lo: f64,
    hi: f64,
    p_holm: f64,
}

fn draw_forest<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    rows: &[ForestRow],
) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let lim = rows
        .iter()
        .flat_map(|r| [r.lo.abs(), r.hi.abs(), r.delta.abs()])
        .fold(1.0, f64::max)
        * 1.15;
    let n = rows.len() as f64;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(10)
        .build_cartesian_2d(-lim..lim, -0.5..n - 0.5)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_desc("accuracy delta vs baseline (points), paired bootstrap 95 % interval")
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new(
            vec![(0.0, -0.5), (0.0, n - 0.5)],
            BLACK.stroke_width(1),
        ))
        .map_err(err)?;
    chart
        .draw_series(rows.iter().enumerate().map(|(i, r)| {
            let y = n - 1.0 - i as f64;
            ErrorBar::new_horizontal(y, r.lo, r.delta, r.hi, BLUE.filled(), 8)
        }))
        .map_err(err)?;
    chart
        .draw_series(rows.iter().enumerate().map(|(i, r)| {
            let y = n - 1.0 - i as f64;
            EmptyElement::at((-lim, y))
                + Text::new(
                    format!(
                        "{}  Δ {:+.1} [{:+.1}, {:+.1}], Holm p {:.3}",
                        r.label, r.delta, r.lo, r.hi, r.p_holm
                    ),
                    (6, -18),
                    ("sans-serif", 13).into_font(),
                )
        }))
        .map_err(err)?;
    Ok(())
}

/// One line of the size-sweep plot: (size, accuracy %, evidence hit %).
type SweepLine = (String, Vec<(f64, f64, Option<f64>)>);

fn draw_sweep<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    lines: &[SweepLine],
) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let panels = root.split_evenly((1, 2));
    let xs: Vec<f64> = lines.iter().flat_map(|l| l.1.iter().map(|p| p.0)).collect();
    let (xmin, xmax) = (
        xs.iter().copied().fold(f64::INFINITY, f64::min),
        xs.iter().copied().fold(0.0, f64::max),
    );
    for (panel, (what, pick)) in panels
        .iter()
        .zip([("accuracy (%)", 0usize), ("recall@k (%)", 1usize)])
    {
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{title}: {what}"), ("sans-serif", 18))
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d((xmin * 0.8..xmax * 1.25).log_scale(), 0.0..100.0)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("chunk size (log scale)")
            .y_desc(what)
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(err)?;
        let mut drawn = 0;
        for (i, (label, pts)) in lines.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let data: Vec<(f64, f64)> = pts
                .iter()
                .filter_map(|p| {
                    if pick == 0 {
                        Some((p.0, p.1))
                    } else {
                        p.2.map(|h| (p.0, h))
                    }
                })
                .collect();
            if data.is_empty() {
                continue;
            }
            chart
                .draw_series(LineSeries::new(data.clone(), color.stroke_width(2)))
                .map_err(err)?
                .label(label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart
                .draw_series(
                    data.iter()
                        .map(|&(x, y)| Circle::new((x, y), 3, color.filled())),
                )
                .map_err(err)?;
            drawn += 1;
        }
        if drawn == 0 {
            let (w, h) = panel.dim_in_pixel();
            panel
                .draw(&Text::new(
                    "no gold evidence in this dataset",
                    (w as i32 / 2 - 120, h as i32 / 2),
                    ("sans-serif", 18).into_font(),
                ))
                .map_err(err)?;
            continue;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

fn draw_hist<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    strategies: &[&ChunkLengths],
) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let (title_area, body) = root.split_vertically(40);
    title_area.titled(title, ("sans-serif", 22)).map_err(err)?;
    let cols = strategies.len().min(3);
    let rows = strategies.len().div_ceil(cols);
    let panels = body.split_evenly((rows, cols));
    for (panel, s) in panels.iter().zip(strategies) {
        let max = s.words.iter().copied().max().unwrap_or(1).max(1);
        let bins = 30usize;
        let width = (max as f64 / bins as f64).max(1.0);
        let mut counts = vec![0usize; bins + 1];
        for &w in &s.words {
            counts[((w as f64 / width) as usize).min(bins)] += 1;
        }
        let top = counts.iter().copied().max().unwrap_or(1) as f64 * 1.1;
        let mut chart = ChartBuilder::on(panel)
            .caption(
                format!("{} ({} chunks)", s.strategy, s.words.len()),
                ("sans-serif", 15),
            )
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d(0.0..(bins as f64 + 1.0) * width, 0.0..top.max(1.0))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("words per chunk")
            .y_desc("chunks")
            .label_style(("sans-serif", 12))
            .axis_desc_style(("sans-serif", 13))
            .draw()
            .map_err(err)?;
        chart
            .draw_series(
                counts
                    .iter()
                    .enumerate()
                    .filter(|(_, &c)| c > 0)
                    .map(|(i, &c)| {
                        let x0 = i as f64 * width;
                        Rectangle::new([(x0, 0.0), (x0 + width, c as f64)], BLUE.mix(0.6).filled())
                    }),
            )
            .map_err(err)?;
    }
    Ok(())
}

/// The numeric `size=` of a swept strategy name like `fixed[overlap=0,size=128]`, and the
/// name with that assignment removed (the curve it belongs to).
fn size_of(name: &str) -> Option<(f64, String)> {
    let (base, rest) = name.split_once('[')?;
    let inner = rest.strip_suffix(']')?;
    let mut size = None;
    let mut others = Vec::new();
    for part in inner.split(',') {
        match part.strip_prefix("size=") {
            Some(v) => size = v.parse::<f64>().ok(),
            None => others.push(part),
        }
    }
    let family = if others.is_empty() {
        base.to_string()
    } else {
        format!("{base}[{}]", others.join(","))
    };
    size.map(|s| (s, family))
}

/// Writes every plot of a run into `dir/plots/` and returns the files written (PNG paths).
///
/// # Errors
/// No usable font (with the fix), or a drawing/I/O failure.
pub fn write_plots(
    dir: &Path,
    cells: &[CellRecord],
    comparisons: &HashMap<String, Comparison>,
    chunk_lengths: &[ChunkLengths],
) -> Result<Vec<String>> {
    ensure_font()?;
    let out = dir.join("plots");
    std::fs::create_dir_all(&out)?;
    let mut written = Vec::new();
    let mut groups: BTreeMap<(String, String), Vec<&CellRecord>> = BTreeMap::new();
    for c in cells {
        groups
            .entry((c.cell.dataset.clone(), c.cell.reader.clone()))
            .or_default()
            .push(c);
    }
    for ((ds, rd), group) in &groups {
        let tag = format!("{}--{}", file_safe(ds), file_safe(rd));
        let pts: Vec<Point> = group
            .iter()
            .filter_map(|c| {
                let s = &c.summary;
                Some(Point {
                    label: format!(
                        "{} · {} · k={}",
                        c.cell.strategy, c.cell.retriever, c.cell.k
                    ),
                    words: s.words_mean,
                    acc: s.accuracy?,
                    lo: s.accuracy_ci_low?,
                    hi: s.accuracy_ci_high?,
                })
            })
            .collect();
        // A retrieval-only group has no accuracy to plot.
        if pts.is_empty() {
            continue;
        }
        let stem = out.join(format!("accuracy-vs-words--{tag}"));
        let title = format!("{ds} · reader {rd}: accuracy vs words retrieved");
        render!(stem.display(), 1100, 720, draw_pareto, &title, &pts);
        written.push(format!("{}.png", stem.display()));

        let rows: Vec<ForestRow> = group
            .iter()
            .filter_map(|c| {
                let m = comparisons.get(&c.id)?;
                let ci = m.paired.delta_ci?;
                Some(ForestRow {
                    label: format!(
                        "{} · {} · k={}",
                        c.cell.strategy, c.cell.retriever, c.cell.k
                    ),
                    delta: m.paired.delta_points,
                    lo: ci.lower,
                    hi: ci.upper,
                    p_holm: m.holm_p,
                })
            })
            .collect();
        if !rows.is_empty() {
            let stem = out.join(format!("forest--{tag}"));
            let title = format!("{ds} · reader {rd}: accuracy delta vs baseline");
            let h = (140 + 44 * rows.len()) as u32;
            render!(stem.display(), 1100, h, draw_forest, &title, &rows);
            written.push(format!("{}.png", stem.display()));
        }

        let mut lines: BTreeMap<String, Vec<(f64, f64, Option<f64>)>> = BTreeMap::new();
        for c in group {
            let (Some((size, family)), Some(acc)) = (size_of(&c.cell.strategy), c.summary.accuracy)
            else {
                continue;
            };
            {
                lines
                    .entry(format!("{family} · {} · k={}", c.cell.retriever, c.cell.k))
                    .or_default()
                    .push((size, acc * 100.0, c.summary.recall.map(|h| h * 100.0)));
            }
        }
        let lines: Vec<SweepLine> = lines
            .into_iter()
            .filter(|(_, v)| v.len() >= 2)
            .map(|(k, mut v)| {
                v.sort_by(|a, b| a.0.total_cmp(&b.0));
                (k, v)
            })
            .collect();
        if !lines.is_empty() {
            let stem = out.join(format!("size-sweep--{tag}"));
            let title = format!("{ds} · {rd}");
            render!(stem.display(), 1400, 620, draw_sweep, &title, &lines);
            written.push(format!("{}.png", stem.display()));
        }
    }
    let mut by_ds: BTreeMap<&str, Vec<&ChunkLengths>> = BTreeMap::new();
    for c in chunk_lengths {
        by_ds.entry(c.dataset.as_str()).or_default().push(c);
    }
    for (ds, list) in by_ds {
        if list.is_empty() {
            bail!("no chunk lengths for {ds}");
        }
        let cols = list.len().min(3) as u32;
        let rows = list.len().div_ceil(3) as u32;
        let stem = out.join(format!("chunk-lengths--{}", file_safe(ds)));
        let title = format!("{ds}: words per chunk");
        render!(
            stem.display(),
            480 * cols,
            40 + 320 * rows,
            draw_hist,
            &title,
            &list
        );
        written.push(format!("{}.png", stem.display()));
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_is_read_from_swept_names() {
        assert_eq!(
            size_of("fixed[overlap=0,size=128]"),
            Some((128.0, "fixed[overlap=0]".to_string()))
        );
        assert_eq!(size_of("fixed[size=64]"), Some((64.0, "fixed".to_string())));
        assert_eq!(size_of("fixed-100"), None);
    }
}

//! Run plots with plotters, each written as PNG and SVG under `plots/`.
//!
//! - `accuracy-vs-words--DATASET--READER`: mean words retrieved (x) against accuracy (y) with
//!   Wilson 95 % error bars, one point per strategy × retriever × k, the Pareto front (no other
//!   cell has fewer words and higher accuracy) joined by a line.
//! - `forest--DATASET--READER`: accuracy delta against the baseline in points with its paired
//!   bootstrap 95 % interval, one row per comparison, and the line Δ = 0.
//! - `size-sweep--DATASET--READER` (and `sweep-PARAM--DATASET--READER` for any other numeric
//!   swept parameter, e.g. Max-Min's `fixed_threshold`): accuracy (with Wilson 95 % bars)
//!   and, when the dataset has gold evidence, recall@k against the parameter — on a log axis
//!   for a geometric sweep such as chunk sizes, else linear — ticked exactly at the swept
//!   values in numeric order, one line per curve (the other parameters, retriever and k).
//! - `chunk-lengths--DATASET`: histogram of words per chunk, one panel per strategy; for a
//!   strategy that makes its passages at query time (EAR windows, sentence windows, oracle
//!   spans), of words per distinct retrieved passage — what its questions read — with the
//!   count of indexed chunks (EAR's parents) in the caption.
//!
//! Each figure is drawn once, as SVG (plotters' SVG backend); the PNG is that SVG rasterised
//! by resvg with the same font, so the two files show the same figure (plotters' own bitmap
//! text placed '.' and '-' at the top of the line). Text needs a TrueType font: DejaVu Sans
//! from the system (Debian `fonts-dejavu-core`) or the file named by `CHUNKBENCH_FONT`.

use anyhow::{anyhow, bail, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use records::{CellRecord, ChunkLengths, Comparison};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::OnceLock;

const FONT_CANDIDATES: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

/// The font file's bytes, registered with plotters (text measurement) once per process.
fn ensure_font() -> Result<&'static [u8]> {
    static FONT: OnceLock<std::result::Result<&'static [u8], String>> = OnceLock::new();
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
        Ok(bytes)
    })
    .clone()
    .map_err(|e| anyhow!(e))
}

/// resvg's options with the plot font as every generic family (the SVG asks for
/// `sans-serif`), built once.
fn raster_options(font: &'static [u8]) -> &'static resvg::usvg::Options<'static> {
    static OPTIONS: OnceLock<resvg::usvg::Options<'static>> = OnceLock::new();
    OPTIONS.get_or_init(|| {
        let mut opt = resvg::usvg::Options::default();
        let db = opt.fontdb_mut();
        db.load_font_data(font.to_vec());
        let family = db
            .faces()
            .next()
            .and_then(|f| f.families.first().map(|(name, _)| name.clone()))
            .unwrap_or_else(|| "DejaVu Sans".to_string());
        db.set_sans_serif_family(family.clone());
        db.set_serif_family(family.clone());
        db.set_monospace_family(family.clone());
        opt.font_family = family;
        opt
    })
}

/// Rasterises an SVG document to PNG bytes at its own size (resvg).
fn svg_to_png(svg: &str, font: &'static [u8]) -> Result<Vec<u8>> {
    let tree = resvg::usvg::Tree::from_str(svg, raster_options(font))
        .map_err(|e| anyhow!("plotting failed: the SVG does not parse: {e}"))?;
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| anyhow!("plotting failed: empty figure"))?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .map_err(|e| anyhow!("plotting failed: PNG encoding: {e}"))
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plotting failed: {e:?}")
}

/// Renders one drawing into `stem.svg` and, rasterised from it, `stem.png` (each written
/// atomically).
macro_rules! render {
    ($font:expr, $stem:expr, $w:expr, $h:expr, $draw:ident, $($arg:expr),*) => {{
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, ($w, $h)).into_drawing_area();
            $draw(&root, $($arg),*)?;
            root.present().map_err(err)?;
        }
        datasets::io::write_atomic(Path::new(&format!("{}.svg", $stem)), svg.as_bytes())?;
        datasets::io::write_atomic(
            Path::new(&format!("{}.png", $stem)),
            &svg_to_png(&svg, $font)?,
        )?;
    }};
}

/// A name as part of a file name: kept when it is all ASCII letters, digits, `-` and `_`;
/// otherwise every other character becomes `_` and the first 8 hex digits of the name's
/// sha256 are appended (`a.b` → `a_b-1d9e3ec4`), so two names never share a plot file (`a.b`
/// and `a_b` would).
fn file_safe(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if !s.is_empty() && s.chars().all(safe) {
        return s.to_string();
    }
    let mapped: String = s.chars().map(|c| if safe(c) { c } else { '_' }).collect();
    format!("{mapped}-{}", &datasets::io::sha256_hex(s.as_bytes())[..8])
}

/// An axis tick label: integers without a decimal part (`500`, not `500.0`), other values
/// with the fewest decimals (up to 3) that show them.
fn tick(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        return format!("{}", v.round() as i64);
    }
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Width in pixels of `text` at `size` px in the plot font, as the backend lays it out
/// (0.6 em per character where the font cannot measure it).
fn text_width<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, text: &str, size: u32) -> f64 {
    area.estimate_text_size(text, &TextStyle::from(("sans-serif", size).into_font()))
        .map_or(text.chars().count() as f64 * size as f64 * 0.6, |(w, _)| {
            w as f64
        })
}

/// Pixel rectangle `(x0, y0, x1, y1)`.
type Rect = (f64, f64, f64, f64);

fn overlap(a: Rect, b: Rect) -> f64 {
    let w = (a.2.min(b.2) - a.0.max(b.0)).max(0.0);
    let h = (a.3.min(b.3) - a.1.max(b.1)).max(0.0);
    w * h
}

/// Offsets (from each anchor, in pixels) for labels of the given sizes `(w, h)` at pixel
/// `anchors`, chosen greedily in anchor order among eight positions around the anchor (right
/// and left, above and below, near and far) to overlap no earlier label, no marker, none of
/// the `obstacles` (error bars) and no edge of `bounds`; where every position collides, the
/// one with the least overlap.
fn place_labels(
    anchors: &[(f64, f64)],
    sizes: &[(f64, f64)],
    obstacles: &[Rect],
    bounds: Rect,
) -> Vec<(i32, i32)> {
    let markers: Vec<Rect> = anchors
        .iter()
        .map(|&(x, y)| (x - 5.0, y - 5.0, x + 5.0, y + 5.0))
        .chain(obstacles.iter().copied())
        .collect();
    let mut placed: Vec<Rect> = Vec::new();
    let mut out = Vec::new();
    for (&(x, y), &(w, h)) in anchors.iter().zip(sizes) {
        let candidates = [
            (7.0, -h - 3.0),
            (7.0, 3.0),
            (-w - 7.0, -h - 3.0),
            (-w - 7.0, 3.0),
            (9.0, -h / 2.0),
            (-w - 9.0, -h / 2.0),
            (7.0, -2.0 * h - 6.0),
            (7.0, h + 6.0),
            (-w - 7.0, -2.0 * h - 6.0),
            (-w - 7.0, h + 6.0),
            (7.0, -3.0 * h - 9.0),
            (7.0, 2.0 * h + 9.0),
            (-w - 7.0, -3.0 * h - 9.0),
            (-w - 7.0, 2.0 * h + 9.0),
        ];
        let mut best = (f64::INFINITY, candidates[0]);
        for &(dx, dy) in &candidates {
            let r = (x + dx, y + dy, x + dx + w, y + dy + h);
            let outside = (bounds.0 - r.0).max(0.0)
                + (r.2 - bounds.2).max(0.0)
                + (bounds.1 - r.1).max(0.0)
                + (r.3 - bounds.3).max(0.0);
            let cost = placed
                .iter()
                .chain(&markers)
                .map(|&o| overlap(r, o))
                .sum::<f64>()
                + outside * h * 4.0;
            if cost < best.0 {
                best = (cost, (dx, dy));
            }
            if cost == 0.0 {
                break;
            }
        }
        let (dx, dy) = best.1;
        placed.push((x + dx, y + dy, x + dx + w, y + dy + h));
        out.push((dx.round() as i32, dy.round() as i32));
    }
    out
}

/// A point of the accuracy-vs-words plot.
struct Point {
    label: String,
    words: f64,
    acc: f64,
    lo: f64,
    hi: f64,
}

/// Cells above which the accuracy-vs-words plot numbers its points and lists the labels in
/// a key beside the chart (32 labels cannot all sit next to their points).
const KEYED_POINTS: usize = 10;

/// Width and height of the accuracy-vs-words figure for `pts`: 1100 × 720, plus a key column
/// (and the height its lines need) when the points are numbered.
fn pareto_size(pts: &[Point]) -> (u32, u32) {
    if pts.len() <= KEYED_POINTS {
        return (1100, 720);
    }
    let longest = pts
        .iter()
        .map(key_line)
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0);
    (
        1100 + (40 + longest * 7).min(900) as u32,
        720.max(110 + 17 * pts.len()) as u32,
    )
}

/// A point's line in the key: its label, accuracy and words.
fn key_line(p: &Point) -> String {
    format!("{}: {:.1} %, {:.0} words", p.label, p.acc * 100.0, p.words)
}

fn draw_pareto<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    pts: &[Point],
    metric: &str,
) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let keyed = pts.len() > KEYED_POINTS;
    let (root, key) = if keyed {
        let (plot, key) = root.split_horizontally(1100);
        (plot, Some(key))
    } else {
        (root.clone(), None)
    };
    let root = &root;
    if let Some(key) = &key {
        key.draw(&Text::new(
            format!("key: point number, cell, {metric}, mean words"),
            (10, 60),
            ("sans-serif", 14).into_font(),
        ))
        .map_err(err)?;
        for (i, p) in pts.iter().enumerate() {
            key.draw(&Text::new(
                format!("{:>2}  {}", i + 1, key_line(p)),
                (10, 84 + 17 * i as i32),
                ("sans-serif", 13).into_font(),
            ))
            .map_err(err)?;
        }
    }
    let label_of = |i: usize| {
        if keyed {
            (i + 1).to_string()
        } else {
            pts[i].label.clone()
        }
    };
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
        .y_desc(format!("{metric} (%)"))
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
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
        .label(format!("Pareto front (fewer words, higher {metric})"))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(2)));
    // The front's cells ringed, so a front of one cell shows too.
    chart
        .draw_series(
            front
                .iter()
                .map(|&(x, y)| Circle::new((x, y), 8, RED.stroke_width(2))),
        )
        .map_err(err)?;
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
        .label(if metric == "accuracy" {
            "cell: accuracy with Wilson 95 % interval".to_string()
        } else {
            format!("cell: {metric} with bootstrap 95 % interval")
        })
        .legend(|(x, y)| Circle::new((x + 10, y), 4, BLUE.filled()));
    // Labels placed to overlap neither each other nor the markers, leftmost points first.
    let mut order: Vec<usize> = (0..pts.len()).collect();
    order.sort_by(|&a, &b| pts[a].words.total_cmp(&pts[b].words));
    let anchors: Vec<(f64, f64)> = order
        .iter()
        .map(|&i| {
            let (x, y) = chart.backend_coord(&(pts[i].words, pts[i].acc * 100.0));
            (x as f64, y as f64)
        })
        .collect();
    let sizes: Vec<(f64, f64)> = order
        .iter()
        .map(|&i| (text_width(root, &label_of(i), 13), 13.0))
        .collect();
    let (xr, yr) = chart.plotting_area().get_pixel_range();
    let bounds = (
        xr.start as f64,
        yr.start as f64,
        xr.end as f64,
        yr.end as f64,
    );
    // The error bars, as thin rectangles a label should not cross.
    let bars: Vec<Rect> = pts
        .iter()
        .map(|p| {
            let (x, top) = chart.backend_coord(&(p.words, p.hi * 100.0));
            let (_, bottom) = chart.backend_coord(&(p.words, p.lo * 100.0));
            (x as f64 - 4.0, top as f64, x as f64 + 4.0, bottom as f64)
        })
        .collect();
    let offsets = place_labels(&anchors, &sizes, &bars, bounds);
    chart
        .draw_series(
            order
                .iter()
                .zip(&offsets)
                .zip(&sizes)
                .map(|((&i, &off), &(w, h))| {
                    let p = &pts[i];
                    // A label set apart from its point gets a leader line to its nearest edge.
                    let near = (
                        0.0f64.clamp(off.0 as f64, off.0 as f64 + w),
                        0.0f64.clamp(off.1 as f64, off.1 as f64 + h),
                    );
                    let leader = if near.0.hypot(near.1) > 12.0 {
                        vec![(0, 0), (near.0.round() as i32, near.1.round() as i32)]
                    } else {
                        Vec::new()
                    };
                    EmptyElement::at((p.words, p.acc * 100.0))
                        + PathElement::new(leader, BLACK.mix(0.45).stroke_width(1))
                        + Circle::new((0, 0), 4, BLUE.filled())
                        + Text::new(label_of(i), off, ("sans-serif", 13).into_font())
                }),
        )
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
    /// Holm p when accuracy is the primary metric; else the unadjusted McNemar p is shown.
    p_holm: Option<f64>,
    p: f64,
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
        .x_desc("accuracy delta vs baseline (points), the verdict's interval")
        .x_label_formatter(&|v| tick(*v))
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
                    match r.p_holm {
                        Some(h) => format!(
                            "{}  Δ {:+.1} [{:+.1}, {:+.1}], Holm p {h:.3}",
                            r.label, r.delta, r.lo, r.hi
                        ),
                        None => format!(
                            "{}  Δ {:+.1} [{:+.1}, {:+.1}], p {:.3} (exploratory)",
                            r.label, r.delta, r.lo, r.hi, r.p
                        ),
                    },
                    (6, -18),
                    ("sans-serif", 13).into_font(),
                )
        }))
        .map_err(err)?;
    Ok(())
}

/// A point of a sweep line: the swept parameter's value, accuracy % with its Wilson 95 %
/// interval, and recall@k % where the dataset has gold evidence.
#[derive(Clone, Copy)]
struct SweepPoint {
    size: f64,
    acc: f64,
    lo: f64,
    hi: f64,
    recall: Option<f64>,
}

/// One line of the size-sweep plot: its label and its points in increasing size.
type SweepLine = (String, Vec<SweepPoint>);

/// The lines of a sweep or budget plot: those with at least two points, each sorted by x,
/// in natural order of their labels.
fn sweep_lines(lines: BTreeMap<String, Vec<SweepPoint>>) -> Vec<SweepLine> {
    let mut out: Vec<SweepLine> = lines
        .into_iter()
        .filter(|(_, v)| v.len() >= 2)
        .map(|(k, mut v)| {
            v.sort_by(|a, b| a.size.total_cmp(&b.size));
            (k, v)
        })
        .collect();
    out.sort_by_cached_key(|l| crate::fmt::natural_key(&l.0));
    out
}

/// True when some point of the sweep has a recall@k (its dataset has gold evidence).
fn has_recall(lines: &[SweepLine]) -> bool {
    lines.iter().any(|l| l.1.iter().any(|p| p.recall.is_some()))
}

/// Tick label of a log2 size axis at `v` = log2(size): the size where `v` is one of the swept
/// sizes' logarithms (`sizes`), else nothing (so labels never crowd).
fn size_tick(v: f64, sizes: &[f64]) -> String {
    match sizes.iter().find(|s| (s.log2() - v).abs() < 1e-6) {
        Some(s) => tick(*s),
        None => String::new(),
    }
}

/// The x axis of a sweep plot: the swept parameter, on a log2 scale for a geometric sweep
/// (every value positive, the largest at least 4 times the smallest: chunk sizes 64…1024),
/// else linear (thresholds 0.3, 0.45, 0.6).
struct SweepAxis {
    /// The parameter's name (`size`, `fixed_threshold`, ...).
    param: String,
    log: bool,
}

impl SweepAxis {
    fn of(param: &str, lines: &[SweepLine]) -> SweepAxis {
        let vals = lines.iter().flat_map(|l| l.1.iter().map(|p| p.size));
        let (lo, hi) = vals.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
        SweepAxis {
            param: param.to_string(),
            log: lo > 0.0 && hi >= 4.0 * lo,
        }
    }

    /// Where a value sits on the axis.
    fn x(&self, v: f64) -> f64 {
        if self.log {
            v.log2()
        } else {
            v
        }
    }

    fn desc(&self) -> String {
        let name = if self.param == "size" {
            "chunk size"
        } else {
            self.param.as_str()
        };
        if self.log {
            format!("{name} (log scale)")
        } else {
            name.to_string()
        }
    }
}

fn draw_sweep<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    lines: &[SweepLine],
    axis: &SweepAxis,
    metric: &str,
) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let has_recall = has_recall(lines);
    // No empty panel: recall@k only when some cell has gold evidence.
    let panels = root.split_evenly((1, if has_recall { 2 } else { 1 }));
    let mut sizes: Vec<f64> = lines
        .iter()
        .flat_map(|l| l.1.iter().map(|p| p.size))
        .collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    let (lmin, lmax) = (
        axis.x(sizes.first().copied().unwrap_or(1.0)),
        axis.x(sizes.last().copied().unwrap_or(2.0)),
    );
    let pad = if axis.log {
        ((lmax - lmin) * 0.08).max(0.25)
    } else {
        ((lmax - lmin) * 0.08).max(1e-3)
    };
    let first = format!("{metric} (%)");
    for (panel, (what, recall)) in panels
        .iter()
        .zip([(first.as_str(), false), ("recall@k (%)", true)])
    {
        // The y range fits the values and their intervals, with room above them for the
        // legend (one row per line).
        let (vlo, vhi) = lines
            .iter()
            .flat_map(|l| &l.1)
            .filter_map(|p| {
                if recall {
                    p.recall.map(|r| (r, r))
                } else {
                    Some((p.lo, p.hi))
                }
            })
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (lo, hi)| {
                (a.min(lo), b.max(hi))
            });
        let (vlo, vhi) = if vlo.is_finite() {
            (vlo, vhi)
        } else {
            (0.0, 100.0)
        };
        // At least 10 points tall, so that a fitted axis does not magnify small differences.
        let span = (vhi - vlo).max(10.0);
        let y0 = (vlo - 0.1 * span).max(0.0);
        let y1 = (vhi + span * (0.15 + 0.09 * lines.len() as f64)).min(100.0);
        // One tick exactly at each swept value.
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{title}: {what}"), ("sans-serif", 18))
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d(lmin - pad..lmax + pad, y0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_labels(0)
            .x_desc(axis.desc())
            .y_desc(what)
            .y_label_formatter(&|v| tick(*v))
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(err)?;
        // The x ticks by hand: exactly one at each swept size, a grid line through it.
        for &size in &sizes {
            let x = axis.x(size);
            chart
                .draw_series(LineSeries::new(
                    vec![(x, y0), (x, y1)],
                    BLACK.mix(0.12).stroke_width(1),
                ))
                .map_err(err)?;
            let (px, py) = chart.backend_coord(&(x, y0));
            let label = if axis.log {
                size_tick(x, &sizes)
            } else {
                tick(size)
            };
            let w = text_width(root, &label, 14);
            root.draw(&PathElement::new(vec![(px, py), (px, py + 5)], BLACK))
                .map_err(err)?;
            root.draw(&Text::new(
                label,
                (px - (w / 2.0) as i32, py + 8),
                ("sans-serif", 14).into_font(),
            ))
            .map_err(err)?;
        }
        for (i, (label, pts)) in lines.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let data: Vec<(f64, f64)> = pts
                .iter()
                .filter_map(|p| {
                    let y = if recall { p.recall? } else { p.acc };
                    Some((axis.x(p.size), y))
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
            if !recall {
                chart
                    .draw_series(pts.iter().map(|p| {
                        ErrorBar::new_vertical(axis.x(p.size), p.lo, p.acc, p.hi, color, 6)
                    }))
                    .map_err(err)?;
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
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
        // What a question of this strategy reads: its chunks, or the passages made at query
        // time (EAR windows) when the run had them.
        let (words, caption, what) = match &s.retrieved_words {
            Some(w) if s.passages_at_query_time => (
                w,
                if s.words.is_empty() {
                    format!(
                        "{}: {} retrieved passages (nothing indexed)",
                        s.strategy,
                        w.len()
                    )
                } else {
                    format!(
                        "{}: {} retrieved passages ({} indexed chunks)",
                        s.strategy,
                        w.len(),
                        s.words.len()
                    )
                },
                "words per retrieved passage",
            ),
            _ => (
                &s.words,
                format!("{} ({} chunks)", s.strategy, s.words.len()),
                "words per chunk",
            ),
        };
        let max = words.iter().copied().max().unwrap_or(1).max(1);
        let bins = 30usize;
        let width = (max as f64 / bins as f64).max(1.0);
        let mut counts = vec![0usize; bins + 1];
        for &w in words {
            counts[((w as f64 / width) as usize).min(bins)] += 1;
        }
        let top = counts.iter().copied().max().unwrap_or(1) as f64 * 1.1;
        let mut chart = ChartBuilder::on(panel)
            .caption(caption, ("sans-serif", 14))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d(0.0..(bins as f64 + 1.0) * width, 0.0..top.max(1.0))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(what)
            .y_desc(if what == "words per chunk" {
                "chunks"
            } else {
                "passages"
            })
            .x_labels(6)
            .y_labels(6)
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
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

/// The run's primary metric per cell, for the plots of cells without a reader: its label
/// and, by cell id, its mean with a 95 % interval (0–1 scale; [`crate::report::primary_points`]).
#[derive(Debug, Clone, Default)]
pub struct PrimaryPoints {
    /// The metric's name (`recall`, `ndcg`, …; plot file names).
    pub name: String,
    /// The metric's label (`recall@k`, `nDCG@k`, …).
    pub label: String,
    /// By cell id: (mean, lower, upper).
    pub by_cell: HashMap<String, (f64, f64, f64)>,
}

/// A cell's plotted value (0–1) with its 95 % interval: (value, lower, upper).
type ValueOf<'a> = dyn Fn(&CellRecord) -> Option<(f64, f64, f64)> + 'a;

/// The budget curves of one (dataset, reader) group: per budget unit, one line per strategy
/// × retriever (× `whole` fill), x = the budget size, y = the plotted value with its interval.
fn budget_plots(
    font: &'static [u8],
    out: &Path,
    tag: &str,
    (ds, rd): (&str, &str),
    group: &[&CellRecord],
    value_of: &ValueOf<'_>,
    metric: &str,
) -> Result<Vec<String>> {
    let mut by_unit: BTreeMap<&'static str, BTreeMap<String, Vec<SweepPoint>>> = BTreeMap::new();
    for c in group {
        let (Some(b), Some((v, lo, hi))) = (c.cell.budget, value_of(c)) else {
            continue;
        };
        let fill = if b.fill == records::Fill::Whole {
            " · whole"
        } else {
            ""
        };
        by_unit
            .entry(b.unit.as_str())
            .or_default()
            .entry(format!("{} · {}{fill}", c.cell.strategy, c.cell.retriever))
            .or_default()
            .push(SweepPoint {
                size: b.size as f64,
                acc: 100.0 * v,
                lo: 100.0 * lo,
                hi: 100.0 * hi,
                recall: None,
            });
    }
    let mut written = Vec::new();
    for (unit, lines) in by_unit {
        let lines = sweep_lines(lines);
        if lines.is_empty() {
            continue;
        }
        let axis = SweepAxis::of(&format!("budget ({unit})"), &lines);
        let stem = out.join(format!("budget-{unit}--{tag}"));
        let title = format!("{ds} · {rd}: at equal budgets");
        let h = 620 + 18 * lines.len().saturating_sub(4) as u32;
        render!(
            font,
            stem.display(),
            760,
            h,
            draw_sweep,
            &title,
            &lines,
            &axis,
            metric
        );
        written.push(format!("{}.png", stem.display()));
    }
    Ok(written)
}

/// One swept numeric field of a strategy variant (`fixed[overlap=0,size=128]`: `size` = 128
/// in family `fixed[overlap=0]`), from the run's typed config (`evaluator`'s
/// `RunConfig::sweep_points`).
#[derive(Debug, Clone, PartialEq)]
pub struct SweptValue {
    /// The field (`size`): the x axis of its sweep plot.
    pub param: String,
    /// Its value.
    pub value: f64,
    /// The variant's name with this field left out: the curve the point belongs to.
    pub family: String,
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
    sweeps: &BTreeMap<String, Vec<SweptValue>>,
    primary: Option<&PrimaryPoints>,
) -> Result<Vec<String>> {
    let font = ensure_font()?;
    let out = dir.join("plots");
    std::fs::create_dir_all(&out)?;
    let mut written = Vec::new();
    let mut groups = records::by_dataset_reader(cells);
    // Rows and panels in natural order: `size=64` before `size=128`.
    for group in groups.values_mut() {
        group.sort_by_cached_key(|c| {
            (
                crate::fmt::natural_key(&c.cell.strategy),
                crate::fmt::natural_key(&c.cell.retriever),
                c.cell.k,
                c.cell.budget,
            )
        });
    }
    // A cell's plotted value (0–1) with its 95 % interval: accuracy with Wilson's interval
    // where the cell was read, else the run's primary metric with its bootstrap interval.
    let value_of = |c: &CellRecord| -> Option<(f64, f64, f64)> {
        let s = &c.summary;
        match (s.accuracy, s.accuracy_ci_low, s.accuracy_ci_high) {
            (Some(a), Some(lo), Some(hi)) => Some((a, lo, hi)),
            _ => primary.and_then(|p| p.by_cell.get(&c.id).copied()),
        }
    };
    let metric_of = |group: &[&CellRecord]| -> String {
        if group.iter().any(|c| c.summary.accuracy.is_some()) {
            "accuracy".to_string()
        } else {
            primary.map_or("accuracy".to_string(), |p| p.label.clone())
        }
    };
    for ((ds, rd), group) in &groups {
        let tag = format!("{}--{}", file_safe(ds), file_safe(rd));
        let pts: Vec<Point> = group
            .iter()
            .filter_map(|c| {
                let s = &c.summary;
                Some(Point {
                    label: format!(
                        "{} · {} · {}",
                        c.cell.strategy,
                        c.cell.retriever,
                        c.cell.depth_tag()
                    ),
                    words: s.words_mean,
                    acc: value_of(c)?.0,
                    lo: value_of(c)?.1,
                    hi: value_of(c)?.2,
                })
            })
            .collect();
        let metric = metric_of(group);
        if !pts.is_empty() {
            let stem = match primary {
                Some(p) if metric != "accuracy" => {
                    out.join(format!("{}-vs-words--{tag}", file_safe(&p.name)))
                }
                _ => out.join(format!("accuracy-vs-words--{tag}")),
            };
            let title = format!("{ds} · reader {rd}: {metric} vs words retrieved");
            let (w, h) = pareto_size(&pts);
            render!(
                font,
                stem.display(),
                w,
                h,
                draw_pareto,
                &title,
                &pts,
                &metric
            );
            written.push(format!("{}.png", stem.display()));
        }

        let rows: Vec<ForestRow> = group
            .iter()
            .filter_map(|c| {
                let m = comparisons.get(&c.id)?;
                let ci = m.paired.delta_ci?;
                Some(ForestRow {
                    label: format!(
                        "{} · {} · {}",
                        c.cell.strategy,
                        c.cell.retriever,
                        c.cell.depth_tag()
                    ),
                    delta: m.paired.delta_points,
                    lo: ci.lower,
                    hi: ci.upper,
                    p_holm: m.holm_p,
                    p: m.paired.mcnemar.exact_p,
                })
            })
            .collect();
        if !rows.is_empty() {
            let stem = out.join(format!("forest--{tag}"));
            let title = format!("{ds} · reader {rd}: accuracy delta vs baseline");
            let h = (140 + 44 * rows.len()) as u32;
            render!(font, stem.display(), 1100, h, draw_forest, &title, &rows);
            written.push(format!("{}.png", stem.display()));
        }

        // One sweep plot per swept numeric parameter (x), one line per curve (the other
        // parameters, retriever and k fixed) with at least two points.
        let mut by_param: BTreeMap<String, BTreeMap<String, Vec<SweepPoint>>> = BTreeMap::new();
        for c in group {
            let s = &c.summary;
            let Some((acc, lo, hi)) = value_of(c) else {
                continue;
            };
            let recall = if s.accuracy.is_some() {
                s.metrics.get("recall").map(|h| h * 100.0)
            } else {
                None
            };
            for sv in sweeps.get(&c.cell.strategy).into_iter().flatten() {
                by_param
                    .entry(sv.param.clone())
                    .or_default()
                    .entry(format!(
                        "{} · {} · {}",
                        sv.family,
                        c.cell.retriever,
                        c.cell.depth_tag()
                    ))
                    .or_default()
                    .push(SweepPoint {
                        size: sv.value,
                        acc: acc * 100.0,
                        lo: lo * 100.0,
                        hi: hi * 100.0,
                        recall,
                    });
            }
        }
        for (param, lines) in by_param {
            let lines = sweep_lines(lines);
            if lines.is_empty() {
                continue;
            }
            let axis = SweepAxis::of(&param, &lines);
            let stem = if param == "size" {
                out.join(format!("size-sweep--{tag}"))
            } else {
                out.join(format!("sweep-{}--{tag}", file_safe(&param)))
            };
            let title = format!("{ds} · {rd}");
            let w = if has_recall(&lines) { 1400 } else { 760 };
            let h = 620 + 18 * lines.len().saturating_sub(4) as u32;
            render!(
                font,
                stem.display(),
                w,
                h,
                draw_sweep,
                &title,
                &lines,
                &axis,
                &metric
            );
            written.push(format!("{}.png", stem.display()));
        }
        written.extend(budget_plots(
            font,
            &out,
            &tag,
            (ds, rd),
            group,
            &value_of,
            &metric,
        )?);
    }
    let mut by_ds: BTreeMap<&str, Vec<&ChunkLengths>> = BTreeMap::new();
    for c in chunk_lengths {
        by_ds.entry(c.dataset.as_str()).or_default().push(c);
    }
    for (ds, mut list) in by_ds {
        list.sort_by_cached_key(|l| crate::fmt::natural_key(&l.strategy));
        if list.is_empty() {
            bail!("no chunk lengths for {ds}");
        }
        let cols = list.len().min(3) as u32;
        let rows = list.len().div_ceil(3) as u32;
        let stem = out.join(format!("chunk-lengths--{}", file_safe(ds)));
        let title = if list
            .iter()
            .any(|l| l.passages_at_query_time && l.retrieved_words.is_some())
        {
            format!("{ds}: words per chunk, or per retrieved passage where passages are made at query time")
        } else {
            format!("{ds}: words per chunk")
        };
        render!(
            font,
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

    /// Issue 36, "collision-free where it becomes a file": `a.b` and `a_b` once shared a plot.
    #[test]
    fn names_map_to_distinct_file_names() {
        assert_eq!(file_safe("openstax-mmlu-153"), "openstax-mmlu-153");
        let names = ["a.b", "a_b", "a/b", "a b", "", "_", "../x", "é"];
        let files: std::collections::BTreeSet<String> =
            names.iter().map(|n| file_safe(n)).collect();
        assert_eq!(files.len(), names.len(), "{files:?}");
        assert!(files.iter().all(|f| !f.is_empty()
            && f.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')));
    }

    #[test]
    fn ticks_are_clean_and_labels_do_not_collide() {
        assert_eq!(tick(500.0), "500");
        assert_eq!(tick(-2.0), "-2");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(12.5000001), "12.5");
        let sizes = [64.0, 128.0, 1024.0];
        assert_eq!(size_tick(7.0, &sizes), "128");
        assert_eq!(size_tick(7.5, &sizes), "");
        // Two points 2 px apart (`ear` and `ear-summary`): their labels end up disjoint.
        let anchors = [(100.0, 100.0), (102.0, 101.0), (300.0, 100.0)];
        let sizes = [(60.0, 13.0), (110.0, 13.0), (60.0, 13.0)];
        let off = place_labels(&anchors, &sizes, &[], (0.0, 0.0, 1000.0, 1000.0));
        let rect = |i: usize| {
            let (x, y) = anchors[i];
            let (dx, dy) = (off[i].0 as f64, off[i].1 as f64);
            (x + dx, y + dy, x + dx + sizes[i].0, y + dy + sizes[i].1)
        };
        assert_eq!(overlap(rect(0), rect(1)), 0.0, "{off:?}");
        assert_eq!(off[2], (7, -16), "a lone point keeps the default position");
        // Near the right edge the label goes to the left of its point.
        let off = place_labels(
            &[(990.0, 500.0)],
            &[(80.0, 13.0)],
            &[],
            (0.0, 0.0, 1000.0, 1000.0),
        );
        assert!(off[0].0 < 0, "{off:?}");
        // A neighbour's error bar just right of a point pushes its label to the left.
        let bar = (110.0, 0.0, 118.0, 1000.0);
        let off = place_labels(
            &[(100.0, 500.0)],
            &[(80.0, 13.0)],
            &[bar],
            (0.0, 0.0, 1000.0, 1000.0),
        );
        let r = (100.0 + off[0].0 as f64, 100.0 + off[0].0 as f64 + 80.0);
        assert!(r.1 <= 110.0 || r.0 >= 118.0, "{off:?}");
    }
}

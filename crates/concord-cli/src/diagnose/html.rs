//! `concord diagnose --html FILE`: the diagnosis as one offline page (inline CSS and SVG, no
//! scripts, fonts or links): the pause timeline coloured by verdict, heap occupancy before and
//! after each collection, the pause histogram, and the findings with their evidence.
//!
//! The page is drawn from a [`Page`], which holds only bounded summaries of the log (the
//! timeline and heap series are thinned to at most a few thousand points while the log is
//! read), so a page of a multi-GB log is as small as one of a short log.

/// How a pause is coloured on the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mark {
    /// No finding.
    Ok,
    /// A finding other than an OS stall (long time to safepoint, serial, failure, explicit,
    /// heap too small).
    Finding,
    /// An OS stall (off-CPU, outside the collection, kernel): the most severe.
    Stall,
}

/// One pause on the timeline: the longest pause of its slot of the log when thinned.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimelinePoint {
    /// Where on the x axis: uptime in seconds, or the pause's number when the log has no time.
    pub x: f64,
    /// The pause's length, ms.
    pub ms: f64,
    /// Its colour.
    pub mark: Mark,
}

/// The heap around one collection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeapPoint {
    /// As [`TimelinePoint::x`].
    pub x: f64,
    /// Occupied before the collection, KiB.
    pub before_kb: u64,
    /// Occupied after it, KiB.
    pub after_kb: u64,
    /// The heap's capacity after it, KiB.
    pub capacity_kb: u64,
}

/// One bar of the pause histogram: pauses in `[lo_ms, hi_ms)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HistogramBin {
    /// Lower bound, ms.
    pub lo_ms: f64,
    /// Upper bound, ms.
    pub hi_ms: f64,
    /// Pauses in the bin.
    pub count: u64,
}

/// One finding: a kind of problem, how often, where, and what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct FindingRow {
    /// Stable name, e.g. `off-cpu`, `long-ttsp`, `explicit-gc`.
    pub kind: String,
    /// Whether it is one of 002's OS stalls (drawn in the stall colour).
    pub os_stall: bool,
    /// Pauses it applies to.
    pub count: u64,
    /// One sentence on what it is, with the threshold.
    pub summary: String,
    /// Where the evidence is, `file:line`, the first few.
    pub evidence: Vec<String>,
    /// What to do about it.
    pub advice: String,
}

/// Everything the page shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The log's path as given (several for a rotated set).
    pub log: String,
    /// The format it was read as, in words.
    pub format: String,
    /// Label and value rows of the summary table (pauses, total, longest, counts over 250 ms …,
    /// GC threads, lines not recognized).
    pub summary: Vec<(String, String)>,
    /// The x axis's label: `uptime (s)` or `pause number`.
    pub x_label: String,
    /// The pause timeline, in x order.
    pub timeline: Vec<TimelinePoint>,
    /// Heap around collections, in x order (empty when the log gives no heap sizes).
    pub heap: Vec<HeapPoint>,
    /// The pause histogram, bins in order (logarithmic widths).
    pub histogram: Vec<HistogramBin>,
    /// The findings, most severe first (empty: no finding).
    pub findings: Vec<FindingRow>,
    /// Advice lines as the text output prints them.
    pub advice: Vec<String>,
}

use std::fmt::Write as _;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::report::page::{esc, figure, swatch, CSS};
use crate::report::plots::{
    self, axis_number, category_chart, framed, label_chars, top, Area, Axes, DrawResult, FONT,
    GRID, INK, LEGEND_W,
};

/// A pause without finding: the palette's blue.
const OK_COLOR: RGBColor = plots::PALETTE[0];
/// An OS stall: the palette's red.
const STALL_COLOR: RGBColor = plots::PALETTE[2];
/// Another finding: the palette's orange.
const FINDING_COLOR: RGBColor = plots::PALETTE[1];
/// Heap occupied before a collection.
const BEFORE_COLOR: RGBColor = plots::PALETTE[6];
/// Heap occupied after a collection.
const AFTER_COLOR: RGBColor = plots::PALETTE[0];
/// The heap's capacity.
const CAPACITY_COLOR: RGBColor = RGBColor(110, 110, 110);

/// Width and height of the timeline and heap pictures, pixels.
const WIDE: (u32, u32) = (1000, 420);

/// With more heap points than this the line from before to after each collection is left out
/// (the dots alone show the sawtooth, and the page stays small).
const MAX_HEAP_SEGMENTS: usize = 600;

impl Mark {
    /// Its colour on the timeline and in the findings table.
    pub fn color(self) -> RGBColor {
        match self {
            Mark::Ok => OK_COLOR,
            Mark::Stall => STALL_COLOR,
            Mark::Finding => FINDING_COLOR,
        }
    }

    /// Its name in the legend.
    pub fn label(self) -> &'static str {
        match self {
            Mark::Ok => "no finding",
            Mark::Stall => "OS stall",
            Mark::Finding => "other finding",
        }
    }
}

/// The whole page.
pub fn render(page: &Page) -> anyhow::Result<String> {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>GC log diagnosis: {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n",
        esc(&page.log)
    );
    header(&mut h, page);
    let _ = writeln!(
        h,
        "<nav><a href=\"#summary\">Summary</a><a href=\"#pause-timeline\">Pause timeline</a>\
         <a href=\"#heap-occupancy\">Heap occupancy</a><a href=\"#pause-histogram\">Pause histogram</a>\
         <a href=\"#findings\">Findings</a><a href=\"#advice\">Advice</a></nav>"
    );
    summary(&mut h, page);
    timeline_section(&mut h, page)?;
    heap_section(&mut h, page)?;
    histogram_section(&mut h, page)?;
    findings_section(&mut h, page);
    advice_section(&mut h, page);
    let _ = writeln!(
        h,
        "<footer>Written by <code>concord diagnose --html</code> from <code>{}</code>. The verdicts and \
         their thresholds are those of the text output; the timeline and heap series may be \
         thinned to the longest pause of each stretch of a long log.</footer>\n</main>\n</body>\n</html>",
        esc(&page.log)
    );
    Ok(h)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn header(h: &mut String, page: &Page) {
    let _ = writeln!(h, "<header>\n<h1>GC log diagnosis</h1>");
    let kinds = page.findings.len();
    let stalls = page.findings.iter().filter(|f| f.os_stall).count();
    let verdict = if kinds == 0 {
        "<span class=\"ok\">No finding.</span>".to_string()
    } else if stalls > 0 {
        format!(
            "{kinds} kind{} of finding, <span class=\"bad\">{stalls} of them OS stall{}</span>.",
            plural(kinds),
            plural(stalls)
        )
    } else {
        format!("{kinds} kind{} of finding, no OS stall.", plural(kinds))
    };
    let _ = writeln!(h, "<p class=\"sub\">{verdict}</p>");
    let _ = writeln!(
        h,
        "<table class=\"meta\">\n<tr><td>log</td><td><code>{}</code></td></tr>\n\
         <tr><td>format</td><td>{}</td></tr>\n</table>\n</header>",
        esc(&page.log),
        esc(&page.format)
    );
}

fn summary(h: &mut String, page: &Page) {
    let _ = writeln!(h, "<h2 id=\"summary\">Summary</h2>");
    if page.summary.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"caption\">No summary: the log has no pause.</p>"
        );
        return;
    }
    let _ = writeln!(h, "<table class=\"data\">");
    for (label, value) in &page.summary {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td></tr>",
            esc(label),
            esc(value)
        );
    }
    let _ = writeln!(h, "</table>");
}

/// A note in place of a picture that has nothing to draw.
fn note(h: &mut String, what: &str) {
    let _ = writeln!(h, "<p class=\"empty\">{what}</p>");
}

/// The timeline's points that can be drawn: finite, not negative.
fn drawable(points: &[TimelinePoint]) -> Vec<TimelinePoint> {
    points
        .iter()
        .filter(|p| p.x.is_finite() && p.ms.is_finite() && p.ms >= 0.0)
        .copied()
        .collect()
}

/// Whether pauses from `lo` to `hi` ms span more than two decades (then the axis is
/// logarithmic).
fn wants_log(points: &[TimelinePoint]) -> bool {
    let max = points.iter().map(|p| p.ms).fold(0.0, f64::max);
    let min = points
        .iter()
        .map(|p| p.ms)
        .filter(|&v| v > 0.0)
        .fold(f64::INFINITY, f64::min);
    min.is_finite() && max / min > 100.0
}

fn timeline_section(h: &mut String, page: &Page) -> anyhow::Result<()> {
    let _ = writeln!(h, "<h2 id=\"pause-timeline\">Pause timeline</h2>");
    let points = drawable(&page.timeline);
    if points.is_empty() {
        note(h, "No pause to draw: the log has no pause with a length.");
        return Ok(());
    }
    let svg = timeline(&points, &page.x_label)?;
    let count = |m: Mark| points.iter().filter(|p| p.mark == m).count();
    let scale = if wants_log(&points) {
        "The pause axis is logarithmic (the pauses span more than two decades)"
    } else {
        "The pause axis is linear"
    };
    figure(
        h,
        &svg,
        &format!(
            "{} dot{} against {}: one per pause, or the longest pause of its stretch when the log \
             has more than the page draws. Red: an OS stall ({}); orange: another finding \
             ({}); blue: no finding ({}). {scale}. Red dots are the pauses the operating system \
             caused, not the collector: see the findings below for which kind.",
            points.len(),
            plural(points.len()),
            esc(&page.x_label),
            count(Mark::Stall),
            count(Mark::Finding),
            count(Mark::Ok),
        ),
    );
    Ok(())
}

/// The x range of `xs`: a little wider than the data, from 0 when it starts near it, a unit
/// either side of a single value.
fn x_range(xs: impl Iterator<Item = f64>) -> (f64, f64) {
    let (min, max) = xs
        .filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
    if !min.is_finite() {
        return (0.0, 1.0);
    }
    let span = max - min;
    let pad = if span > 0.0 {
        span * 0.02
    } else {
        (min.abs() * 0.05).max(1.0)
    };
    let lo = if min >= 0.0 && min - pad < 0.0 {
        0.0
    } else {
        min - pad
    };
    (lo, max + pad)
}

/// Axis numbers of the log scale: 1, 2 and 5 times a power of ten, the others unlabelled.
fn log_label(v: f64) -> String {
    if v <= 0.0 || !v.is_finite() {
        return String::new();
    }
    let mantissa = v / 10f64.powf(v.log10().floor());
    if [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|m| (mantissa - m).abs() < 0.01)
    {
        if v < 0.01 {
            format!("{v:e}")
        } else {
            axis_number(v)
        }
    } else {
        String::new()
    }
}

type LinearChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The dots of the timeline, no-finding first so that the findings are drawn over them;
/// `floor` is the lowest y (a zero-length pause on a logarithmic axis sits on it).
fn draw_dots<Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, Y>>,
    points: &[TimelinePoint],
    floor: f64,
) -> DrawResult
where
    Y: Ranged<ValueType = f64>,
{
    let radius = if points.len() <= 400 { 3 } else { 2 };
    for mark in [Mark::Ok, Mark::Finding, Mark::Stall] {
        let color = mark.color();
        chart.draw_series(
            points
                .iter()
                .filter(|p| p.mark == mark)
                .map(|p| Circle::new((p.x, p.ms.max(floor)), radius, color.filled())),
        )?;
    }
    Ok(())
}

/// Pause length against `x_label`, one dot per point, coloured by its mark.
pub(crate) fn timeline(points: &[TimelinePoint], x_label: &str) -> anyhow::Result<String> {
    let points = drawable(points);
    let legend: Vec<(String, plots::Mark)> = [Mark::Ok, Mark::Stall, Mark::Finding]
        .iter()
        .map(|&m| {
            let n = points.iter().filter(|p| p.mark == m).count();
            (format!("{} ({n})", m.label()), plots::Mark::Dot(m.color()))
        })
        .collect();
    let (x_lo, x_hi) = x_range(points.iter().map(|p| p.x));
    let max = points.iter().map(|p| p.ms).fold(0.0, f64::max);
    let log = wants_log(&points);
    let (w, hgt) = WIDE;
    framed(w, hgt, "Pause timeline", "verdict", &legend, |plot| {
        if log {
            let min = points
                .iter()
                .map(|p| p.ms)
                .filter(|&v| v > 0.0)
                .fold(f64::INFINITY, f64::min);
            // Powers of ten a hair outside, so that rounding in plotters' key points does not
            // lose the labels at either end.
            let y_lo = 10f64.powf(min.log10().floor()) * 0.999;
            let y_hi = 10f64.powf((max * 1.05).log10().ceil()) * 1.001;
            let mut chart = ChartBuilder::on(plot)
                .margin(8)
                .x_label_area_size(38)
                .y_label_area_size(56)
                .build_cartesian_2d(x_lo..x_hi, (y_lo..y_hi).log_scale())?;
            chart
                .configure_mesh()
                .bold_line_style(GRID)
                .light_line_style(WHITE)
                .x_desc(x_label)
                .y_desc("pause (ms, log scale)")
                .x_label_formatter(&|v| axis_number(*v))
                .y_label_formatter(&|v| log_label(*v))
                .label_style((FONT, 12))
                .axis_desc_style((FONT, 13))
                .draw()?;
            draw_dots(&mut chart, &points, y_lo)
        } else {
            let mut chart = linear_chart(plot, x_lo..x_hi, top(max), x_label, "pause (ms)")?;
            if points.is_empty() {
                nothing(&mut chart, x_lo, x_hi, top(max), "no pause")?;
            }
            draw_dots(&mut chart, &points, 0.0)
        }
    })
}

/// `what` in the middle of an empty chart.
/// A chart of `x` against 0..`y_top` with the page's grid, fonts and axis labels.
fn linear_chart<'a, 'b>(
    plot: &'a Area<'b>,
    x: std::ops::Range<f64>,
    y_top: f64,
    x_label: &str,
    y_desc: &str,
) -> Result<LinearChart<'a, 'b>, Box<dyn std::error::Error>> {
    let mut chart = ChartBuilder::on(plot)
        .margin(8)
        .x_label_area_size(38)
        .y_label_area_size(56)
        .build_cartesian_2d(x, 0.0..y_top)?;
    chart
        .configure_mesh()
        .bold_line_style(GRID)
        .light_line_style(WHITE)
        .x_desc(x_label)
        .y_desc(y_desc)
        .x_label_formatter(&|v| axis_number(*v))
        .y_label_formatter(&|v| axis_number(*v))
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 13))
        .draw()?;
    Ok(chart)
}

fn nothing(chart: &mut LinearChart, x_lo: f64, x_hi: f64, y_hi: f64, what: &str) -> DrawResult {
    let style = TextStyle::from((FONT, 14).into_font())
        .color(&RGBColor(120, 120, 120))
        .pos(Pos::new(HPos::Center, VPos::Center));
    chart.draw_series(std::iter::once(Text::new(
        what.to_string(),
        ((x_lo + x_hi) / 2.0, y_hi / 2.0),
        style,
    )))?;
    Ok(())
}

/// KiB in MB (MiB, as the logs count them).
fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

fn heap_section(h: &mut String, page: &Page) -> anyhow::Result<()> {
    let _ = writeln!(h, "<h2 id=\"heap-occupancy\">Heap occupancy</h2>");
    let n = page.heap.iter().filter(|p| p.x.is_finite()).count();
    if n == 0 {
        note(
            h,
            "No heap occupancy: the log gives no heap sizes around its collections.",
        );
        return Ok(());
    }
    let svg = heap(&page.heap, &page.x_label)?;
    figure(
        h,
        &svg,
        &format!(
            "The heap around {n} collection{}, in MB (1 MB = 1024 KiB), against {}: occupied \
             before the collection (upper dots) and after it (lower dots), and the heap's \
             capacity (line). What stays after collections is the live data: a floor that \
             climbs towards the capacity means the heap is too small for it, or a leak.",
            plural(n),
            esc(&page.x_label)
        ),
    );
    Ok(())
}

/// Occupancy before and after each collection and the capacity, MB, against `x_label`.
pub(crate) fn heap(points: &[HeapPoint], x_label: &str) -> anyhow::Result<String> {
    let points: Vec<HeapPoint> = points.iter().filter(|p| p.x.is_finite()).copied().collect();
    let (x_lo, x_hi) = x_range(points.iter().map(|p| p.x));
    let y_max = points
        .iter()
        .map(|p| mb(p.before_kb.max(p.after_kb).max(p.capacity_kb)))
        .fold(0.0, f64::max);
    let legend = vec![
        ("capacity".to_string(), plots::Mark::Line(CAPACITY_COLOR)),
        (
            "before collection".to_string(),
            plots::Mark::Dot(BEFORE_COLOR),
        ),
        (
            "after collection".to_string(),
            plots::Mark::Dot(AFTER_COLOR),
        ),
    ];
    let (w, hgt) = WIDE;
    framed(w, hgt, "Heap occupancy", "heap", &legend, |plot| {
        let mut chart = linear_chart(plot, x_lo..x_hi, top(y_max), x_label, "heap (MB)")?;
        if points.is_empty() {
            return nothing(&mut chart, x_lo, x_hi, top(y_max), "no heap sizes");
        }
        if points.len() <= MAX_HEAP_SEGMENTS {
            chart.draw_series(points.iter().map(|p| {
                PathElement::new(
                    vec![(p.x, mb(p.before_kb)), (p.x, mb(p.after_kb))],
                    GRID.stroke_width(1),
                )
            }))?;
        }
        chart.draw_series(LineSeries::new(
            points
                .iter()
                .filter(|p| p.capacity_kb > 0)
                .map(|p| (p.x, mb(p.capacity_kb))),
            CAPACITY_COLOR.stroke_width(2),
        ))?;
        let radius = if points.len() <= 400 { 3 } else { 2 };
        for (color, kb) in [
            (
                BEFORE_COLOR,
                (|p: &HeapPoint| p.before_kb) as fn(&HeapPoint) -> u64,
            ),
            (AFTER_COLOR, |p: &HeapPoint| p.after_kb),
        ] {
            chart.draw_series(
                points
                    .iter()
                    .map(|p| Circle::new((p.x, mb(kb(p))), radius, color.filled())),
            )?;
        }
        Ok(())
    })
}

/// The histogram's bins that can be drawn: a finite, not negative lower bound and an upper
/// one above it (infinite for the last, open bin).
fn drawable_bins(bins: &[HistogramBin]) -> Vec<HistogramBin> {
    bins.iter()
        .filter(|b| b.lo_ms.is_finite() && b.lo_ms >= 0.0 && b.hi_ms > b.lo_ms)
        .copied()
        .collect()
}

/// A bin's bound in seconds, about three significant digits (`1.02`, `16.4`).
fn seconds(ms: f64) -> String {
    let s = ms / 1000.0;
    let t = if s >= 100.0 {
        format!("{s:.0}")
    } else if s >= 10.0 {
        format!("{s:.1}")
    } else {
        format!("{s:.2}")
    };
    if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    }
}

/// `1–2 ms` for the bin from 1 to 2 ms, `1–2 s` from 1000 to 2000 ms, `< 0.1 ms` from 0,
/// `≥ 100 s` for the open bin from 100 000 ms.
fn bin_label(b: &HistogramBin) -> String {
    let (lo, hi) = (b.lo_ms, b.hi_ms);
    let in_s = lo >= 1000.0 || (lo == 0.0 && hi >= 1000.0 && hi.is_finite());
    let (v, unit): (fn(f64) -> String, &str) = if in_s {
        (seconds, "s")
    } else {
        (axis_number, "ms")
    };
    if !hi.is_finite() {
        format!("≥ {} {unit}", v(lo))
    } else if lo == 0.0 {
        format!("< {} {unit}", v(hi))
    } else {
        format!("{}–{} {unit}", v(lo), v(hi))
    }
}

fn histogram_section(h: &mut String, page: &Page) -> anyhow::Result<()> {
    let _ = writeln!(h, "<h2 id=\"pause-histogram\">Pause histogram</h2>");
    let bins = drawable_bins(&page.histogram);
    let total: u64 = bins.iter().map(|b| b.count).sum();
    if total == 0 {
        note(h, "No pause to count: the histogram is empty.");
        return Ok(());
    }
    let svg = histogram(&bins)?;
    figure(
        h,
        &svg,
        &format!(
            "{total} pause{} by length, in bins that grow geometrically (each bin's range is \
             under its bar; the number on a bar is its count). A second hump to the right \
             of the main one is a group of pauses with a cause of their own.",
            plural(total as usize)
        ),
    );
    Ok(())
}

/// Pauses per bin, one bar per bin with its count over it.
pub(crate) fn histogram(bins: &[HistogramBin]) -> anyhow::Result<String> {
    let bins = drawable_bins(bins);
    let n = bins.len().max(1);
    let labels: Vec<String> = bins.iter().map(bin_label).collect();
    let longest = labels.iter().map(|s| s.chars().count()).max().unwrap_or(4) as u32;
    // Plotters labels at most 11 bars, every `step`th: a label may take `step` bars' width.
    let step = n.div_ceil(11) as u32;
    let per_bar = ((7 * longest + 16) / step).max(46);
    let w = (LEGEND_W + 120 + per_bar * n as u32).clamp(620, 1240);
    let chars = label_chars(w, n.div_ceil(step as usize));
    let y_max = bins.iter().map(|b| b.count as f64).fold(0.0, f64::max);
    let legend = vec![(
        "pauses in the bin".to_string(),
        plots::Mark::Swatch(OK_COLOR),
    )];
    framed(w, 390, "Pause histogram", "", &legend, |plot| {
        let mut chart = category_chart(
            plot,
            &Axes {
                caption: None,
                n,
                y_top: top(y_max),
                x_desc: "pause length",
                y_desc: "pauses",
                labels: &labels,
                chars,
            },
        )?;
        let text = TextStyle::from((FONT, 11).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        for (i, b) in bins.iter().enumerate() {
            let x = i as f64;
            let v = b.count as f64;
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x - 0.4, 0.0), (x + 0.4, v)],
                OK_COLOR.filled(),
            )))?;
            if n <= 40 {
                chart.draw_series(std::iter::once(Text::new(
                    b.count.to_string(),
                    (x, v + top(y_max) * 0.01),
                    text.clone(),
                )))?;
            }
        }
        Ok(())
    })
}

fn findings_section(h: &mut String, page: &Page) {
    let _ = writeln!(h, "<h2 id=\"findings\">Findings</h2>");
    if page.findings.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"ok\">No finding: no pause was an OS stall, and none of the other checks \
             (time to safepoint, serial or failed collections, explicit GC, heap size) fired.</p>"
        );
        return;
    }
    let _ = writeln!(
        h,
        "<div class=\"scroll\"><table class=\"data\">\n<tr><th>kind</th><th class=\"n\">pauses</th>\
         <th>what</th><th>evidence</th><th>advice</th></tr>"
    );
    for f in &page.findings {
        let (color, what) = if f.os_stall {
            (STALL_COLOR, "<span class=\"bad\">OS stall</span>")
        } else {
            (FINDING_COLOR, "finding")
        };
        let evidence: String = if f.evidence.is_empty() {
            "—".into()
        } else {
            f.evidence
                .iter()
                .map(|e| format!("<span class=\"chip\">{}</span>", esc(e)))
                .collect()
        };
        let _ = writeln!(
            h,
            "<tr><td class=\"nw\"><code>{}</code><br>{}{what}</td><td class=\"n\">{}</td>\
             <td>{}</td><td>{evidence}</td><td>{}</td></tr>",
            esc(&f.kind),
            swatch(color),
            f.count,
            esc(&f.summary),
            esc(&f.advice)
        );
    }
    let _ = writeln!(
        h,
        "</table></div>\n<p class=\"caption\">Most severe first. A red swatch marks one of the OS \
         stalls of paper 002 (off-CPU, outside the collection, kernel); evidence is the first \
         lines of the log where the kind shows, as <code>file:line</code>.</p>"
    );
}

fn advice_section(h: &mut String, page: &Page) {
    let _ = writeln!(h, "<h2 id=\"advice\">Advice</h2>");
    if page.advice.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"caption\">No advice: nothing in the log calls for a change.</p>"
        );
        return;
    }
    let items: String = page
        .advice
        .iter()
        .map(|a| format!("<li>{}</li>", esc(a)))
        .collect();
    let _ = writeln!(h, "<ul class=\"findings\">{items}</ul>");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic stand-in for random numbers in [0, 1).
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// A page like that of a G1 log of `n` pauses over `n` × 0.6 s of uptime: young pauses of
    /// 2–40 ms, a few long ones that are findings, and stalls of seconds.
    fn sample(n: usize) -> Page {
        let mut r = Lcg(7);
        let mut timeline = Vec::new();
        let mut heap = Vec::new();
        let mut after = 300 * 1024;
        for i in 0..n {
            let x = i as f64 * 0.6 + r.next() * 0.3;
            let roll = r.next();
            let (ms, mark) = if roll < 0.02 {
                (800.0 + r.next() * 9000.0, Mark::Stall)
            } else if roll < 0.06 {
                (120.0 + r.next() * 400.0, Mark::Finding)
            } else {
                (2.0 + r.next() * r.next() * 40.0, Mark::Ok)
            };
            timeline.push(TimelinePoint { x, ms, mark });
            let capacity_kb = if i < n / 2 { 2048 * 1024 } else { 3072 * 1024 };
            after = (after + (r.next() * 20_000.0) as u64).min(capacity_kb / 2);
            heap.push(HeapPoint {
                x,
                before_kb: capacity_kb - 200 * 1024 + (r.next() * 150_000.0) as u64,
                after_kb: after,
                capacity_kb,
            });
        }
        // The bins of `concord diagnose`: 1-2-5 edges, from 0 and open at the end, the empty
        // ones at either end left out.
        const EDGES: [f64; 19] = [
            0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1e3, 2e3, 5e3,
            1e4, 2e4, 5e4, 1e5,
        ];
        let mut histogram: Vec<HistogramBin> = (0..=EDGES.len())
            .map(|i| HistogramBin {
                lo_ms: if i == 0 { 0.0 } else { EDGES[i - 1] },
                hi_ms: EDGES.get(i).copied().unwrap_or(f64::INFINITY),
                count: 0,
            })
            .collect();
        for p in &timeline {
            if let Some(b) = histogram
                .iter_mut()
                .find(|b| b.lo_ms <= p.ms && p.ms < b.hi_ms)
            {
                b.count += 1;
            }
        }
        let first = histogram.iter().position(|b| b.count > 0).unwrap_or(0);
        let last = histogram.iter().rposition(|b| b.count > 0).unwrap_or(0);
        let histogram = histogram[first..=last].to_vec();
        let stalls = timeline.iter().filter(|p| p.mark == Mark::Stall).count() as u64;
        Page {
            log: "/var/log/app/gc.log".into(),
            format: "unified logging (JDK 9+), G1".into(),
            summary: vec![
                ("pauses".into(), n.to_string()),
                ("total pause".into(), "61.2 s".into()),
                ("longest".into(), "9.71 s".into()),
                ("over 250 ms".into(), "41".into()),
                ("GC threads".into(), "8 (from the log)".into()),
                ("lines not recognized".into(), "0".into()),
            ],
            x_label: "uptime (s)".into(),
            timeline,
            heap,
            histogram,
            findings: vec![
                FindingRow {
                    kind: "off-cpu".into(),
                    os_stall: true,
                    count: stalls,
                    summary: "real exceeds 1.5 × (user + sys) / GC threads + 10 ms: the GC \
                              threads were off the CPU for most of the pause."
                        .into(),
                    evidence: vec![
                        "gc.log:1204".into(),
                        "gc.log:8812".into(),
                        "gc.log:15030".into(),
                    ],
                    advice:
                        "Put the GC log on a tmpfs or a disk of its own, or log asynchronously \
                             (-Xlog:async)."
                            .into(),
                },
                FindingRow {
                    kind: "long-ttsp".into(),
                    os_stall: false,
                    count: 12,
                    summary: "Reaching the safepoint took over 50 ms.".into(),
                    evidence: vec!["gc.log:233".into()],
                    advice: "Look for long counted loops; -XX:+UseCountedLoopSafepoints.".into(),
                },
                FindingRow {
                    kind: "explicit-gc".into(),
                    os_stall: false,
                    count: 3,
                    summary: "System.gc() was called.".into(),
                    evidence: vec![],
                    advice: "-XX:+DisableExplicitGC, or find the caller.".into(),
                },
            ],
            advice: vec![
                "Move the GC log off the disk the application writes to.".into(),
                "Give the collector CPUs of its own.".into(),
            ],
        }
    }

    fn empty_page() -> Page {
        Page {
            log: "empty.log".into(),
            format: "not recognized".into(),
            summary: vec![],
            x_label: "pause number".into(),
            timeline: vec![],
            heap: vec![],
            histogram: vec![],
            findings: vec![],
            advice: vec![],
        }
    }

    fn count(s: &str, what: &str) -> usize {
        s.matches(what).count()
    }

    /// The section from `<h2 id="id"` to the next `<h2` (or the footer).
    fn section<'a>(html: &'a str, id: &str) -> &'a str {
        let start = html
            .find(&format!("<h2 id=\"{id}\""))
            .unwrap_or_else(|| panic!("no section {id}"));
        let rest = &html[start + 4..];
        let end = rest
            .find("<h2")
            .or_else(|| rest.find("<footer"))
            .unwrap_or(rest.len());
        &rest[..end]
    }

    fn assert_self_contained(html: &str) {
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.trim_end().ends_with("</html>"));
        for banned in [
            "http://",
            "https://",
            "<script",
            "<link",
            "@import",
            "@font-face",
            "url(",
            "<img",
            " src=",
            "<iframe",
        ] {
            assert!(!html.contains(banned), "the page contains {banned:?}");
        }
        for part in html.split("href=\"").skip(1) {
            let target = &part[..part.find('"').unwrap()];
            let id = target
                .strip_prefix('#')
                .unwrap_or_else(|| panic!("href {target:?} leaves the page"));
            assert!(
                html.contains(&format!("id=\"{id}\"")),
                "href {target:?} has no target"
            );
        }
        assert_eq!(count(html, "<svg"), count(html, "</svg>"));
        assert_eq!(count(html, "<figure>"), count(html, "<figcaption>"));
    }

    #[test]
    fn page_is_self_contained_and_every_section_has_its_figure() {
        let html = render(&sample(300)).unwrap();
        assert_self_contained(&html);
        assert!(html.contains("<h1>GC log diagnosis</h1>"));
        assert!(html.contains("<code>/var/log/app/gc.log</code>"));
        assert!(html.contains("unified logging (JDK 9+), G1"));
        assert!(section(&html, "summary").contains("<td>lines not recognized</td>"));
        for id in ["pause-timeline", "heap-occupancy", "pause-histogram"] {
            let s = section(&html, id);
            assert_eq!(count(s, "<svg"), 1, "{id}");
            assert_eq!(count(s, "<figcaption>"), 1, "{id}");
        }
        // The pauses span over two decades: the axis is logarithmic.
        assert!(section(&html, "pause-timeline").contains("pause (ms, log scale)"));
        // Every bin labelled (11 of them), in ms, then s.
        let hist = section(&html, "pause-histogram");
        for label in ["2–5 ms", "500–1000 ms", "1–2 s", "5–10 s"] {
            assert!(hist.contains(label), "{label}");
        }
        let findings = section(&html, "findings");
        assert_eq!(count(findings, "<tr>"), 4);
        assert_eq!(count(findings, "OS stall"), 2, "one row and the caption");
        assert!(findings.contains("<span class=\"chip\">gc.log:8812</span>"));
        assert_eq!(count(section(&html, "advice"), "<li>"), 2);
    }

    #[test]
    fn empty_page_says_what_is_absent() {
        let html = render(&empty_page()).unwrap();
        assert_self_contained(&html);
        assert_eq!(count(&html, "<svg"), 0);
        assert!(section(&html, "summary").contains("No summary"));
        assert!(section(&html, "pause-timeline").contains("No pause to draw"));
        assert!(section(&html, "heap-occupancy").contains("No heap occupancy"));
        assert!(section(&html, "pause-histogram").contains("the histogram is empty"));
        assert!(section(&html, "findings").contains("No finding"));
        assert!(section(&html, "advice").contains("No advice"));
    }

    #[test]
    fn plots_draw_with_no_one_and_equal_points() {
        let p = |x, ms| TimelinePoint {
            x,
            ms,
            mark: Mark::Ok,
        };
        for points in [
            vec![],
            vec![p(3.0, 12.0)],
            vec![p(0.0, 0.0)],
            vec![p(5.0, 1.0), p(5.0, 2.0), p(5.0, 2000.0)],
            vec![p(-4.0, 0.0), p(-4.0, 0.0)],
        ] {
            let svg = timeline(&points, "uptime (s)").unwrap();
            // One dot per point, and three in the legend.
            assert_eq!(count(&svg, "<circle"), points.len() + 3, "{points:?}");
        }
        // A log axis labels the powers of ten at both of its ends.
        let svg = timeline(&[p(1.0, 0.03), p(2.0, 5.0)], "uptime (s)").unwrap();
        assert!(
            svg.contains("log scale")
                && svg.contains("\n0.01\n</text>")
                && svg.contains("\n10\n</text>")
        );
        assert!(heap(&[], "x").unwrap().contains("no heap sizes"));
        let one = HeapPoint {
            x: 1.0,
            before_kb: 2048,
            after_kb: 1024,
            capacity_kb: 4096,
        };
        assert!(heap(&[one, one], "x").unwrap().contains("<svg"));
        assert!(histogram(&[]).unwrap().contains("<svg"));
    }

    #[test]
    fn histogram_bins_are_labelled_with_their_unit_open_ends_too() {
        let bin = |lo_ms, hi_ms| {
            bin_label(&HistogramBin {
                lo_ms,
                hi_ms,
                count: 1,
            })
        };
        assert_eq!(bin(1.0, 2.0), "1–2 ms");
        assert_eq!(bin(0.1, 0.2), "0.1–0.2 ms");
        assert_eq!(bin(500.0, 1000.0), "500–1000 ms");
        assert_eq!(bin(1000.0, 2000.0), "1–2 s");
        assert_eq!(bin(0.0, 0.1), "< 0.1 ms");
        assert_eq!(bin(1e5, f64::INFINITY), "≥ 100 s");
        let svg = histogram(&[
            HistogramBin {
                lo_ms: 0.0,
                hi_ms: 0.1,
                count: 3,
            },
            HistogramBin {
                lo_ms: 1e5,
                hi_ms: f64::INFINITY,
                count: 1,
            },
        ])
        .unwrap();
        assert!(svg.contains("&lt; 0.1 ms") && svg.contains("≥ 100 s"));
    }

    #[test]
    fn five_thousand_points_stay_small() {
        let html = render(&sample(5000)).unwrap();
        assert_self_contained(&html);
        assert!(html.len() < 2_000_000, "{} bytes", html.len());
        assert!(count(&html, "<circle") >= 3 * 5000);
    }

    #[test]
    fn text_from_the_log_is_escaped() {
        let evil = "<script>alert('x')</script>\"&";
        let mut page = sample(20);
        page.log = format!("/tmp/{evil}.log");
        page.format = evil.into();
        page.x_label = evil.into();
        page.summary.push((evil.into(), evil.into()));
        page.findings[0].kind = evil.into();
        page.findings[0].summary = evil.into();
        page.findings[0].evidence.push(format!("{evil}:1"));
        page.findings[0].advice = evil.into();
        page.advice.push(evil.into());
        let html = render(&page).unwrap();
        assert_self_contained(&html);
        assert!(
            html.contains("/tmp/&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;.log")
        );
        // The x axis title inside the SVG too (plotters escapes its text).
        assert!(section(&html, "pause-timeline").contains("&lt;script&gt;"));
    }

    #[test]
    fn bad_numbers_are_skipped() {
        let mut page = sample(50);
        for (x, ms) in [
            (f64::NAN, 1.0),
            (1.0, f64::NAN),
            (f64::INFINITY, 1.0),
            (1.0, f64::INFINITY),
            (f64::NEG_INFINITY, 1.0),
            (1.0, -5.0),
        ] {
            page.timeline.push(TimelinePoint {
                x,
                ms,
                mark: Mark::Stall,
            });
        }
        page.heap.push(HeapPoint {
            x: f64::NAN,
            before_kb: u64::MAX,
            after_kb: 0,
            capacity_kb: 0,
        });
        for (lo_ms, hi_ms) in [
            (f64::NAN, 1.0),
            (f64::INFINITY, f64::INFINITY),
            (1.0, f64::NAN),
            (-1.0, 1.0),
            (4.0, 2.0),
        ] {
            page.histogram.push(HistogramBin {
                lo_ms,
                hi_ms,
                count: 7,
            });
        }
        let html = render(&page).unwrap();
        assert_self_contained(&html);
        assert!(section(&html, "pause-timeline").contains("50 dots"));
        assert!(!html.contains("NaN") && !html.contains("inf"));
        // Nothing but bad numbers: said absent, not drawn.
        let mut bad = empty_page();
        bad.timeline = page.timeline[50..].to_vec();
        bad.histogram = page.histogram[page.histogram.len() - 4..].to_vec();
        bad.heap = vec![page.heap[50]];
        let html = render(&bad).unwrap();
        assert_eq!(count(&html, "<svg"), 0);
    }
}

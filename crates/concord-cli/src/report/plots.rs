//! The report's pictures, drawn with plotters into SVG strings that the page embeds inline.
//!
//! Every picture has a title, axis labels and a legend of its own (drawn in a strip on the
//! right, so it never covers data). Text is SVG `<text>` in the browser's sans-serif font, so
//! no font file is needed.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::model::{Breakdown, Occupancy, TaskTotals};

pub(crate) type DrawResult = Result<(), Box<dyn std::error::Error>>;
pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

pub(crate) const FONT: &str = "sans-serif";
pub(crate) const INK: RGBColor = RGBColor(40, 40, 40);
pub(crate) const GRID: RGBColor = RGBColor(225, 225, 225);
pub(crate) const LEGEND_W: u32 = 170;

/// Colours of configurations (Tableau 10).
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(78, 121, 167),
    RGBColor(242, 142, 43),
    RGBColor(225, 87, 89),
    RGBColor(118, 183, 178),
    RGBColor(89, 161, 79),
    RGBColor(237, 201, 72),
    RGBColor(176, 122, 161),
    RGBColor(255, 157, 167),
    RGBColor(156, 117, 95),
    RGBColor(186, 176, 172),
];

/// Colour of the `i`th configuration or series.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Colour of a task type: root task types in palette order, `Steal` grey.
pub fn task_color(name: &str, index: usize) -> RGBColor {
    if name == "Steal" {
        RGBColor(170, 170, 170)
    } else {
        // Skip the grey at the end of the palette.
        PALETTE[index % (PALETTE.len() - 1)]
    }
}

const ROOT_COLOR: RGBColor = RGBColor(78, 121, 167);
const STEAL_COLOR: RGBColor = RGBColor(242, 142, 43);
const TERM_COLOR: RGBColor = RGBColor(225, 87, 89);
const OK_COLOR: RGBColor = RGBColor(89, 161, 79);
const FAIL_COLOR: RGBColor = RGBColor(225, 87, 89);
const WHISKER: RGBColor = RGBColor(90, 90, 90);

/// What a legend entry shows before its text.
#[derive(Clone, Copy)]
pub enum Mark {
    Swatch(RGBColor),
    LineDot(RGBColor),
    Dot(RGBColor),
    Triangle(RGBColor),
    Line(RGBColor),
}

/// Draw into a fresh SVG of `w` × `h` pixels and return the `<svg>` element.
fn svg(w: u32, h: u32, draw: impl FnOnce(&Area) -> DrawResult) -> anyhow::Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
        draw(&root).map_err(|e| anyhow::anyhow!("drawing a plot: {e}"))?;
        root.present().map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(out)
}

/// A fresh SVG of `w` × `h` pixels with `title` on top and the legend strip on the right; `draw`
/// draws into the rest.
pub(crate) fn framed(
    w: u32,
    h: u32,
    title: &str,
    legend_title: &str,
    legend: &[(String, Mark)],
    draw: impl FnOnce(&Area) -> DrawResult,
) -> anyhow::Result<String> {
    svg(w, h, |root| {
        let plot = frame(root, title, legend_title, legend)?;
        draw(&plot)
    })
}

/// Title on top, legend strip on the right; returns the plotting area.
fn frame<'a>(
    root: &Area<'a>,
    title: &str,
    legend_title: &str,
    legend: &[(String, Mark)],
) -> Result<Area<'a>, Box<dyn std::error::Error>> {
    let body = root.titled(title, (FONT, 17).into_font().color(&INK))?;
    let w = body.dim_in_pixel().0;
    let (plot, side) = body.split_horizontally(w.saturating_sub(LEGEND_W));
    draw_legend(&side, legend_title, legend)?;
    Ok(plot)
}

fn draw_legend(area: &Area, title: &str, entries: &[(String, Mark)]) -> DrawResult {
    let left = TextStyle::from((FONT, 13).into_font())
        .color(&INK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let mut y = 22;
    if !title.is_empty() {
        area.draw(&Text::new(
            title.to_string(),
            (8, y),
            TextStyle::from((FONT, 13).into_font().style(FontStyle::Bold))
                .color(&INK)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
        y += 22;
    }
    for (label, mark) in entries {
        match *mark {
            Mark::Swatch(c) => {
                area.draw(&Rectangle::new([(8, y - 6), (22, y + 6)], c.filled()))?;
                area.draw(&Rectangle::new(
                    [(8, y - 6), (22, y + 6)],
                    RGBColor(190, 190, 190),
                ))?;
            }
            Mark::LineDot(c) => {
                area.draw(&PathElement::new(vec![(6, y), (24, y)], c.stroke_width(2)))?;
                area.draw(&Circle::new((15, y), 4, c.filled()))?;
            }
            Mark::Dot(c) => {
                area.draw(&Circle::new((15, y), 4, c.filled()))?;
            }
            Mark::Triangle(c) => {
                area.draw(&TriangleMarker::new((15, y), 6, c.filled()))?;
            }
            Mark::Line(c) => {
                area.draw(&PathElement::new(vec![(6, y), (24, y)], c.stroke_width(2)))?;
            }
        }
        area.draw(&Text::new(shorten(label, 20), (30, y), left.clone()))?;
        y += 20;
    }
    Ok(())
}

/// Cut `s` to at most `max` characters by replacing its middle with an ellipsis (the end of a
/// label often tells configurations apart).
pub fn shorten(s: &str, max: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= max {
        return s.to_string();
    }
    let keep = max.saturating_sub(1);
    let tail = keep / 2;
    let head = keep - tail;
    let mut t: String = chars[..head].iter().collect();
    t.push('…');
    t.extend(&chars[chars.len() - tail..]);
    t
}

/// `c` lighter (`t` < 0, towards white) or darker (`t` > 0, towards black).
pub fn shade(c: RGBColor, t: f64) -> RGBColor {
    let f = |x: u8| {
        let x = f64::from(x);
        let y = if t < 0.0 {
            x + (255.0 - x) * -t
        } else {
            x * (1.0 - t)
        };
        y.round().clamp(0.0, 255.0) as u8
    };
    RGBColor(f(c.0), f(c.1), f(c.2))
}

/// A y range top that leaves a little room above the data (1 when there is no data).
pub(crate) fn top(max: f64) -> f64 {
    if max.is_finite() && max > 0.0 {
        max * 1.1
    } else {
        1.0
    }
}

/// Axis numbers without trailing noise (`0.25`, `3`, `1.5k`).
pub(crate) fn axis_number(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A categorical axis: positions 0..n (bars, cells) on a continuous f64 scale from -0.5 to
/// n - 0.5, with a tick and label at every whole position (thinned when they would not fit).
#[derive(Clone)]
pub(crate) struct Categories(usize);

impl Ranged for Categories {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let r = self.range();
        let share = (value - r.start) / (r.end - r.start);
        limit.0 + (share * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            return Vec::new();
        }
        let step = self.0.div_ceil(hint.max_num_points().max(1)).max(1);
        (0..self.0).step_by(step).map(|i| i as f64).collect()
    }

    fn range(&self) -> std::ops::Range<f64> {
        -0.5..self.0 as f64 - 0.5
    }
}

fn categories(n: usize) -> Categories {
    Categories(n.max(1))
}

fn category_label(labels: &[String], v: f64, max_chars: usize) -> String {
    if v < -0.25 || (v - v.round()).abs() > 0.01 {
        return String::new();
    }
    labels
        .get(v.round() as usize)
        .map(|s| shorten(s, max_chars))
        .unwrap_or_default()
}

/// Characters of a category label that fit under one bar of `n` in `width` pixels.
pub(crate) fn label_chars(width: u32, n: usize) -> usize {
    ((width.saturating_sub(LEGEND_W + 70) as usize / n.max(1)) / 7).clamp(4, 40)
}

/// The category chart of a panel: categories `0..n` on x (labelled from `labels`, cut to
/// `chars` characters), `0..y_top` on y, grid lines across only.
pub(crate) struct Axes<'l> {
    pub(crate) caption: Option<&'l str>,
    pub(crate) n: usize,
    pub(crate) y_top: f64,
    pub(crate) x_desc: &'l str,
    pub(crate) y_desc: &'l str,
    pub(crate) labels: &'l [String],
    pub(crate) chars: usize,
}

pub(crate) type CategoryChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<Categories, RangedCoordf64>>;

/// Builds the chart of `axes` on `area` and draws its axes and grid.
pub(crate) fn category_chart<'a, 'b>(
    area: &'a Area<'b>,
    axes: &Axes,
) -> Result<CategoryChart<'a, 'b>, Box<dyn std::error::Error>> {
    let mut builder = ChartBuilder::on(area);
    if let Some(caption) = axes.caption {
        builder.caption(caption, (FONT, 14));
    }
    let mut chart = builder
        .margin(8)
        .x_label_area_size(38)
        .y_label_area_size(56)
        .build_cartesian_2d(categories(axes.n), 0.0..axes.y_top)?;
    let fmt_x = |v: &f64| category_label(axes.labels, *v, axes.chars);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .bold_line_style(GRID)
        .light_line_style(WHITE)
        .x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .x_label_formatter(&fmt_x)
        .y_label_formatter(&|v| axis_number(*v))
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 13))
        .draw()?;
    Ok(chart)
}

/// 000 Fig. 4a / 8b: tasks each GC worker ran, stacked by task type.
pub fn task_distribution(
    title: &str,
    totals: &TaskTotals,
    y_max: f64,
    types: &[(String, RGBColor)],
) -> anyhow::Result<String> {
    let n = totals.workers.max(1);
    let (w, h) = ((260 + 46 * n as u32).clamp(470, 1000), 330);
    let legend: Vec<(String, Mark)> = types
        .iter()
        .rev()
        .filter(|(name, _)| totals.by_type.contains_key(name))
        .map(|(name, c)| (name.clone(), Mark::Swatch(*c)))
        .collect();
    framed(w, h, title, "task type", &legend, |plot| {
        let workers: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        let mut chart = category_chart(
            plot,
            &Axes {
                caption: None,
                n,
                y_top: top(y_max),
                x_desc: "GC worker",
                y_desc: "tasks run (all collections)",
                labels: &workers,
                chars: 4,
            },
        )?;
        for wkr in 0..n {
            let mut base = 0.0;
            for (name, c) in types {
                let count = totals
                    .by_type
                    .get(name)
                    .and_then(|r| r.get(wkr))
                    .copied()
                    .unwrap_or(0);
                if count == 0 {
                    continue;
                }
                let x = wkr as f64;
                let top = base + count as f64;
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.35, base), (x + 0.35, top)],
                    c.filled(),
                )))?;
                base = top;
            }
        }
        Ok(())
    })
}

/// Light-to-dark blue for a share in 0..=1.
fn heat(share: f64) -> RGBColor {
    let stops = [
        (247.0, 251.0, 255.0),
        (107.0, 174.0, 214.0),
        (8.0, 48.0, 107.0),
    ];
    let s = share.clamp(0.0, 1.0) * 2.0;
    let (a, b, t) = if s <= 1.0 {
        (stops[0], stops[1], s)
    } else {
        (stops[1], stops[2], s - 1.0)
    };
    let mix = |x: f64, y: f64| (x + (y - x) * t).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// 000 Fig. 4b / 8a: how often each GC worker was seen on each CPU.
pub fn cpu_heatmap(title: &str, occ: &Occupancy) -> anyhow::Result<String> {
    let cols = occ.cpus.len().max(1);
    let rows = occ.samples.len().max(1);
    let w = (LEGEND_W + 110 + 70 * cols as u32).clamp(470, 1200);
    let h = (130 + 30 * rows as u32).clamp(230, 900);
    let max = occ
        .samples
        .iter()
        .flatten()
        .copied()
        .max()
        .unwrap_or(0)
        .max(1);
    let legend: Vec<(String, Mark)> = [0.0, 0.25, 0.5, 0.75, 1.0]
        .iter()
        .rev()
        .map(|&s| {
            let n = (s * max as f64).round() as u64;
            (format!("{n} samples"), Mark::Swatch(heat(s)))
        })
        .collect();
    framed(w, h, title, "colour", &legend, |plot| {
        let cpu_labels: Vec<String> = occ.cpus.iter().map(|c| c.to_string()).collect();
        let worker_labels: Vec<String> = (0..rows).rev().map(|w| w.to_string()).collect();
        let mut chart = ChartBuilder::on(plot)
            .margin(8)
            .x_label_area_size(38)
            .y_label_area_size(56)
            .build_cartesian_2d(categories(cols), categories(rows))?;
        let fmt_x = |v: &f64| category_label(&cpu_labels, *v, 6);
        let fmt_y = |v: &f64| category_label(&worker_labels, *v, 6);
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("CPU")
            .y_desc("GC worker")
            .x_label_formatter(&fmt_x)
            .y_label_formatter(&fmt_y)
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .draw()?;
        let dark = TextStyle::from((FONT, 12).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Center, VPos::Center));
        let light = dark.color(&WHITE);
        for (wkr, row) in occ.samples.iter().enumerate() {
            let y = (rows - 1 - wkr) as f64;
            for (col, &n) in row.iter().enumerate() {
                let share = n as f64 / max as f64;
                let x = col as f64;
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.48, y - 0.46), (x + 0.48, y + 0.46)],
                    heat(share).filled(),
                )))?;
                let style = if share > 0.55 {
                    light.clone()
                } else {
                    dark.clone()
                };
                chart.draw_series(std::iter::once(Text::new(n.to_string(), (x, y), style)))?;
            }
        }
        Ok(())
    })
}

/// One configuration's pauses for the timeline: (start ms, pause ms, full?).
pub struct PauseSeries {
    pub label: String,
    pub color: RGBColor,
    pub points: Vec<(f64, f64, bool)>,
}

/// Pause length against the time the collection started, one series per configuration.
pub fn pause_timeline(series: &[PauseSeries]) -> anyhow::Result<String> {
    let x_max = series
        .iter()
        .flat_map(|s| &s.points)
        .map(|p| p.0)
        .fold(0.0, f64::max);
    let y_max = series
        .iter()
        .flat_map(|s| &s.points)
        .map(|p| p.1)
        .fold(0.0, f64::max);
    let mut legend: Vec<(String, Mark)> = series
        .iter()
        .map(|s| (s.label.clone(), Mark::LineDot(s.color)))
        .collect();
    legend.push(("young collection".into(), Mark::Dot(INK)));
    legend.push(("full collection".into(), Mark::Triangle(INK)));
    framed(
        960,
        400,
        "Pause timeline (the median run of each configuration)",
        "configuration",
        &legend,
        |plot| {
            let mut chart = ChartBuilder::on(plot)
                .margin(8)
                .x_label_area_size(38)
                .y_label_area_size(56)
                .build_cartesian_2d(0.0..top(x_max), 0.0..top(y_max))?;
            chart
                .configure_mesh()
                .bold_line_style(GRID)
                .light_line_style(WHITE)
                .x_desc("collection start (ms since the heap was created)")
                .y_desc("pause (ms)")
                .x_label_formatter(&|v| axis_number(*v))
                .y_label_formatter(&|v| axis_number(*v))
                .label_style((FONT, 12))
                .axis_desc_style((FONT, 13))
                .draw()?;
            for s in series {
                chart.draw_series(LineSeries::new(
                    s.points.iter().map(|p| (p.0, p.1)),
                    s.color.mix(0.45).stroke_width(1),
                ))?;
                chart.draw_series(
                    s.points
                        .iter()
                        .filter(|p| !p.2)
                        .map(|p| Circle::new((p.0, p.1), 3, s.color.filled())),
                )?;
                chart.draw_series(
                    s.points
                        .iter()
                        .filter(|p| p.2)
                        .map(|p| TriangleMarker::new((p.0, p.1), 7, s.color.filled())),
                )?;
            }
            Ok(())
        },
    )
}

/// 000 Fig. 6: summed worker time in root tasks, stealing and termination per configuration.
pub fn time_breakdown(axis: &str, bars: &[(String, Option<Breakdown>)]) -> anyhow::Result<String> {
    let n = bars.len().max(1);
    let w = (LEGEND_W + 120 + 110 * n as u32).clamp(620, 1400);
    let total = |b: &Breakdown| b.root_ms + b.steal_ms + b.termination_ms;
    let y_max = bars
        .iter()
        .filter_map(|(_, b)| b.as_ref().map(total))
        .fold(0.0, f64::max);
    let labels: Vec<String> = bars.iter().map(|(l, _)| l.clone()).collect();
    let chars = label_chars(w, n);
    let legend = vec![
        ("termination".to_string(), Mark::Swatch(TERM_COLOR)),
        ("stealing".to_string(), Mark::Swatch(STEAL_COLOR)),
        ("root tasks".to_string(), Mark::Swatch(ROOT_COLOR)),
    ];
    framed(
        w,
        380,
        "GC worker time breakdown (median over runs)",
        "worker time in",
        &legend,
        |plot| {
            let mut chart = category_chart(
                plot,
                &Axes {
                    caption: None,
                    n,
                    y_top: top(y_max),
                    x_desc: axis,
                    y_desc: "worker time summed over GC workers (ms)",
                    labels: &labels,
                    chars,
                },
            )?;
            let text = TextStyle::from((FONT, 12).into_font())
                .color(&WHITE)
                .pos(Pos::new(HPos::Center, VPos::Center));
            for (i, (_, b)) in bars.iter().enumerate() {
                let Some(b) = b else { continue };
                let sum = total(b);
                let x = i as f64;
                let mut base = 0.0;
                for (v, c) in [
                    (b.root_ms, ROOT_COLOR),
                    (b.steal_ms, STEAL_COLOR),
                    (b.termination_ms, TERM_COLOR),
                ] {
                    if v <= 0.0 {
                        continue;
                    }
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.32, base), (x + 0.32, base + v)],
                        c.filled(),
                    )))?;
                    // Label segments tall enough to hold a line of text.
                    if sum > 0.0 && v / top(y_max) > 0.07 {
                        chart.draw_series(std::iter::once(Text::new(
                            format!("{:.0}%", 100.0 * v / sum),
                            (x, base + v / 2.0),
                            text.clone(),
                        )))?;
                    }
                    base += v;
                }
            }
            Ok(())
        },
    )
}

/// Stealing figures of one configuration (medians over runs).
pub struct StealBar {
    pub label: String,
    pub attempts: Option<f64>,
    pub failures: Option<f64>,
    pub failure_rate: Option<f64>,
}

/// 000 Fig. 9: steal attempts (split into successful and failed) and the failure rate.
pub fn stealing(axis: &str, bars: &[StealBar]) -> anyhow::Result<String> {
    let n = bars.len().max(1);
    let panel_w = (90 + 75 * n as u32).clamp(330, 700);
    let w = 2 * panel_w + LEGEND_W;
    let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
    let chars = ((panel_w as usize - 70) / n / 7).clamp(4, 30);
    let a_max = bars.iter().filter_map(|b| b.attempts).fold(0.0, f64::max);
    let legend = vec![
        ("failed attempts".to_string(), Mark::Swatch(FAIL_COLOR)),
        ("successful steals".to_string(), Mark::Swatch(OK_COLOR)),
    ];
    framed(
        w,
        380,
        "Work stealing (median over runs)",
        "steal attempts",
        &legend,
        |plot| {
            let (left, right) = plot.split_horizontally(panel_w);
            let mut a = category_chart(
                &left,
                &Axes {
                    caption: Some("steal attempts"),
                    n,
                    y_top: top(a_max),
                    x_desc: axis,
                    y_desc: "steal attempts per run",
                    labels: &labels,
                    chars,
                },
            )?;
            for (i, b) in bars.iter().enumerate() {
                let (Some(att), Some(fail)) = (b.attempts, b.failures) else {
                    continue;
                };
                let x = i as f64;
                let ok = (att - fail).max(0.0);
                a.draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.3, 0.0), (x + 0.3, ok)],
                    OK_COLOR.filled(),
                )))?;
                a.draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.3, ok), (x + 0.3, ok + fail.min(att))],
                    FAIL_COLOR.filled(),
                )))?;
            }
            let mut r = category_chart(
                &right,
                &Axes {
                    caption: Some("steal failure rate"),
                    n,
                    y_top: 105.0,
                    x_desc: axis,
                    y_desc: "failed / attempted steals (%)",
                    labels: &labels,
                    chars,
                },
            )?;
            let text = TextStyle::from((FONT, 12).into_font())
                .color(&INK)
                .pos(Pos::new(HPos::Center, VPos::Bottom));
            for (i, b) in bars.iter().enumerate() {
                let Some(rate) = b.failure_rate else { continue };
                let x = i as f64;
                if b.attempts == Some(0.0) {
                    r.draw_series(std::iter::once(Text::new(
                        "no steals",
                        (x, 1.0),
                        text.clone(),
                    )))?;
                    continue;
                }
                let pct = 100.0 * rate;
                r.draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.3, 0.0), (x + 0.3, pct)],
                    FAIL_COLOR.filled(),
                )))?;
                r.draw_series(std::iter::once(Text::new(
                    format!("{pct:.0}%"),
                    (x, pct + 1.0),
                    text.clone(),
                )))?;
            }
            Ok(())
        },
    )
}

/// One series of grouped bars: a value per category, optionally with a range (whiskers).
pub struct BarSeries {
    pub label: String,
    pub color: RGBColor,
    pub values: Vec<Option<f64>>,
    /// Smallest and largest value over the runs, drawn as a whisker on the bar.
    pub ranges: Vec<Option<(f64, f64)>>,
}

/// Grouped bars: for every category one bar per series side by side.
pub struct Bars<'a> {
    pub title: &'a str,
    pub legend_title: &'a str,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    pub categories: &'a [String],
    pub series: &'a [BarSeries],
    /// A horizontal line across the chart (e.g. 1 for ratios) and its legend text.
    pub reference: Option<(f64, &'a str)>,
    /// Decimals of the value written above each bar.
    pub decimals: usize,
}

impl<'a> Bars<'a> {
    /// Bars of `series` over `categories`, no legend title, no reference line, one decimal.
    pub fn new(
        title: &'a str,
        x_desc: &'a str,
        y_desc: &'a str,
        categories: &'a [String],
        series: &'a [BarSeries],
    ) -> Bars<'a> {
        Bars {
            title,
            legend_title: "",
            x_desc,
            y_desc,
            categories,
            series,
            reference: None,
            decimals: 1,
        }
    }

    /// With a title over the legend.
    pub fn legend(mut self, title: &'a str) -> Self {
        self.legend_title = title;
        self
    }

    /// With a horizontal line at `y` (legend: `what`).
    pub fn reference(mut self, y: f64, what: &'a str) -> Self {
        self.reference = Some((y, what));
        self
    }

    /// With `decimals` decimals in the values over the bars.
    pub fn decimals(mut self, decimals: usize) -> Self {
        self.decimals = decimals;
        self
    }
}

/// Grouped bars with whiskers (the figures of 000 Fig. 10 and the bench kinds).
pub fn bars(b: &Bars) -> anyhow::Result<String> {
    let n = b.categories.len().max(1);
    let k = b.series.len().max(1);
    let w = (LEGEND_W + 120 + (34 * k as u32 + 26).max(105) * n as u32).clamp(620, 1400);
    let y_max = b
        .series
        .iter()
        .flat_map(|s| {
            let tops = s.ranges.iter().flatten().map(|r| r.1);
            s.values.iter().flatten().copied().chain(tops)
        })
        .chain(b.reference.map(|r| r.0))
        .fold(0.0, f64::max);
    let chars = label_chars(w, n);
    let mut legend: Vec<(String, Mark)> = b
        .series
        .iter()
        .map(|s| (s.label.clone(), Mark::Swatch(s.color)))
        .collect();
    if let Some((_, what)) = b.reference {
        legend.push((what.to_string(), Mark::Line(INK)));
    }
    if b.series
        .iter()
        .any(|s| s.ranges.iter().any(Option::is_some))
    {
        legend.push(("min–max over runs".to_string(), Mark::Line(WHISKER)));
    }
    framed(w, 390, b.title, b.legend_title, &legend, |plot| {
        let mut chart = category_chart(
            plot,
            &Axes {
                caption: None,
                n,
                y_top: top(y_max),
                x_desc: b.x_desc,
                y_desc: b.y_desc,
                labels: b.categories,
                chars,
            },
        )?;
        let slot = 0.8 / k as f64;
        let text = TextStyle::from((FONT, 11).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        for (j, series) in b.series.iter().enumerate() {
            for (i, value) in series.values.iter().enumerate() {
                let Some(v) = *value else { continue };
                let left = i as f64 - 0.4 + j as f64 * slot;
                let mid = left + slot / 2.0;
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(left + 0.08 * slot, 0.0), (left + 0.92 * slot, v)],
                    series.color.filled(),
                )))?;
                let mut label_at = v;
                if let Some(Some((lo, hi))) = series.ranges.get(i) {
                    let cap = slot * 0.2;
                    for path in [
                        vec![(mid, *lo), (mid, *hi)],
                        vec![(mid - cap, *lo), (mid + cap, *lo)],
                        vec![(mid - cap, *hi), (mid + cap, *hi)],
                    ] {
                        chart.draw_series(std::iter::once(PathElement::new(
                            path,
                            WHISKER.stroke_width(2),
                        )))?;
                    }
                    label_at = label_at.max(*hi);
                }
                if n * k <= 24 {
                    chart.draw_series(std::iter::once(Text::new(
                        format!("{v:.*}", b.decimals),
                        (mid, label_at + top(y_max) * 0.01),
                        text.clone(),
                    )))?;
                }
            }
        }
        if let Some((y, _)) = b.reference {
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(-0.5, y), (n as f64 - 0.5, y)],
                INK.stroke_width(1),
            )))?;
        }
        Ok(())
    })
}

/// One line of a sweep: medians at each varied value (`None` where no run finished).
pub struct Curve {
    pub label: String,
    pub color: RGBColor,
    pub gc_ms: Vec<Option<f64>>,
    pub wall_ms: Vec<Option<f64>>,
}

/// 000 Fig. 3c / 12 / 14: median GC time and wall time against the varied value.
pub fn scalability(key: &str, values: &[String], curves: &[Curve]) -> anyhow::Result<String> {
    let n = values.len().max(1);
    let panel_w = (120 + 70 * n as u32).clamp(380, 700);
    let w = 2 * panel_w + LEGEND_W;
    let legend: Vec<(String, Mark)> = curves
        .iter()
        .map(|c| (c.label.clone(), Mark::LineDot(c.color)))
        .collect();
    framed(
        w,
        400,
        &format!("Scalability: median times against {key}"),
        "series",
        &legend,
        |plot| {
            let (left, right) = plot.split_horizontally(panel_w);
            let gc: fn(&Curve) -> &[Option<f64>] = |c| &c.gc_ms;
            let wall: fn(&Curve) -> &[Option<f64>] = |c| &c.wall_ms;
            for (area, title, what, get) in [
                (&left, "GC time", "GC time (ms, all pauses of a run)", gc),
                (&right, "wall time", "wall time (ms)", wall),
            ] {
                let y_max = curves
                    .iter()
                    .flat_map(get)
                    .flatten()
                    .fold(0.0, |a: f64, &b| a.max(b));
                let mut chart = category_chart(
                    area,
                    &Axes {
                        caption: Some(title),
                        n,
                        y_top: top(y_max),
                        x_desc: key,
                        y_desc: what,
                        labels: values,
                        chars: 8,
                    },
                )?;
                for c in curves {
                    let pts: Vec<(f64, f64)> = get(c)
                        .iter()
                        .enumerate()
                        .filter_map(|(i, v)| v.map(|v| (i as f64, v)))
                        .collect();
                    chart.draw_series(LineSeries::new(pts.clone(), c.color.stroke_width(2)))?;
                    chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.color.filled())))?;
                }
            }
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorten_keeps_short_and_cuts_long() {
        assert_eq!(shorten("vanilla", 10), "vanilla");
        assert_eq!(shorten("+live-termination", 8), "+liv…ion");
        assert_eq!(shorten("optimized@gc-threads=4", 12), "optimi…ads=4");
    }

    #[test]
    fn axis_numbers_are_short() {
        assert_eq!(axis_number(0.0), "0");
        assert_eq!(axis_number(0.25), "0.25");
        assert_eq!(axis_number(3.0), "3");
        assert_eq!(axis_number(250.0), "250");
        assert_eq!(axis_number(25_000.0), "25k");
    }

    #[test]
    fn heat_runs_from_light_to_dark() {
        assert_eq!(heat(0.0), RGBColor(247, 251, 255));
        assert_eq!(heat(1.0), RGBColor(8, 48, 107));
    }

    #[test]
    fn plots_render_with_no_data() {
        let empty = TaskTotals::default();
        assert!(task_distribution("t", &empty, 0.0, &[])
            .unwrap()
            .contains("<svg"));
        assert!(cpu_heatmap("t", &Occupancy::default())
            .unwrap()
            .contains("<svg"));
        assert!(pause_timeline(&[]).unwrap().contains("<svg"));
        assert!(time_breakdown("c", &[]).unwrap().contains("<svg"));
        assert!(stealing("c", &[]).unwrap().contains("<svg"));
        assert!(scalability("k", &[], &[]).unwrap().contains("<svg"));
        let empty = Bars::new("t", "x", "y", &[], &[]).reference(1.0, "baseline");
        assert!(bars(&empty).unwrap().contains("<svg"));
    }
}

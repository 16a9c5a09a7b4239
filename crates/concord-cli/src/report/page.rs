//! The HTML page: header, warnings, configurations, the table of medians, findings, the plots
//! and the list of runs. Self-contained: inline CSS, inline SVG, no scripts, fonts or links to
//! anything outside the page.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use plotters::style::RGBColor;
use serde_json::Value;

use super::kinds;
use super::model::{self, Configuration, Experiment, Run};
use super::plots::{self, Curve, PauseSeries, StealBar};
use crate::experiment::results::PaperRecord;

/// Escape text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Milliseconds with about three significant digits.
fn ms(v: Option<f64>) -> String {
    match v {
        None => "—".into(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) if v.abs() >= 1.0 => format!("{v:.2}"),
        Some(v) => format!("{v:.3}"),
    }
}

fn num(v: Option<f64>, decimals: usize) -> String {
    v.map(|v| format!("{v:.decimals$}"))
        .unwrap_or_else(|| "—".into())
}

fn pct(v: Option<f64>) -> String {
    v.map(|v| format!("{:.1}%", 100.0 * v))
        .unwrap_or_else(|| "—".into())
}

/// The failure rate, or "no steals" when nothing was attempted.
fn failed_share(attempts: Option<f64>, rate: Option<f64>) -> String {
    if attempts == Some(0.0) {
        "no steals".into()
    } else {
        pct(rate)
    }
}

pub(crate) fn hex(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

pub(crate) fn swatch(c: RGBColor) -> String {
    format!("<span class=\"sw\" style=\"background:{}\"></span>", hex(c))
}

/// `a / b` as "0.74×", coloured when lower (better) or higher (worse) by more than 3 %.
fn ratio_cell(a: Option<f64>, b: Option<f64>, is_baseline: bool) -> String {
    if is_baseline {
        return "<td class=\"r base\">1.00×</td>".into();
    }
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => {
            let r = a / b;
            let class = if r < 0.97 {
                "r better"
            } else if r > 1.03 {
                "r worse"
            } else {
                "r"
            };
            format!("<td class=\"{class}\">{r:.2}×</td>")
        }
        _ => "<td class=\"r\">—</td>".into(),
    }
}

/// An inline `<svg>` without the XML namespace attribute (HTML knows it), so the page names
/// no URL at all.
pub(crate) fn inline_svg(svg: &str) -> String {
    svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1)
        .replacen(" xmlns:xlink=\"http://www.w3.org/1999/xlink\"", "", 1)
}

pub(crate) const CSS: &str = r#"
:root { --ink:#222; --muted:#666; --line:#ddd; --bg:#fff; --soft:#f6f7f9; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--ink); background: var(--bg); margin: 0; line-height: 1.45; }
main { max-width: 1280px; margin: 0 auto; padding: 24px 28px 60px; }
h1 { font-size: 1.7em; margin: 0 0 4px; }
h2 { font-size: 1.3em; margin: 36px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.05em; margin: 12px 0 4px; }
.sub { color: var(--muted); margin: 0 0 16px; }
table.meta td { border: 0; padding: 2px 16px 2px 0; }
table.meta td:first-child { color: var(--muted); white-space: nowrap; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.92em;
       background: var(--soft); padding: 1px 4px; border-radius: 3px; overflow-wrap: anywhere; }
nav { margin: 16px 0; font-size: 0.95em; }
nav a { margin-right: 14px; color: #2b5d8a; }
.warn { background: #fff4e5; border: 1px solid #f0b35c; border-radius: 6px; padding: 10px 14px; margin: 14px 0; }
.warn h3 { margin-top: 0; color: #8a4b00; }
.warn ul { margin: 4px 0; padding-left: 20px; }
.ok { color: #2e7d32; } .bad { color: #c62828; font-weight: 600; }
table { border-collapse: collapse; margin: 8px 0; font-size: 0.92em; }
th, td { padding: 5px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: var(--soft); font-weight: 600; font-size: 0.95em; }
td.n, td.r, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.r { color: var(--muted); }
td.r.better { color: #2e7d32; font-weight: 600; } td.r.worse { color: #c62828; font-weight: 600; }
td.r.base { color: #999; }
.scroll { overflow-x: auto; }
table.data td:first-child, td.nw { white-space: nowrap; }
.chip { display: inline-block; background: var(--soft); border: 1px solid var(--line); border-radius: 10px;
        padding: 0 7px; margin: 1px 2px; font-size: 0.85em; font-family: ui-monospace, Menlo, Consolas, monospace; }
.sw { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
figure { margin: 10px 0 20px; }
figure svg { max-width: 100%; height: auto; display: block; border: 1px solid var(--line); border-radius: 4px; }
figcaption, .caption { color: #444; font-size: 0.93em; margin-top: 6px; max-width: 980px; }
.grid figure { display: inline-block; vertical-align: top; width: calc(50% - 14px); min-width: 420px; margin: 0 10px 18px 0; }
.empty { border: 1px dashed #bbb; border-radius: 4px; padding: 24px; color: var(--muted); background: var(--soft); }
ul.findings li { margin: 3px 0; }
details summary { cursor: pointer; color: #2b5d8a; margin: 8px 0; }
footer { margin-top: 40px; color: var(--muted); font-size: 0.85em; }
"#;

/// Workload measurements worth a column: numeric, not Concord's own, and named like a
/// measurement (`latency_p99_us`, `throughput_ops_s`, …).
fn measurement_keys(exp: &Experiment) -> Vec<String> {
    let mut keys = BTreeSet::new();
    for run in exp.runs.iter().filter(|r| r.ok()) {
        let Some(Value::Object(map)) = &run.summary else {
            continue;
        };
        for (k, v) in map {
            let lower = k.to_ascii_lowercase();
            let named = ["latency", "throughput", "ops", "per_s", "requests"]
                .iter()
                .any(|w| lower.contains(w))
                || ["_us", "_ms", "_ns", "_s"]
                    .iter()
                    .any(|w| lower.ends_with(w));
            if named && !model::STANDARD_KEYS.contains(&k.as_str()) && model::as_f64(v).is_some() {
                keys.insert(k.clone());
            }
        }
    }
    let mut keys: Vec<String> = keys.into_iter().collect();
    keys.sort_by(|a, b| {
        measurement_order(a)
            .total_cmp(&measurement_order(b))
            .then(a.cmp(b))
    });
    keys
}

/// Sort percentiles numerically: p50 < p90 < p99 < p999.
fn measurement_order(key: &str) -> f64 {
    for part in key.split(['_', ' ', '-']) {
        if let Some(digits) = part.strip_prefix('p') {
            if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
                let v: f64 = digits.parse().unwrap_or(0.0);
                // p999 → 99.9, p99 → 99, p50 → 50.
                return if digits.len() > 2 {
                    v / 10f64.powi(digits.len() as i32 - 2)
                } else {
                    v
                };
            }
        }
    }
    -1.0
}

/// What the page needs to know per configuration, computed once.
struct Row<'a> {
    config: &'a Configuration,
    /// The label in plots: `vanilla@4` for `vanilla@gc-threads=4` in a sweep.
    short: String,
    /// Colour in the summary table and the scalability plot (a sweep: its series').
    color: RGBColor,
    /// Colour in the pause timeline (a sweep: its series' colour, darker for later values).
    line_color: RGBColor,
    /// Index of the configuration ratios are taken against.
    baseline: usize,
}

/// The whole page.
pub fn render(exp: &Experiment) -> anyhow::Result<String> {
    let rows = rows(exp);
    let mut h = String::new();
    let title = title(exp);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n",
        esc(&title)
    );
    header(&mut h, exp, &title);
    warnings(&mut h, exp);
    let sweep = exp.is_sweep();
    let mut kind_sections = String::new();
    let kind_nav: String = kinds::sections(&mut kind_sections, exp)?
        .iter()
        .map(|(id, title)| format!("<a href=\"#{id}\">{title}</a>"))
        .collect();
    // The memory-placement benchmark runs no collector: no section about collections.
    let collections = kinds::has_collections(exp);
    let collection_nav = if collections {
        "<a href=\"#task-distribution\">Task distribution</a><a href=\"#cpu-heatmap\">Threads on CPUs</a>\
         <a href=\"#pause-timeline\">Pause timeline</a><a href=\"#gc-time-breakdown\">GC time breakdown</a>\
         <a href=\"#stealing\">Stealing</a>"
    } else {
        ""
    };
    let _ = writeln!(
        h,
        "<nav><a href=\"#configurations\">Configurations</a><a href=\"#summary\">Summary</a>\
         {collection_nav}{}{kind_nav}<a href=\"#runs\">Runs</a></nav>",
        if sweep {
            "<a href=\"#scalability\">Scalability</a>"
        } else {
            ""
        }
    );
    configurations(&mut h, exp, &rows);
    summary(&mut h, exp, &rows);
    if collections {
        task_distribution(&mut h, exp, &rows)?;
        cpu_heatmap(&mut h, exp, &rows)?;
        pause_timeline(&mut h, exp, &rows)?;
        breakdown(&mut h, exp, &rows)?;
        stealing(&mut h, exp, &rows)?;
    }
    if sweep {
        scalability(&mut h, exp)?;
    }
    h.push_str(&kind_sections);
    runs(&mut h, exp);
    if let Some(paper) = &exp.file.paper {
        head_section_with_paper(&mut h, paper);
    }
    let _ = writeln!(
        h,
        "<footer>Written by <code>concord report</code> from <code>{}</code>. Medians are over the runs of a configuration that finished; per-run pictures show each configuration's median run by GC time (the faster of the two middle runs when their number is even).</footer>\n</main>\n</body>\n</html>",
        esc(&exp.dir.display().to_string())
    );
    Ok(h)
}

fn title(exp: &Experiment) -> String {
    let size = exp.file.size.map(|s| format!(" {s}")).unwrap_or_default();
    let workload = if exp.file.workload.is_empty() {
        "(workload not named)".to_string()
    } else {
        exp.file.workload.clone()
    };
    let what = match (&exp.file.vary, exp.file.kind.as_str()) {
        (Some(v), _) => format!("sweep of {}", v.key),
        (None, "") => "experiment".into(),
        (None, k) => k.to_string(),
    };
    format!("Concord {what}: {workload}{size}")
}

fn rows(exp: &Experiment) -> Vec<Row<'_>> {
    let configs = &exp.configurations;
    let series = exp.series();
    let values = exp.sweep_values();
    let sweep = exp.is_sweep();
    configs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            // Like with like: a sweep's first configuration with the same value, else the
            // first of the same group (os-bench: the same interference).
            let baseline = if sweep {
                configs.iter().position(|o| o.value == c.value).unwrap_or(0)
            } else {
                configs.iter().position(|o| o.group == c.group).unwrap_or(0)
            };
            let grouped = sweep && series.len() < configs.len();
            let (short, color, line_color) = if grouped {
                let color = plots::color(series.iter().position(|s| *s == c.series).unwrap_or(i));
                // Shade by the position of the value: light for the first, dark for the last.
                let k = values
                    .iter()
                    .position(|v| Some(v) == c.value.as_ref())
                    .unwrap_or(0);
                let t = if values.len() > 1 {
                    -0.45 + 0.8 * k as f64 / (values.len() - 1) as f64
                } else {
                    0.0
                };
                let short = match &c.value {
                    Some(v) if c.series != c.label => format!("{}@{v}", c.series),
                    _ => c.label.clone(),
                };
                (short, color, plots::shade(color, t))
            } else {
                (c.label.clone(), plots::color(i), plots::color(i))
            };
            Row {
                config: c,
                short,
                color,
                line_color,
                baseline,
            }
        })
        .collect()
}

fn header(h: &mut String, exp: &Experiment, title: &str) {
    let f = &exp.file;
    let total = exp.runs.len();
    let ok = exp.runs.iter().filter(|r| r.ok()).count();
    let failed = exp.failed_runs().count();
    let rounds = exp
        .runs
        .iter()
        .map(|r| r.entry.round)
        .collect::<BTreeSet<_>>()
        .len();
    let _ = writeln!(h, "<header>\n<h1>{}</h1>", esc(title));
    let _ = writeln!(
        h,
        "<p class=\"sub\">{} configuration{}, {} run{} in {} round{}: {} finished{}.</p>",
        exp.configurations.len(),
        plural(exp.configurations.len()),
        total,
        plural(total),
        rounds,
        plural(rounds),
        ok,
        if failed > 0 {
            format!(", <span class=\"bad\">{failed} failed</span>")
        } else {
            String::new()
        }
    );
    let _ = writeln!(h, "<table class=\"meta\">");
    let mut item = |k: &str, v: String| {
        let _ = writeln!(h, "<tr><td>{k}</td><td>{v}</td></tr>");
    };
    item("workload", esc(&f.workload));
    if !f.command.is_empty() {
        item("command", format!("<code>{}</code>", esc(&f.command)));
    }
    if !f.started.is_empty() {
        item("started", esc(&f.started));
    }
    item("kind", esc(if f.kind.is_empty() { "?" } else { &f.kind }));
    if !f.parameters.is_empty() {
        let chips: String = f
            .parameters
            .iter()
            .map(|(k, v)| {
                let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                format!("<span class=\"chip\">{}={}</span>", esc(k), esc(&v))
            })
            .collect();
        item("parameters", chips);
    }
    if let Some(v) = &f.vary {
        item(
            "varied",
            format!(
                "<code>{}</code> over {}",
                esc(&v.key),
                v.values
                    .iter()
                    .map(|x| format!("<span class=\"chip\">{}</span>", esc(x)))
                    .collect::<String>()
            ),
        );
    }
    item(
        "status",
        match (f.interrupted, f.complete) {
            (false, true) => "<span class=\"ok\">complete</span>".into(),
            (true, _) => "<span class=\"bad\">interrupted</span>".into(),
            (false, false) => "<span class=\"bad\">incomplete</span>".into(),
        },
    );
    item(
        "results",
        format!("<code>{}</code>", esc(&exp.dir.display().to_string())),
    );
    if let Some(paper) = &f.paper {
        let anchor = if paper.section.is_empty() {
            String::new()
        } else {
            format!(" (section <a href=\"#{0}\">{0}</a>)", esc(&paper.section))
        };
        item(
            "reproduces",
            format!(
                "<b>{}</b>{anchor}<br>{}",
                esc(&paper_caption(paper)),
                paper_status(paper)
            ),
        );
    }
    let _ = writeln!(h, "</table>\n</header>");
}

/// The paper's number and caption: `000 Figure 10 — Overall and GC time gains …`.
fn paper_caption(paper: &PaperRecord) -> String {
    let number = paper.id.split_once('-').map_or("", |(n, _)| n);
    format!("{number} {} — {}", paper.number, paper.title)
}

/// The entry's status and, unless it is `reproduced`, why: `partial: on stand-in …`.
fn paper_status(paper: &PaperRecord) -> String {
    let status = format!("<span class=\"chip\">{}</span>", esc(&paper.status));
    if paper.reason.is_empty() {
        status
    } else {
        format!("{status}: {}", esc(&paper.reason))
    }
}

/// Gives the section that draws the paper's figure (`<h2 id="SECTION">`) the paper's number and
/// caption as its heading, with the entry's status and reason and Concord's own title beneath.
/// A section the page does not have (or none named) leaves the page as it is: the header
/// names the figure in any case.
fn head_section_with_paper(h: &mut String, paper: &PaperRecord) {
    if paper.section.is_empty() {
        return;
    }
    let open = format!("<h2 id=\"{}\">", esc(&paper.section));
    let Some(start) = h.find(&open) else {
        return;
    };
    let title_start = start + open.len();
    let Some(title_len) = h[title_start..].find("</h2>") else {
        return;
    };
    let concord_title = h[title_start..title_start + title_len].to_string();
    let heading = format!(
        "{open}{}</h2>\n<p class=\"caption\">{} — Concord's section: {concord_title}</p>",
        esc(&paper_caption(paper)),
        paper_status(paper)
    );
    h.replace_range(start..title_start + title_len + "</h2>".len(), &heading);
}

/// `items` as the `<li>` elements of a list.
fn list_items(items: &[String]) -> String {
    items.iter().map(|i| format!("<li>{i}</li>")).collect()
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn warnings(h: &mut String, exp: &Experiment) {
    let f = &exp.file;
    let mut items = Vec::new();
    if f.interrupted {
        items.push(
            "The experiment was <b>interrupted</b>: some runs never ran, so medians rest on fewer rounds than planned."
                .to_string(),
        );
    } else if !f.complete {
        items.push(
            "The experiment is <b>incomplete</b> (still running, or stopped before writing its last run): medians rest on the runs present."
                .to_string(),
        );
    }
    for run in exp.failed_runs() {
        items.push(format!(
            "Run <b>{}</b>{} round {} <span class=\"bad\">failed</span>{}",
            esc(&run.entry.configuration),
            run.value
                .as_ref()
                .map(|v| format!(" ({})", esc(v)))
                .unwrap_or_default(),
            run.entry.round + 1,
            run.entry
                .error
                .as_ref()
                .map(|e| format!(": <code>{}</code>", esc(e)))
                .unwrap_or_else(|| " (no error message)".into())
        ));
    }
    for c in &exp.configurations {
        if exp.ok_runs(c).next().is_none() {
            items.push(format!(
                "Configuration <b>{}</b> has no finished run: it is shown without figures.",
                esc(&c.label)
            ));
        }
    }
    items.extend(exp.notes.iter().map(|n| esc(n)));
    if exp.runs.is_empty() {
        items.push("The experiment lists no runs.".into());
    }
    if items.is_empty() {
        return;
    }
    let _ = writeln!(
        h,
        "<div class=\"warn\"><h3>Read with care</h3><ul>{}</ul></div>",
        list_items(&items)
    );
}

fn configurations(h: &mut String, exp: &Experiment, rows: &[Row]) {
    let _ = writeln!(
        h,
        "<h2 id=\"configurations\">Configurations</h2>\n<div class=\"scroll\"><table class=\"data\">\n\
         <tr><th>configuration</th><th>preset</th>{}<th class=\"n\">runs finished</th><th>settings</th></tr>",
        if exp.is_sweep() {
            "<th>value</th>"
        } else {
            ""
        }
    );
    for row in rows {
        let c = row.config;
        let ok = exp.ok_runs(c).count();
        let _ = writeln!(
            h,
            "<tr><td>{}{}</td><td>{}</td>{}<td class=\"n\">{ok} of {}</td><td>{}</td></tr>",
            swatch(row.color),
            esc(&c.label),
            esc(c.preset.as_deref().unwrap_or("—")),
            if exp.is_sweep() {
                format!(
                    "<td>{}</td>",
                    esc(c.value.as_deref().unwrap_or("(per run)"))
                )
            } else {
                String::new()
            },
            c.runs.len(),
            if c.settings.is_empty() && c.interference.is_none() {
                "—".to_string()
            } else {
                c.settings
                    .iter()
                    .chain(
                        c.interference
                            .as_ref()
                            .map(|i| format!("interference={i}"))
                            .iter(),
                    )
                    .map(|s| format!("<span class=\"chip\">{}</span>", esc(s)))
                    .collect::<String>()
            }
        );
    }
    let _ = writeln!(h, "</table></div>");
}

fn summary(h: &mut String, exp: &Experiment, rows: &[Row]) {
    let extra = measurement_keys(exp);
    let sweep = exp.is_sweep();
    let grouped = exp.configurations.iter().any(|c| c.group.is_some());
    let baseline_words = if sweep {
        "the first configuration with the same value"
    } else if grouped {
        "the first configuration of the same group"
    } else {
        "the first configuration"
    };
    let _ = writeln!(
        h,
        "<h2 id=\"summary\">Summary</h2>\n<p class=\"caption\">Medians over each configuration's finished runs. \
         Ratios (×) are to {baseline_words}; <span class=\"ok\">green</span> is lower (better), \
         <span class=\"bad\">red</span> higher. GC time is the sum of all pauses of a run.</p>"
    );
    let _ = write!(
        h,
        "<div class=\"scroll\"><table class=\"data\">\n<tr><th>configuration</th>\
         <th class=\"n\">GC time ms</th><th class=\"n\">×</th><th class=\"n\">wall ms</th><th class=\"n\">×</th>\
         <th class=\"n\">collections</th><th class=\"n\">pauses ms<br>p50 / p99 / max</th>\
         <th class=\"n\">steal<br>attempts</th><th class=\"n\">steals<br>failed</th><th class=\"n\">root-task<br>imbalance</th>\
         <th class=\"n\">CPUs<br>used</th>"
    );
    for k in &extra {
        let _ = write!(h, "<th class=\"n\">{}</th>", esc(k));
    }
    let _ = writeln!(h, "<th>result</th></tr>");
    for (i, row) in rows.iter().enumerate() {
        let c = row.config;
        let base = rows[row.baseline].config;
        let m = |f: &dyn Fn(&Run) -> Option<f64>| exp.median_of(c, f);
        let b = |f: &dyn Fn(&Run) -> Option<f64>| exp.median_of(base, f);
        let gc = m(&|r| r.gc_ms());
        let wall = m(&|r| r.num("wall_ms"));
        let full = m(&|r| r.num("full_count"));
        let collections = match (m(&|r| r.num("gc_count")), full) {
            (Some(n), Some(f)) if f > 0.0 => format!("{n:.0} ({f:.0} full)"),
            (Some(n), _) => format!("{n:.0}"),
            _ => "—".into(),
        };
        let _ = write!(
            h,
            "<tr><td>{}{}</td><td class=\"n\">{}</td>{}<td class=\"n\">{}</td>{}\
             <td class=\"n\">{collections}</td><td class=\"n\">{} / {} / {}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
            swatch(row.color),
            esc(&c.label),
            ms(gc),
            ratio_cell(gc, b(&|r| r.gc_ms()), row.baseline == i),
            ms(wall),
            ratio_cell(wall, b(&|r| r.num("wall_ms")), row.baseline == i),
            ms(m(&|r| r.num("pause_p50_ms"))),
            ms(m(&|r| r.num("pause_p99_ms"))),
            ms(m(&|r| r.num("pause_max_ms"))),
            num(m(&|r| r.num("steal_attempts")), 0),
            failed_share(
                m(&|r| r.num("steal_attempts")),
                m(&|r| r.failure_rate())
            ),
            num(m(&|r| r.num("root_task_imbalance")), 2),
            num(m(&|r| r.num("mean_cpus_used")), 2),
        );
        for k in &extra {
            let _ = write!(h, "<td class=\"n\">{}</td>", num(m(&|r| r.num(k)), 1));
        }
        let _ = writeln!(h, "<td class=\"nw\">{}</td></tr>", result_cell(exp, c));
    }
    let _ = writeln!(
        h,
        "</table></div>\n<p class=\"caption\">Steals failed: failed over attempted steals. \
         Root-task imbalance: the most root tasks one GC worker ran over the mean per worker, averaged over collections \
         (1 = even; N = one of N workers ran them all). CPUs used: distinct CPUs the GC workers were seen on per collection. \
         Result: the workload's checksum and, when verification was on, the heap verifier.</p>"
    );
    findings(h, exp, rows);
}

/// Checksums and heap verification of the configuration's runs.
fn result_cell(exp: &Experiment, c: &Configuration) -> String {
    let runs: Vec<&Run> = exp.ok_runs(c).collect();
    if runs.is_empty() {
        return "—".into();
    }
    let flag = |key: &str| -> (usize, usize) {
        let vals: Vec<bool> = runs
            .iter()
            .filter_map(|r| r.summary.as_ref()?.get(key)?.as_bool())
            .collect();
        (vals.iter().filter(|&&v| v).count(), vals.len())
    };
    let mut parts = Vec::new();
    for (key, good_words, bad_words) in [
        ("checksum_ok", "checksum ok", "checksum wrong"),
        ("verified", "heap verified", "verification failed"),
    ] {
        match flag(key) {
            (_, 0) => {}
            (good, n) if good == n => parts.push(format!("<span class=\"ok\">{good_words}</span>")),
            (good, n) => parts.push(format!(
                "<span class=\"bad\">{bad_words} in {} of {n}</span>",
                n - good
            )),
        }
    }
    if parts.is_empty() {
        "—".into()
    } else {
        parts.join(", ")
    }
}

/// A few sentences that say what the table says.
fn findings(h: &mut String, exp: &Experiment, rows: &[Row]) {
    let mut items = Vec::new();
    if exp.is_sweep() {
        let values = exp.sweep_values();
        let key = exp
            .file
            .vary
            .as_ref()
            .map(|v| v.key.as_str())
            .unwrap_or("value");
        for s in exp.series() {
            let pts: Vec<(&String, f64)> = values
                .iter()
                .filter_map(|v| Some((v, exp.series_median(&s, v, Run::gc_ms)?)))
                .collect();
            if let (Some(first), Some(last)) = (pts.first(), pts.last()) {
                if pts.len() >= 2 {
                    let best = pts
                        .iter()
                        .min_by(|a, b| a.1.total_cmp(&b.1))
                        .expect("not empty");
                    items.push(format!(
                        "<b>{}</b>: median GC time {} ms at {key}={} and {} ms at {key}={} ({:.2}×); lowest at {key}={}.",
                        esc(&s),
                        ms(Some(first.1)),
                        esc(first.0),
                        ms(Some(last.1)),
                        esc(last.0),
                        if first.1 > 0.0 { last.1 / first.1 } else { f64::NAN },
                        esc(best.0)
                    ));
                }
            }
        }
    } else {
        for (i, row) in rows.iter().enumerate() {
            if row.baseline == i {
                continue;
            }
            let b = rows[row.baseline].config;
            let bm = |f: fn(&Run) -> Option<f64>| exp.median_of(b, f);
            let c = row.config;
            let cm = |f: fn(&Run) -> Option<f64>| exp.median_of(c, f);
            let (Some(gc), Some(bgc)) = (cm(Run::gc_ms), bm(Run::gc_ms)) else {
                continue;
            };
            if bgc <= 0.0 {
                continue;
            }
            let mut s = format!(
                "<b>{}</b>: GC time {:.2}× {} ({} ms vs {} ms)",
                esc(&c.label),
                gc / bgc,
                esc(&b.label),
                ms(Some(gc)),
                ms(Some(bgc))
            );
            if let (Some(w), Some(bw)) = (cm(|r| r.num("wall_ms")), bm(|r| r.num("wall_ms"))) {
                if bw > 0.0 {
                    let _ = write!(s, ", wall time {:.2}×", w / bw);
                }
            }
            if let (Some(f), Some(bf)) = (cm(Run::failure_rate), bm(Run::failure_rate)) {
                let _ = write!(
                    s,
                    ", steal failure rate {} vs {}",
                    pct(Some(f)),
                    pct(Some(bf))
                );
            }
            if let (Some(u), Some(bu)) = (
                cm(|r| r.num("mean_cpus_used")),
                bm(|r| r.num("mean_cpus_used")),
            ) {
                let _ = write!(s, ", GC workers on {u:.1} CPUs vs {bu:.1}");
            }
            s.push('.');
            items.push(s);
        }
    }
    if !items.is_empty() {
        let _ = writeln!(
            h,
            "<h3>At a glance</h3>\n<ul class=\"findings\">{}</ul>\n<p class=\"caption\">Absolute times on a shared 2-core machine are noisy: trust ratios of runs made side by side, and more rounds more.</p>",
            list_items(&items)
        );
    }
}

pub(crate) fn figure(h: &mut String, svg: &str, caption: &str) {
    let _ = writeln!(
        h,
        "<figure>\n{}\n<figcaption>{caption}</figcaption>\n</figure>",
        inline_svg(svg)
    );
}

pub(crate) fn empty(h: &mut String, what: &str) {
    let _ = writeln!(h, "<figure><div class=\"empty\">{what}</div></figure>");
}

/// One configuration's panel of a per-run picture: `svg` of its median run `run`, or why there
/// is none (`missing` says what the median run lacks).
fn run_panel(h: &mut String, label: &str, run: Option<&Run>, svg: Option<String>, missing: &str) {
    let label = esc(label);
    match (run, svg) {
        (Some(run), Some(svg)) => figure(
            h,
            &svg,
            &format!("{label}: median run by GC time ({}).", about_run(run)),
        ),
        (Some(run), None) => empty(
            h,
            &format!("{label}: the median run ({}) {missing}.", about_run(run)),
        ),
        (None, _) => empty(
            h,
            &format!("{label}: no finished run with collection records."),
        ),
    }
}

/// "median run by GC time: round 1, 31 collections (3 full)".
fn about_run(run: &Run) -> String {
    let records = run.records.as_deref().unwrap_or(&[]);
    let full = records.iter().filter(|r| r.is_full()).count();
    format!(
        "round {}, {} collection{}{}",
        run.entry.round + 1,
        records.len(),
        plural(records.len()),
        if full > 0 {
            format!(" ({full} full)")
        } else {
            String::new()
        }
    )
}

fn task_distribution(h: &mut String, exp: &Experiment, rows: &[Row]) -> anyhow::Result<()> {
    let _ = writeln!(
        h,
        "<h2 id=\"task-distribution\">Task distribution per GC thread</h2>\n<p class=\"caption\">\
         Each bar counts the tasks one GC worker ran over all collections of the configuration's median run (by GC time), stacked by task type (000 Fig. 4a / 8b). \
         A few workers executing most root tasks, next to workers that ran nothing but their steal task, means whoever reached the task queue first grabbed the roots and the others could only steal: \
         load imbalance. Even coloured stacks mean the root work was shared. The y axes are the same in every panel.</p>"
    );
    let totals: Vec<Option<(model::TaskTotals, &Run)>> = rows
        .iter()
        .map(|row| {
            let run = exp.representative(row.config)?;
            Some((model::task_totals(run.records.as_deref()?), run))
        })
        .collect();
    let mut types: Vec<String> = totals
        .iter()
        .flatten()
        .flat_map(|(t, _)| t.by_type.keys().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|t| t != "Steal")
        .collect();
    types.push("Steal".into());
    let types: Vec<(String, RGBColor)> = types
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let c = plots::task_color(&t, i);
            (t, c)
        })
        .collect();
    let y_max = totals
        .iter()
        .flatten()
        .flat_map(|(t, _)| (0..t.workers).map(|w| t.by_type.values().map(|r| r[w]).sum::<u64>()))
        .max()
        .unwrap_or(0) as f64;
    let _ = writeln!(h, "<div class=\"grid\">");
    for (row, t) in rows.iter().zip(&totals) {
        let svg = match t {
            Some((t, _)) if t.workers > 0 => Some(plots::task_distribution(
                &format!("Tasks per GC worker: {}", row.config.label),
                t,
                y_max,
                &types,
            )?),
            _ => None,
        };
        let run = t.as_ref().map(|(_, run)| *run);
        run_panel(h, &row.config.label, run, svg, "has no GC worker records");
    }
    let _ = writeln!(h, "</div>");
    Ok(())
}

fn cpu_heatmap(h: &mut String, exp: &Experiment, rows: &[Row]) -> anyhow::Result<()> {
    let _ = writeln!(
        h,
        "<h2 id=\"cpu-heatmap\">GC threads on CPUs</h2>\n<p class=\"caption\">\
         Each cell counts how often a GC worker was sampled on a CPU (with <code>sched_getcpu</code> at task boundaries) over all collections of the median run (000 Fig. 4b / 8a). \
         Dark cells piled into one column mean the GC threads were stacked on one CPU while other CPUs stayed idle, so the \"parallel\" phase ran one thread at a time; \
         dark cells spread over the columns mean the workers really ran in parallel. Columns are all CPUs the process could use when the run reported them.</p>"
    );
    let _ = writeln!(h, "<div class=\"grid\">");
    for row in rows {
        let run = exp.representative(row.config);
        let occ = run.and_then(|r| Some(model::occupancy(r.records.as_deref()?, r.usable_cpus())));
        let svg = match occ {
            Some(occ) if !occ.cpus.is_empty() && !occ.samples.is_empty() => Some(
                plots::cpu_heatmap(&format!("GC worker × CPU: {}", row.config.label), &occ)?,
            ),
            _ => None,
        };
        run_panel(h, &row.config.label, run, svg, "recorded no CPU samples");
    }
    let _ = writeln!(h, "</div>");
    Ok(())
}

fn pause_timeline(h: &mut String, exp: &Experiment, rows: &[Row]) -> anyhow::Result<()> {
    let _ = writeln!(h, "<h2 id=\"pause-timeline\">Pause timeline</h2>");
    let series: Vec<PauseSeries> = rows
        .iter()
        .filter_map(|row| {
            let run = exp.representative(row.config)?;
            let points = run
                .records
                .as_deref()?
                .iter()
                .map(|r| (r.start_ms, r.pause_ms, r.is_full()))
                .collect::<Vec<_>>();
            Some(PauseSeries {
                label: row.short.clone(),
                color: row.line_color,
                points,
            })
        })
        .collect();
    if series.iter().all(|s| s.points.is_empty()) {
        empty(
            h,
            "No collections were recorded, so there are no pauses to show.",
        );
        return Ok(());
    }
    let svg = plots::pause_timeline(&series)?;
    figure(
        h,
        &svg,
        "Each point is one stop-the-world pause of a configuration's median run, placed at the time it started; circles are young collections, triangles full ones. \
         A series that runs lower has shorter pauses; isolated spikes are the collections that hurt tail latency, and a denser series collects more often.",
    );
    Ok(())
}

/// The x axis title of per-configuration bars.
fn bar_axis(exp: &Experiment) -> String {
    match &exp.file.vary {
        Some(v) if exp.series().len() < exp.configurations.len() => {
            format!("configuration (name@{})", v.key)
        }
        _ => "configuration".into(),
    }
}

fn breakdown(h: &mut String, exp: &Experiment, rows: &[Row]) -> anyhow::Result<()> {
    let _ = writeln!(h, "<h2 id=\"gc-time-breakdown\">GC time breakdown</h2>");
    let bars: Vec<(String, Option<model::Breakdown>)> = rows
        .iter()
        .map(|row| {
            let c = row.config;
            let med = |f: fn(&model::Breakdown) -> f64| {
                exp.median_of(c, |r| r.breakdown().map(|b| f(&b)))
            };
            let b = match (
                med(|b| b.root_ms),
                med(|b| b.steal_ms),
                med(|b| b.termination_ms),
            ) {
                (Some(root_ms), Some(steal_ms), Some(termination_ms)) => Some(model::Breakdown {
                    root_ms,
                    steal_ms,
                    termination_ms,
                }),
                _ => None,
            };
            (row.short.clone(), b)
        })
        .collect();
    if bars.iter().all(|(_, b)| b.is_none()) {
        empty(h, "No run reported worker times.");
        return Ok(());
    }
    let svg = plots::time_breakdown(&bar_axis(exp), &bars)?;
    figure(
        h,
        &svg,
        "Time all GC workers together spent in root tasks (including draining the work they found), in stealing (attempts and stolen work) and in the termination protocol, median over runs (000 Fig. 6). \
         The parts overlap in wall-clock time, so a bar is busy-worker time, not pause time; a large stealing or termination share means workers spent the pause looking for work instead of doing it.",
    );
    Ok(())
}

fn stealing(h: &mut String, exp: &Experiment, rows: &[Row]) -> anyhow::Result<()> {
    let _ = writeln!(
        h,
        "<h2 id=\"stealing\">Steal attempts and failure rate</h2>"
    );
    let bars: Vec<StealBar> = rows
        .iter()
        .map(|row| {
            let c = row.config;
            StealBar {
                label: row.short.clone(),
                attempts: exp.median_of(c, |r| r.num("steal_attempts")),
                failures: exp.median_of(c, |r| r.num("steal_failures")),
                failure_rate: exp.median_of(c, Run::failure_rate),
            }
        })
        .collect();
    if bars.iter().all(|b| b.attempts.is_none()) {
        empty(h, "No run reported steal counts.");
        return Ok(());
    }
    let svg = plots::stealing(&bar_axis(exp), &bars)?;
    figure(
        h,
        &svg,
        "Left: steal attempts per run (median), split into successful steals and failed attempts; right: the share of attempts that failed (000 Fig. 9). \
         Fewer attempts with a lower failure rate mean idle workers find work where they look and stop looking sooner; many failed attempts are CPU time burnt during the pause.",
    );
    Ok(())
}

fn scalability(h: &mut String, exp: &Experiment) -> anyhow::Result<()> {
    let key = exp
        .file
        .vary
        .as_ref()
        .map(|v| v.key.clone())
        .unwrap_or_else(|| "value".into());
    let _ = writeln!(h, "<h2 id=\"scalability\">Scalability</h2>");
    let values = exp.sweep_values();
    let curves: Vec<Curve> = exp
        .series()
        .iter()
        .enumerate()
        .map(|(i, s)| Curve {
            label: s.clone(),
            color: plots::color(i),
            gc_ms: values
                .iter()
                .map(|v| exp.series_median(s, v, Run::gc_ms))
                .collect(),
            wall_ms: values
                .iter()
                .map(|v| exp.series_median(s, v, |r| r.num("wall_ms")))
                .collect(),
        })
        .collect();
    if values.is_empty() || curves.iter().all(|c| c.gc_ms.iter().all(Option::is_none)) {
        empty(
            h,
            "No finished run carries a value of the varied parameter.",
        );
        return Ok(());
    }
    let svg = plots::scalability(&key, &values, &curves)?;
    figure(
        h,
        &svg,
        &format!(
            "Median GC time (left) and wall time (right) of each series at each value of <code>{}</code>. {} \
             Gaps are values where no run finished.",
            esc(&key),
            scalability_hint(&key)
        ),
    );
    Ok(())
}

/// What to look for in the scalability curves of a sweep of `key`.
fn scalability_hint(key: &str) -> &'static str {
    match key {
        "gc-threads" => {
            "A GC-time curve that rises as GC threads are added means parallel GC scales poorly: \
             the threads stack on CPUs and steal in vain (000 Fig. 3c); a flat or falling curve means the extra threads help."
        }
        "mutators" => {
            "GC time that climbs with the number of mutators means collections grow with mutator activity and \
             load imbalance, and can bend the application's own scaling curve (000 Fig. 12)."
        }
        "heap" => {
            "A smaller heap collects more often, a larger one takes longer per collection; \
             the gap between the series shows whether a policy's gain holds at every heap size (000 Fig. 14)."
        }
        _ => "Compare the slopes: the series whose curve stays lower and flatter copes better with the change.",
    }
}

fn runs(h: &mut String, exp: &Experiment) {
    let sweep = exp.is_sweep();
    let _ = writeln!(
        h,
        "<h2 id=\"runs\">Runs</h2>\n<details{}><summary>All {} runs, in the order they ran</summary>\n<div class=\"scroll\"><table class=\"data\">\n\
         <tr><th class=\"n\">#</th><th>configuration</th>{}<th class=\"n\">round</th><th>status</th><th class=\"n\">GC time ms</th>\
         <th class=\"n\">wall ms</th><th class=\"n\">collections</th><th class=\"n\">steal failure rate</th><th>files / error</th></tr>",
        if exp.runs.len() <= 12 { " open" } else { "" },
        exp.runs.len(),
        if sweep { "<th>value</th>" } else { "" }
    );
    for (i, run) in exp.runs.iter().enumerate() {
        let n = i + 1;
        let status = if run.ok() {
            "<span class=\"ok\">ok</span>".to_string()
        } else if run.entry.status == "ok" {
            "<span class=\"bad\">unreadable</span>".to_string()
        } else {
            format!("<span class=\"bad\">{}</span>", esc(&run.entry.status))
        };
        let files = match &run.entry.error {
            Some(e) => format!("<code>{}</code>", esc(e)),
            None => {
                let mut parts: Vec<String> = [&run.entry.summary, &run.entry.records]
                    .iter()
                    .filter_map(|f| f.as_ref())
                    .map(|f| format!("<code>{}</code>", esc(f)))
                    .collect();
                if run.entry.status == "ok" && run.records.is_none() {
                    parts.push("<span class=\"bad\">(records missing)</span>".into());
                }
                parts.join(" ")
            }
        };
        let _ = writeln!(
            h,
            "<tr><td class=\"n\">{}</td><td>{}</td>{}<td class=\"n\">{}</td><td>{status}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{files}</td></tr>",
            n,
            esc(&run.entry.configuration),
            if sweep {
                format!("<td>{}</td>", esc(run.value.as_deref().unwrap_or("—")))
            } else {
                String::new()
            },
            run.entry.round + 1,
            ms(run.gc_ms()),
            ms(run.num("wall_ms")),
            num(run.num("gc_count"), 0),
            failed_share(run.num("steal_attempts"), run.failure_rate()),
        );
    }
    let _ = writeln!(h, "</table></div></details>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paper_figure_heads_its_section_and_nothing_else() {
        let paper = PaperRecord {
            id: "000-fig9".into(),
            number: "Figure 9".into(),
            title: "Fewer <steals>".into(),
            status: "partial".into(),
            reason: "on 2 CPUs".into(),
            section: "stealing".into(),
        };
        let page = "<h2 id=\"summary\">Summary</h2>\n<h2 id=\"stealing\">Steals</h2>\n<p>x</p>";
        let mut h = page.to_string();
        head_section_with_paper(&mut h, &paper);
        assert_eq!(
            h,
            "<h2 id=\"summary\">Summary</h2>\n<h2 id=\"stealing\">000 Figure 9 — Fewer \
             &lt;steals&gt;</h2>\n<p class=\"caption\"><span class=\"chip\">partial</span>: on 2 \
             CPUs — Concord's section: Steals</p>\n<p>x</p>"
        );
        // A section the page does not draw, or none named: the page is left as it is.
        for section in ["numa", ""] {
            let mut h = page.to_string();
            head_section_with_paper(
                &mut h,
                &PaperRecord {
                    section: section.into(),
                    ..paper.clone()
                },
            );
            assert_eq!(h, page);
        }
    }

    #[test]
    fn escaping() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn percentiles_sort_numerically() {
        let mut keys = vec![
            "latency_p999_us",
            "latency_p50_us",
            "latency_p99_us",
            "latency_mean_us",
        ];
        keys.sort_by(|a, b| {
            measurement_order(a)
                .total_cmp(&measurement_order(b))
                .then(a.cmp(b))
        });
        assert_eq!(
            keys,
            [
                "latency_mean_us",
                "latency_p50_us",
                "latency_p99_us",
                "latency_p999_us"
            ]
        );
    }

    #[test]
    fn number_formats() {
        assert_eq!(ms(Some(123.456)), "123");
        assert_eq!(ms(Some(12.345)), "12.3");
        assert_eq!(ms(Some(1.2345)), "1.23");
        assert_eq!(ms(Some(0.12345)), "0.123");
        assert_eq!(ms(None), "—");
        assert_eq!(pct(Some(0.5)), "50.0%");
    }

    #[test]
    fn inline_svg_drops_the_namespace_url() {
        let s = "<svg width=\"1\" height=\"1\" viewBox=\"0 0 1 1\" xmlns=\"http://www.w3.org/2000/svg\">\n</svg>";
        assert!(!inline_svg(s).contains("http"));
    }
}

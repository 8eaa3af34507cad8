//! `berth lab run`'s outputs: the per-run sample files, `DIR/summary.json` (the contract
//! scripts rely on), SVG plots with one line per policy (median and the 25–75% band over
//! seeds), and `DIR/report.md` embedding them with the summary table.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context as _;
use berth_scheduler::lab::experiment::SampleFormat;
use berth_scheduler::lab::summary::{bands, summarise, Band, PolicySummary, RunResult, Sample};
use plotters::prelude::*;
use serde::Serialize;

/// The arrived levels of the summary table (lab.md's columns).
pub const LEVELS: [u64; 5] = [90, 95, 100, 110, 130];

/// `summary.json`.
#[derive(Serialize)]
struct Summary<'a> {
    experiment: &'a str,
    policies: BTreeMap<String, PolicySummary>,
}

/// Writes every output of an experiment under `dir`; `order` is the policies' order in
/// the experiment file. Returns the summary table as Markdown.
pub fn write(
    dir: &Path,
    name: &str,
    order: &[String],
    runs: &[RunResult],
    format: SampleFormat,
    by_time: bool,
) -> anyhow::Result<String> {
    std::fs::create_dir_all(dir.join("runs"))
        .with_context(|| format!("creating {}", dir.display()))?;
    for run in runs {
        let (ext, text) = match format {
            SampleFormat::Csv => ("csv", samples_csv(&run.samples)),
            SampleFormat::Jsonl => ("jsonl", samples_jsonl(&run.samples)),
        };
        let path =
            dir.join("runs")
                .join(format!("{}-seed{}.{ext}", file_name(&run.policy), run.seed));
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let grouped: Vec<(&String, Vec<&RunResult>)> = order
        .iter()
        .map(|p| (p, runs.iter().filter(|r| &r.policy == p).collect()))
        .collect();
    let summary = Summary {
        experiment: name,
        policies: grouped
            .iter()
            .map(|(p, r)| ((*p).clone(), summarise(r)))
            .collect(),
    };
    let path = dir.join("summary.json");
    std::fs::write(&path, serde_json::to_string_pretty(&summary)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;

    let mut plots = Vec::new();
    let x_of = |s: &Sample| if by_time { s.time_s } else { s.arrived_gpu_pct };
    let x_desc = if by_time {
        "simulated time (s)"
    } else {
        "arrived workload (% of GPU capacity)"
    };
    let charts: [(&str, &str, fn(&Sample) -> f64); 4] = [
        ("unallocated-gpu.svg", "unallocated GPU (%)", |s| {
            s.unallocated_gpu_pct
        }),
        ("fragmentation.svg", "GPU fragmentation ratio", |s| {
            s.frag_ratio
        }),
        ("pending.svg", "pending pods", |s| s.pending as f64),
        ("cpu-allocation.svg", "CPU allocated (%)", |s| {
            s.cpu_alloc_pct
        }),
    ];
    for (file, y_desc, y_of) in charts {
        let lines: Vec<(String, BTreeMap<u64, Band>)> = grouped
            .iter()
            .map(|(p, runs)| {
                let per_run: Vec<BTreeMap<u64, f64>> =
                    runs.iter().map(|r| binned(r, x_of, y_of)).collect();
                ((*p).clone(), bands(&per_run))
            })
            .collect();
        let svg = plot(&format!("{name}: {y_desc}"), x_desc, y_desc, &lines)?;
        std::fs::write(dir.join(file), svg).with_context(|| format!("writing {file}"))?;
        plots.push((file, y_desc));
    }
    let table = table(order, &summary.policies, by_time);
    let mut md = format!("# {name}\n\n");
    md += &table;
    for (file, title) in plots {
        let _ = write!(md, "\n## {title}\n\n![{title}]({file})\n");
    }
    std::fs::write(dir.join("report.md"), md).context("writing report.md")?;
    Ok(table)
}

/// Samples averaged per whole unit of x (percent arrived, or second).
fn binned(
    run: &RunResult,
    x: impl Fn(&Sample) -> f64,
    y: fn(&Sample) -> f64,
) -> BTreeMap<u64, f64> {
    let mut bins: BTreeMap<u64, (f64, u32)> = BTreeMap::new();
    for s in &run.samples {
        let b = bins.entry(x(s).floor().max(0.0) as u64).or_default();
        b.0 += y(s);
        b.1 += 1;
    }
    bins.into_iter()
        .map(|(k, (sum, n))| (k, sum / f64::from(n)))
        .collect()
}

/// The summary table in lab.md's shape: one row per policy, unallocated GPU % at the
/// arrived levels (trace runs), or the final figures (scenario runs).
fn table(order: &[String], policies: &BTreeMap<String, PolicySummary>, by_time: bool) -> String {
    let mut out = String::new();
    if by_time {
        out += "| policy | seeds | failed (median) | wall s |\n| --- | --- | --- | --- |\n";
        for p in order {
            let s = &policies[p];
            let _ = writeln!(
                out,
                "| {p} | {} | {} | {:.2} |",
                s.seeds.len(),
                s.failed,
                s.wall_seconds
            );
        }
        return out;
    }
    out += "Unallocated GPU % (median over seeds) at arrived workload:\n\n| policy |";
    for l in LEVELS {
        let _ = write!(out, " {l}% |");
    }
    out += " wall s |\n| --- |";
    out += &" --- |".repeat(LEVELS.len() + 1);
    out += "\n";
    for p in order {
        let s = &policies[p];
        let _ = write!(out, "| {p} |");
        for l in LEVELS {
            match s.unallocated_gpu_pct.get(&l.to_string()) {
                Some(v) => {
                    let _ = write!(out, " {v:.2} |");
                }
                None => out += " – |",
            }
        }
        let _ = writeln!(out, " {:.2} |", s.wall_seconds);
    }
    out
}

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// One SVG chart: a line per policy (the median) over its 25–75% band.
fn plot(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    lines: &[(String, BTreeMap<u64, Band>)],
) -> anyhow::Result<String> {
    let points = lines.iter().flat_map(|(_, b)| b.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (&x, b) in points {
        x0 = x0.min(x as f64);
        x1 = x1.max(x as f64);
        y0 = y0.min(b.low);
        y1 = y1.max(b.high);
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    if x1 - x0 < 1e-9 {
        x1 = x0 + 1.0;
    }
    let pad = ((y1 - y0) * 0.05).max(1e-6);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 540)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, (y0 - pad)..(y1 + pad))
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .draw()
            .map_err(plot_error)?;
        for (i, (name, band)) in lines.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let mut outline: Vec<(f64, f64)> =
                band.iter().map(|(&x, b)| (x as f64, b.high)).collect();
            outline.extend(band.iter().rev().map(|(&x, b)| (x as f64, b.low)));
            if outline.len() > 2 {
                chart
                    .draw_series(std::iter::once(Polygon::new(
                        outline,
                        color.mix(0.18).filled(),
                    )))
                    .map_err(plot_error)?;
            }
            chart
                .draw_series(LineSeries::new(
                    band.iter().map(|(&x, b)| (x as f64, b.median)),
                    color.stroke_width(2),
                ))
                .map_err(plot_error)?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

fn plot_error(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("drawing a plot: {e}")
}

/// A policy name as a file name: letters, digits, `-` and `_` kept.
fn file_name(policy: &str) -> String {
    policy
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

const COLUMNS: &str = "arrivals,time_s,arrived_gpu_pct,cpu_alloc_pct,memory_alloc_pct,gpu_alloc_milli,unallocated_gpu_pct,frag_milli,frag_ratio,pending,failed,scheduled,preemptions,evictions";

fn samples_csv(samples: &[Sample]) -> String {
    let mut out = String::with_capacity(samples.len() * 96);
    out += COLUMNS;
    out += "\n";
    for s in samples {
        let _ = writeln!(
            out,
            "{},{:.3},{:.4},{:.4},{:.4},{},{:.4},{:.1},{:.6},{},{},{},{},{}",
            s.arrivals,
            s.time_s,
            s.arrived_gpu_pct,
            s.cpu_alloc_pct,
            s.memory_alloc_pct,
            s.gpu_alloc_milli,
            s.unallocated_gpu_pct,
            s.frag_milli,
            s.frag_ratio,
            s.pending,
            s.failed,
            s.scheduled,
            s.preemptions,
            s.evictions
        );
    }
    out
}

fn samples_jsonl(samples: &[Sample]) -> String {
    let mut out = String::new();
    for s in samples {
        out += &serde_json::to_string(s).unwrap_or_default();
        out += "\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(policy: &str, seed: u64, shift: f64) -> RunResult {
        RunResult {
            policy: policy.into(),
            seed,
            samples: (0..140)
                .map(|i| Sample {
                    arrivals: i,
                    arrived_gpu_pct: i as f64,
                    unallocated_gpu_pct: 100.0 - (i as f64).min(95.0) + shift,
                    ..Sample::default()
                })
                .collect(),
            wall_seconds: 0.5,
        }
    }

    #[test]
    fn writes_samples_summary_plots_and_report() {
        let dir = tempfile::tempdir().unwrap();
        let runs = vec![
            run("FGD", 1, 0.0),
            run("FGD", 2, 1.0),
            run("BestFit", 1, 3.0),
        ];
        let order = vec!["FGD".to_string(), "BestFit".to_string()];
        let table = write(dir.path(), "t", &order, &runs, SampleFormat::Csv, false).unwrap();
        assert!(
            table.contains("| FGD | 10.50 | 5.50 | 5.50 | 5.50 | 5.50 | 1.00 |"),
            "{table}"
        );
        let summary: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            summary["policies"]["BestFit"]["unallocated_gpu_pct"]["100"],
            8.0
        );
        assert_eq!(
            summary["policies"]["FGD"]["seeds"],
            serde_json::json!([1, 2])
        );
        let svg = std::fs::read_to_string(dir.path().join("unallocated-gpu.svg")).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("BestFit"),
            "{}",
            &svg[..200.min(svg.len())]
        );
        let csv = std::fs::read_to_string(dir.path().join("runs/FGD-seed2.csv")).unwrap();
        assert_eq!(csv.lines().count(), 141);
        assert!(std::fs::read_to_string(dir.path().join("report.md"))
            .unwrap()
            .contains("![unallocated GPU (%)](unallocated-gpu.svg)"));
    }
}

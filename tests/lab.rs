//! End-to-end test of `berth lab run` on the scenario example (docs/lab/scenario.yaml):
//! the real binary over ordinary manifests, its report showing pending pods over time.

use std::process::Command;

#[test]
fn the_scenario_example_runs_and_reports_pending_pods_over_time() {
    let out = tempfile::tempdir().expect("temporary folder");
    let experiment = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/lab/scenario.yaml");
    let output = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["lab", "run", experiment, "-o"])
        .arg(out.path())
        .output()
        .expect("berth runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let csv = std::fs::read_to_string(out.path().join("runs/default-seed1.csv"))
        .expect("the run's samples");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let (time, pending) = (column("time_s"), column("pending"));
    let samples: Vec<(f64, u64)> = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[time].parse().unwrap(), f[pending].parse().unwrap())
        })
        .collect();
    let at = |t: f64| samples.iter().find(|(s, _)| *s == t).map(|(_, p)| *p);
    assert_eq!(at(5.0), Some(0), "the first wave fits: {samples:?}");
    assert_eq!(
        at(10.0),
        Some(2),
        "two pods of the second wave wait: {samples:?}"
    );
    assert_eq!(at(20.0), Some(0), "node-3 takes them: {samples:?}");
    assert_eq!(at(40.0), Some(0), "the run lasts its duration: {samples:?}");
    let svg = std::fs::read_to_string(out.path().join("pending.svg")).expect("the plot");
    assert!(svg.starts_with("<svg"));
    let report = std::fs::read_to_string(out.path().join("report.md")).expect("report");
    assert!(report.contains("(pending.svg)"), "{report}");
}

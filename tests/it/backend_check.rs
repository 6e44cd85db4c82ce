//! `onnx-bcast check` over the whole ONNX backend test suite. Those models are known to run, so any
//! "violation" the checker reports there is a false positive. The test also prints (run with --nocapture) and
//! saves to `<target>/backend-check-summary.txt` how the broadcast sites split by verdict, overall and per
//! folder, and which models have sites the checker could not decide.

use crate::common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Models per `onnx-bcast check` invocation: few processes, command lines well under the OS limit.
const BATCH: usize = 200;

const VERDICTS: [&str; 5] = ["same", "broadcast", "violation", "conditional", "unknown"];

#[derive(Default, Clone)]
struct Tally {
    models: usize,
    sites: usize,
    verdicts: BTreeMap<&'static str, usize>,
}

impl Tally {
    fn add_site(&mut self, verdict: &'static str) {
        self.sites += 1;
        *self.verdicts.entry(verdict).or_default() += 1;
    }
    fn get(&self, verdict: &str) -> usize {
        self.verdicts.get(verdict).copied().unwrap_or(0)
    }
}

fn str_field<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("?")
}

fn summary_path() -> PathBuf {
    // CARGO_TARGET_TMPDIR is <target dir>/tmp.
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).join("backend-check-summary.txt")
}

#[test]
fn backend_models_have_no_false_violations() {
    let data = common::backend_data_dir();
    let models = common::backend_models(&data);
    let bin = env!("CARGO_BIN_EXE_onnx-bcast");

    let mut problems: Vec<String> = Vec::new();
    let mut total = Tally::default();
    let mut per_folder: BTreeMap<String, Tally> =
        common::BACKEND_FOLDERS.iter().map(|f| (f.to_string(), Tally::default())).collect();
    let mut violations: Vec<String> = Vec::new();
    // op -> [(model, node)]
    let mut unknown_by_op: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut reported = 0usize;

    for batch in models.chunks(BATCH) {
        let out = Command::new(bin)
            .args(["check", "--format", "json"])
            .args(batch)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {bin}: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let batch_name = format!("batch {}..{}", batch[0].display(), batch[batch.len() - 1].display());
        if out.status.code() != Some(0) {
            let tail: String = stderr.lines().take(20).collect::<Vec<_>>().join("\n    ");
            problems.push(format!("{batch_name}: exit status {} (expected 0); stderr:\n    {tail}", out.status));
        }
        let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
        if lines.len() != batch.len() {
            problems.push(format!(
                "{batch_name}: {} JSON lines on stdout for {} models (expected one per model)",
                lines.len(),
                batch.len()
            ));
        }
        for (i, path) in batch.iter().enumerate() {
            let shown = path.display().to_string();
            let Some(line) = lines.get(i) else {
                problems.push(format!("{shown}: not reported"));
                continue;
            };
            let report: Value = match serde_json::from_str(line) {
                Ok(v) => v,
                Err(e) => {
                    problems.push(format!("{shown}: output line {} is not JSON ({e}): {line:.200}", i + 1));
                    continue;
                }
            };
            if report.get("model").and_then(Value::as_str) != Some(shown.as_str()) {
                problems.push(format!(
                    "{shown}: line {} reports model {} (out of order or wrong path)",
                    i + 1,
                    report["model"]
                ));
                continue;
            }
            reported += 1;
            let folder = common::backend_folder(&data, path);
            let rel = path.strip_prefix(&data).unwrap_or(path).display().to_string();
            let mut mine = Tally { models: 1, ..Tally::default() };

            // What an op requires of its inputs: these models run, so none of it is broken or conditional.
            for f in report.get("findings").and_then(Value::as_array).into_iter().flatten() {
                if common::VALIDATION_CODES.contains(&str_field(f, "code")) {
                    problems.push(format!(
                        "{rel}: {} at {}: {}",
                        str_field(f, "code"),
                        str_field(f, "node"),
                        str_field(f, "message")
                    ));
                }
            }
            let Some(sites) = report.get("sites").and_then(Value::as_array) else {
                problems.push(format!("{rel}: no \"sites\" array"));
                continue;
            };
            for site in sites {
                let verdict = str_field(site, "verdict");
                let Some(&verdict) = VERDICTS.iter().find(|v| **v == verdict) else {
                    problems
                        .push(format!("{rel}: site {} has unexpected verdict {verdict:?}", str_field(site, "node")));
                    continue;
                };
                mine.add_site(verdict);
                let (graph, node, op) = (str_field(site, "graph"), str_field(site, "node"), str_field(site, "op"));
                match verdict {
                    "violation" => violations.push(format!(
                        "{rel}: graph {graph}, node {node:?} ({op}, rule {}): {} [code {}, axis {}, offending input {}]; inputs {}",
                        str_field(site, "rule"),
                        str_field(site, "message"),
                        site.get("code").unwrap_or(&Value::Null),
                        site.get("axis").unwrap_or(&Value::Null),
                        site.get("offending_input").unwrap_or(&Value::Null),
                        site.get("inputs").unwrap_or(&Value::Null),
                    )),
                    "unknown" => unknown_by_op.entry(op.to_string()).or_default().push((rel.clone(), node.to_string())),
                    _ => {}
                }
            }

            // The summary must agree with the sites it summarizes.
            match report.get("summary") {
                Some(summary) => {
                    let n = |k: &str| summary.get(k).and_then(Value::as_u64).map(|x| x as usize);
                    if n("sites") != Some(sites.len()) {
                        problems.push(format!(
                            "{rel}: summary.sites = {:?}, but {} sites listed",
                            n("sites"),
                            sites.len()
                        ));
                    }
                    for (key, verdict) in [
                        ("same", "same"),
                        ("broadcast", "broadcast"),
                        ("violations", "violation"),
                        ("conditional", "conditional"),
                        ("unknown", "unknown"),
                    ] {
                        if n(key) != Some(mine.get(verdict)) {
                            problems.push(format!(
                                "{rel}: summary.{key} = {:?}, but {} sites have verdict {verdict}",
                                n(key),
                                mine.get(verdict)
                            ));
                        }
                    }
                }
                None => problems.push(format!("{rel}: no \"summary\" object")),
            }

            for t in [&mut total, per_folder.entry(folder).or_default()] {
                t.models += 1;
                t.sites += mine.sites;
                for (v, c) in &mine.verdicts {
                    *t.verdicts.entry(v).or_default() += c;
                }
            }
        }
    }

    // ---- the report ----
    let mut text = String::new();
    let _ = writeln!(text, "onnx-bcast check over the ONNX backend test data ({})", data.display());
    let _ = writeln!(text, "{} models, {} reported\n", models.len(), reported);
    let _ = writeln!(
        text,
        "{:<20} {:>7} {:>8} {:>8} {:>10} {:>10} {:>12} {:>8}",
        "folder", "models", "sites", "same", "broadcast", "violation", "conditional", "unknown"
    );
    let row = |text: &mut String, name: &str, t: &Tally| {
        let _ = writeln!(
            text,
            "{:<20} {:>7} {:>8} {:>8} {:>10} {:>10} {:>12} {:>8}",
            name,
            t.models,
            t.sites,
            t.get("same"),
            t.get("broadcast"),
            t.get("violation"),
            t.get("conditional"),
            t.get("unknown")
        );
    };
    // The suite's own folders first, in their usual order; anything else after.
    let mut folders: Vec<&String> = per_folder.keys().collect();
    folders.sort_by_key(|f| (common::BACKEND_FOLDERS.iter().position(|b| b == f).unwrap_or(usize::MAX), f.as_str()));
    for folder in folders {
        row(&mut text, folder, &per_folder[folder]);
    }
    row(&mut text, "TOTAL", &total);

    let _ = writeln!(text, "\nviolation sites: {}", violations.len());
    for v in &violations {
        let _ = writeln!(text, "  {v}");
    }

    let unknown_models: usize = {
        let mut all: Vec<&String> = unknown_by_op.values().flatten().map(|(m, _)| m).collect();
        all.sort();
        all.dedup();
        all.len()
    };
    let _ = writeln!(text, "\nunknown sites: {} in {} models, by op:", total.get("unknown"), unknown_models);
    for (op, sites) in &unknown_by_op {
        let mut models: Vec<&str> = sites.iter().map(|(m, _)| m.as_str()).collect();
        models.dedup();
        let _ = writeln!(text, "  {op}: {} sites in {} models", sites.len(), models.len());
        for (m, node) in sites {
            let _ = writeln!(text, "    {m} (node {node:?})");
        }
    }

    let _ = writeln!(text, "\nproblems: {}", problems.len());
    for p in problems.iter().take(200) {
        let _ = writeln!(text, "  {p}");
    }
    if problems.len() > 200 {
        let _ = writeln!(text, "  ... and {} more", problems.len() - 200);
    }

    let path = summary_path();
    match std::fs::write(&path, &text) {
        Ok(()) => eprintln!("summary written to {}", path.display()),
        Err(e) => eprintln!("cannot write {}: {e}", path.display()),
    }
    eprintln!("{text}");

    assert!(
        problems.is_empty(),
        "{} problems running `onnx-bcast check` over the backend models (full report in {}); first ones:\n  {}",
        problems.len(),
        path.display(),
        problems.iter().take(20).cloned().collect::<Vec<_>>().join("\n  ")
    );
    assert_eq!(reported, models.len(), "every backend model must be reported");
    assert!(
        violations.is_empty(),
        "{} violation sites reported in backend models, which all run (false positives); first ones:\n  {}",
        violations.len(),
        violations.iter().take(20).cloned().collect::<Vec<_>>().join("\n  ")
    );
}

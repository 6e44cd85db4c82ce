//! `check --format json` streams each site's object straight from its report (`render::SiteWriter`, issue 29): the
//! bytes must be those of the report's `Value` (`render::report_json`), which serde_json writes, on every fixture,
//! the crafted models with hostile names included. A judge that keeps only its findings' sites (the Python API's
//! check of a large model) points each finding at the same site as one that keeps every site.

use std::path::{Path, PathBuf};

use onnx_bcast::analysis::{analyze_model, analyze_model_request, Options, Request};
use onnx_bcast::check::{check, CheckOptions, Judge, Report};
use onnx_bcast::onnx::model::Model;
use onnx_bcast::render;

/// Every model under `fixtures/`: the `.onnx` fixtures and the crafted `.pb` ones.
fn fixture_models() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "onnx" || e == "pb") {
                out.push(path);
            }
        }
    }
    let mut models = Vec::new();
    walk(&crate::common::repo_root().join("fixtures"), &mut models);
    models.sort();
    models
}

/// The model's JSON object as `check --format json` streams it.
fn streamed(path: &str, report: &Report) -> Vec<u8> {
    let mut out = Vec::new();
    render::write_json_model_start(&mut out, path).unwrap();
    let mut sites = render::SiteWriter::default();
    for site in &report.sites {
        sites.write(&mut out, site).unwrap();
    }
    render::write_json_model_end(&mut out, report).unwrap();
    out
}

#[test]
fn a_streamed_report_is_its_json_value_written_out() {
    let (mut models, mut sites) = (0, 0);
    for path in fixture_models() {
        let Ok(model) = Model::open(&path) else { continue };
        let analysis = analyze_model(&model);
        for strict in [false, true] {
            let report = check(&analysis, CheckOptions { strict, ..Default::default() });
            let shown = path.display().to_string();
            let value = format!("{}\n", render::report_json(&shown, &report));
            let streamed = String::from_utf8(streamed(&shown, &report)).expect("JSON is UTF-8");
            assert!(streamed == value, "{shown} (strict: {strict}): streamed\n{streamed}\nvalue\n{value}");
            for site in &report.sites {
                let mut one = Vec::new();
                render::SiteWriter::default().write(&mut one, site).unwrap();
                assert_eq!(one, serde_json::to_vec(&render::site_json(site)).unwrap(), "{shown}");
            }
            sites += report.sites.len();
        }
        models += 1;
    }
    // The fixtures hold hundreds of models and sites; an empty walk proves nothing.
    assert!(models > 250 && sites > 1000, "{models} models, {sites} sites");
}

/// The report of `judge` over `model` as `check` walks it (training graphs included), or `None` when the model
/// cannot be analysed.
fn judged(model: &Model, mut judge: Judge) -> Option<Report> {
    let request = Request { training_graphs: true, ..Default::default() };
    let sites_only = Options { value_facts: false };
    let analysis = analyze_model_request(model, sites_only, &request, Some(&mut |site| judge.judge(site))).ok()?;
    Some(judge.finish(&analysis))
}

#[test]
fn a_judge_keeping_the_findings_sites_keeps_each_findings_site_and_no_other() {
    let (mut models, mut findings) = (0, 0);
    for path in fixture_models() {
        let Ok(model) = Model::open(&path) else { continue };
        for strict in [false, true] {
            let options = CheckOptions { strict, ..Default::default() };
            let Some(every) = judged(&model, Judge::new(options, true)) else { continue };
            let lean = judged(&model, Judge::new(options, false).keeping_finding_sites()).expect("analysed once");
            let shown = format!("{} (strict: {strict})", path.display());
            assert_eq!(lean.summary, every.summary, "{shown}");
            assert_eq!(lean.findings.len(), every.findings.len(), "{shown}");
            let site = |report: &Report, i: Option<usize>| i.map(|i| render::site_json(&report.sites[i]));
            for (a, b) in lean.findings.iter().zip(&every.findings) {
                assert_eq!((a.code, a.severity, a.message.plain()), (b.code, b.severity, b.message.plain()), "{shown}");
                assert_eq!(site(&lean, a.site), site(&every, b.site), "{shown}: {}", a.message.plain());
            }
            assert_eq!(lean.sites.len(), lean.findings.iter().filter(|f| f.site.is_some()).count(), "{shown}");
            findings += lean.sites.len();
        }
        models += 1;
    }
    assert!(models > 250 && findings > 100, "{models} models, {findings} findings with a site");
}

//! `check`'s report as Python holds it. A model of many nodes is checked as the command line checks it: each site
//! judged and dropped, only the findings' sites kept; the list of every site (`to_json()`, which `Report.sites`
//! reads) is written when asked for, as `check --format json` writes it, by checking the same bytes again. Keeping
//! every site's report of a 100,000-node model cost 150 MB and a third more time than the command's check, for a
//! list most callers never read.

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use pyo3::prelude::*;

use onnx_bcast::analysis::{self, analyze_model_request, Request};
use onnx_bcast::check::{CheckOptions, Judge, Report, SiteReport};
use onnx_bcast::onnx::model::Model;
use onnx_bcast::render;

use crate::worker::without_gil;
use crate::{Failure, Input};

/// A model with fewer main-graph nodes than this keeps every site's report from the start: its list is small, and
/// reading it later costs no second check.
const EVERY_SITE_BELOW_NODES: usize = 10_000;

/// A model whose bytes are more than this many per main-graph node keeps every site's report: checking it again
/// would need a copy of more bytes (weights, mostly) than its sites' reports take (about 1 KiB each).
const COPIED_UP_TO_PER_NODE: usize = 2 << 10;

/// What checking a model again needs: the bytes that were checked and how they were checked.
struct Again {
    /// The model's path, or the name of its bytes: what messages and external data locations start from.
    name: PathBuf,
    bytes: Bytes,
    /// The main-graph initializers whose data the Python half left out (index, byte length).
    left_out: Vec<(usize, usize)>,
    options: CheckOptions,
    request: Request,
}

impl Again {
    /// The model as it was checked.
    fn model(&self) -> Result<Model, Failure> {
        let model = Model::from_bytes(self.name.clone(), self.bytes.clone());
        let model = match self.left_out.is_empty() {
            true => model,
            false => model.and_then(|m| onnx_bcast::onnx::tensor::with_placeholder_data(m, &self.left_out)),
        };
        model.map_err(|e| Failure::Model(e.to_string()))
    }

    /// The report's JSON object, as `check --format json` writes it: the same check of the same bytes, each site
    /// written as it is judged, and kept by none.
    fn json(&self, shown: &str) -> Result<String, Failure> {
        let model = self.model()?;
        let bad = |e: analysis::BindError| Failure::Bind(format!("{}: {e}", model.path().display()));
        let (request, ranges) = analysis::prepare(model.proto(), &self.request).map_err(bad)?;
        let mut judge = Judge::new(self.options, false).with_ranges(ranges);
        let mut out = Vec::new();
        write_json(&mut out, |out| render::write_json_model_start(out, shown))?;
        let (mut sites, mut written) = (render::SiteWriter::default(), Ok(()));
        let mut write = |report: &SiteReport<'_>| {
            if written.is_ok() {
                written = sites.write(&mut out, report);
            }
        };
        let sites_only = analysis::Options { value_facts: false };
        let analysis =
            analyze_model_request(&model, sites_only, &request, Some(&mut |site| judge.judge_with(site, &mut write)))
                .map_err(bad)?;
        write_json(&mut out, |_| written)?;
        let report = judge.finish(&analysis);
        write_json(&mut out, |out| render::write_json_model_end(out, &report))?;
        json_text(out)
    }
}

/// Writes to memory, which cannot fail (but for a report too large for it).
fn write_json(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> Result<(), Failure> {
    write(out).map_err(|e| Failure::Other(format!("cannot hold the JSON report: {e}")))
}

/// A model's JSON object as `check --format json` writes it, as text, without its newline.
fn json_text(mut out: Vec<u8>) -> Result<String, Failure> {
    if out.last() == Some(&b'\n') {
        out.pop();
    }
    String::from_utf8(out).map_err(|e| Failure::Internal(format!("the JSON report is not UTF-8: {e}")))
}

/// Checks `input`: the report (every site's, or only the findings' for a model of many nodes) and, when not every
/// site was kept, what checking it again needs.
pub(crate) fn check(input: Input, options: CheckOptions, request: Request) -> Result<NativeReport, Failure> {
    let shown = input.shown();
    let (model, held) = input.opened()?;
    onnx_bcast::sys::panics::test_point("check");
    let nodes = model.proto().graph.as_ref().map_or(0, |g| g.node.len());
    let every_site = nodes < EVERY_SITE_BELOW_NODES || model.bytes().len() / nodes > COPIED_UP_TO_PER_NODE;
    let report = judged(&model, options, &request, every_site)?;
    let again = (!every_site).then(|| {
        // Bytes given by the caller are shared; a file's are copied: the file may change or shrink (its mapping
        // would then fault) while the report lives.
        let (bytes, left_out) = held.unwrap_or_else(|| (Bytes::copy_from_slice(model.bytes()), Vec::new()));
        Arc::new(Again { name: model.path().to_path_buf(), bytes, left_out, options, request })
    });
    Ok(NativeReport { shown, report, again })
}

/// The check of an opened model, keeping every site's report or only the findings'.
fn judged(model: &Model, options: CheckOptions, request: &Request, every_site: bool) -> Result<Report, Failure> {
    let bad = |e: analysis::BindError| Failure::Bind(format!("{}: {e}", model.path().display()));
    let (request, ranges) = analysis::prepare(model.proto(), request).map_err(bad)?;
    let judge = Judge::new(options, every_site).with_ranges(ranges);
    let mut judge = if every_site { judge } else { judge.keeping_finding_sites() };
    let sites_only = analysis::Options { value_facts: false };
    // The judge takes the sites itself, as the command's does: a site it would only count is never built.
    let analysis = analysis::analyze_model_sites(model, sites_only, &request, Some(&mut judge)).map_err(bad)?;
    Ok(judge.finish(&analysis))
}

/// A model's check: its findings, sites and totals. The Python `Report` wraps it and reads the parts it is asked
/// for, so a model with a hundred thousand sites costs nothing more until `sites` or `to_json()` is read.
#[pyclass(frozen, module = "onnx_bcast._native")]
pub(crate) struct NativeReport {
    shown: String,
    /// The findings with their sites, and the totals; every site too unless `again` is there.
    report: Report,
    again: Option<Arc<Again>>,
}

impl Drop for NativeReport {
    /// A report of many sites takes a while to free (11 ms for 100,000): that happens on a thread of its own, not
    /// in the caller's time and with the GIL held.
    fn drop(&mut self) {
        if self.report.sites.len() > 10_000 {
            let sites = std::mem::take(&mut self.report.sites);
            std::thread::spawn(move || drop(sites));
        }
    }
}

#[pymethods]
impl NativeReport {
    /// Whether an error-level finding fails the check (the command line's exit status 1).
    fn failed(&self) -> bool {
        self.report.failed()
    }

    /// The `summary` object of the command line's JSON report.
    fn summary_json(&self) -> String {
        render::summary_json(&self.report).to_string()
    }

    /// The totals in words, as the command line's text output ends: `1 site: 0 same, 0 broadcast, 1 violation, ...`.
    fn summary_text(&self) -> String {
        let s = self.report.summary;
        let plural = |n: usize, word: &str| if n == 1 { format!("{n} {word}") } else { format!("{n} {word}s") };
        format!(
            "{}; {}, {}",
            render::summary_text(&self.report),
            plural(s.errors, "error"),
            plural(s.warnings, "warning")
        )
    }

    /// The findings as the command line's JSON lists them, each with its site's JSON object (or null).
    fn findings_json(&self) -> String {
        let findings: Vec<serde_json::Value> = self
            .report
            .findings
            .iter()
            .map(|f| {
                serde_json::json!({
                    "code": f.code.as_str(),
                    "severity": f.severity.as_str(),
                    "graph": f.graph,
                    "node": f.node,
                    "op": f.op,
                    "message": f.message.plain(),
                    "site": f.site.and_then(|i| self.report.sites.get(i)).map(render::site_json),
                })
            })
            .collect();
        serde_json::Value::Array(findings).to_string()
    }

    /// The whole report: exactly the object `onnx-bcast check --format json` writes for this model (without its
    /// newline), written site by site as the command writes it; for a report that kept only its findings' sites,
    /// by checking the model again.
    fn to_json(&self, py: Python<'_>) -> PyResult<String> {
        let shown = self.shown.clone();
        if let Some(again) = &self.again {
            let again = again.clone();
            return without_gil(py, &self.shown, move || again.json(&shown));
        }
        let kept = |out: &mut Vec<u8>| {
            render::write_json_model_start(out, &self.shown)?;
            let mut sites = render::SiteWriter::default();
            self.report.sites.iter().try_for_each(|site| sites.write(out, site))?;
            render::write_json_model_end(out, &self.report)
        };
        Ok(py.detach(|| {
            let mut out = Vec::new();
            write_json(&mut out, kept).and_then(|()| json_text(out))
        })?)
    }
}

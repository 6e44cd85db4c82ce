//! One JSON object per model: its sites, findings, summary and the ops inference stopped at; written whole or
//! streamed site by site.

use std::io::{self, Write};

use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::Value;

use crate::analysis::{FunctionFrame, Site, SiteInput};
use crate::check::{report_verdict, Finding, Report, SiteReport};
use crate::sizes::shape::{Dim, Shape};

use super::json_object::{self, Direct, Fields, Object};

struct JsonInput<'a> {
    name: &'a str,
    shape: ShapeOut<'a>,
}

impl Object for JsonInput<'_> {
    fn len(&self) -> usize {
        2
    }

    fn fields<F: Fields>(&self, out: &mut F) -> Result<(), F::Error> {
        out.text("name", self.name)?;
        out.direct("shape", &self.shape)
    }
}

struct JsonFunction<'a> {
    function: &'a str,
    node: &'a str,
}

impl Object for JsonFunction<'_> {
    fn len(&self) -> usize {
        2
    }

    fn fields<F: Fields>(&self, out: &mut F) -> Result<(), F::Error> {
        out.text("function", self.function)?;
        out.text("node", self.node)
    }
}

/// One site's object, borrowing everything it writes. Its fields are listed once ([`JsonSite::fields`]) and go
/// either to any serde serializer (a `Value`, a whole report) or, in streamed output, to a [`RawObject`].
struct JsonSite<'a, 's> {
    graph: &'a str,
    node: &'a str,
    op: &'a str,
    rule: &'static str,
    inputs: &'a [SiteInput<'s>],
    output_shape: ShapeOut<'a>,
    verdict: &'static str,
    /// The message as [`crate::sys::escape::plain`] gives it.
    message: &'a str,
    code: Option<&'static str>,
    axis: Option<usize>,
    offending_input: Option<&'a str>,
    conditions: Conditions<'a>,
    functions: &'a [FunctionFrame<'s>],
    constraints: Constraints<'a, 's>,
    /// What the conditions come to over the ranges of sizes (only with ranges).
    over_ranges: Option<Value>,
}

impl Object for JsonSite<'_, '_> {
    fn len(&self) -> usize {
        14 + usize::from(self.over_ranges.is_some())
    }

    /// The site's fields, in the documented order.
    fn fields<F: Fields>(&self, out: &mut F) -> Result<(), F::Error> {
        out.text("graph", self.graph)?;
        out.text("node", self.node)?;
        out.text("op", self.op)?;
        out.word("rule", self.rule)?;
        out.objects("inputs", self.inputs.iter().map(|i| JsonInput { name: &i.name, shape: ShapeOut(&i.shape) }))?;
        out.direct("output_shape", &self.output_shape)?;
        out.word("verdict", self.verdict)?;
        out.text("message", self.message)?;
        out.field("code", &self.code)?;
        out.field("axis", &self.axis)?;
        out.field("offending_input", &self.offending_input)?;
        out.field("conditions", &self.conditions)?;
        out.objects("functions", self.functions.iter().map(|f| JsonFunction { function: &f.function, node: &f.node }))?;
        out.field("constraints", &self.constraints)?;
        match &self.over_ranges {
            Some(over_ranges) => out.field("over_ranges", over_ranges),
            None => Ok(()),
        }
    }
}

impl Serialize for JsonSite<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        json_object::serialize(self, "site", s)
    }
}

/// A shape as [`shape_json`] makes it (null for an unknown rank, else integers, symbol strings and nulls), without
/// the `Value`.
struct ShapeOut<'a>(&'a Shape);

impl Serialize for ShapeOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.dims() {
            None => s.serialize_unit(),
            Some(dims) => s.collect_seq(dims.iter().map(DimOut)),
        }
    }
}

impl Direct for ShapeOut<'_> {
    /// An unknown rank as `null`, a shape of known sizes as `[8,64]` (the digits by itoa, as serde_json makes them);
    /// a shape with a symbol or an unknown size goes to serde_json.
    fn write_direct(&self, out: &mut Vec<u8>) -> bool {
        let Some(dims) = self.0.dims() else {
            out.extend_from_slice(b"null");
            return true;
        };
        if !dims.iter().all(|d| matches!(d, Dim::Known(_))) {
            return false;
        }
        let mut digits = itoa::Buffer::new();
        out.push(b'[');
        for (k, dim) in dims.iter().enumerate() {
            if k > 0 {
                out.push(b',');
            }
            if let Dim::Known(n) = dim {
                out.extend_from_slice(digits.format(*n).as_bytes());
            }
        }
        out.push(b']');
        true
    }
}

/// One dim of a [`ShapeOut`].
struct DimOut<'a>(&'a Dim);

impl Serialize for DimOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Dim::Known(n) => s.serialize_u64(*n),
            Dim::Unknown => s.serialize_unit(),
            other => s.collect_str(other),
        }
    }
}

/// A site's conditions in words (marked texts), each as its plain text.
struct Conditions<'a>(&'a [String]);

impl Serialize for Conditions<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|c| crate::sys::escape::plain(c)))
    }
}

/// A conditional site's conditions, structured ([`constraint_json`]); an empty list for any other site.
struct Constraints<'a, 's>(&'a Site<'s>);

impl Serialize for Constraints<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0.verdict {
            crate::rules::Verdict::Conditional(conditions) => {
                s.collect_seq(conditions.iter().map(|c| constraint_json(self.0, c)))
            }
            _ => s.collect_seq(std::iter::empty::<()>()),
        }
    }
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    code: &'static str,
    severity: &'static str,
    graph: &'a str,
    node: Option<&'a str>,
    op: Option<&'a str>,
    message: std::borrow::Cow<'a, str>,
    /// A conditional-shape finding's conditions, typed (only there).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    conditions: Vec<Value>,
}

#[derive(Serialize)]
struct JsonSummary {
    sites: usize,
    same: usize,
    broadcast: usize,
    violations: usize,
    conditional: usize,
    unknown: usize,
    errors: usize,
    warnings: usize,
    /// Nodes whose op no inference rule knows.
    opaque_nodes: usize,
}

#[derive(Serialize)]
struct JsonModel<'a> {
    model: &'a str,
    sites: Sites<'a>,
    findings: Vec<JsonFinding<'a>>,
    summary: JsonSummary,
    opaque_ops: &'a std::collections::BTreeMap<String, usize>,
    /// The ranges of sizes checked over (only with ranges).
    #[serde(skip_serializing_if = "Option::is_none")]
    ranges: Option<Value>,
}

/// A report's kept sites, each message made as it is written.
struct Sites<'a>(&'a [SiteReport<'static>]);

impl Serialize for Sites<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut message = Message::default();
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for site in self.0 {
            seq.serialize_element(&json_site(site, message.of(site)))?;
        }
        seq.end()
    }
}

/// A site's object around its message (plain, [`Message::of`]).
fn json_site<'a, 's>(r: &'a SiteReport<'s>, message: &'a str) -> JsonSite<'a, 's> {
    let s = &r.site;
    JsonSite {
        graph: &s.graph,
        node: &s.node,
        op: &s.op,
        rule: s.rule.as_str(),
        inputs: &s.inputs,
        output_shape: ShapeOut(&s.output_shape),
        verdict: report_verdict(r),
        message,
        code: r.code.map(|c| c.as_str()),
        axis: r.axis,
        offending_input: r.offending_input.as_deref(),
        conditions: Conditions(&r.conditions),
        functions: &s.functions,
        constraints: Constraints(s),
        over_ranges: r.over_ranges.as_ref().map(super::decision_json),
    }
}

/// One site's JSON object, as the `sites` of [`report_json`] list it.
pub fn site_json(site: &SiteReport) -> Value {
    serde_json::to_value(json_site(site, Message::default().of(site))).expect("a site serializes")
}

/// A dim as a JSON value: its size, or its expression.
fn dim_json(dim: &Dim) -> Value {
    match dim {
        Dim::Known(n) => Value::from(*n),
        other => Value::from(other.to_string()),
    }
}

/// One condition of a conditional site, structured: `{"axis", "symbol", "values"}` when a symbol must take one of
/// some values, `{"axis", "expression", "values"}` when an expression must, `{"axis", "equal_or_one": [dims]}` when
/// dims must be equal or 1, `{"axis", "input", "input_name", "input_axis", "unknown_dim_values"}` when an unknown
/// dim of rule input `input` must (named, with the axis of its own shape; `input_name` is null for the target
/// shape of Expand or Gemm), `{"axis", "symbol" or "expression", "at_most"}` for a size capped by a buffer
/// (`seq ≤ 512`), and `{"axis", "divisor", "divides"}` for a size that must divide another.
fn constraint_json(site: &crate::analysis::Site, condition: &crate::rules::Condition) -> Value {
    use crate::rules::ConditionKind;
    match &condition.kind {
        ConditionKind::OneOf { dim, options } => {
            let key = if matches!(dim, Dim::Sym(_)) { "symbol" } else { "expression" };
            serde_json::json!({
                "axis": condition.axis,
                key: dim.to_string(),
                "values": options.iter().map(dim_json).collect::<Vec<_>>(),
            })
        }
        ConditionKind::EqualOrOne { dims } => serde_json::json!({
            "axis": condition.axis,
            "equal_or_one": dims.iter().map(dim_json).collect::<Vec<_>>(),
        }),
        ConditionKind::UnknownOneOf { input, options } => {
            let (name, own_axis) = site.unknown_dim_owner(*input, condition.axis);
            serde_json::json!({
                "axis": condition.axis,
                "input": input,
                "input_name": name,
                "input_axis": own_axis,
                "unknown_dim_values": options.iter().map(dim_json).collect::<Vec<_>>(),
            })
        }
        ConditionKind::AtMost { dim, bound } => {
            let key = if matches!(dim, Dim::Sym(_)) { "symbol" } else { "expression" };
            serde_json::json!({ "axis": condition.axis, key: dim.to_string(), "at_most": dim_json(bound) })
        }
        ConditionKind::Divides { divisor, dim } => {
            serde_json::json!({ "axis": condition.axis, "divisor": dim_json(divisor), "divides": dim_json(dim) })
        }
        ConditionKind::AnyOf(parts) => {
            let parts = parts.iter().map(|kind| crate::rules::Condition { axis: condition.axis, kind: kind.clone() });
            serde_json::json!({ "axis": condition.axis, "any_of": parts.map(|c| constraint_json(site, &c)).collect::<Vec<_>>() })
        }
    }
}

/// One condition of a conditional-shape finding, tagged by its kind (`rules::ConditionKind`) and with the fields
/// of [`constraint_json`]: `{"kind": "one_of", "axis", "symbol" or "expression", "values"}`, `{"kind": "at_most",
/// "axis", "symbol" or "expression", "at_most"}`, `{"kind": "divides", "axis", "divisor", "divides"}`,
/// `{"kind": "equal_or_one", "axis", "equal_or_one"}`, `{"kind": "unknown_one_of", "axis", "input",
/// "unknown_dim_values"}`, `{"kind": "any_of", "axis", "any_of": [conditions, at least one of which holds]}`. `axis` is the axis of the input the condition is on.
pub fn condition_json(condition: &crate::rules::Condition) -> Value {
    use crate::rules::ConditionKind;
    let named = |dim: &Dim| if matches!(dim, Dim::Sym(_)) { "symbol" } else { "expression" };
    let axis = condition.axis;
    match &condition.kind {
        ConditionKind::OneOf { dim, options } => serde_json::json!({
            "kind": "one_of", "axis": axis, named(dim): dim.to_string(),
            "values": options.iter().map(dim_json).collect::<Vec<_>>(),
        }),
        ConditionKind::EqualOrOne { dims } => serde_json::json!({
            "kind": "equal_or_one", "axis": axis, "equal_or_one": dims.iter().map(dim_json).collect::<Vec<_>>(),
        }),
        ConditionKind::UnknownOneOf { input, options } => serde_json::json!({
            "kind": "unknown_one_of", "axis": axis, "input": input,
            "unknown_dim_values": options.iter().map(dim_json).collect::<Vec<_>>(),
        }),
        ConditionKind::AtMost { dim, bound } => {
            serde_json::json!({ "kind": "at_most", "axis": axis, named(dim): dim.to_string(), "at_most": dim_json(bound) })
        }
        ConditionKind::Divides { divisor, dim } => serde_json::json!({
            "kind": "divides", "axis": axis, "divisor": dim_json(divisor), "divides": dim_json(dim),
        }),
        ConditionKind::AnyOf(parts) => {
            let parts = parts.iter().map(|kind| crate::rules::Condition { axis, kind: kind.clone() });
            serde_json::json!({ "kind": "any_of", "axis": axis, "any_of": parts.map(|c| condition_json(&c)).collect::<Vec<_>>() })
        }
    }
}

fn json_finding(f: &Finding) -> JsonFinding<'_> {
    JsonFinding {
        code: f.code.as_str(),
        severity: f.severity.as_str(),
        graph: &f.graph,
        node: f.node.as_deref(),
        op: f.op.as_deref(),
        message: f.message.plain(),
        conditions: f.conditions.iter().map(condition_json).collect(),
    }
}

/// The start of a model's JSON object as [`report_json`] writes it, up to its list of sites: for output that
/// streams the sites ([`write_json_site`]) as they are judged, then ends with [`write_json_model_end`].
pub fn write_json_model_start(out: &mut impl Write, path: &str) -> io::Result<()> {
    out.write_all(b"{\"model\":")?;
    serde_json::to_writer(&mut *out, path)?;
    out.write_all(b",\"sites\":[")
}

/// One site of a streamed model object; `first` for the first one (no comma before it). [`SiteWriter`] does the
/// same with its buffers kept from one site to the next.
pub fn write_json_site(out: &mut impl Write, site: &SiteReport, first: bool) -> io::Result<()> {
    SiteWriter { first, ..SiteWriter::default() }.write(out, site)
}

/// Writes the sites of a streamed model object one after another (after [`write_json_model_start`], before
/// [`write_json_model_end`]), each serialized straight from the site: no `Value` and no owned copy of its names,
/// the message made in buffers kept from one site to the next.
pub struct SiteWriter {
    first: bool,
    /// The site's object: serialized into memory first, then written in one piece, since serde_json writes token
    /// by token and a million sites would make a hundred million small writes to a spool that may be a file.
    bytes: Vec<u8>,
    message: Message,
}

impl Default for SiteWriter {
    fn default() -> SiteWriter {
        SiteWriter { first: true, bytes: Vec::with_capacity(1024), message: Message::default() }
    }
}

impl SiteWriter {
    /// Writes one site's object, after a comma unless it is the first.
    pub fn write(&mut self, out: &mut impl Write, site: &SiteReport) -> io::Result<()> {
        self.bytes.clear();
        if !std::mem::take(&mut self.first) {
            self.bytes.push(b',');
        }
        json_object::write_raw(&mut self.bytes, &json_site(site, self.message.of(site)))?;
        out.write_all(&self.bytes)
    }
}

/// A site's message as JSON gives it (plain), made in a buffer kept from one site to the next.
#[derive(Default)]
struct Message(String);

impl Message {
    /// `site`'s message, plain.
    fn of(&mut self, site: &SiteReport) -> &str {
        self.0.clear();
        site.write_message(&mut self.0, crate::rules::site::NameForm::Plain);
        &self.0
    }
}

/// The rest of a streamed model object after its sites: findings, summary, opaque ops, and the newline.
pub fn write_json_model_end(out: &mut impl Write, report: &Report) -> io::Result<()> {
    out.write_all(b"],\"findings\":")?;
    let findings: Vec<JsonFinding<'_>> = report.findings.iter().map(json_finding).collect();
    serde_json::to_writer(&mut *out, &findings)?;
    out.write_all(b",\"summary\":")?;
    serde_json::to_writer(&mut *out, &json_summary(report))?;
    out.write_all(b",\"opaque_ops\":")?;
    serde_json::to_writer(&mut *out, &report.opaque)?;
    if let Some(ranges) = &report.ranges {
        out.write_all(b",\"ranges\":")?;
        serde_json::to_writer(&mut *out, &super::range_report_json(ranges))?;
    }
    out.write_all(b"}\n")
}

/// A model's `summary` object, as [`report_json`] writes it.
pub fn summary_json(report: &Report) -> Value {
    serde_json::to_value(json_summary(report)).expect("a summary serializes")
}

fn json_summary(report: &Report) -> JsonSummary {
    let s = report.summary;
    JsonSummary {
        sites: s.sites,
        same: s.same,
        broadcast: s.broadcast,
        violations: s.violations,
        conditional: s.conditional,
        unknown: s.unknown,
        errors: s.errors,
        warnings: s.warnings,
        opaque_nodes: report.opaque.values().sum(),
    }
}

/// The JSON object of one model's report.
pub fn report_json(path: &str, report: &Report) -> Value {
    let model = JsonModel {
        model: path,
        sites: Sites(&report.sites),
        findings: report.findings.iter().map(json_finding).collect(),
        summary: json_summary(report),
        opaque_ops: &report.opaque,
        ranges: report.ranges.as_ref().map(super::range_report_json),
    };
    serde_json::to_value(model).expect("report serializes")
}

/// The JSON object for a model that could not be checked (`message` may hold marked names: they are written
/// whole).
pub fn error_json(path: &str, message: &str) -> Value {
    serde_json::json!({ "model": path, "error": crate::sys::escape::plain(message) })
}

#[cfg(test)]
mod tests {
    use super::condition_json;
    use crate::rules::{Condition, ConditionKind};
    use crate::sizes::shape::{parse_shape, Dim};

    fn dim(text: &str) -> Dim {
        parse_shape(text).dims().expect("ranked")[0].clone()
    }

    /// Shapes of known sizes (none, one, several, 0 and the largest u64), of unknown rank, and with a symbol or an
    /// unknown size among known ones: what [`super::ShapeOut`] writes itself is serde_json's bytes, and it leaves
    /// the others to serde_json.
    #[test]
    fn shapes_are_written_as_serde_json_writes_them() {
        use super::json_object::Direct;
        let texts = ["", "1", "8, 64", "0, 18446744073709551615, 3", "batch, 64", "2*N, 3", "?, 4", "*"];
        for shape in texts.map(parse_shape) {
            let serde = serde_json::to_vec(&super::ShapeOut(&shape)).unwrap();
            let mut direct = Vec::new();
            match super::ShapeOut(&shape).write_direct(&mut direct) {
                true => assert_eq!(String::from_utf8(direct).unwrap(), String::from_utf8(serde).unwrap()),
                false => assert!(
                    direct.is_empty() && shape.dims().is_some_and(|d| !d.iter().all(|d| matches!(d, Dim::Known(_))))
                ),
            }
        }
    }

    #[test]
    fn each_condition_kind_is_tagged_and_names_a_symbol_or_an_expression() {
        let at_most = Condition { axis: 0, kind: ConditionKind::AtMost { dim: dim("seq"), bound: Dim::Known(512) } };
        assert_eq!(
            condition_json(&at_most),
            serde_json::json!({"kind": "at_most", "axis": 0, "symbol": "seq", "at_most": 512})
        );
        let (batch, seq) = (dim("batch").to_poly().unwrap(), dim("seq").to_poly().unwrap());
        let product = Dim::from_poly(batch.mul(&seq).unwrap());
        let one_of = Condition { axis: 2, kind: ConditionKind::OneOf { dim: product, options: vec![dim("seq")] } };
        assert_eq!(
            condition_json(&one_of),
            serde_json::json!({"kind": "one_of", "axis": 2, "expression": "batch*seq", "values": ["seq"]})
        );
        let equal = Condition { axis: 1, kind: ConditionKind::EqualOrOne { dims: vec![dim("M"), dim("N")] } };
        assert_eq!(
            condition_json(&equal),
            serde_json::json!({"kind": "equal_or_one", "axis": 1, "equal_or_one": ["M", "N"]})
        );
    }
}

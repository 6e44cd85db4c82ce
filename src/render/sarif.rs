//! One SARIF 2.1.0 log for a whole run: a rule per diagnostic code, a result per finding.

use serde_json::Value;

use super::{brief_message, finding_location, finding_location_full};
use crate::check::{Finding, Report};
use crate::diagnostic::{Code, Severity};

/// What a SARIF log says about one model: its report, or why it could not be checked.
#[derive(Clone, Copy, Debug)]
pub struct SarifModel<'a> {
    /// The model's path as given on the command line or found in a folder.
    pub path: &'a str,
    pub outcome: Result<&'a Report, &'a str>,
}

/// The `uri` of a path in SARIF: relative paths stay relative (`/`-separated, `./` dropped), absolute ones become
/// `file://` URIs; characters outside RFC 3986's path characters are percent-encoded.
pub fn sarif_uri(path: &str) -> String {
    let unified = if cfg!(windows) { path.replace('\\', "/") } else { path.to_string() };
    let drive = |s: &str| cfg!(windows) && s.as_bytes().get(1) == Some(&b':');
    let absolute = unified.starts_with('/') || drive(&unified);
    let unified = if drive(&unified) { format!("/{unified}") } else { unified };
    let mut rel = unified.as_str();
    while let Some(rest) = rel.strip_prefix("./") {
        rel = rest;
    }
    let mut encoded = String::with_capacity(rel.len());
    for b in rel.bytes() {
        let keep = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=@/".contains(&b) || (b == b':' && absolute);
        if keep {
            encoded.push(b as char);
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    if absolute {
        format!("file://{encoded}")
    } else {
        encoded
    }
}

fn sarif_level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// `broadcast-violation` → `BroadcastViolation`: a rule's `name` in SARIF.
fn pascal_case(code: &str) -> String {
    code.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}

/// One SARIF result: a finding at its model (physical location) and graph and node (logical locations).
fn sarif_result(f: &Finding, artifact_location: &Value) -> Value {
    use serde_json::json;
    let rule_index = Code::ALL.iter().position(|&c| c == f.code).expect("every code is in ALL");
    let graph = json!({ "name": f.graph, "fullyQualifiedName": f.graph, "kind": "module" });
    let logical = match &f.node {
        Some(node) => vec![json!({
            "name": node,
            "fullyQualifiedName": format!("{}/{}", f.graph, node),
            "kind": "member",
        })],
        None => vec![graph],
    };
    let mut properties = serde_json::Map::new();
    properties.insert("graph".into(), json!(f.graph));
    if let Some(node) = &f.node {
        properties.insert("node".into(), json!(node));
    }
    if let Some(op) = &f.op {
        properties.insert("op".into(), json!(op));
    }
    let brief = brief_message(f);
    let full = f.message.plain();
    if brief.message != full {
        properties.insert("fullMessage".into(), json!(full));
        let names: serde_json::Map<String, Value> = brief.names.iter().map(|(n, e)| (n.clone(), json!(e))).collect();
        properties.insert("names".into(), Value::Object(names));
    }
    // The short names are defined in the message itself, a line each, as code scanning shows it.
    let mut text = format!("{}: {}", finding_location(f), brief.message);
    for (name, expression) in &brief.names {
        text.push_str(&format!("\n{name} = {expression}"));
    }
    // The fingerprint keeps the location as version 1 wrote it ([`finding_location_full`]), so that code scanning
    // matches alerts across versions.
    json!({
        "ruleId": f.code.as_str(),
        "ruleIndex": rule_index,
        "level": sarif_level(f.severity),
        "message": { "text": text },
        "locations": [{
            "physicalLocation": { "artifactLocation": artifact_location },
            "logicalLocations": logical,
        }],
        "partialFingerprints": {
            "onnxBcastLocation/v1": format!("{}:{}", f.code, finding_location_full(f)),
        },
        "properties": properties,
    })
}

/// One SARIF 2.1.0 log for a whole run: one run whose `tool.driver` declares a rule per diagnostic code, every model
/// as an artifact, one result per finding (level from its severity, the model as physical location, graph and node
/// as logical locations; ONNX models have no source text, so no regions), and each model that could not be checked
/// as an error notification of the invocation.
pub fn sarif_log(models: &[SarifModel<'_>]) -> Value {
    use serde_json::json;
    let rules: Vec<Value> = Code::ALL
        .iter()
        .map(|&code| {
            json!({
                "id": code.as_str(),
                "name": pascal_case(code.as_str()),
                "shortDescription": { "text": crate::render::explain::summary(code) },
                "fullDescription": { "text": code.description() },
                "help": { "text": crate::render::explain::help(code) },
                "defaultConfiguration": { "level": sarif_level(code.default_severity()) },
            })
        })
        .collect();
    let mut artifacts = Vec::new();
    let mut results = Vec::new();
    let mut notifications = Vec::new();
    for (index, model) in models.iter().enumerate() {
        let uri = sarif_uri(model.path);
        let artifact_location = json!({ "uri": uri, "index": index });
        artifacts.push(json!({ "location": { "uri": uri }, "roles": ["analysisTarget"] }));
        match model.outcome {
            Ok(report) => {
                results.extend(report.findings.iter().map(|f| sarif_result(f, &artifact_location)));
            }
            Err(message) => notifications.push(json!({
                "level": "error",
                "message": { "text": message },
                "locations": [{ "physicalLocation": { "artifactLocation": artifact_location } }],
            })),
        }
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "onnx-bcast",
                    "version": env!("CARGO_PKG_VERSION"),
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                },
            },
            "invocations": [{
                "executionSuccessful": notifications.is_empty(),
                "toolExecutionNotifications": notifications,
            }],
            "artifacts": artifacts,
            "results": results,
        }],
    })
}

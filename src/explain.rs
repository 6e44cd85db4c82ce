//! What each diagnostic code means, where its rule comes from, an example and how to fix it: the text of
//! `onnx-bcast explain CODE` and the `help` of each rule in SARIF output.

use crate::diagnostic::Code;

/// A document that defines a broadcasting rule onnx-bcast checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// ONNX `docs/Broadcasting.md`: multidirectional (numpy) and unidirectional broadcasting.
    OnnxBroadcasting,
    /// The SONNX (safety-related ONNX profile) informal spec of `Broadcast`, its constraint C1.
    SonnxC1,
    /// OpenVINO's broadcast rules for element-wise ops: none, numpy, PDPD (axis) and bidirectional.
    OpenVinoRules,
    /// OpenVINO's `Broadcast-1` op: broadcasting data to a given target shape.
    OpenVinoBroadcast1,
}

impl Source {
    /// The document's name.
    pub fn name(self) -> &'static str {
        match self {
            Source::OnnxBroadcasting => "ONNX Broadcasting.md",
            Source::SonnxC1 => "SONNX Broadcast spec, constraint C1",
            Source::OpenVinoRules => "OpenVINO broadcast rules",
            Source::OpenVinoBroadcast1 => "OpenVINO Broadcast-1",
        }
    }

    /// What in the document the rule comes from.
    pub fn what(self) -> &'static str {
        match self {
            Source::OnnxBroadcasting => {
                "multidirectional (numpy) broadcasting for Add … Xor, Where and the variadic ops; unidirectional \
                 broadcasting for Gemm's C and PRelu's slope"
            }
            Source::SonnxC1 => {
                "after padding every shape to a common rank, each dim is either the largest size on its axis or 1"
            }
            Source::OpenVinoRules => {
                "none (shapes must match, no implicit broadcast), numpy, PDPD (B placed at `axis`, trailing 1s \
                 ignored: ONNX's opset 1-6 `broadcast=1`) and bidirectional (Expand) broadcasting"
            }
            Source::OpenVinoBroadcast1 => "numpy mode of an explicit broadcast of data to a target shape (Expand)",
        }
    }
}

/// The documentation of one diagnostic code.
#[derive(Clone, Copy, Debug)]
pub struct RuleDoc {
    pub code: Code,
    /// The documents that define the rule, if it is a broadcasting rule.
    pub sources: &'static [Source],
    /// Where the rule comes from when no broadcasting document defines it.
    pub origin: Option<&'static str>,
    /// A short example: a model fragment and what onnx-bcast reports for it.
    pub example: &'static str,
    /// How to fix it.
    pub help: &'static str,
}

/// The documentation of `code`.
pub fn doc(code: Code) -> RuleDoc {
    use Source::*;
    let (sources, origin, example, help): (&'static [Source], Option<&'static str>, &'static str, &'static str) =
        match code {
            Code::BroadcastViolation => (
                &[OnnxBroadcasting, SonnxC1, OpenVinoRules, OpenVinoBroadcast1],
                None,
                "Add(A: [2, 3], B: [4])\n  error[broadcast-violation] main/add (Add): A [2, 3] and B [4] do not \
                 broadcast: on axis 1, B has 4 where A has 3",
                "Make the sizes agree on the named axis: fix the exporter, or reshape, slice or transpose the \
                 offending input so that each of its dims equals the output's or is 1. A one-way rule (Gemm's C, \
                 PRelu's slope, opset 1-6 `broadcast=1`) never broadcasts its target.",
            ),
            Code::TypeMismatch => (
                &[],
                Some("the op's type constraints in the ONNX operator schemas (inputs sharing a type variable such as T)"),
                "Add(A: float [2, 3], B: double [3])\n  error[type-mismatch] main/add (Add): B is double where A is \
                 float: Add requires one element type for them",
                "Insert a Cast so that the inputs share one element type, or fix the exporter's dtype.",
            ),
            Code::ConditionalBroadcast => (
                &[OnnxBroadcasting, SonnxC1],
                None,
                "Add(X: [N, 3], Y: [2, 3])\n  warning[conditional-broadcast] main/add (Add): holds only if N ∈ {1, 2}: \
                 X [N, 3] and Y [2, 3] broadcast to [2, 3]",
                "Give the symbolic dim a fixed size (dim_value) when it has one, rename symbols that stand for one \
                 size to one name, or make the broadcast explicit with an Expand (`onnx-bcast expand`). Under \
                 --strict it is an error.",
            ),
            Code::ImplicitBroadcast => (
                &[SonnxC1, OpenVinoRules],
                None,
                "Add(X: [2, 3], B: [3]) under --strict\n  error[implicit-broadcast] main/add (Add): implicit \
                 broadcast of B [3] to [2, 3]",
                "Run `onnx-bcast expand IN OUT`: it rewrites every implicit broadcast into explicit ops (Expand; \
                 Reshape and Tile below opset 8). Reported only under --strict, or when named with --warn/--deny.",
            ),
            Code::UndecidedBroadcast => (
                &[SonnxC1, OpenVinoRules],
                None,
                "Add(X: unknown shape, B: [3]) under --strict\n  error[undecided-broadcast] main/add (Add): cannot \
                 prove the inputs share one shape (X's rank unknown): X [unknown rank] and B [3]",
                "Declare the inputs' shapes (graph inputs, value_info), or replace the ops whose outputs shape \
                 inference cannot follow (`check --verbose` names them). Reported only under --strict, or when \
                 named with --warn/--deny.",
            ),
            Code::NegativeDim => (
                &[],
                Some("the ONNX IR spec: a dim_value is a non-negative size"),
                "graph input X with dims [-1, 3]\n  warning[negative-dim] main: value 'X' declares a negative size \
                 on axis 0; read as unknown",
                "Write an unknown size as a dim_param (a symbol such as \"batch\") or leave the dim unset.",
            ),
            Code::UndefinedValue => (
                &[],
                Some("the ONNX IR spec: every node input is a graph input, an initializer or another node's output"),
                "Add(A, missing)\n  error[undefined-value] main/add (Add): input 'missing' is not defined by any \
                 graph input, initializer or node",
                "Add the missing graph input or initializer, or fix the name the node reads.",
            ),
            Code::DuplicateValue => (
                &[],
                Some("the ONNX IR spec: a graph is in single static assignment form"),
                "two nodes both writing y\n  error[duplicate-value] main/b (Relu): value 'y' is defined more than \
                 once",
                "Give every node output a name of its own.",
            ),
            Code::GraphCycle => (
                &[],
                Some("the ONNX IR spec: a graph's nodes form a DAG"),
                "a = Relu(b); b = Relu(a)\n  error[graph-cycle] main/r1 (Relu): 2 nodes form a cycle, among them \
                 r1, r2",
                "Break the cycle; recurrences belong in a Loop or Scan body.",
            ),
            Code::RecursiveFunction => (
                &[],
                Some("the ONNX IR spec: model-local functions may not call themselves"),
                "function local.f whose body calls local.f\n  error[recursive-function] main/call (f): function \
                 local.f calls itself; its body is not followed again",
                "Inline the recursion or unroll it; ONNX functions cannot recurse.",
            ),
            Code::DeclaredShapeMismatch => (
                &[],
                Some("the ONNX IR spec: value_info and graph outputs state facts that hold at run time"),
                "value_info y: [2, 4] for y = Add(A: [2, 3], B: [3])\n  warning[declared-shape-mismatch] main/add \
                 (Add): value 'y' is declared with other facts than inference finds: declared [2, 4], inferred [2, \
                 3] (axis 1)",
                "Fix or drop the stale value_info (re-run the exporter's shape inference).",
            ),
            Code::TensorDataMismatch => (
                &[],
                Some("the ONNX IR spec: a tensor holds exactly product(dims) elements of its type"),
                "initializer W with dims [2, 3] and 5 floats\n  error[tensor-data-mismatch] main: initializer 'W' \
                 holds 5 elements of float data where dims [2, 3] need 6",
                "Re-export the tensor; its data and dims disagree, so the model cannot load.",
            ),
            Code::NestingTooDeep => (
                &[],
                Some("a limit of onnx-bcast (64 levels of subgraphs or function calls)"),
                "If bodies nested 70 deep\n  error[nesting-too-deep] …/if (If): subgraphs nest deeper than 64 \
                 levels; the deeper ones are not checked",
                "Flatten the control flow; the deeper bodies are not checked.",
            ),
            Code::MissingOpset => (
                &[],
                Some("the ONNX IR spec: a model imports an opset of every domain its ops use"),
                "a model whose opset_import lacks the default domain\n  error[missing-opset] main/add (Add): no \
                 opset import for the default domain; opset 23 assumed",
                "Add an opset_import entry for the default domain (\"\") with the opset the exporter targeted.",
            ),
            Code::ExternalData => (
                &[],
                Some("the ONNX external data convention: `location` is a path relative to the model's folder"),
                "initializer W with location \"../secret.bin\"\n  error[external-data] main: tensor 'W': external \
                 data location '../secret.bin' is outside the model's folder; refused",
                "Keep external data files in the model's folder (or below it), with offsets and lengths inside them; \
                 re-save the model with its data to fix the references.",
            ),
            // A code without its text yet: `explain` still prints the description (the unit test below fails).
            #[allow(unreachable_patterns)]
            _ => (&[], None, "", ""),
        };
    RuleDoc { code, sources, origin, example, help }
}

/// The first sentence of a code's description: a one-line summary.
pub fn summary(code: Code) -> &'static str {
    let d = code.description();
    match d.find(". ") {
        Some(i) => &d[..=i],
        None => d,
    }
}

/// The text of `onnx-bcast explain CODE`.
pub fn text(code: Code) -> String {
    let doc = doc(code);
    let mut out =
        format!("{code} (default severity: {})\n\n{}\n", code.default_severity().as_str(), code.description());
    if !doc.sources.is_empty() {
        out.push_str("\nSource:\n");
        for s in doc.sources {
            out.push_str(&format!("  {}: {}\n", s.name(), s.what()));
        }
    } else if let Some(origin) = doc.origin {
        out.push_str(&format!("\nSource: {origin} (not a broadcasting rule)\n"));
    }
    if !doc.example.is_empty() {
        out.push_str(&format!("\nExample:\n  {}\n", doc.example));
    }
    if !doc.help.is_empty() {
        out.push_str(&format!("\nFix: {}\n", doc.help));
    }
    out
}

/// The text of `onnx-bcast explain --list`: every code, its default severity and summary, one per line.
pub fn list() -> String {
    let width = Code::ALL.iter().map(|c| c.as_str().len()).max().unwrap_or(0);
    Code::ALL
        .iter()
        .map(|&c| {
            // Two codes are only reported under --strict (or when named with --deny/--warn): their severity alone
            // would read as if every model got them.
            let when = match c {
                Code::ImplicitBroadcast | Code::UndecidedBroadcast => "(only under --strict) ",
                _ => "",
            };
            format!("{:width$}  {:7}  {when}{}\n", c.as_str(), c.default_severity().as_str(), summary(c))
        })
        .collect()
}

/// The `help` text of a rule in SARIF output: the description and how to fix it (no URL).
pub fn help(code: Code) -> String {
    let doc = doc(code);
    let mut out = code.description().to_string();
    if !doc.help.is_empty() {
        out.push_str(&format!("\n\nFix: {}", doc.help));
    }
    if !doc.sources.is_empty() {
        let names: Vec<&str> = doc.sources.iter().map(|s| s.name()).collect();
        out.push_str(&format!("\n\nSource: {}.", names.join("; ")));
    }
    out.push_str(&format!("\n\nMore: onnx-bcast explain {code}"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_an_example_and_a_source_or_origin() {
        for &code in Code::ALL {
            let doc = doc(code);
            assert!(!doc.example.is_empty() && !doc.help.is_empty(), "{code}");
            assert!(!doc.sources.is_empty() || doc.origin.is_some(), "{code}");
            assert!(doc.example.contains(&format!("[{code}]")), "{code}: the example shows the code");
        }
    }
}

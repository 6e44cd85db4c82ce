//! Diagnostic codes: every finding onnx-bcast reports has one, with a description and a default severity.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

macro_rules! codes {
    ($($variant:ident = $name:literal, $severity:ident, $description:literal;)*) => {
        /// A kind of finding. The kebab-case name is what users select and scripts match on.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code { $($variant),* }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $name),* }
            }

            pub fn description(self) -> &'static str {
                match self { $(Code::$variant => $description),* }
            }

            pub fn default_severity(self) -> Severity {
                match self { $(Code::$variant => Severity::$severity),* }
            }

            pub fn from_name(name: &str) -> Option<Code> {
                Code::ALL.iter().copied().find(|c| c.as_str() == name)
            }
        }
    };
}

codes! {
    BroadcastViolation = "broadcast-violation", Error,
        "The input shapes break the op's broadcasting rule (constraint C1 of the SONNX spec): the op fails at run time.";
    TypeMismatch = "type-mismatch", Error,
        "Inputs that share one type variable in the op's schema have different element types.";
    ConditionalBroadcast = "conditional-broadcast", Warning,
        "The broadcast holds only if symbolic dims take certain values; other values make the op fail at run time.";
    ImplicitBroadcast = "implicit-broadcast", Error,
        "An input is broadcast implicitly. Reported under --strict: the SONNX profile and many accelerator toolchains require every shape conversion to be explicit.";
    UndecidedBroadcast = "undecided-broadcast", Error,
        "The input shapes are not known well enough to prove that no implicit broadcast happens here. Reported under --strict, which asks for proof.";
    NegativeDim = "negative-dim", Warning,
        "A dim_value is negative. Some exporters write -1 for an unknown size; it is read as unknown.";
    UndefinedValue = "undefined-value", Error,
        "A node reads a value that no graph input, initializer or node defines.";
    DuplicateValue = "duplicate-value", Error,
        "A value is produced by more than one node or is both produced and a graph input.";
    GraphCycle = "graph-cycle", Error,
        "Nodes depend on each other in a cycle, so the graph cannot run.";
    RecursiveFunction = "recursive-function", Error,
        "A model-local function calls itself, directly or through others.";
    DeclaredShapeMismatch = "declared-shape-mismatch", Warning,
        "A value_info or graph output declares an element type, rank or size that contradicts what shape inference finds from the ops; the inferred facts are used.";
    ExternalData = "external-data", Error,
        "A tensor's external data reference is unusable: it leaves the model's folder or is not a regular file (a folder, a FIFO, a device: refused, never opened), names a missing file, or lies beyond the file's end.";
    TensorDataMismatch = "tensor-data-mismatch", Error,
        "A tensor's stored data does not have the size its dims and element type call for.";
    NestingTooDeep = "nesting-too-deep", Error,
        "Subgraphs or model-local function calls nest deeper than onnx-bcast follows (64 levels), or function calls unfold into more nodes than it walks (100,000); the bodies past the limit are not checked.";
    MissingOpset = "missing-opset", Error,
        "The model imports no version of the default ONNX domain, so its ops' definitions are unknown; the latest is assumed.";
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_kebab_case_and_round_trip_by_name() {
        for &code in Code::ALL {
            let name = code.as_str();
            assert!(name.chars().all(|c| c.is_ascii_lowercase() || c == '-'), "{name}");
            assert_eq!(Code::from_name(name), Some(code));
            assert!(code.description().ends_with('.'));
        }
    }
}

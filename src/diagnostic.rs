//! Diagnostic codes: every finding onnx-bcast reports has one. This file is the one table that says everything
//! about a code: its name, default severity, when it is reported, a summary and a description, the documents its
//! rule comes from, an example and how to fix it. `onnx-bcast explain` (text and `--list`), the SARIF rules and the
//! table of docs/codes.md are all generated from it (by the `explain` module).
//!
//! Each code's example is a real run: `check` on a committed fixture, whose output is the insta snapshot
//! `tests/it/snapshots/it__codes__CODE.snap` (made by `tests/it/codes.rs`) and is compiled in from there, so the
//! documentation cannot drift from what `check` prints. To add a code: add its row below, create an empty
//! `tests/it/snapshots/it__codes__CODE.snap`, run `cargo insta test --test it --accept -- codes::`, and regenerate the table of
//! docs/codes.md (`ONNX_BCAST_BLESS=1 cargo test --test it -- codes::`).

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// When a code is reported, besides its default severity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reported {
    /// Whenever it applies, at its default severity.
    Always,
    /// Whenever it applies; under `--strict` as an error.
    ErrorUnderStrict,
    /// Only under `--strict` (or when named with `--warn`/`--deny`): without proof every model would get it.
    OnlyUnderStrict,
}

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

/// Where a code's rule comes from.
#[derive(Clone, Copy, Debug)]
pub enum Origin {
    /// The broadcasting documents that define it.
    Documents(&'static [Source]),
    /// The part of ONNX (or of onnx-bcast) it enforces, when it is not a broadcasting rule.
    Other(&'static str),
}

/// A code's example: `check` on a committed fixture.
#[derive(Clone, Copy, Debug)]
pub struct Example {
    /// What the fixture holds, in a few words.
    pub model: &'static str,
    /// The fixture's path in the repository.
    pub fixture: &'static str,
    /// Whether the example runs `check --strict`.
    pub strict: bool,
    /// Further arguments of the example's `check`, before the fixture (`--bind N=5`), or empty.
    pub args: &'static str,
    /// The insta snapshot of that run (its header, then the command line and what `check` printed).
    snapshot: &'static str,
}

impl Example {
    /// The command line and what `check` printed for it, from the snapshot.
    pub fn transcript(&self) -> &'static str {
        // An insta snapshot is `---`, a header, `---`, then the snapshot itself.
        let mut parts = self.snapshot.splitn(3, "---\n");
        match (parts.next(), parts.next(), parts.next()) {
            (Some(""), Some(_header), Some(body)) => body,
            _ => self.snapshot,
        }
    }

    /// The command line the example runs.
    pub fn command(&self) -> String {
        let strict = if self.strict { "--strict " } else { "" };
        let args = if self.args.is_empty() { String::new() } else { format!("{} ", self.args) };
        format!("onnx-bcast check {strict}{args}{}", self.fixture)
    }
}

/// Everything about one code.
#[derive(Clone, Copy, Debug)]
pub struct CodeDoc {
    /// The kebab-case name users select and scripts match on.
    pub name: &'static str,
    pub severity: Severity,
    pub reported: Reported,
    /// A few words, for the table of docs/codes.md.
    pub summary: &'static str,
    /// What the code means: its first sentence is the one-line summary of `explain --list`, completions and SARIF.
    pub description: &'static str,
    pub origin: Origin,
    pub example: Example,
    /// How to fix it.
    pub help: &'static str,
}

macro_rules! codes {
    ($($variant:ident = $name:literal {
        $severity:ident, $reported:ident,
        summary: $summary:literal,
        description: $description:literal,
        origin: $origin:expr,
        example: $model:literal, $fixture:literal, strict: $strict:literal $(, args: $args:literal)?,
        help: $help:literal $(,)?
    })*) => {
        /// A kind of finding. The kebab-case name is what users select and scripts match on.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code { $($variant),* }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            /// Everything about the code.
            pub fn doc(self) -> &'static CodeDoc {
                match self {
                    $(Code::$variant => &CodeDoc {
                        name: $name,
                        severity: Severity::$severity,
                        reported: Reported::$reported,
                        summary: $summary,
                        description: $description,
                        origin: $origin,
                        example: Example {
                            model: $model,
                            fixture: $fixture,
                            strict: $strict,
                            args: concat!("" $(, $args)?),
                            snapshot: include_str!(concat!("../tests/it/snapshots/it__codes__", $name, ".snap")),
                        },
                        help: $help,
                    }),*
                }
            }
        }
    };
}

use Source::*;

codes! {
    BroadcastViolation = "broadcast-violation" {
        Error, Always,
        summary: "the input shapes break the op's broadcasting rule",
        description: "The input shapes break the op's broadcasting rule (constraint C1 of the SONNX spec): the op \
                      fails at run time.",
        origin: Origin::Documents(&[OnnxBroadcasting, SonnxC1, OpenVinoRules, OpenVinoBroadcast1]),
        example: "Add(A: [2, 3], B: [4])", "fixtures/multidirectional_add_bad.onnx", strict: false,
        help: "Make the sizes agree on the named axis: fix the exporter, or reshape, slice or transpose the offending \
               input so that each of its dims equals the output's or is 1. A one-way rule (Gemm's C, PRelu's slope, \
               opset 1-6 `broadcast=1`) never broadcasts its target.",
    }
    TypeMismatch = "type-mismatch" {
        Error, Always,
        summary: "inputs sharing a type variable have different element types",
        description: "Inputs that share one type variable in the op's schema have different element types.",
        origin: Origin::Other(
            "the op's type constraints in the ONNX operator schemas (inputs sharing a type variable such as T)"
        ),
        example: "Add(A: float [2, 3], B: double [2, 3])", "fixtures/multidirectional_dtype_bad.onnx", strict: false,
        help: "Insert a Cast so that the inputs share one element type, or fix the exporter's dtype.",
    }
    ConditionalBroadcast = "conditional-broadcast" {
        Warning, ErrorUnderStrict,
        summary: "holds only for some values of symbolic dims",
        description: "The broadcast holds only if symbolic dims take certain values; other values make the op fail \
                      at run time.",
        origin: Origin::Documents(&[OnnxBroadcasting, SonnxC1]),
        example: "Add(A: [N, 3], B: [2, 3])", "fixtures/symbolic_batch.onnx", strict: false,
        help: "Give the symbolic dim a fixed size (dim_value) when it has one, rename symbols that stand for one size \
               to one name, or make the broadcast explicit with an Expand (`onnx-bcast expand`). Under --strict it \
               is an error.",
    }
    ImplicitBroadcast = "implicit-broadcast" {
        Error, OnlyUnderStrict,
        summary: "an input is broadcast implicitly",
        description: "An input is broadcast implicitly. Reported under --strict: the SONNX profile and many \
                      accelerator toolchains require every shape conversion to be explicit.",
        origin: Origin::Documents(&[SonnxC1, OpenVinoRules]),
        example: "Add(A: [2, 3], B: [3]) under --strict", "fixtures/multidirectional_add_ok.onnx", strict: true,
        help: "Run `onnx-bcast expand IN OUT`: it rewrites every implicit broadcast into explicit ops (Expand; Reshape \
               and Tile below opset 8). Reported only under --strict, or when named with --warn/--deny.",
    }
    UndecidedBroadcast = "undecided-broadcast" {
        Error, OnlyUnderStrict,
        summary: "the shapes are not known well enough to prove no implicit broadcast",
        description: "The input shapes are not known well enough to prove that no implicit broadcast happens here. \
                      Reported under --strict, which asks for proof.",
        origin: Origin::Documents(&[SonnxC1, OpenVinoRules]),
        example: "Add(v: a Loop-carried value of unknown rank, B: [3]) in a Loop body under --strict",
            "fixtures/crafted/loop_body_broadcast.pb", strict: true,
        help: "Declare the inputs' shapes (graph inputs, value_info), or replace the ops whose outputs shape inference \
               cannot follow (`check --verbose` names them). Reported only under --strict, or when named with \
               --warn/--deny.",
    }
    OpaqueNode = "opaque-node" {
        Error, OnlyUnderStrict,
        summary: "a node of an op whose semantics onnx-bcast does not know",
        description: "A node's op has no inference rule in onnx-bcast (an op of an unknown domain, a custom kernel \
                      or plugin): its outputs' shapes are unknown, and so is every broadcast it performs or feeds. \
                      Reported under --strict, which asks for proof.",
        origin: Origin::Other("onnx-bcast's op table and inference rules; the config file's `[ops]` declarations"),
        example: "two nodes of custom.Scale before an Add, under --strict", "fixtures/contrib/unknown_domain_op.onnx",
            strict: true,
        help: "Declare the op's shape behaviour in onnx-bcast.toml (`[ops.\"DOMAIN.OP\"]`: `shape = \"input K\"`, \
               `\"broadcast I..J\"` or `\"opaque\"`; `type = \"input K\"` or an element type), or replace the op \
               with standard ones. Reported only under --strict, or when named with --warn/--deny.",
    }
    NegativeDim = "negative-dim" {
        Warning, Always,
        summary: "a negative `dim_value`, read as unknown",
        description: "A dim_value is negative. Some exporters write -1 for an unknown size; it is read as unknown.",
        origin: Origin::Other("the ONNX IR spec: a dim_value is a non-negative size"),
        example: "graph input A with dims [-1, 3]", "fixtures/malformed/negative_dim.onnx", strict: false,
        help: "Write an unknown size as a dim_param (a symbol such as \"batch\") or leave the dim unset.",
    }
    UndefinedValue = "undefined-value" {
        Error, Always,
        summary: "a node reads a value nothing defines",
        description: "A node reads a value that no graph input, initializer or node defines.",
        origin: Origin::Other(
            "the ONNX IR spec: every node input is a graph input, an initializer or another node's output"
        ),
        example: "Add(A, missing)", "fixtures/malformed/undefined_input.onnx", strict: false,
        help: "Add the missing graph input or initializer, or fix the name the node reads.",
    }
    DuplicateValue = "duplicate-value" {
        Error, Always,
        summary: "a value is defined more than once",
        description: "A value is produced by more than one node or is both produced and a graph input.",
        origin: Origin::Other("the ONNX IR spec: a graph is in single static assignment form"),
        example: "C = Relu(A); C = Neg(A)", "fixtures/malformed/duplicate_value.onnx", strict: false,
        help: "Give every node output a name of its own.",
    }
    GraphCycle = "graph-cycle" {
        Error, Always,
        summary: "nodes depend on each other in a cycle",
        description: "Nodes depend on each other in a cycle, so the graph cannot run.",
        origin: Origin::Other("the ONNX IR spec: a graph's nodes form a DAG"),
        example: "y1 = Add(A, y2); y2 = Relu(y1)", "fixtures/malformed/graph_cycle.onnx", strict: false,
        help: "Break the cycle; recurrences belong in a Loop or Scan body.",
    }
    RecursiveFunction = "recursive-function" {
        Error, Always,
        summary: "a model-local function calls itself",
        description: "A model-local function calls itself, directly or through others.",
        origin: Origin::Other("the ONNX IR spec: model-local functions may not call themselves"),
        example: "function local.Rec whose body calls local.Rec", "fixtures/malformed/recursive_function.onnx",
            strict: false,
        help: "Inline the recursion or unroll it; ONNX functions cannot recurse.",
    }
    DeclaredShapeMismatch = "declared-shape-mismatch" {
        Warning, Always,
        summary: "a declaration contradicts what inference finds",
        description: "A value_info or graph output declares an element type, rank or size that contradicts what \
                      shape inference finds from the ops; the inferred facts are used.",
        origin: Origin::Other("the ONNX IR spec: value_info and graph outputs state facts that hold at run time"),
        example: "graph input A: [2, 3] overwritten by A = Relu(B: [3]); graph output C = Add(A, B) declared [2, 3]",
            "fixtures/malformed/duplicate_shadows_input.onnx", strict: false,
        help: "Fix or drop the stale value_info (re-run the exporter's shape inference).",
    }
    ExternalData = "external-data" {
        Error, Always,
        summary: "an external data reference leaves the model's folder, is not a regular file, is missing, or lies \
                  beyond the file's end",
        description: "A tensor's external data reference is unusable: it leaves the model's folder or is not a \
                      regular file (a folder, a FIFO, a device: refused, never opened), names a missing file, or \
                      lies beyond the file's end.",
        origin: Origin::Other(
            "the ONNX external data convention: `location` is a path relative to the model's folder"
        ),
        example: "initializer shape with location \"../../../../../../etc/passwd\"",
            "fixtures/malformed/external_data_escapes.onnx", strict: false,
        help: "Keep external data files in the model's folder (or below it), with offsets and lengths inside them; \
               re-save the model with its data to fix the references.",
    }
    TensorDataMismatch = "tensor-data-mismatch" {
        Error, Always,
        summary: "a tensor's stored data does not fit its dims and type",
        description: "A tensor's stored data does not have the size its dims and element type call for.",
        origin: Origin::Other("the ONNX IR spec: a tensor holds exactly product(dims) elements of its type"),
        example: "int64 initializer shape with dims [2] and 12 bytes of raw data",
            "fixtures/malformed/raw_data_short.onnx", strict: false,
        help: "Re-export the tensor; its data and dims disagree, so the model cannot load.",
    }
    NestingTooDeep = "nesting-too-deep" {
        Error, Always,
        summary: "subgraphs or function calls nest deeper, or unfold larger, than onnx-bcast follows",
        description: "Subgraphs or model-local function calls nest deeper than onnx-bcast follows (64 levels), or \
                      function calls unfold into more nodes than it walks (100,000); the bodies past the limit are \
                      not checked.",
        origin: Origin::Other("a limit of onnx-bcast (64 levels of subgraphs or function calls)"),
        example: "model-local functions F0 … F99, each calling the next",
            "fixtures/malformed/function_chain_100.onnx", strict: false,
        help: "Flatten the control flow; the deeper bodies are not checked.",
    }
    ShapeContradiction = "shape-contradiction" {
        Error, Always,
        summary: "an op's inputs break what its specification requires of their shapes",
        description: "The shapes of an op's inputs break what its specification requires of them (MatMul's and \
                      Gemm's inner sizes, Concat's other axes, Reshape's element count, Conv's channels and kernel, \
                      Split's sizes, axes and constant indices in range, normalization parameters, Einsum labels, \
                      …): no run of the model gets past the op. What follows from it is left unknown, in `shapes` \
                      and `infer` too. Over `--range`, a conditional-shape condition that fails somewhere in the \
                      ranges is this error at its smallest failing sizes.",
        origin: Origin::Other(
            "the ONNX operator specifications (docs/Operators.md): what each op requires of its inputs' shapes"
        ),
        example: "C = MatMul(A: [2, 3], B: [4, 5]); Concat(C, D: [2, 7], axis=0)",
            "fixtures/contradiction/matmul_concat.onnx", strict: false,
        help: "Make the named sizes agree: fix the exporter, or the Reshape, Transpose or Slice that feeds the op \
               the wrong shape. The message names the inputs, their shapes and the axis at fault.",
    }
    ConditionalShape = "conditional-shape" {
        Warning, Always,
        summary: "an op's shape requirement holds only for some values of symbolic dims",
        description: "What an op's specification requires of its inputs' shapes holds only if symbolic dims take \
                      certain sizes (`K = 768`, `4 divides 6·N`; onnxruntime's GroupQueryAttention: \
                      `kv_cache_dim = 16`); other sizes make the op fail at run time. Over `--range` the conditions \
                      are decided like a broadcast's: proven, no finding; failing, an error at the smallest failing \
                      sizes; unproven, this warning naming the part left.",
        origin: Origin::Other(
            "the ONNX operator specifications (docs/Operators.md) and onnxruntime's docs/ContribOperators.md: \
             what each op requires of its inputs' shapes"
        ),
        example: "MatMul(A: [N, K], B: [768, 64])", "fixtures/contradiction/matmul_symbolic.onnx", strict: false,
        help: "Give the symbolic dim its fixed size (dim_value) when it has one, or name sizes that are one size \
               with one symbol. --strict is about broadcasts and leaves it a warning; --deny conditional-shape \
               makes it an error.",
    }
    IndexBound = "index-bound" {
        Warning, Always,
        summary: "indices computed from the sizes stay within the axis they index only for some sizes",
        description: "A Gather (or GatherElements) reads its table with indices computed from the input sizes \
                      (position ids `Range(0, seq) + 2`, or `CumSum(mask) + 1`) that stay within the axis they \
                      index (`[-s, s-1]`) only if the sizes meet a condition (`seq ≤ 64` for a table of 66 rows): \
                      longer inputs make the op fail at run time. Over ranges of sizes (`--range`) a size that \
                      breaks the condition makes it an error, with that size as its witness.",
        origin: Origin::Other(
            "the ONNX operator specifications (docs/Operators.md): Gather and GatherElements accept indices in \
             [-s, s-1] for an axis of size s"
        ),
        example: "Gather(table: [66, 8], Range(0, seq) + 2)", "fixtures/ranges/position_ids.onnx", strict: false,
        help: "Feed only sizes within the condition (a TensorRT profile from `check --safe-ranges`), or enlarge the \
               table (max_position_embeddings) to the longest input the model must take.",
    }
    InexactDivision = "inexact-division" {
        Error, Always,
        summary: "a size the op must divide exactly does not divide",
        description: "A size the op divides, and whose division its specification requires to be exact (Reshape's \
                      -1, Split into equal parts, DepthToSpace's and SpaceToDepth's blocks, attention heads), does \
                      not divide: with the sizes the model fixes, or those `--bind` gives, or at the smallest sizes \
                      of the `--range` ranges where a conditional-shape division fails.",
        origin: Origin::Other(
            "the ONNX operator specifications (docs/Operators.md): Reshape, Split, DepthToSpace, SpaceToDepth, \
             Attention"
        ),
        example: "Reshape(x: [2, 3], shape: [4, -1])", "fixtures/contradiction/reshape_inexact.onnx", strict: false,
        help: "Fix the target shape (or the sizes bound with --bind) so that the division is exact.",
    }
    InitializerMismatch = "initializer-mismatch" {
        Error, Always,
        summary: "a graph input's initializer contradicts the input's declared type or shape",
        description: "A graph input has an initializer (its default value) whose element type, rank or size \
                      contradicts the input's declaration: onnxruntime refuses to load the model. The value is \
                      left unknown.",
        origin: Origin::Other(
            "the ONNX IR spec: an initializer that names a graph input is that input's default value, of its type"
        ),
        example: "graph input x: float [4, 3] with an initializer of [8, 7]",
            "fixtures/contradiction/initializer_shape.onnx", strict: false,
        help: "Make the declaration and the initializer agree (re-export, or drop the stale input declaration).",
    }
    ExpressionTooLarge = "expression-too-large" {
        Warning, Always,
        summary: "a size computed from symbolic sizes grows past the expression budget; it is followed as a fresh \
                  symbol",
        description: "A size the graph computes from symbolic sizes (through Shape, arithmetic, Min/Max, Reshape …) \
                      grows past onnx-bcast's budget of 256 expression nodes; from that node on it is a fresh symbol, which \
                      says only that it is some size, so the broadcasts that read it may be undecided.",
        origin: Origin::Other(
            "a limit of onnx-bcast (256 expression nodes per symbolic size), which bounds its time and memory"
        ),
        example: "a chain of 10 steps s = min(s, floor(max(s - 1, 2) / 2)) + max(s - 1, 2) over Shape(x: [N])",
            "fixtures/crafted/expression_minmax_10.pb", strict: false,
        help: "Compute the size once and reuse it (or declare it as a dim_param); a size expression this large is \
               usually an exporter tracing a loop of shape arithmetic.",
    }
    UnknownIrVersion = "unknown-ir-version" {
        Warning, Always,
        summary: "the model declares an IR version no ONNX release defines",
        description: "The model declares an IR version no ONNX release defines (from 1 to 14, the newest in onnx \
                      1.23): it is read with the rules of the newest onnx-bcast knows, fields it does not know \
                      survive its rewrites unchanged, and runtimes refuse it.",
        origin: Origin::Other("the ONNX IR spec: ModelProto.ir_version, from 1 (IR_VERSION_2017_10_10) to 14"),
        example: "Add(A: [2, 3], B: [3]) in a model of ir_version 100", "fixtures/crafted/ir_version_100.pb",
            strict: false,
        help: "Save the model with the IR version of the ONNX release that made it (onnx.helper.make_model sets it), or \
               check the file is the model it claims to be.",
    }
    MissingOpset = "missing-opset" {
        Error, Always,
        summary: "the model imports no opset of the default domain",
        description: "The model imports no version of the default ONNX domain, so its ops' definitions are unknown; \
                      the latest is assumed.",
        origin: Origin::Other("the ONNX IR spec: a model imports an opset of every domain its ops use"),
        example: "Add(A, B) in a model whose opset_import is empty", "fixtures/malformed/no_opset_import.onnx",
            strict: false,
        help: "Add an opset_import entry for the default domain (\"\") with the opset the exporter targeted.",
    }
    BindContradiction = "bind-contradiction" {
        Error, Always,
        summary: "a `--bind` size contradicts a size the model declares",
        description: "With the sizes `--bind` gives the inputs' symbols, a value's declared shape contradicts the one \
                      inference finds: the model cannot run at those sizes. Text and GitHub output show the first \
                      few of a model's, then how many more; JSON and SARIF list them all.",
        origin: Origin::Other("the ONNX IR spec: value_info and graph outputs state facts that hold at run time"),
        example: "x: [N, 3] through five Relus, each output declared [4, 3], checked with N = 5",
            "fixtures/contradiction/bind_declared.onnx", strict: false, args: "--bind N=5",
        help: "Bind the symbol to a size the model allows, or fix the declarations that fix it (a size written as a \
               dim_value where the exporter meant the symbol).",
    }
}

impl Code {
    pub fn as_str(self) -> &'static str {
        self.doc().name
    }

    pub fn description(self) -> &'static str {
        self.doc().description
    }

    pub fn default_severity(self) -> Severity {
        self.doc().severity
    }

    pub fn from_name(name: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.as_str() == name)
    }
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

    #[test]
    fn every_code_has_a_help_an_origin_and_an_example_that_shows_it() {
        for &code in Code::ALL {
            let doc = code.doc();
            assert!(!doc.help.is_empty() && !doc.summary.is_empty() && !doc.example.model.is_empty(), "{code}");
            if let Origin::Documents(sources) = doc.origin {
                assert!(!sources.is_empty(), "{code}");
            }
            let transcript = doc.example.transcript();
            assert!(transcript.starts_with(&format!("$ {}\n", doc.example.command())), "{code}: {transcript}");
            assert!(transcript.contains(&format!("[{code}]")), "{code}: the example shows the code");
        }
    }

    #[test]
    fn only_the_strict_codes_are_reported_only_under_strict() {
        for &code in Code::ALL {
            let doc = code.doc();
            assert_eq!(doc.example.strict, doc.reported == Reported::OnlyUnderStrict, "{code}");
        }
    }
}

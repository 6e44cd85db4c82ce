//! onnx-bcast: make broadcasting in ONNX models visible, checked and explicit.
//!
//! This is the library behind the `onnx-bcast` command line. Its modules form layers; each uses only its own layer
//! and the ones below it (`tests/layers.rs` keeps it so, and ARCHITECTURE.md draws the map):
//!
//! 1. **Schema and system calls**: [`pb`] (the generated ONNX messages, field numbers, element types), [`atomic`]
//!    and [`copy`] (writing files), [`panics`]; [`escape`], how model-controlled text is shown; [`interrupt`], a stop request.
//! 2. **Loading**: [`source`] reads a file's field headers without touching tensor data; [`model::Model::open`]
//!    memory-maps an `.onnx` file and decodes it (tensor data stays in the map); [`gen`] streams synthetic models.
//! 3. **Values**: [`sym`] (symbolic sizes), [`shape`] (dims and shapes), [`tensor`] (element types and the facts
//!    tensors give), [`diagnostic`] (the codes every finding carries).
//! 4. **Attributes, op table, rules**: [`attr`] (the one reader of node attributes), [`ops`] (which op broadcasts
//!    by which rule at which opset), [`rules`] (one file per broadcast rule: its maths, how a node binds to it, its
//!    wording and the operands its rewrite needs; also reachable as `broadcast`), [`external`] (external data).
//! 5. **Inference**: [`infer`], shapes, types and small values of the ops that do not broadcast.
//! 6. **Analysis**: [`analysis::analyze_model`] walks every graph (main graph, `If`/`Loop`/`Scan` bodies,
//!    model-local functions at each call site, see [`calls`]) and judges every broadcasting site by its rule at the
//!    model's opset ([`rules::Rule`], [`rules::Verdict`]). It only reads, and returns side tables.
//! 7. **Rewriting bytes**: [`wire`] splices an edit into the original bytes ([`wire::Pieces`]); [`save`] writes the
//!    result and its external data atomically; [`materialize`] writes a constant out at its broadcast shape.
//! 8. **Check | expand**: [`check::check`] turns an analysis into a [`check::Report`] (one [`check::Finding`] per
//!    problem, with a [`diagnostic::Code`] and a [`diagnostic::Severity`] changed by a [`check::RuleSelection`]);
//!    [`refuse`] names what makes a model too broken to rewrite; [`expand::expand_model`] plans the rewrite of every
//!    implicit broadcast (strategy, builder, external data) and [`expand::write_expanded`] writes it;
//!    [`annotate::infer_model`] plans `infer`'s declarations of every inferred shape (`--bind` for static ones).
//!    [`fold::fold_model`] removes explicit broadcasts that each consumer performs anyway (the inverse).
//! 9. **Rendering**: [`render`] writes a report as text, JSON, SARIF or GitHub workflow commands; [`explain`]
//!    documents every code; [`config`] finds and reads the command line's config file.
//! 10. **The command line**: [`cli`], the whole program behind the `onnx-bcast` binary and the Python wheel's command.
//!
//! # Check a model
//!
//! ```
//! use onnx_bcast::analysis::analyze_model;
//! use onnx_bcast::check::{check, CheckOptions};
//! use onnx_bcast::diagnostic::{Code, Severity};
//! use onnx_bcast::model::Model;
//!
//! let model = Model::open(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/multidirectional_add_bad.onnx"))?;
//! let report = check(&analyze_model(&model), CheckOptions::default());
//! assert!(report.failed(), "an error-level finding fails the check");
//! let finding = &report.findings[0];
//! assert_eq!((finding.code, finding.severity), (Code::BroadcastViolation, Severity::Error));
//! assert_eq!((finding.graph.as_str(), finding.node.as_deref(), finding.op.as_deref()), ("main", Some("add"), Some("Add")));
//! assert_eq!(finding.message, "A [2, 3] and B [4] do not broadcast: on axis 1, B has 4 where A has 3");
//! assert_eq!((report.summary.sites, report.summary.violations), (1, 1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Choose severities and render
//!
//! [`check::CheckOptions`] carries `--strict` and the rule selection of `--deny`/`--warn`/`--allow`; build it with
//! `..Default::default()` so that new options keep your code compiling.
//!
//! ```
//! use onnx_bcast::analysis::analyze_model;
//! use onnx_bcast::check::{check, CheckOptions, Level, RuleSelection, Selector};
//! use onnx_bcast::diagnostic::Code;
//! use onnx_bcast::model::Model;
//! use onnx_bcast::render;
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/symbolic_batch.onnx");
//! let analysis = analyze_model(&Model::open(path)?);
//!
//! // By default a conditional broadcast (`N ∈ {1, 2}`) is a warning and does not fail the check.
//! assert!(!check(&analysis, CheckOptions::default()).failed());
//!
//! // Like `--deny conditional-broadcast`:
//! let mut rules = RuleSelection::default();
//! rules.select(Selector::Code(Code::ConditionalBroadcast), Level::Deny);
//! let report = check(&analysis, CheckOptions { rules, ..Default::default() });
//! assert!(report.failed());
//!
//! let mut text = Vec::new();
//! render::write_text(&mut text, "symbolic_batch.onnx", &report)?;
//! assert!(String::from_utf8(text)?.starts_with(
//!     "symbolic_batch.onnx: error[conditional-broadcast] main › add (Add): holds only if N ∈ {1, 2}"
//! ));
//! let json = render::report_json("symbolic_batch.onnx", &report);
//! assert_eq!(json["findings"][0]["severity"], "error");
//! let sarif = render::sarif_log(&[render::SarifModel { path: "symbolic_batch.onnx", outcome: Ok(&report) }]);
//! assert_eq!(sarif["runs"][0]["results"][0]["level"], "error");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Make broadcasts explicit and save
//!
//! ```
//! use onnx_bcast::analysis::analyze_model;
//! use onnx_bcast::check::{check, CheckOptions};
//! use onnx_bcast::expand::{expand_model, write_expanded, ExpandOptions};
//! use onnx_bcast::model::Model;
//!
//! let model = Model::open(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/multidirectional_add_ok.onnx"))?;
//! let strict = CheckOptions { strict: true, ..Default::default() };
//! assert!(check(&analyze_model(&model), strict).failed(), "an implicit broadcast fails --strict");
//!
//! let (plan, pieces) = expand_model(&model, ExpandOptions::default())?;
//! assert_eq!((plan.summary.made_explicit, plan.summary.left.len()), (1, 0));
//!
//! let dir = tempfile::tempdir()?;
//! let out = dir.path().join("explicit.onnx");
//! write_expanded(&model, &plan, &pieces, &out)?;
//! let explicit = Model::open(&out)?;
//! assert!(!check(&analyze_model(&explicit), strict).failed(), "no implicit broadcast is left");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The command line's modules name the crate as `onnx_bcast::…`, as a program using the library would.
extern crate self as onnx_bcast;

pub mod cli;
pub mod model;

pub mod pb;
/// The generated schema under the name the crate has always used for it ([`pb`] holds it).
pub use pb as proto;
pub mod analysis;
pub mod atomic;
pub mod attr;
pub mod brief;
pub mod rules;
/// The broadcast rules under the name the crate has always used for them ([`rules`] holds them).
pub use rules as broadcast;
pub mod annotate;
pub mod calls;
pub mod check;
pub mod config;
pub mod copy;
pub mod diagnostic;
pub mod dot;
pub mod escape;
pub mod expand;
pub mod explain;
pub mod external;
pub mod fold;
pub mod gen;
pub mod index_report;
pub mod infer;
pub mod interrupt;
pub mod location;
pub mod materialize;
pub mod ops;
pub mod panics;
pub mod platform;
pub mod range_report;
pub mod ranges;
pub mod refuse;
pub mod render;
pub mod render_expand;
pub mod render_fold;
pub mod render_infer;
pub mod save;
pub mod selection;
pub mod shape;
pub mod shape_report;
pub mod source;
pub mod sym;
pub mod tensor;
#[cfg(feature = "verify")]
pub mod verify;
pub mod wire;
pub mod witness;

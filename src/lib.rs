//! onnx-bcast: make broadcasting in ONNX models visible, checked and explicit.
//!
//! This is the library behind the `onnx-bcast` command line. Each folder is a layer; a module uses only its own
//! layer and the ones below it (`tests/it/layers.rs` keeps it so, and ARCHITECTURE.md draws the map):
//!
//! 1. [`sys`]: system calls, atomic writes, panics, stop requests, and how model-controlled text is shown.
//! 2. [`sizes`]: symbolic sizes ([`sizes::sym`]) and dims and shapes ([`sizes::shape`]); [`diagnostic`], the codes
//!    every finding carries.
//! 3. [`onnx`]: the model and its bytes: [`onnx::model::Model::open`] memory-maps an `.onnx` file and decodes it
//!    (tensor data stays in the map); attributes, tensors, external data; [`onnx::wire`] splices an edit into the
//!    original bytes and [`onnx::save`] writes the result atomically.
//! 4. [`rules`]: one file per broadcast rule (its maths, how a node binds to it, its wording and what a rewrite
//!    needs of it), the op table ([`rules::ops`]), and conditions decided over ranges of sizes ([`rules::ranges`]).
//! 5. [`infer`]: shapes, types and small values of the ops that do not broadcast.
//! 6. [`analysis`]: [`analysis::analyze_model`] walks every graph (main graph, `If`/`Loop`/`Scan` bodies,
//!    model-local functions at each call site) and judges every broadcasting site by its rule at the model's opset
//!    ([`rules::Rule`], [`rules::Verdict`]). It only reads, and returns side tables.
//! 7. [`check`] and [`rewrite`]: [`check::check`] turns an analysis into a [`check::Report`] (one
//!    [`check::Finding`] per problem, with a [`diagnostic::Code`] and a [`diagnostic::Severity`] changed by a
//!    [`check::RuleSelection`]); [`rewrite::expand::expand_model`] plans the rewrite of every implicit broadcast and
//!    [`rewrite::expand::write_expanded`] writes it; [`rewrite::fold`] removes explicit broadcasts each consumer
//!    performs anyway; [`rewrite::annotate`] declares every inferred shape (`infer`); all three go from plan to
//!    bytes through [`rewrite::driver`].
//! 8. [`render`]: a report as text, JSON, SARIF or GitHub workflow commands; each command's summary; `explain`.
//! 9. [`cli`]: the whole program behind the `onnx-bcast` binary and the Python wheel's command, with its config
//!    file.
//!
//! # Check a model
//!
//! ```
//! use onnx_bcast::analysis::analyze_model;
//! use onnx_bcast::check::{check, CheckOptions};
//! use onnx_bcast::diagnostic::{Code, Severity};
//! use onnx_bcast::onnx::model::Model;
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
//! use onnx_bcast::onnx::model::Model;
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
//! use onnx_bcast::rewrite::expand::{expand_model, write_expanded, ExpandOptions};
//! use onnx_bcast::onnx::model::Model;
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

pub mod sys;

pub mod diagnostic;
pub mod sizes;

pub mod onnx;

pub mod rules;

pub mod infer;

pub mod analysis;

pub mod check;
pub mod rewrite;

pub mod render;

pub mod cli;

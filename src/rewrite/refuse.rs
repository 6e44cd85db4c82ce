//! What `expand` refuses to rewrite: a model that `check` reports as broken, whatever its broadcasts.
//!
//! A rewrite of a graph with a cycle, a value defined twice or read undefined, a recursive function, no default
//! opset, or external data that cannot be used would write a model that is exactly as broken (or worse, one whose
//! breakage is now hidden in the rewrite), and planning on such a graph has no meaning: the order of its nodes,
//! the value a name stands for, or the size of a tensor is not defined. So `expand` stops with the findings `check`
//! gives (exit 1) and writes nothing.

use crate::analysis::{Analysis, Note};
use crate::diagnostic::Code;

/// The codes that make a model broken for `expand` (and `infer`, `fold`). A `--bind` size the model contradicts is
/// one: the model cannot run at those sizes, so a rewrite for them has no meaning.
pub const BROKEN: &[Code] = &[
    Code::BindContradiction,
    Code::GraphCycle,
    Code::DuplicateValue,
    Code::UndefinedValue,
    Code::RecursiveFunction,
    Code::MissingOpset,
    Code::ExternalData,
    Code::TensorDataMismatch,
];

/// The notes of `analysis` that make the model broken for `expand`.
pub fn broken(analysis: &Analysis) -> Vec<Note> {
    analysis.notes.iter().filter(|n| BROKEN.contains(&n.code)).cloned().collect()
}

/// One line about a non-empty list of such notes.
pub fn summary(notes: &[Note]) -> String {
    let Some(first) = notes.first() else { return "the model is broken".into() };
    let more = match notes.len() {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    format!("refused, the model is broken: error[{}] {}{more}", first.code, first.message)
}

/// How one note reads on its own line, as `check` prints a finding: `error[CODE] GRAPH › NODE (OP): message`.
pub fn line(note: &Note) -> String {
    let at = crate::onnx::location::at(&note.graph, note.node.as_deref(), note.op.as_deref());
    format!("error[{}] {at}: {}", note.code, note.message)
}

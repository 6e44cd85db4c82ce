//! Moving external data as `expand`'s options ask: small tensors inlined into the model file, the rest gathered
//! into one new file beside the output (its bytes are copied when the result is written).

use super::{ExpandError, ExpandOptions, ExternalMoves};
use crate::onnx::pb::TensorProto;
use crate::onnx::wire::ModelEdit;

/// Inlines or gathers the external data of main-graph initializers, as the options ask.
pub(super) fn move_external(
    model: &crate::onnx::model::Model,
    options: &ExpandOptions,
    edit: &mut ModelEdit,
) -> Result<ExternalMoves, ExpandError> {
    use crate::onnx::external;
    let mut moves = ExternalMoves::default();
    if options.inline_external_below.is_none() && options.gather_external.is_none() {
        return Ok(moves);
    }
    if let Some(name) = &options.gather_external {
        let plain = std::path::Path::new(name).file_name().is_some_and(|f| f == name.as_str());
        if !plain {
            return Err(ExpandError::GatherName(name.clone()));
        }
        moves.gathered = Some((name.clone(), Vec::new()));
    }
    let folder = model.folder();
    let Some(graph) = &model.proto().graph else { return Ok(moves) };
    let mut next_offset = 0u64;
    for (j, t) in graph.initializer.iter().enumerate() {
        let Some(r) = external::reference(t) else { continue };
        let r = r?;
        let (source, length) = external::validate(folder, t, &r)?;
        if options.inline_external_below.is_some_and(|max| length <= max) {
            if let Some(bytes) = external::read(folder, t, &r, length)? {
                let inline = TensorProto {
                    raw_data: Some(bytes.into()),
                    data_location: None,
                    external_data: Vec::new(),
                    ..t.clone()
                };
                edit.graph_mut(&[]).initializer_edits.insert(j, inline);
                moves.inlined.push(t.name().to_string());
                moves.moved.insert(t.name().to_string());
                continue;
            }
        }
        if let Some((file, ranges)) = &mut moves.gathered {
            // Each tensor starts on a 64-byte boundary, as memory-mapping readers prefer.
            let offset = next_offset.div_ceil(64) * 64;
            next_offset = offset + length;
            let entry =
                |k: &str, v: String| crate::onnx::pb::StringStringEntryProto { key: Some(k.into()), value: Some(v) };
            let moved = TensorProto {
                external_data: vec![
                    entry("location", file.clone()),
                    entry("offset", offset.to_string()),
                    entry("length", length.to_string()),
                ],
                ..t.clone()
            };
            edit.graph_mut(&[]).initializer_edits.insert(j, moved);
            ranges.push((source, r.offset, length));
            moves.moved.insert(t.name().to_string());
        }
    }
    Ok(moves)
}

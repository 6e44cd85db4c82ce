//! The `com.microsoft.nchwc` domain: the blocked-channel layout onnxruntime's offline optimization writes at
//! `ORT_ENABLE_ALL` (onnxruntime's `docs/ContribOperators.md` lists the domain; the ops are defined in its
//! `nchwc_schema_defs.cc`). A blocked tensor is written (N, C', H, W) with C' the channels rounded up to the
//! block size of the machine's vector unit (8 or 16 floats): `ReorderInput` goes into the layout and
//! `ReorderOutput` (with the true channel count as an attribute) comes back out of it. In between, `Conv` and the
//! pools are the standard ops' arithmetic on the blocked tensor, whose weights are already padded.

use super::Ctx;
use crate::onnx::tensor::ValueFacts;
use crate::sizes::shape::{Dim, Shape};
use crate::sizes::sym::Poly;

/// The largest block size MLAS uses: a channel count that is a multiple of it is never padded.
const MAX_BLOCK: u64 = 16;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    Some(match ctx.op {
        // Conv (X, W, B, and an optional Sum added to the result), MaxPool, AveragePool, GlobalAveragePool and
        // GlobalMaxPool: the standard ops' shapes.
        "Conv" | "MaxPool" | "AveragePool" | "GlobalAveragePool" | "GlobalMaxPool" => {
            crate::infer::infer(&mut super::norm::reborrow(ctx))?.into_iter().take(1).collect()
        }
        "ReorderInput" => {
            let last = ctx.int("channels_last", 0) != 0;
            let shape = ctx.dims(0).filter(|d| d.len() >= 2).map(|d| {
                let mut d = d.to_vec();
                if last {
                    let c = d.pop().expect("rank at least 2");
                    d.insert(1, c);
                }
                d[1] = match d[1].known() {
                    Some(c) if c % MAX_BLOCK == 0 => Dim::Known(c),
                    // Padded to the machine's block size: a size of its own.
                    _ => ctx.fresh(),
                };
                Shape::ranked(d)
            });
            vec![ValueFacts::tensor(ctx.elem(0), shape.unwrap_or_default())]
        }
        "ReorderOutput" => {
            let channels = ctx.attrs.int("channels").and_then(|c| u64::try_from(c).ok());
            let shape = ctx.dims(0).filter(|d| d.len() >= 2).map(|d| {
                let mut d = d.to_vec();
                d[1] = channels.map_or(Dim::Unknown, Dim::Known);
                if ctx.int("channels_last", 0) != 0 {
                    let c = d.remove(1);
                    d.push(c);
                }
                Shape::ranked(d)
            });
            vec![ValueFacts::tensor(ctx.elem(0), shape.unwrap_or_default())]
        }
        // Upsample: each spatial dim times its integer scale.
        "Upsample" => {
            let scales = ctx.attrs.ints("scales").unwrap_or(&[]);
            let shape = ctx.dims(0).map(|d| {
                let spatial = d.len().saturating_sub(scales.len());
                Shape::ranked(
                    d.iter()
                        .enumerate()
                        .map(|(i, x)| match i.checked_sub(spatial).and_then(|k| scales.get(k)) {
                            Some(&s) => {
                                x.to_poly().and_then(|p| p.mul(&Poly::constant(s))).map_or(Dim::Unknown, Dim::from_poly)
                            }
                            None => x.clone(),
                        })
                        .collect(),
                )
            });
            vec![ValueFacts::tensor(ctx.elem(0), shape.unwrap_or_default())]
        }
        _ => return None,
    })
}

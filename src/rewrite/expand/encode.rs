//! The messages a plan adds, written as bytes ([`crate::onnx::wire::Writer`]): a node, the declaration of its
//! output, a constant int64 vector. A large model's plan adds an `Expand` and its declaration for thousands of
//! values; built as messages, each cost as much again as the site's whole plan. The tests compare every writer with
//! prost's encoding of the message it stands for.

use crate::onnx::pb::field::{attribute, node as n, tensor, type_proto as ty, value_info as vi};
use crate::onnx::pb::{attribute_proto::AttributeType, TensorProto};
use crate::onnx::tensor::INT64;
use crate::onnx::wire::Writer;
use crate::sizes::shape::{Dim, Shape};

/// The attribute of a new node, if any.
pub(super) enum NewAttribute<'a> {
    None,
    /// An `int` attribute (`Concat`'s axis).
    Int(&'static str, i64),
    /// A `Constant`'s `value`.
    Value(&'a TensorProto),
}

/// A node of the default domain: its inputs, one output, its name, op and attribute.
pub(super) fn node(w: &mut Writer<'_>, inputs: &[&str], output: &str, name: &str, op: &str, attr: &NewAttribute) {
    inputs.iter().for_each(|input| w.string(n::INPUT, input));
    w.string(n::OUTPUT, output);
    w.string(n::NAME, name);
    w.string(n::OP_TYPE, op);
    match *attr {
        NewAttribute::None => {}
        NewAttribute::Int(name, i) => w.message(n::ATTRIBUTE, |w| {
            w.string(attribute::NAME, name);
            w.int64(attribute::I, i);
            w.int32(attribute::TYPE, AttributeType::Int as i32);
        }),
        NewAttribute::Value(t) => w.message(n::ATTRIBUTE, |w| {
            w.string(attribute::NAME, "value");
            w.prost(attribute::T, t);
            w.int32(attribute::TYPE, AttributeType::Tensor as i32);
        }),
    }
}

/// The declaration [`super::value_info`] makes: `name` of element type `elem` and shape `shape`.
pub(super) fn value_info(w: &mut Writer<'_>, name: &str, elem: i32, shape: &Shape) {
    w.string(vi::NAME, name);
    w.message(vi::TYPE, |w| {
        w.message(ty::TENSOR_TYPE, |w| {
            w.int32(ty::ELEM_TYPE, elem);
            if let Some(dims) = shape.dims() {
                w.message(ty::SHAPE, |w| {
                    for d in dims {
                        w.message(ty::DIM, |w| match d {
                            Dim::Known(size) => w.int64(ty::DIM_VALUE, *size as i64),
                            Dim::Sym(s) if !d.is_fresh() => w.string(ty::DIM_PARAM, s),
                            _ => {}
                        });
                    }
                });
            }
        });
    });
}

/// A 1-D int64 tensor of `values` in `raw_data`, named `name` if given.
pub(super) fn int64_tensor(w: &mut Writer<'_>, name: Option<&str>, values: &[i64]) {
    w.int64(tensor::DIMS, values.len() as i64);
    w.int32(tensor::DATA_TYPE, INT64);
    if let Some(name) = name {
        w.string(tensor::NAME, name);
    }
    let mut raw = smallvec::SmallVec::<[u8; 64]>::new();
    values.iter().for_each(|v| raw.extend_from_slice(&v.to_le_bytes()));
    w.bytes(tensor::RAW_DATA, &raw);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::pb::{AttributeProto, NodeProto};
    use crate::onnx::wire::Encoded;
    use crate::sizes::shape::parse_shape;

    /// The tensor `int64_tensor` writes, as a message.
    fn int64_message(name: Option<&str>, values: &[i64]) -> TensorProto {
        TensorProto { name: name.map(Into::into), ..super::super::builder::int64_tensor(values) }
    }

    #[test]
    fn each_written_message_is_the_bytes_prost_writes_for_the_message_it_stands_for() {
        let long = "n".repeat(200);
        let tensor = int64_message(None, &[8, -1]);
        let attributes = [
            (NewAttribute::None, None),
            (NewAttribute::Int("axis", -2), Some((AttributeType::Int, None))),
            (NewAttribute::Value(&tensor), Some((AttributeType::Tensor, Some(tensor.clone())))),
        ];
        let (mut written, mut by_prost) = (Encoded::default(), Encoded::default());
        for (attr, expected) in &attributes {
            for (inputs, output) in [(&["a", ""][..], "b"), (&[][..], long.as_str())] {
                written.push_with(|w| node(w, inputs, output, "b_op", "Expand", attr));
                let attribute = expected.clone().map(|(kind, t)| AttributeProto {
                    name: Some(if t.is_some() { "value" } else { "axis" }.into()),
                    i: t.is_none().then_some(-2),
                    t,
                    r#type: Some(kind as i32),
                    ..Default::default()
                });
                by_prost.push(&NodeProto {
                    input: inputs.iter().map(|&i| i.into()).collect(),
                    output: smallvec::smallvec![output.into()],
                    name: Some("b_op".into()),
                    op_type: Some("Expand".into()),
                    attribute: attribute.into_iter().collect(),
                    ..Default::default()
                });
            }
        }
        for shape in ["8,64", "", "N,?,?1,64", "*"] {
            let shape = parse_shape(shape);
            for name in ["v", long.as_str()] {
                written.push_with(|w| value_info(w, name, 7, &shape));
                by_prost.push(&super::super::value_info(name, 7, &shape));
            }
        }
        for (name, values) in [(Some("s"), &[8, 64][..]), (None, &[]), (Some(long.as_str()), &[-1; 20])] {
            written.push_with(|w| int64_tensor(w, name, values));
            by_prost.push(&int64_message(name, values));
        }
        assert_eq!(written, by_prost);
    }
}

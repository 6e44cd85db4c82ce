//! `NodeProto` in a compact layout, encoded and decoded exactly as prost's generated code does for the message
//! `proto/onnx.proto` declares (`build.rs` points the schema's `onnx.NodeProto` here).
//!
//! Why: a node decoded into prost's struct took 240 bytes inline (five `Option<String>`, five `Vec`s) and ~112 bytes
//! of heap for its names and name lists: a 1M-node chain cost ~350 MiB decoded. Here a name is a
//! [`CompactString`] (24 bytes, held inline up to 24 bytes, `Option` of it 24 bytes too), the inputs and outputs
//! are lists that hold two inputs and one output inline, and the fields a node seldom sets (`overload`,
//! `doc_string`, `metadata_props`, `device_configurations`) are behind one box: 192 bytes and no heap for a usual
//! node.
//!
//! The field names are the schema's, so code reads `node.input`, `node.op_type()` as it did; the seldom-set fields
//! are read through methods of the same names and written through [`NodeProto::rare_mut`].

use bytes::{Buf, BufMut};
pub use compact_str::CompactString;
use prost::encoding::{
    check_wire_type, encode_key, encode_varint, encoded_len_varint, key_len, message, skip_field, string,
    DecodeContext, WireType,
};
use prost::{DecodeError, Message};
use smallvec::SmallVec;

use super::{AttributeProto, NodeDeviceConfigurationProto, StringStringEntryProto};

/// A node's inputs: two held inline (most ops take one or two).
pub type Inputs = SmallVec<[CompactString; 2]>;
/// A node's outputs: one held inline.
pub type Outputs = SmallVec<[CompactString; 1]>;

/// A computation node: `onnx.NodeProto`, every field the schema declares.
#[derive(Clone, Debug, Default)]
pub struct NodeProto {
    pub input: Inputs,
    pub output: Outputs,
    pub name: Option<CompactString>,
    pub op_type: Option<CompactString>,
    pub domain: Option<CompactString>,
    pub attribute: Vec<AttributeProto>,
    /// The fields a node seldom sets, `None` while none is.
    pub rare: Option<Box<NodeRare>>,
}

/// The fields of `NodeProto` that few nodes set.
#[derive(Clone, PartialEq, Debug, Default)]
pub struct NodeRare {
    pub overload: Option<String>,
    pub doc_string: Option<String>,
    pub metadata_props: Vec<StringStringEntryProto>,
    pub device_configurations: Vec<NodeDeviceConfigurationProto>,
}

/// What a node without the box holds: nothing.
static NO_RARE: NodeRare =
    NodeRare { overload: None, doc_string: None, metadata_props: Vec::new(), device_configurations: Vec::new() };

impl PartialEq for NodeProto {
    /// Field by field, as prost's derived equality; an empty box equals none.
    fn eq(&self, other: &Self) -> bool {
        self.input == other.input
            && self.output == other.output
            && self.name == other.name
            && self.op_type == other.op_type
            && self.domain == other.domain
            && self.attribute == other.attribute
            && self.rare() == other.rare()
    }
}

impl NodeProto {
    /// The seldom-set fields (all empty when the node has none).
    pub fn rare(&self) -> &NodeRare {
        self.rare.as_deref().unwrap_or(&NO_RARE)
    }

    /// The seldom-set fields, to write; the box is made on the first call.
    pub fn rare_mut(&mut self) -> &mut NodeRare {
        self.rare.get_or_insert_with(Default::default)
    }

    /// The value of `name`, or `""` when unset (prost's accessor).
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }

    /// The value of `op_type`, or `""` when unset.
    pub fn op_type(&self) -> &str {
        self.op_type.as_deref().unwrap_or_default()
    }

    /// The value of `domain`, or `""` when unset.
    pub fn domain(&self) -> &str {
        self.domain.as_deref().unwrap_or_default()
    }

    /// The value of `overload`, or `""` when unset.
    pub fn overload(&self) -> &str {
        self.rare().overload.as_deref().unwrap_or_default()
    }

    /// The value of `doc_string`, or `""` when unset.
    pub fn doc_string(&self) -> &str {
        self.rare().doc_string.as_deref().unwrap_or_default()
    }

    /// The node's `metadata_props`.
    pub fn metadata_props(&self) -> &[StringStringEntryProto] {
        &self.rare().metadata_props
    }

    /// The node's `device_configurations`.
    pub fn device_configurations(&self) -> &[NodeDeviceConfigurationProto] {
        &self.rare().device_configurations
    }
}

/// A string field as prost's `string::encode` writes it.
fn encode_str(tag: u32, value: &str, buf: &mut impl BufMut) {
    encode_key(tag, WireType::LengthDelimited, buf);
    encode_varint(value.len() as u64, buf);
    buf.put_slice(value.as_bytes());
}

/// What [`encode_str`] writes, in bytes.
fn str_len(tag: u32, value: &str) -> usize {
    key_len(tag) + encoded_len_varint(value.len() as u64) + value.len()
}

/// A string field read as prost's `string::merge` reads it (the same errors), into a compact string.
fn merge_compact(
    wire_type: WireType,
    value: &mut CompactString,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<(), DecodeError> {
    let mut read = String::new();
    string::merge(wire_type, &mut read, buf, ctx)?;
    *value = CompactString::from(read);
    Ok(())
}

/// One element of a repeated string field, as prost's `string::merge_repeated` reads it.
fn merge_compact_into<const N: usize>(
    wire_type: WireType,
    values: &mut SmallVec<[CompactString; N]>,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<(), DecodeError>
where
    [CompactString; N]: smallvec::Array<Item = CompactString>,
{
    check_wire_type(WireType::LengthDelimited, wire_type)?;
    let mut value = CompactString::default();
    merge_compact(wire_type, &mut value, buf, ctx)?;
    values.push(value);
    Ok(())
}

/// `error` with prost's path step for a field of `NodeProto`.
fn at(field: &'static str) -> impl FnOnce(DecodeError) -> DecodeError {
    move |mut error| {
        error.push("NodeProto", field);
        error
    }
}

impl Message for NodeProto {
    /// The fields in the order of their numbers, as prost's derived code writes them.
    fn encode_raw(&self, buf: &mut impl BufMut) {
        let rare = self.rare();
        self.input.iter().for_each(|v| encode_str(1, v, buf));
        self.output.iter().for_each(|v| encode_str(2, v, buf));
        if let Some(v) = &self.name {
            encode_str(3, v, buf);
        }
        if let Some(v) = &self.op_type {
            encode_str(4, v, buf);
        }
        self.attribute.iter().for_each(|v| message::encode(5, v, buf));
        if let Some(v) = &rare.doc_string {
            encode_str(6, v, buf);
        }
        if let Some(v) = &self.domain {
            encode_str(7, v, buf);
        }
        if let Some(v) = &rare.overload {
            encode_str(8, v, buf);
        }
        rare.metadata_props.iter().for_each(|v| message::encode(9, v, buf));
        rare.device_configurations.iter().for_each(|v| message::encode(10, v, buf));
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        // As prost's derived code: an optional field is set (to empty) before its value is read.
        match tag {
            1 => merge_compact_into(wire_type, &mut self.input, buf, ctx).map_err(at("input")),
            2 => merge_compact_into(wire_type, &mut self.output, buf, ctx).map_err(at("output")),
            3 => merge_compact(wire_type, self.name.get_or_insert_default(), buf, ctx).map_err(at("name")),
            4 => merge_compact(wire_type, self.op_type.get_or_insert_default(), buf, ctx).map_err(at("op_type")),
            5 => message::merge_repeated(wire_type, &mut self.attribute, buf, ctx).map_err(at("attribute")),
            6 => {
                let value = self.rare_mut().doc_string.get_or_insert_default();
                string::merge(wire_type, value, buf, ctx).map_err(at("doc_string"))
            }
            7 => merge_compact(wire_type, self.domain.get_or_insert_default(), buf, ctx).map_err(at("domain")),
            8 => {
                let value = self.rare_mut().overload.get_or_insert_default();
                string::merge(wire_type, value, buf, ctx).map_err(at("overload"))
            }
            9 => message::merge_repeated(wire_type, &mut self.rare_mut().metadata_props, buf, ctx)
                .map_err(at("metadata_props")),
            10 => message::merge_repeated(wire_type, &mut self.rare_mut().device_configurations, buf, ctx)
                .map_err(at("device_configurations")),
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        let rare = self.rare();
        let strs = |tag, list: &[CompactString]| list.iter().map(|v| str_len(tag, v)).sum::<usize>();
        let opt = |tag, value: Option<&str>| value.map_or(0, |v| str_len(tag, v));
        strs(1, &self.input)
            + strs(2, &self.output)
            + opt(3, self.name.as_deref())
            + opt(4, self.op_type.as_deref())
            + message::encoded_len_repeated(5, &self.attribute)
            + opt(6, rare.doc_string.as_deref())
            + opt(7, self.domain.as_deref())
            + opt(8, rare.overload.as_deref())
            + message::encoded_len_repeated(9, &rare.metadata_props)
            + message::encoded_len_repeated(10, &rare.device_configurations)
    }

    fn clear(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
#[path = "node_tests.rs"]
mod tests;

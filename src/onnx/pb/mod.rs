//! The bottom layer: the ONNX wire schema. The messages are generated from `proto/onnx.proto` by prost (every
//! `bytes` field a `bytes::Bytes`, so a decoded model shares the file's memory map); [`field`] names the field
//! numbers that the byte-level reader and writer (`source`, `wire`, `gen`) walk without decoding; element types
//! are the generated [`tensor_proto::DataType`], and [`raw_size`] is their width in `raw_data`. One message is
//! the crate's own, in a compact layout: [`NodeProto`] ([`node`]).
//!
//! Every layer above may use these types; this module uses nothing of the crate.

mod generated {
    #![allow(clippy::all, missing_docs)]
    include!(concat!(env!("OUT_DIR"), "/onnx.rs"));
}
pub use generated::*;

pub mod node;
pub use node::NodeProto;

/// prost's generated types, `NodeProto` included, for the tests that compare the compact node with prost's.
#[cfg(test)]
pub(crate) mod reference {
    #![allow(clippy::all, missing_docs, dead_code)]
    include!(concat!(env!("OUT_DIR"), "/reference/onnx.rs"));
}

pub use tensor_proto::DataType;

/// Field numbers of the messages that are read or written field by field, as `proto/onnx.proto` declares them.
pub mod field {
    /// Protobuf wire type of length-delimited fields.
    pub const LEN: u32 = 2;

    /// `ModelProto`.
    pub mod model {
        pub const GRAPH: u32 = 7;
        pub const FUNCTIONS: u32 = 25;
    }

    /// `GraphProto`.
    pub mod graph {
        pub const NODE: u32 = 1;
        pub const NAME: u32 = 2;
        pub const INITIALIZER: u32 = 5;
        pub const INPUT: u32 = 11;
        pub const OUTPUT: u32 = 12;
        pub const VALUE_INFO: u32 = 13;
    }

    /// `FunctionProto`.
    pub mod function {
        pub const NODE: u32 = 7;
        pub const VALUE_INFO: u32 = 12;
    }

    /// `NodeProto`.
    pub mod node {
        pub const INPUT: u32 = 1;
        pub const OUTPUT: u32 = 2;
        pub const NAME: u32 = 3;
        pub const OP_TYPE: u32 = 4;
        pub const ATTRIBUTE: u32 = 5;
        pub const DOC_STRING: u32 = 6;
        pub const DOMAIN: u32 = 7;
        pub const OVERLOAD: u32 = 8;
        pub const METADATA_PROPS: u32 = 9;
    }

    /// `AttributeProto`.
    pub mod attribute {
        pub const NAME: u32 = 1;
        pub const F: u32 = 2;
        pub const I: u32 = 3;
        pub const S: u32 = 4;
        pub const T: u32 = 5;
        pub const G: u32 = 6;
        pub const FLOATS: u32 = 7;
        pub const INTS: u32 = 8;
        pub const STRINGS: u32 = 9;
        pub const GRAPHS: u32 = 11;
        pub const TYPE: u32 = 20;
    }

    /// `StringStringEntryProto`.
    pub mod entry {
        pub const KEY: u32 = 1;
        pub const VALUE: u32 = 2;
    }

    /// `ValueInfoProto`.
    pub mod value_info {
        pub const NAME: u32 = 1;
        pub const TYPE: u32 = 2;
        pub const METADATA_PROPS: u32 = 4;
    }

    /// `TypeProto` (its `tensor_type`), `TypeProto.Tensor`, `TensorShapeProto` and its `Dimension`.
    pub mod type_proto {
        pub const TENSOR_TYPE: u32 = 1;
        pub const ELEM_TYPE: u32 = 1;
        pub const SHAPE: u32 = 2;
        pub const DIM: u32 = 1;
        pub const DIM_VALUE: u32 = 1;
        pub const DIM_PARAM: u32 = 2;
    }

    /// `TensorProto`.
    pub mod tensor {
        pub const DIMS: u32 = 1;
        pub const DATA_TYPE: u32 = 2;
        pub const NAME: u32 = 8;
        pub const RAW_DATA: u32 = 9;
    }
}

/// Bytes per element of `data_type` in `raw_data`; `None` for strings, sub-byte types and unknown codes.
pub fn raw_size(data_type: i32) -> Option<usize> {
    use DataType::*;
    Some(match DataType::try_from(data_type).ok()? {
        Uint8 | Int8 | Bool | Float8e4m3fn | Float8e4m3fnuz | Float8e5m2 | Float8e5m2fnuz | Float8e8m0 => 1,
        Uint16 | Int16 | Float16 | Bfloat16 => 2,
        Float | Int32 | Uint32 => 4,
        Int64 | Double | Uint64 | Complex64 => 8,
        Complex128 => 16,
        Undefined | String | Uint4 | Int4 | Float4e2m1 | Uint2 | Int2 => return None,
    })
}

/// The ONNX name of an element type as written in messages (`float`, `int64`), or `element type N` for a code
/// the schema does not define.
pub fn elem_type_name(elem: i32) -> std::string::String {
    match DataType::try_from(elem) {
        Ok(DataType::Undefined) | Err(_) => format!("element type {elem}"),
        Ok(known) => known.as_str_name().to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    /// The field number of the only field in `bytes`.
    fn number(bytes: &[u8]) -> u32 {
        let key = prost::encoding::decode_varint(&mut &bytes[..]).expect("a key");
        assert_eq!(key & 7, u64::from(field::LEN), "length-delimited");
        (key >> 3) as u32
    }

    #[test]
    fn field_numbers_are_the_schemas() {
        use field::*;
        let node = || NodeProto::default();
        let tensor = || TensorProto::default();
        let info = || ValueInfoProto::default();
        let graph_of = |f: fn(&mut GraphProto)| {
            let mut g = GraphProto::default();
            f(&mut g);
            number(&g.encode_to_vec())
        };
        assert_eq!(
            number(&ModelProto { graph: Some(GraphProto::default()), ..Default::default() }.encode_to_vec()),
            model::GRAPH
        );
        let functions = ModelProto { functions: vec![FunctionProto::default()], ..Default::default() };
        assert_eq!(number(&functions.encode_to_vec()), model::FUNCTIONS);
        assert_eq!(graph_of(|g| g.node.push(NodeProto::default())), graph::NODE);
        assert_eq!(graph_of(|g| g.name = Some("g".into())), graph::NAME);
        assert_eq!(graph_of(|g| g.initializer.push(TensorProto::default())), graph::INITIALIZER);
        assert_eq!(graph_of(|g| g.input.push(ValueInfoProto::default())), graph::INPUT);
        assert_eq!(graph_of(|g| g.output.push(ValueInfoProto::default())), graph::OUTPUT);
        assert_eq!(graph_of(|g| g.value_info.push(ValueInfoProto::default())), graph::VALUE_INFO);
        let f = FunctionProto { node: vec![node()], ..Default::default() };
        assert_eq!(number(&f.encode_to_vec()), function::NODE);
        let f = FunctionProto { value_info: vec![info()], ..Default::default() };
        assert_eq!(number(&f.encode_to_vec()), function::VALUE_INFO);
        assert_eq!(
            number(&NodeProto { input: smallvec::smallvec!["x".into()], ..node() }.encode_to_vec()),
            node::INPUT
        );
        assert_eq!(
            number(&NodeProto { attribute: vec![AttributeProto::default()], ..node() }.encode_to_vec()),
            node::ATTRIBUTE
        );
        let a = AttributeProto { name: Some("a".into()), ..Default::default() };
        assert_eq!(number(&a.encode_to_vec()), attribute::NAME);
        let a = AttributeProto { g: Some(GraphProto::default()), ..Default::default() };
        assert_eq!(number(&a.encode_to_vec()), attribute::G);
        let a = AttributeProto { graphs: vec![GraphProto::default()], ..Default::default() };
        assert_eq!(number(&a.encode_to_vec()), attribute::GRAPHS);
        assert_eq!(
            number(&TensorProto { raw_data: Some(vec![1u8].into()), ..tensor() }.encode_to_vec()),
            tensor::RAW_DATA
        );
    }

    #[test]
    fn element_type_names_and_widths() {
        assert_eq!(elem_type_name(DataType::Float as i32), "float");
        assert_eq!(elem_type_name(DataType::Float8e4m3fnuz as i32), "float8e4m3fnuz");
        assert_eq!(elem_type_name(DataType::Bfloat16 as i32), "bfloat16");
        assert_eq!(elem_type_name(0), "element type 0");
        assert_eq!(elem_type_name(99), "element type 99");
        assert_eq!(raw_size(DataType::Int64 as i32), Some(8));
        assert_eq!(raw_size(DataType::Complex128 as i32), Some(16));
        assert_eq!(raw_size(DataType::Int4 as i32), None);
        assert_eq!(raw_size(DataType::String as i32), None);
    }
}

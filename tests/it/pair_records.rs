//! A taker of pair records (`Sites::pair_records`, which `expand` asks for) gets the numpy pairs the walk judges the
//! quick way (two inputs of one type, every size known) as records made from that judgement, not from the rule
//! bound again. Each record must be the one binding the rule in full gives: the same sites, in the same order, with
//! the same fields.

use onnx_bcast::analysis::{analyze_model_request, analyze_model_sites, Options, Request, Site, Sites};
use onnx_bcast::onnx::model::Model;
use onnx_bcast::onnx::pb::{
    attribute_proto::AttributeType, tensor_proto::DataType, AttributeProto, FunctionProto, GraphProto, ModelProto,
    OperatorSetIdProto,
};
use prost::Message;

use crate::common::{fixture_models, float_input, named_node};

const SITES_ONLY: Options = Options { value_facts: false };

/// Every site's record as its taker got it, in order.
struct Records(Vec<String>);

impl Sites for Records {
    fn site(&mut self, site: Site<'_>) {
        self.0.push(format!("{site:?}"));
    }
    fn pair_records(&self) -> bool {
        true
    }
}

/// The sites of `model` taken as pair records, and taken each with its rule bound in full.
fn both_ways(model: &Model) -> (Vec<String>, Vec<String>) {
    let mut pairs = Records(Vec::new());
    analyze_model_sites(model, SITES_ONLY, &Request::default(), Some(&mut pairs)).expect("analysed");
    let mut full = Vec::new();
    let mut each = |site: Site<'_>| full.push(format!("{site:?}"));
    analyze_model_request(model, SITES_ONLY, &Request::default(), Some(&mut each)).expect("analysed");
    (pairs.0, full)
}

/// Pairs of every kind: one that broadcasts, one of the same shapes, a value added to itself, one whose types differ
/// (no pair), one whose output is declared, one in an `If` branch, and one in a function called at two shapes.
fn pairs_of_every_kind() -> Model {
    let mut ints = float_input("i", &[64]);
    if let Some(t) = ints.r#type.as_mut().and_then(|t| t.tensor_type.as_mut()) {
        t.elem_type = Some(DataType::Int64 as i32);
    }
    let mut cond = float_input("c", &[]);
    if let Some(t) = cond.r#type.as_mut().and_then(|t| t.tensor_type.as_mut()) {
        t.elem_type = Some(DataType::Bool as i32);
    }
    let branch = GraphProto {
        node: vec![named_node("Mul", "in_branch", &["x", "b"], "t")],
        output: vec![float_input("t", &[8, 64])],
        ..Default::default()
    };
    let mut if_node = named_node("If", "if", &["c"], "u");
    if_node.attribute = ["then_branch", "else_branch"]
        .map(|name| AttributeProto {
            name: Some(name.into()),
            r#type: Some(AttributeType::Graph as i32),
            g: Some(branch.clone()),
            ..Default::default()
        })
        .to_vec();
    let call = |name: &str, a: &str, out: &str| {
        let mut n = named_node("AddBoth", name, &[a, "b"], out);
        n.domain = Some("local".into());
        n
    };
    let g = GraphProto {
        node: vec![
            named_node("Add", "broadcast", &["x", "b"], "y0"),
            named_node("Sub", "same", &["x", "y0"], "y1"),
            named_node("Mul", "itself", &["y1", "y1"], "y2"),
            named_node("Add", "types_differ", &["x", "i"], "y3"),
            named_node("Div", "declared", &["y2", "b"], "y4"),
            if_node,
            call("call_8x64", "x", "y5"),
            call("call_64", "b", "y6"),
        ],
        input: vec![float_input("x", &[8, 64]), float_input("b", &[64]), ints, cond],
        value_info: vec![float_input("y4", &[8, 64])],
        output: vec![float_input("y4", &[8, 64])],
        ..Default::default()
    };
    let f = FunctionProto {
        name: Some("AddBoth".into()),
        domain: Some("local".into()),
        input: vec!["p".into(), "q".into()],
        output: vec!["r".into()],
        node: vec![named_node("Add", "inside", &["p", "q"], "r")],
        opset_import: vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(17) }],
        ..Default::default()
    };
    let m = ModelProto {
        ir_version: Some(8),
        opset_import: vec![
            OperatorSetIdProto { domain: Some(String::new()), version: Some(17) },
            OperatorSetIdProto { domain: Some("local".into()), version: Some(1) },
        ],
        graph: Some(g),
        functions: vec![f],
        ..Default::default()
    };
    Model::from_bytes("pairs.onnx", m.encode_to_vec().into()).expect("decodes")
}

#[test]
fn a_pair_judged_the_quick_way_is_handed_over_as_the_record_its_rule_bound_in_full_gives() {
    let (pairs, full) = both_ways(&pairs_of_every_kind());
    assert_eq!(pairs, full);
    // Every site above is taken: the pairs (also in the branch, twice, and in the function, once a call) and the rest.
    assert_eq!(pairs.len(), 9, "{pairs:#?}");
    for (path, model) in fixture_models() {
        let (pairs, full) = both_ways(&model);
        assert_eq!(pairs, full, "{}", path.display());
    }
}

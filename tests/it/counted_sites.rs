//! A walk's taker may count some sites without their records (`src/analysis/sites.rs`): `check`'s text output
//! counts the sites that hold. The sites counted must be exactly the ones named, a site whose inputs' types differ
//! is never only counted, and `check`'s report must be the same whether its judge counts or judges each site.

use onnx_bcast::analysis::{analyze_model_request, analyze_model_sites, CountedOnly, Options, Request, Site, Sites};
use onnx_bcast::check::{CheckOptions, Judge, Level, Report, Selector};
use onnx_bcast::diagnostic::Code;
use onnx_bcast::onnx::model::Model;
use onnx_bcast::onnx::pb::attribute_proto::AttributeType;
use onnx_bcast::onnx::pb::{tensor_proto::DataType, AttributeProto, GraphProto, NodeProto};
use onnx_bcast::rules::{Rule, VerdictKind};
use prost::Message;

use crate::common::{fixture_models, float_input, named_node, opset17_model};

const SITES_ONLY: Options = Options { value_facts: false };

/// Takes the sites whole but those of the verdicts it names, which it counts.
struct Counter {
    counted_only: CountedOnly,
    counted: Vec<VerdictKind>,
    whole: Vec<(String, VerdictKind, bool)>,
}

impl Sites for Counter {
    fn site(&mut self, site: Site<'_>) {
        self.whole.push((site.node.to_string(), site.verdict.kind(), site.type_mismatch.is_some()));
    }
    fn counted_only(&self) -> CountedOnly {
        self.counted_only
    }
    fn count(&mut self, kind: VerdictKind) {
        self.counted.push(kind);
    }
}

fn counter(quiet: impl Fn(VerdictKind, Rule) -> bool) -> Counter {
    Counter { counted_only: CountedOnly::of(quiet), counted: Vec::new(), whole: Vec::new() }
}

#[test]
fn a_taker_counts_only_the_sites_it_names_and_takes_every_other_whole() {
    let quiet = |kind: VerdictKind, rule: Rule| {
        kind == VerdictKind::Same || (kind == VerdictKind::Broadcast && rule == Rule::Multidirectional)
    };
    let (mut counted, mut taken) = (0, 0);
    for (path, model) in fixture_models() {
        let mut all = Vec::new();
        let mut each = |site: Site<'_>| {
            all.push((site.node.to_string(), site.verdict.kind(), site.rule, site.type_mismatch.is_some()))
        };
        analyze_model_request(&model, SITES_ONLY, &Request::default(), Some(&mut each)).expect("analysed");
        let mut taker = counter(quiet);
        analyze_model_sites(&model, SITES_ONLY, &Request::default(), Some(&mut taker)).expect("analysed");
        let (only_counted, whole): (Vec<_>, Vec<_>) =
            all.into_iter().partition(|(_, kind, rule, mismatch)| !mismatch && quiet(*kind, *rule));
        let whole: Vec<_> = whole.into_iter().map(|(node, kind, _, mismatch)| (node, kind, mismatch)).collect();
        assert_eq!(taker.whole, whole, "{}", path.display());
        // Counted sites are handed over by verdict when the walk ends: the same ones, in another order.
        let mut expected: Vec<VerdictKind> = only_counted.iter().map(|s| s.1).collect();
        let by_kind = |k: &VerdictKind| *k as usize;
        taker.counted.sort_by_key(by_kind);
        expected.sort_by_key(by_kind);
        assert_eq!(taker.counted, expected, "{}", path.display());
        counted += taker.counted.len();
        taken += taker.whole.len();
    }
    assert!(counted > 5 && taken > 5, "the fixtures hold sites of both kinds ({counted} counted, {taken} taken)");
}

#[test]
fn a_site_whose_input_types_differ_is_taken_whole_though_its_verdict_is_counted_only() {
    let mut ints = float_input("y", &[3]);
    if let Some(t) = ints.r#type.as_mut().and_then(|t| t.tensor_type.as_mut()) {
        t.elem_type = Some(DataType::Int64 as i32);
    }
    let add = NodeProto {
        op_type: Some("Add".into()),
        name: Some("mixed".into()),
        input: smallvec::smallvec!["x".into(), "y".into()],
        output: smallvec::smallvec!["z".into()],
        ..Default::default()
    };
    let g = GraphProto { node: vec![add], input: vec![float_input("x", &[2, 3]), ints], ..Default::default() };
    let model = opset17_model("mixed.onnx", g);
    let mut taker = counter(|_, _| true);
    analyze_model_sites(&model, SITES_ONLY, &Request::default(), Some(&mut taker)).expect("analysed");
    assert_eq!(taker.whole, [("mixed".to_string(), VerdictKind::Broadcast, true)]);
    assert!(taker.counted.is_empty());
}

/// The report of `check` whose judge counts the sites that hold, and of one judging every site.
fn both_reports(model: &Model, options: CheckOptions) -> (Report, Report) {
    let mut counting = Judge::new(options, false);
    let a = analyze_model_sites(model, SITES_ONLY, &Request::default(), Some(&mut counting)).expect("analysed");
    let mut judging = Judge::new(options, false);
    let b = analyze_model_request(model, SITES_ONLY, &Request::default(), Some(&mut |s| judging.judge(s)))
        .expect("analysed");
    (counting.finish(&a), judging.finish(&b))
}

#[test]
fn check_reports_the_same_whether_its_judge_counts_the_sites_that_hold_or_judges_each() {
    let mut implicit = CheckOptions::default();
    implicit.rules.select(Selector::Code(Code::ImplicitBroadcast), Level::Warn);
    let strict = CheckOptions { strict: true, ..Default::default() };
    for (path, model) in fixture_models() {
        for options in [CheckOptions::default(), strict, implicit] {
            let (counting, judging) = both_reports(&model, options);
            assert_eq!(counting.summary, judging.summary, "{} {options:?}", path.display());
            assert_eq!(format!("{:?}", counting.findings), format!("{:?}", judging.findings), "{}", path.display());
            assert_eq!(format!("{:?}", counting.undecided), format!("{:?}", judging.undecided), "{}", path.display());
        }
    }
}

/// The links of a chain (`v = op(v', k)`, `v'` read last by `v`'s node) are pairs the walk writes over their input's
/// facts (`Walker::pair_over`): a link that widens its input, one over its second input, one of the same sizes, and
/// the nodes it leaves to the general step (a value read again later, a boolean output, a contradicted input) are
/// reported as when every site is judged whole.
#[test]
fn a_chain_whose_pairs_are_written_over_their_inputs_is_reported_as_when_each_site_is_judged() {
    let nodes = vec![
        node("Add", &["x", "r"], "v0"),   // [1, 3] and [3]
        node("Mul", &["v0", "w"], "v1"),  // over v0, widened by [2, 3]
        node("Sub", &["b", "v1"], "v2"),  // over the second input
        node("Div", &["v2", "w"], "v3"),  // over v2, the same sizes
        node("Equal", &["v3", "w"], "e"), // a boolean output, and v3 is read again
        node("Add", &["w", "d"], "bad"),  // [2, 3] against [4]: a violation
        node("Add", &["bad", "b"], "c"),  // over a contradicted input: left to the general step
        node("Add", &["v3", "b"], "v7"),  // v3 read last, but not made by the node before
        node("Mul", &["v7", "r"], "y"),   // over v7
    ];
    let input = |(name, dims): (&str, &[i64])| float_input(name, dims);
    let inputs: [(&str, &[i64]); 5] = [("x", &[1, 3]), ("r", &[3]), ("w", &[2, 3]), ("b", &[3]), ("d", &[4])];
    let g = GraphProto {
        node: nodes,
        input: inputs.into_iter().map(input).collect(),
        output: ["y", "e", "c"].iter().map(|name| float_input(name, &[])).collect(),
        ..Default::default()
    };
    let model = opset17_model("chain.onnx", g);
    for options in [CheckOptions::default(), CheckOptions { strict: true, ..Default::default() }] {
        let (counting, judging) = both_reports(&model, options);
        assert_eq!(counting.summary, judging.summary, "{options:?}");
        assert_eq!(format!("{:?}", counting.findings), format!("{:?}", judging.findings), "{options:?}");
        assert_eq!(format!("{:?}", counting.undecided), format!("{:?}", judging.undecided), "{options:?}");
    }
}

/// A model of `nodes` reading `x` [12] and the int64 initializers `s` = [2, 3] and `one` = [1].
fn with_int_initializers(nodes: Vec<NodeProto>) -> Model {
    let int64 = |name: &str, values: &[i64]| onnx_bcast::onnx::pb::TensorProto {
        name: Some(name.into()),
        dims: vec![values.len() as i64],
        data_type: Some(DataType::Int64 as i32),
        int64_data: values.to_vec(),
        ..Default::default()
    };
    let g = GraphProto {
        node: nodes,
        input: vec![float_input("x", &[12])],
        initializer: vec![int64("s", &[2, 3]), int64("one", &[1])],
        ..Default::default()
    };
    opset17_model("contents.onnx", g)
}

/// A node of the default domain named after its one output.
fn node(op: &str, inputs: &[&str], output: &str) -> NodeProto {
    named_node(op, output, inputs, output)
}

/// The walk settles a site it only counts without binding its rule in full when it is a pair of known shapes
/// (`Walker::counted_pair`); a pair whose inputs' contents are known still gives the contents of its output, which
/// a shape computation reads: here `Reshape(x, s + one)` is [3, 4].
#[test]
fn a_counted_pair_of_known_contents_gives_its_output_contents_to_what_reads_them() {
    let model = with_int_initializers(vec![node("Add", &["s", "one"], "sum"), node("Reshape", &["x", "sum"], "r")]);
    let mut taker = counter(|_, _| true);
    let analysis =
        analyze_model_sites(&model, Options { value_facts: true }, &Request::default(), Some(&mut taker)).expect("ok");
    assert_eq!(taker.counted, [VerdictKind::Broadcast], "the Add is only counted");
    let values = &analysis.graphs[0].values;
    let reshaped = values.iter().find(|(name, _)| name == "r").map(|(_, f)| f.shape.to_string());
    assert_eq!(reshaped.as_deref(), Some("[3, 4]"));
}

/// A counted pair's output is built in the box of a value dropped before it (`Walker::counted_pair_into`): nothing of
/// that value may stay. Here `sum` = s + one has contents [3, 4] and is dropped after its reader; `m` = n + k, of
/// inputs whose contents nobody knows, is built in its box next. Were `sum`'s contents left there, `Reshape(x,
/// m)` would be [3, 4] and its Add with `w` [5, 1] a violation; it is of unknown sizes.
#[test]
fn a_counted_pair_built_in_a_dropped_values_box_keeps_nothing_of_that_value() {
    let nodes = vec![
        node("Add", &["s", "one"], "sum"),
        node("Reshape", &["x", "sum"], "r"),
        node("Add", &["n", "k"], "m"),
        node("Reshape", &["x", "m"], "q"),
        node("Add", &["q", "w"], "t"),
    ];
    let mut model = with_int_initializers(nodes).proto().clone();
    let g = model.graph.as_mut().expect("a graph");
    let int64_input = |name: &str, dims: &[i64]| {
        let mut input = float_input(name, dims);
        let tensor = input.r#type.as_mut().and_then(|t| t.tensor_type.as_mut()).expect("a tensor");
        tensor.elem_type = Some(DataType::Int64 as i32);
        input
    };
    g.input.extend([int64_input("n", &[2]), int64_input("k", &[1]), float_input("w", &[5, 1])]);
    // `r` is an output, kept: `sum` is the one value dropped before `m` is defined.
    g.output = vec![float_input("r", &[3, 4]), float_input("t", &[5, 4])];
    g.output[1].r#type = None;
    let model = Model::from_bytes("reused.onnx", model.encode_to_vec().into()).expect("decodes");
    let mut taker = counter(|_, _| true);
    analyze_model_sites(&model, SITES_ONLY, &Request::default(), Some(&mut taker)).expect("ok");
    assert_eq!(taker.counted.len(), 3, "{:?}", taker.counted);
    // Handed over by verdict, not in the walk's order.
    let broadcasts = taker.counted.iter().filter(|&&k| k == VerdictKind::Broadcast).count();
    assert!(broadcasts >= 2, "the two pairs: {:?}", taker.counted);
    assert!(!taker.counted.contains(&VerdictKind::Violation), "q is of unknown sizes, not [3, 4]");
}

/// An attribute named `name` holding `graph`.
fn graph_attribute(name: &str, graph: GraphProto) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(AttributeType::Graph as i32),
        g: Some(graph),
        ..Default::default()
    }
}

/// The walk as values flow settles a counted numpy pair in its own step (`src/analysis/pair_step.rs`); the walk by
/// numbers (facts kept) leaves every node to the general path. Both must count, take and note the same, on a graph
/// mixing such pairs with every node the step must refuse.
#[test]
fn the_pair_step_counts_takes_and_notes_what_the_general_path_does() {
    let branch = |name: &str| GraphProto {
        name: Some(name.into()),
        node: vec![node("Add", &["a", "b"], &format!("{name}_o"))],
        output: vec![float_input(&format!("{name}_o"), &[])],
        ..Default::default()
    };
    let mut with_attribute = node("Add", &["a", "b"], "t");
    with_attribute.attribute = vec![AttributeProto { name: Some("note".into()), i: Some(1), ..Default::default() }];
    let mut if_node = node("If", &["cond"], "z");
    if_node.attribute =
        vec![graph_attribute("then_branch", branch("then")), graph_attribute("else_branch", branch("else"))];
    let nodes = vec![
        node("Add", &["x", "b"], "a"),       // a plain pair, broadcast
        node("Mul", &["a", "x"], "m"),       // a plain pair, same sizes
        with_attribute,                      // an attribute
        node("Add", &["m", "missing"], "u"), // an undefined input
        node("Add", &["u", "a"], "v"),       // an input of unknown sizes
        node("PRelu", &["x", "b"], "p"),     // broadcasting, but not by the numpy rule
        node("Relu", &["p"], "r"),           // no broadcasting at all
        node("Add", &["x", "d"], "bad"),     // sizes that contradict: its output is contradicted
        node("Add", &["bad", "a"], "after"), // a contradicted input
        node("Greater", &["b", "b"], "g"),   // a plain pair of another output type
        node("ReduceMin", &["g"], "cond"),
        if_node,                       // a subgraph reading the graph's values
        node("Sub", &["r", "m"], "y"), // a plain pair again
    ];
    let g = GraphProto {
        node: nodes,
        input: vec![float_input("x", &[2, 3]), float_input("b", &[3]), float_input("d", &[4])],
        output: ["y", "t", "v", "after", "z"].iter().map(|name| float_input(name, &[])).collect(),
        ..Default::default()
    };
    let model = opset17_model("mixed.onnx", g);
    let walk = |options: Options| {
        let mut taker = counter(|kind, _| kind != VerdictKind::Violation);
        let analysis = analyze_model_sites(&model, options, &Request::default(), Some(&mut taker)).expect("ok");
        let notes: Vec<String> = analysis
            .notes
            .iter()
            .map(|n| format!("{:?} {} {:?} {:?} {}", n.code, n.graph, n.node, n.op, n.message))
            .collect();
        (taker.counted, taker.whole, notes)
    };
    let (flowing, numbered) = (walk(SITES_ONLY), walk(Options { value_facts: true }));
    assert_eq!(flowing, numbered, "the pair step and the general path agree");
    let (counted, whole, notes) = flowing;
    assert!(counted.len() >= 4, "the plain pairs, the subgraphs' too, are counted: {counted:?}");
    assert!(whole.iter().any(|(node, _, _)| node == "bad"), "the contradiction is taken whole: {whole:?}");
    assert!(notes.iter().any(|n| n.starts_with("UndefinedValue")), "{notes:?}");
}

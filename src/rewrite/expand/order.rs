//! The order a plan takes the sites in, while the analysis hands them over one by one.
//!
//! A plan is made node by node in the order of their places in the model (the main graph's nodes by position,
//! then each body's, by path): fresh names, which of two sites sharing an explicit broadcast gets its nodes, and
//! the order of the summary's lines all follow from it. The walk evaluates nodes in topological order, which for
//! the main graph of a model stored in that order (as ONNX requires) is the file's order, and the main graph's
//! places come before every body's. The walk evaluates a main-graph node once (only bodies, whose calls evaluate
//! one node several times, give a node several sites), so a main-graph site is planned as it arrives, borrowed
//! from the walk, and never copied; only the sites of bodies (subgraphs and functions) are kept, copied, for the
//! end: memory for sites no longer grows with the main graph. When the walk takes the main graph in another order
//! (Kahn's, for a graph stored out of order), or hands over a main-graph node twice, the sites arrive out of order
//! and the plan is made again from all of them at once ([`InOrder::out_of_order`]).

use crate::analysis::Site;

use super::strategy::Planner;

/// The sites of a walk, planned in order as they arrive where they can be.
#[derive(Default)]
pub(super) struct InOrder {
    /// The position of the last main-graph node planned.
    last: Option<usize>,
    /// The sites of bodies, planned after the main graph's.
    later: Vec<Site<'static>>,
    /// A main-graph site arrived after one of a later node, or twice: what was planned is not in order.
    out_of_order: bool,
    /// Main-graph nodes planned.
    planned: usize,
}

impl InOrder {
    /// Takes the next site the walk evaluated: a main-graph node's is planned at once.
    pub fn take(&mut self, planner: &mut Planner<'_>, site: Site<'_>) {
        if self.out_of_order {
            return;
        }
        if !site.loc.graph.is_empty() {
            self.later.push(site.into_owned());
            return;
        }
        if self.last.is_some_and(|last| last >= site.loc.node) {
            self.out_of_order = true;
            self.later = Vec::new();
            return;
        }
        self.last = Some(site.loc.node);
        planner.site(&site.loc, std::slice::from_ref(&site));
        self.planned += 1;
    }

    /// Whether the walk took the main graph out of the file's order, so that nothing planned can be used.
    pub fn out_of_order(&self) -> bool {
        self.out_of_order
    }

    /// Plans what is left once the walk is over: the bodies' sites by place. Returns how many nodes were planned in
    /// all (the summary's `sites`).
    pub fn finish(mut self, planner: &mut Planner<'_>) -> usize {
        let later = std::mem::take(&mut self.later);
        self.planned + plan_sorted(planner, later)
    }
}

/// What the walk hands the sites of a plan made as it goes: [`InOrder`] with the planner.
pub(super) struct Taker<'p, 'm> {
    pub order: InOrder,
    pub planner: &'p mut Planner<'m>,
}

impl crate::analysis::Sites for Taker<'_, '_> {
    fn site(&mut self, site: Site<'_>) {
        self.order.take(self.planner, site);
    }

    /// Every site is planned, and a pair's record made from the walk's quick judgement is the record.
    fn pair_records(&self) -> bool {
        true
    }
}

/// Plans `sites` node by node in the order of their places (a node's evaluations in the order given); returns how
/// many nodes were planned.
pub(super) fn plan_sorted(planner: &mut Planner<'_>, mut sites: Vec<Site>) -> usize {
    // Stable: a node's evaluations keep the walk's order.
    sites.sort_by(|a, b| a.loc.cmp(&b.loc));
    let mut planned = 0;
    for group in sites.chunk_by(|a, b| a.loc == b.loc) {
        planner.site(&group[0].loc, group);
        planned += 1;
    }
    planned
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::model::Model;
    use crate::onnx::pb::{
        attribute_proto::AttributeType, AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto,
        TensorProto,
    };
    use crate::sizes::shape::Shape;

    const FLOAT: i32 = 1;

    fn node(op: &str, inputs: &[&str], output: &str) -> NodeProto {
        NodeProto {
            name: Some(format!("n_{output}").into()),
            op_type: Some(op.into()),
            input: inputs.iter().map(|&s| s.into()).collect(),
            output: smallvec::smallvec![output.into()],
            ..Default::default()
        }
    }

    fn bias(name: &str) -> TensorProto {
        TensorProto {
            name: Some(name.into()),
            dims: vec![3],
            data_type: Some(FLOAT),
            float_data: vec![1.0; 3],
            ..Default::default()
        }
    }

    /// A main graph of broadcasting nodes around an `If` whose branch broadcasts too, stored in the order
    /// `order` gives (the positions of its four nodes, each but the `If` reading the one before it).
    fn model(order: [usize; 4]) -> Model {
        let branch = |out: &str| GraphProto {
            node: vec![node("Add", &["x", "b0"], out)],
            output: vec![super::super::value_info(out, FLOAT, &Shape::known(&[2, 3]))],
            ..Default::default()
        };
        let attr = |name: &str, out: &str| AttributeProto {
            name: Some(name.into()),
            r#type: Some(AttributeType::Graph as i32),
            g: Some(branch(out)),
            ..Default::default()
        };
        let mut if_node = node("If", &["c"], "y2");
        if_node.attribute = vec![attr("then_branch", "t"), attr("else_branch", "e")];
        let chain = [
            node("Add", &["x", "b0"], "y0"),
            node("Mul", &["y0", "b1"], "y1"),
            if_node,
            node("Sub", &["y2", "b2"], "y3"),
        ];
        let known = |name: &str, dims: &[u64]| super::super::value_info(name, FLOAT, &Shape::known(dims));
        let graph = GraphProto {
            node: order.iter().map(|&i| chain[i].clone()).collect(),
            initializer: vec![bias("b0"), bias("b1"), bias("b2")],
            input: vec![known("x", &[2, 3]), super::super::value_info("c", 9, &Shape::scalar())],
            output: vec![known("y3", &[2, 3])],
            ..Default::default()
        };
        let proto = ModelProto {
            ir_version: Some(8),
            opset_import: vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(17) }],
            graph: Some(graph),
            ..Default::default()
        };
        Model::from_bytes("m.onnx", crate::onnx::model::encode(&proto).into()).expect("a model")
    }

    /// The plan from every site at once, in the order of their places: what planning during the walk must equal.
    fn planned_at_once(model: &Model) -> (super::super::ExpandSummary, Vec<u8>) {
        let options = crate::analysis::Options { value_facts: false };
        let analysis = crate::analysis::analyze_model_with(model, options);
        let mut planner = Planner::new(super::super::builder::Builder::new(model.proto(), 1 << 20), Default::default());
        planner.summary.sites = plan_sorted(&mut planner, analysis.sites);
        let plan = planner.finish().expect("a plan");
        let bytes = crate::onnx::wire::apply(model.bytes(), &plan.edit).unwrap().to_vec(model.bytes()).unwrap();
        (plan.summary, bytes)
    }

    #[test]
    fn planning_during_the_walk_gives_the_plan_made_from_every_site_at_once() {
        // In the file's order (planned node by node as the walk goes), and out of it (the walk takes Kahn's order,
        // so the plan is made again from all the sites).
        for order in [[0, 1, 2, 3], [1, 0, 3, 2]] {
            let model = model(order);
            let plan = super::super::plan(&model, Default::default()).expect("a plan");
            let bytes = crate::onnx::wire::apply(model.bytes(), &plan.edit).unwrap().to_vec(model.bytes()).unwrap();
            let (summary, expected) = planned_at_once(&model);
            assert_eq!(plan.summary.made_explicit, 5, "{order:?}: {:?}", plan.summary);
            assert_eq!(plan.summary, summary, "{order:?}");
            assert_eq!(bytes, expected, "{order:?}");
        }
    }
}

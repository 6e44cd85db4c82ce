//! Fresh names for what a rewrite adds, that collide with nothing in the model.

use rustc_hash::FxHashMap as HashMap;

use super::texts::{hash_tagged, Short, Texts};
use crate::onnx::pb::{tensor_shape_proto, GraphProto, ModelProto, NodeProto, ValueInfoProto};

/// Fresh names that collide with nothing in the model (values, nodes, functions, dim params), deterministically.
/// The model's own names are borrowed from it: only the names made here are owned.
pub(super) struct Names<'m> {
    model: &'m ModelProto,
    /// The model's names that [`could_be_made`] here, or all of them once a name that could not is asked for
    /// (`complete`). It never grows otherwise: a table of all of them doubled for the few names a plan adds would
    /// cost more than the names themselves.
    taken: rustc_hash::FxHashSet<&'m str>,
    complete: bool,
    /// The names made here, in one buffer ([`Texts`]: a plan of 100,000 sites makes 20,000 names).
    made: Texts<()>,
    /// The names made here of 4 GiB or more, which [`Texts`] does not hold ([`Short`]); none in practice.
    long: Vec<String>,
    /// Per base name, the suffix to try first: probing from 1 every time is quadratic when a base repeats (a Sum
    /// of 10,000 inputs folds 10,000 Expands).
    next: HashMap<String, usize>,
}

/// The hash of a name, by which [`Names::made`] holds it.
fn hash(name: &str) -> u64 {
    self::hash_tagged(name, 0)
}

/// Whether `name` may be one [`Names::fresh`] makes for the builder: every base it is given starts with `bcast`
/// or holds `_` then one of the words the builder ends its bases with (`_expanded`, `_shape`, `_axis`, `_dim`,
/// `_tiled`, `_reshaped`, and a new node's `_OP` in lower case: `_constant`, `_concat`, `_gather`, ...), told
/// apart by their first letter; and so does each name made from a base, the base followed by `_K`. A model's other
/// names (most of a large graph's: `node_17`, `v_3`) need not be held: no name made here can be one of them.
/// A name asked for that is not such a name is checked against all of the model's names.
fn could_be_made(name: &str) -> bool {
    let b = name.as_bytes();
    if b.starts_with(b"bcast") {
        return true;
    }
    let marked_at = |i: usize| matches!(b.get(i + 1), Some(b'a' | b'c' | b'd' | b'e' | b'g' | b'r' | b's' | b't'));
    if b.len() < 4 {
        return (0..b.len()).any(|i| b[i] == b'_' && marked_at(i));
    }
    let underscore = |word: u64| zero_bytes(word ^ (u64::from_le_bytes([b'_'; 8])));
    if b.len() < 8 {
        // The first four bytes and the last four (overlapping) as one word: most of a large graph's values have
        // short names (`v_123`), which a byte at a time took as long as the rest of the walk.
        let (first, last) = (&b[..4], &b[b.len() - 4..]);
        let four = |bytes: &[u8]| u64::from(u32::from_le_bytes(bytes.try_into().expect("four bytes")));
        let mut underscores = underscore(four(first) | four(last) << 32);
        while underscores != 0 {
            let byte = underscores.trailing_zeros() as usize / 8;
            if marked_at(if byte < 4 { byte } else { b.len() + byte - 8 }) {
                return true;
            }
            underscores &= underscores - 1;
        }
        return false;
    }
    // Eight bytes at a time, the last eight overlapping the ones before: this runs for every name of the model,
    // most of which hold a `_` or two, each followed by a digit.
    let mut start = 0;
    loop {
        let word = u64::from_le_bytes(b[start..start + 8].try_into().expect("eight bytes"));
        let mut underscores = underscore(word);
        while underscores != 0 {
            if marked_at(start + underscores.trailing_zeros() as usize / 8) {
                return true;
            }
            underscores &= underscores - 1;
        }
        if start + 8 == b.len() {
            return false;
        }
        start = (start + 8).min(b.len() - 8);
    }
}

/// The high bit of each byte of `x` that is zero, and no other bit.
fn zero_bytes(x: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    !(((x & LOW7) + LOW7) | x | LOW7)
}

impl<'m> Names<'m> {
    pub fn of(model: &'m ModelProto) -> Names<'m> {
        let mut names = Names {
            model,
            taken: Default::default(),
            complete: false,
            made: Texts::default(),
            long: Vec::new(),
            next: HashMap::default(),
        };
        let taken = &mut names.taken;
        each_name(model, &mut |name| {
            if could_be_made(name) {
                taken.insert(name);
            }
        });
        names
    }

    /// Whether the model has the name `name`: among the names held, once they are all held if `name` is not one
    /// that [`could_be_made`] here.
    fn taken(&mut self, name: &str) -> bool {
        if !self.complete && !could_be_made(name) {
            let taken = &mut self.taken;
            each_name(self.model, &mut |name| {
                taken.insert(name);
            });
            self.complete = true;
        }
        self.taken.contains(name)
    }

    /// Whether `name`, of hash `hash`, was made here.
    fn made(&self, hash: u64, name: &str) -> bool {
        self.made.get(hash, name, 0).is_some() || (!self.long.is_empty() && self.long.iter().any(|l| l == name))
    }

    /// Notes `name`, of hash `hash`, as made, and gives it back.
    fn make(&mut self, hash: u64, name: &str) -> &str {
        match Short::new(name) {
            Some(short) => self.made.insert(hash, short, 0, ()),
            None => {
                self.long.push(name.to_string());
                &self.long[self.long.len() - 1]
            }
        }
    }

    /// A name made from `base`, colliding with no name of the model and no name made before.
    pub fn fresh(&mut self, base: &str) -> &str {
        let base = if base.is_empty() { "bcast" } else { base };
        // A base asked for the first time is most often free as it is: taken without noting where to go on from
        // (asked again, it is made, and the suffixes go on from 0 as if it had been noted). A base asked before is
        // never free again.
        if !self.taken(base) {
            let h = hash(base);
            if !self.made(h, base) {
                return self.make(h, base);
            }
        }
        let mut k = self.next.get(base).copied().unwrap_or(0);
        let mut candidate = String::with_capacity(base.len() + 4);
        let h = loop {
            candidate.clear();
            candidate.push_str(base);
            if k > 0 {
                candidate.push('_');
                candidate.push_str(itoa::Buffer::new().format(k));
            }
            k += 1;
            if !self.taken(&candidate) {
                let h = hash(&candidate);
                if !self.made(h, &candidate) {
                    break h;
                }
            }
        };
        match self.next.get_mut(base) {
            Some(next) => *next = k,
            None => drop(self.next.insert(base.to_string(), k)),
        }
        self.make(h, &candidate)
    }
}

/// Calls `take` with each of the model's names, in a deterministic order.
fn each_name<'m>(model: &'m ModelProto, take: &mut impl FnMut(&'m str)) {
    let mut walk = Walk { take };
    if let Some(g) = &model.graph {
        walk.main_graph(g);
    }
    for f in &model.functions {
        (walk.take)(f.name());
        f.input.iter().chain(&f.output).for_each(|n| (walk.take)(n));
        walk.nodes(&f.node);
        for vi in &f.value_info {
            walk.declared(vi);
        }
        for sub in f.node.iter().flat_map(crate::onnx::attr::subgraphs) {
            walk.graph(sub);
        }
    }
}

/// The walk of [`each_name`] over the model's graphs.
struct Walk<'t, F> {
    take: &'t mut F,
}

impl<'m, F: FnMut(&'m str)> Walk<'_, F> {
    fn nodes(&mut self, nodes: &'m [NodeProto]) {
        for n in nodes {
            (self.take)(n.name());
            n.input.iter().chain(&n.output).for_each(|v| (self.take)(v));
        }
    }

    /// The main graph's names but its nodes' inputs: each is a graph input, an initializer or a node's output
    /// (taken as such), or undefined, and a model that reads an undefined value is refused before any plan of it is
    /// used ([`crate::rewrite::refuse`]). Half the names of a large graph, not looked at.
    fn main_graph(&mut self, g: &'m GraphProto) {
        for n in &g.node {
            (self.take)(n.name());
            n.output.iter().for_each(|v| (self.take)(v));
        }
        self.graph_but_nodes(g);
    }

    fn graph(&mut self, g: &'m GraphProto) {
        self.nodes(&g.node);
        self.graph_but_nodes(g);
    }

    /// A graph's initializers, declarations and subgraphs.
    fn graph_but_nodes(&mut self, g: &'m GraphProto) {
        g.initializer.iter().for_each(|t| (self.take)(t.name()));
        g.sparse_initializer.iter().filter_map(|s| s.values.as_ref()).for_each(|t| (self.take)(t.name()));
        for vi in g.input.iter().chain(&g.output).chain(&g.value_info) {
            self.declared(vi);
        }
        for sub in g.node.iter().flat_map(crate::onnx::attr::subgraphs) {
            self.graph(sub);
        }
    }

    /// A declaration's name and the dim params of its type.
    fn declared(&mut self, vi: &'m ValueInfoProto) {
        (self.take)(vi.name());
        let shape = vi.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()).and_then(|t| t.shape.as_ref());
        for d in shape.map_or(&[][..], |s| &s.dim[..]) {
            if let Some(tensor_shape_proto::dimension::Value::DimParam(p)) = &d.value {
                (self.take)(p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::pb::{type_proto, TensorProto, TensorShapeProto, TypeProto};

    #[test]
    fn a_fresh_name_avoids_every_name_the_model_defines_or_gives() {
        // The candidates for `v_expanded` are, in turn: a node's output, a graph input a node reads, an
        // initializer, a node's name, a dim param, and a name a function's node reads.
        let node = |name: &str, inputs: &[&str], output: &str| NodeProto {
            name: Some(name.into()),
            op_type: Some("Add".into()),
            input: inputs.iter().map(|&s| s.into()).collect(),
            output: smallvec::smallvec![output.into()],
            ..Default::default()
        };
        let declared = |name: &str, dims: &[&str]| ValueInfoProto {
            name: Some(name.into()),
            r#type: Some(TypeProto {
                tensor_type: Some(type_proto::Tensor {
                    elem_type: Some(1),
                    shape: Some(TensorShapeProto {
                        dim: dims
                            .iter()
                            .map(|d| tensor_shape_proto::Dimension {
                                value: Some(tensor_shape_proto::dimension::Value::DimParam(d.to_string())),
                                denotation: None,
                            })
                            .collect(),
                    }),
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let graph = GraphProto {
            node: vec![node("v_expanded_3", &["v_expanded_1", "v_expanded_2"], "v_expanded")],
            input: vec![declared("v_expanded_1", &["v_expanded_4"])],
            initializer: vec![TensorProto { name: Some("v_expanded_2".into()), ..Default::default() }],
            ..Default::default()
        };
        let function = crate::onnx::pb::FunctionProto {
            name: Some("f".into()),
            node: vec![node("g", &["v_expanded_5"], "y")],
            ..Default::default()
        };
        let model = ModelProto { graph: Some(graph), functions: vec![function], ..Default::default() };
        let mut names = Names::of(&model);
        assert_eq!(names.fresh("v_expanded"), "v_expanded_6");
        assert_eq!(names.fresh("v_expanded"), "v_expanded_7");
    }

    #[test]
    fn a_name_no_builder_base_could_give_is_still_checked_against_every_name_of_the_model() {
        // `a`, `a_1` and `node_0` are not names the builder's bases give (see `could_be_made`): they are held only
        // once a name like them is asked for.
        let graph = GraphProto {
            node: vec![NodeProto {
                name: Some("a".into()),
                output: smallvec::smallvec!["a_1".into()],
                ..Default::default()
            }],
            initializer: vec![TensorProto { name: Some("x_expanded".into()), ..Default::default() }],
            ..Default::default()
        };
        let model = ModelProto { graph: Some(graph), ..Default::default() };
        let mut names = Names::of(&model);
        assert!(!could_be_made("a") && !could_be_made("a_1") && could_be_made("x_expanded"));
        assert_eq!(names.fresh("x_expanded"), "x_expanded_1");
        assert_eq!(names.fresh("a"), "a_2");
        assert_eq!(names.fresh("x_expanded"), "x_expanded_2");
    }

    #[test]
    fn every_base_the_builder_gives_could_be_made() {
        let bases = ["bcast", "bcast_shape_8x64", "bcast_target", "bcast_repeats_1x2", "v_expanded", "v_shape"];
        let more = ["v_axis0", "v_dim1", "v_reshaped", "v_tiled", "out_expand", "out_constant", "out_concat"];
        for base in bases.iter().chain(&more).chain(&["out_gather", "out_shape", "out_reshape", "out_tile"]) {
            assert!(could_be_made(base), "{base}");
        }
    }

    #[test]
    fn a_name_whose_every_underscore_is_followed_by_no_marks_first_letter_could_not_be_made() {
        for name in ["node_12345", "small_1234567_89", "v_3", "x_", "_", "", "bcas", "layer_norm_0_out_1_x"] {
            assert!(!could_be_made(name), "{name}");
        }
        // A `_` then a mark's first letter anywhere: in the first eight bytes, across them, in the last.
        for name in ["a_expanded", "abcdefg_s", "abcdefgh_s", "abcdefghijklmno_t", "0123456789_0123456789_d"] {
            assert!(could_be_made(name), "{name}");
        }
    }

    #[test]
    fn could_be_made_is_a_marks_first_letter_after_a_underscore_anywhere_or_bcast_first() {
        // Byte by byte, as the words it reads them in must agree: every length to 17, one or two `_`s anywhere,
        // each followed by a mark's first letter or not.
        let by_bytes =
            |b: &[u8]| b.starts_with(b"bcast") || b.windows(2).any(|w| w[0] == b'_' && b"acdegrst".contains(&w[1]));
        for len in 0..=17 {
            for (i, j) in (0..len).flat_map(|i| (i..len).map(move |j| (i, j))) {
                for next in [b'e', b'1', b'_', b'x'] {
                    let mut name = vec![b'v'; len];
                    (name[i], name[j]) = (b'_', b'_');
                    if j + 1 < len {
                        name[j + 1] = next;
                    }
                    let name = String::from_utf8(name).expect("ASCII");
                    assert_eq!(could_be_made(&name), by_bytes(name.as_bytes()), "{name}");
                }
            }
        }
    }

    #[test]
    fn a_base_asked_again_goes_on_past_every_name_made_from_it_or_for_another() {
        let model = ModelProto::default();
        let mut names = Names::of(&model);
        // `a_1` made for a base of its own first; `a` free the first time, then `a_2`, `a_3`; `b` likewise.
        let made: Vec<String> =
            ["a_1", "a", "a", "b", "a", "b", "", ""].iter().map(|b| names.fresh(b).to_string()).collect();
        assert_eq!(made, ["a_1", "a", "a_2", "b", "a_3", "b_1", "bcast", "bcast_1"]);
    }
}

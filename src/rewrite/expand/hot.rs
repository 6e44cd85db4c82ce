//! The values a plan asks for at nearly every site, memoised apart from the builder's other values: a shape
//! constant, and an `Expand` of a value to it.
//!
//! A plan of 100,000 sites asks 100,000 times for the few it makes, so asking again is a lookup by borrowed text:
//! the constant by its dims, and the `Expand` by the value's name and the target's number, hashed as they are
//! rather than put together into a key first. What is kept of each `Expand` made is its name and where the value's
//! name is in one buffer of them all ([`Texts`]): no allocation a key.

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use super::texts::{hash_tagged as hash, Short, Texts};
use crate::onnx::model::GraphStep;

/// The values made for nearly every site in one graph.
#[derive(Default)]
pub(super) struct Hot {
    /// By the dims: the constant's name and its number as a target of [`Hot::expands`].
    shape_constants: HashMap<Vec<u64>, (String, u32)>,
    /// The dims last asked for and their constant's number: the sites of a graph mostly broadcast to one shape, and
    /// comparing a few sizes costs less than hashing them.
    last: Option<(smallvec::SmallVec<[u64; 6]>, u32)>,
    expands: Expands,
}

/// The `Expand`s made in one graph, by the value expanded and the target.
#[derive(Default)]
struct Expands {
    /// The targets' names, numbered in the order they are first asked for.
    targets: HashMap<String, u32>,
    /// The names of the values expanded, each tagged with the target's number, with the name of the `Expand` made.
    made: Texts<Arc<str>>,
}

impl Expands {
    fn get(&self, value: &str, target: u32) -> Option<&Arc<str>> {
        self.made.get(hash(value, target), value, target)
    }

    /// The number of the target named `target`.
    fn target(&mut self, target: &str) -> u32 {
        let next = self.targets.len() as u32;
        match self.targets.get(target) {
            Some(&n) => n,
            None => *self.targets.entry(target.to_string()).or_insert(next),
        }
    }
}

impl Hot {
    /// The shape constant of `dims` and its number as a target, if it was made.
    pub fn shape_constant(&self, dims: &[u64]) -> Option<(&str, u32)> {
        self.shape_constants.get(dims).map(|(name, n)| (name.as_str(), *n))
    }

    /// Notes `name` as the shape constant of `dims`.
    pub fn add_shape_constant(&mut self, dims: &[u64], name: &str) {
        let n = self.expands.target(name);
        self.shape_constants.insert(dims.to_vec(), (name.to_string(), n));
    }

    /// The `Expand` of `value` to the shape constant of `dims`, if both were made.
    pub fn expand_to_constant(&mut self, value: &str, dims: &[u64]) -> Option<&Arc<str>> {
        let target = match &self.last {
            Some((last, target)) if last.as_slice() == dims => *target,
            _ => {
                let (_, target) = self.shape_constants.get(dims)?;
                self.last = Some((dims.into(), *target));
                *target
            }
        };
        self.expands.get(value, target)
    }

    /// The number of the target named `target`, for [`Hot::expand`] and [`Hot::add_expand`].
    pub fn target(&mut self, target: &str) -> u32 {
        self.expands.target(target)
    }

    /// The `Expand` of `value` to the target numbered `target`, if it was made.
    pub fn expand(&self, value: &str, target: u32) -> Option<&Arc<str>> {
        self.expands.get(value, target)
    }

    /// Notes `name` as the `Expand` of `value` to the target numbered `target`.
    pub fn add_expand(&mut self, value: &str, target: u32, name: Arc<str>) {
        // A value's name is shorter than 4 GiB: a model's name ([`crate::onnx::long_fields`] refuses a longer one)
        // or a name made of a fragment of one. A longer one would only not be found again: its `Expand`s not shared.
        if let Some(short) = Short::new(value) {
            self.expands.made.insert(hash(value, target), short, target, name);
        }
    }
}

/// The values made for nearly every site in the graph at `graph`, if any is: the main graph's, or a body's.
pub(super) fn hot_at<'h>(
    bodies: &'h HashMap<Vec<GraphStep>, Hot>,
    main: &'h Hot,
    graph: &[GraphStep],
) -> Option<&'h Hot> {
    match graph.is_empty() {
        true => Some(main),
        false => bodies.get(graph),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expand_is_found_by_its_value_and_its_target_and_by_no_other_pair() {
        let mut hot = Hot::default();
        hot.add_shape_constant(&[2, 3], "s23");
        hot.add_shape_constant(&[3], "s3");
        let (name, s23) = hot.shape_constant(&[2, 3]).expect("made");
        assert_eq!(name, "s23");
        hot.add_expand("ab", s23, "ab_expanded".into());
        let t = hot.target("t");
        hot.add_expand("a", t, "a_expanded".into());
        let found =
            |hot: &mut Hot, value: &str, dims: &[u64]| hot.expand_to_constant(value, dims).map(|n| n.to_string());
        assert_eq!(found(&mut hot, "ab", &[2, 3]).as_deref(), Some("ab_expanded"));
        // The same value to another constant, a value that starts alike, dims of no constant; then the first again,
        // once other dims were asked for last.
        assert_eq!(found(&mut hot, "ab", &[3]), None);
        assert_eq!(found(&mut hot, "a", &[2, 3]), None);
        assert_eq!(found(&mut hot, "ab", &[4]), None);
        assert_eq!(found(&mut hot, "ab", &[2, 3]).as_deref(), Some("ab_expanded"));
        // By the target's name: the number it was given the first time.
        assert_eq!(hot.target("t"), t);
        assert_eq!(hot.expand("a", t).map(|n| n.to_string()).as_deref(), Some("a_expanded"));
        assert_eq!(hot.expand("ab", t), None);
        assert_eq!(hot.target("s23"), s23);
    }
}

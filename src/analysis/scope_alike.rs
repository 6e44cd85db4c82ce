//! Initializers' facts, made once for all the initializers of one element type and dims: a model's weights come in
//! few shapes (a layer's projections, its biases, its norms' scales), and facts that depend on nothing else are
//! the same for each. Making them per initializer cost ~190 instructions and ~150 bytes of fresh heap each (the facts,
//! their dims).

use std::cell::RefCell;
use std::rc::Rc;

use crate::onnx::pb::TensorProto;
use crate::onnx::tensor::{self, ValueFacts};

/// How many element types and dims [`Alike`] holds the facts of at once, each in the place of its hash: 4 KiB of
/// places, made in the first scope that reads an initializer, and many more places than a model has shapes of
/// weights.
const PLACES: usize = 128;

/// A place: the element type (as [`TensorProto::data_type`] reads it: unset and UNDEFINED have the same facts)
/// and dims of a tensor, and the facts made from it.
#[derive(Clone)]
struct Held<'m> {
    data_type: i32,
    dims: &'m [i64],
    facts: Rc<ValueFacts>,
}

/// The facts made last for each place, as in a direct-mapped cache: a tensor finds those of a tensor alike in one
/// place, with no probe (a hash table's lookup, probe and key comparison cost as much as making the facts); one that
/// does not has its own made, which take the place. The places are made when a walk first reads an initializer.
#[derive(Default)]
pub(super) struct Alike<'m> {
    places: RefCell<Option<Box<[Option<Held<'m>>; PLACES]>>>,
}

impl<'m> Alike<'m> {
    /// [`tensor::facts_from_tensor_but_floats`] of `t`: those of an earlier tensor of its element type and dims when
    /// they depend on nothing else and are still held, else made now.
    #[inline(always)]
    pub(super) fn facts(&self, t: &'m TensorProto) -> Rc<ValueFacts> {
        let mut places = self.places.borrow_mut();
        let places = places.get_or_insert_with(new_places);
        let (data_type, dims) = (t.data_type(), &t.dims[..]);
        let place = &mut places[usize::from(place_of(data_type, dims))];
        // Only facts of a type and dims alone are held: a tensor of the type of the one held has such facts too.
        match place {
            Some(held) if held.data_type == data_type && same_dims(held.dims, dims) => held.facts.clone(),
            _ => made(place, t),
        }
    }
}

/// Empty places, made on the heap (an array made in place would take its room on the caller's stack).
#[cold]
fn new_places<'m>() -> Box<[Option<Held<'m>>; PLACES]> {
    vec![None; PLACES].into_boxed_slice().try_into().unwrap_or_else(|_| unreachable!("PLACES places"))
}

/// The facts of `t`, made now, and held in `place` if they depend on its type and dims alone. Out of line, so that
/// the facts found held cost no room on the stack for those made.
#[cold]
#[inline(never)]
fn made<'m>(place: &mut Option<Held<'m>>, t: &'m TensorProto) -> Rc<ValueFacts> {
    let facts = Rc::new(tensor::facts_from_tensor_but_floats(t));
    if tensor::facts_by_type_and_dims(t) {
        *place = Some(Held { data_type: t.data_type(), dims: &t.dims, facts: facts.clone() });
    }
    facts
}

/// The place of an element type and dims: the top 7 bits of a multiplicative hash of the type, the rank and the first
/// and last dims, without a loop (tensors that differ only in other dims share a place, and take it in turn).
#[inline]
fn place_of(data_type: i32, dims: &[i64]) -> u8 {
    const K: u64 = 0xf135_7aea_2e62_a9c5;
    let (first, last) = (dims.first().copied().unwrap_or(0) as u64, dims.last().copied().unwrap_or(0) as u64);
    let key = data_type as u64 ^ (dims.len() as u64) << 8 ^ first << 16 ^ last.rotate_left(40);
    (key.wrapping_mul(K) >> (64 - PLACES.trailing_zeros())) as u8
}

/// Whether two lists of dims are equal, compared in line: a list is a few dims, fewer than a library call costs.
#[inline]
fn same_dims(a: &[i64], b: &[i64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::pb::DataType;

    fn tensor(dims: &[i64], data_type: Option<DataType>, raw: &[u8]) -> TensorProto {
        TensorProto {
            dims: dims.to_vec(),
            data_type: data_type.map(|d| d as i32),
            raw_data: Some(raw.to_vec().into()),
            ..Default::default()
        }
    }

    /// Tensors of one element type and dims share their facts, whatever their float contents; any other type or
    /// dims, or integer contents, get facts of their own, each its tensor's.
    #[test]
    fn facts_are_shared_by_type_and_dims_and_never_across_integer_contents() {
        let f = |x: f32| x.to_le_bytes().repeat(2);
        let i = |x: i64| x.to_le_bytes().repeat(2);
        let tensors = [
            tensor(&[2], Some(DataType::Float), &f(1.0)),
            tensor(&[2], Some(DataType::Float), &f(2.0)),
            tensor(&[1, 2], Some(DataType::Float), &f(1.0)),
            tensor(&[2, 1], Some(DataType::Float), &f(1.0)),
            tensor(&[2], Some(DataType::Double), &i(1)),
            tensor(&[2], None, &f(1.0)),
            tensor(&[2], Some(DataType::Undefined), &f(1.0)),
            tensor(&[2], Some(DataType::Int64), &i(3)),
            tensor(&[2], Some(DataType::Int64), &i(4)),
        ];
        let alike = Alike::default();
        let facts: Vec<Rc<ValueFacts>> = tensors.iter().map(|t| alike.facts(t)).collect();
        for (t, f) in tensors.iter().zip(&facts) {
            assert_eq!(**f, tensor::facts_from_tensor_but_floats(t), "{t:?}");
        }
        let shared: Vec<(usize, usize)> = (0..facts.len())
            .flat_map(|a| (a + 1..facts.len()).map(move |b| (a, b)))
            .filter(|&(a, b)| Rc::ptr_eq(&facts[a], &facts[b]))
            .collect();
        // The two float [2], and no data type with UNDEFINED (both read as 0).
        assert_eq!(shared, [(0, 1), (5, 6)]);
        assert_eq!(facts[7].value.as_ref().map(Vec::len), Some(2));
        assert_ne!(facts[7], facts[8], "integer contents are each tensor's");
    }
}

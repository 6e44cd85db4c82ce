//! A body's initializers, dense and sparse: each defines a value with the tensor's element type and dims (and the
//! contents of a small integer one), and a tensor whose data does not fit them, or whose element type is none, is
//! a `tensor-data-mismatch`.
//!
//! A `sparse_initializer` (ONNX `onnx.proto`, `SparseTensorProto`: `values` of shape `[NNZ]`, named like the value
//! it defines, `indices` of shape `[NNZ]` or `[NNZ, rank]`, and the dense `dims`) defines its value as a dense
//! tensor of `dims` and the values' element type, as onnxruntime reads it; its contents are not followed.

use super::scope::{Env, Scope};
use super::*;
use crate::sys::escape::name;

impl<'m> Walker<'m, '_> {
    /// Defines a body's initializers in `scope`, noting duplicates and data that does not fit the dims.
    pub(super) fn define_initializers(
        &mut self,
        env: &Env<'m, '_>,
        scope: &mut Scope<'m>,
        initializers: &'m [TensorProto],
        sparse: &'m [SparseTensorProto],
        inputs: &[&'m ValueInfoProto],
    ) {
        // The slots from here on are initializers'; a name found before them is an input's. Which inputs an
        // initializer gives a value is kept by name: an initializer named like no input is found given before by
        // its slot, with the one lookup that defines it.
        let first = scope.defined();
        let mut inputs_given: HashSet<&str> = HashSet::default();
        let mut given_before = |name: &'m str, slot: Result<u32, u32>| match slot {
            Ok(_) => false,
            Err(s) if s >= first => true,
            Err(_) => !inputs_given.insert(name),
        };
        // The inputs' declarations by name, made only when an initializer names an input.
        let mut declared_inputs: Option<HashMap<&str, &ValueInfoProto>> = None;
        for init in initializers {
            let slot = scope.claim(init.name());
            if given_before(init.name(), slot) {
                let msg = format!("initializer '{}' is given more than once", name(init.name()));
                self.note(env, Code::DuplicateValue, None, msg);
            }
            if let Some(why) = tensor::data_mismatch(init) {
                let msg = format!("initializer '{}' {why}", name(init.name()));
                self.note(env, Code::TensorDataMismatch, None, msg);
            }
            if let Ok(s) = slot {
                // A name of its own (most initializers): its facts are made from the tensor when first read, its
                // floating-point contents when a node asks. Contents read from outside the file are set now (such a
                // tensor's own contents are none: `facts_from_tensor` reads only data held in the file).
                if self.external.is_empty() || !self.external.contains_key(init.name()) {
                    scope.set_lazy(s, init);
                } else {
                    let mut facts = tensor::facts_from_tensor(init);
                    self.external_contents(init.name(), &mut facts);
                    scope.set(s, facts);
                }
                continue;
            }
            let mut from_tensor = tensor::facts_from_tensor(init);
            self.external_contents(init.name(), &mut from_tensor);
            // An initializer that contradicts its input's declaration is refused by runtimes: the value is
            // contradicted.
            let by_name = declared_inputs.get_or_insert_with(|| inputs.iter().map(|vi| (vi.name(), *vi)).collect());
            let declared = by_name.get(init.name()).copied();
            if self.initializer_contradicts(env, init.name(), declared, &from_tensor) {
                scope.define(init.name(), ValueFacts::contradicted());
                continue;
            }
            self.define_initializer(scope, init.name(), from_tensor);
        }
        for s in sparse {
            let value = s.values.as_ref().map_or("", |v| v.name());
            if !value.is_empty() && given_before(value, scope.claim(value)) {
                let msg = format!("initializer '{}' is given more than once", name(value));
                self.note(env, Code::DuplicateValue, None, msg);
            }
            if let Some(why) = sparse_mismatch(s) {
                let msg = format!("sparse initializer '{}' {why}", name(value));
                self.note(env, Code::TensorDataMismatch, None, msg);
            }
            if !value.is_empty() {
                self.define_initializer(scope, value, sparse_facts(s));
            }
        }
    }

    /// The contents of a small integer tensor whose data lives outside the model file, when they were read.
    #[inline(always)]
    fn external_contents(&self, name: &str, facts: &mut ValueFacts) {
        // Most models keep none: no lookup then.
        if self.external.is_empty() {
            return;
        }
        if let Some(v) = self.external.get(name) {
            facts.value = Some(v.iter().map(|&x| Some(crate::sizes::sym::Poly::constant(x))).collect());
        }
    }

    /// An initializer that is also a graph input is a default the caller may override: a declared input shape wins,
    /// the initializer fills what is undeclared.
    fn define_initializer(&mut self, scope: &mut Scope<'m>, name: &'m str, from_tensor: ValueFacts) {
        let facts = match scope.get(name) {
            Some(input) if input.shape.dims().is_some() && !self.constant_initializers => {
                ValueFacts::tensor(input.elem, input.shape.clone())
            }
            _ => from_tensor,
        };
        scope.define(name, facts);
    }
}

/// The value a sparse initializer defines: its dense dims and its values' element type.
fn sparse_facts(s: &SparseTensorProto) -> ValueFacts {
    let elem = s.values.as_ref().and_then(|v| tensor::facts_from_tensor(v).elem);
    let dims = s.dims.iter().map(|&d| u64::try_from(d).map_or(Dim::Unknown, Dim::Known)).collect();
    ValueFacts::tensor(elem, Shape::ranked(dims))
}

/// How a sparse tensor breaks `SparseTensorProto`'s layout: no values, values that are not `[NNZ]`, indices that
/// are neither `[NNZ]` nor `[NNZ, rank]` int64, negative dims, or data that does not fit its own dims and type.
fn sparse_mismatch(s: &SparseTensorProto) -> Option<String> {
    let Some(values) = &s.values else { return Some("has no values".into()) };
    if let Some(why) = tensor::data_mismatch(values) {
        return Some(format!("values {why}"));
    }
    if s.dims.iter().any(|&d| d < 0) {
        return Some(format!("has dims {:?}, with a negative size", s.dims));
    }
    let [nnz] = values.dims[..] else {
        return Some(format!("has values of dims {:?} where [NNZ] is needed", values.dims));
    };
    let Some(indices) = &s.indices else { return Some("has no indices".into()) };
    if let Some(why) = tensor::data_mismatch(indices) {
        return Some(format!("indices {why}"));
    }
    let rank = i64::try_from(s.dims.len()).unwrap_or(i64::MAX);
    let fits = indices.dims == [nnz] || indices.dims == [nnz, rank];
    if indices.data_type() != crate::onnx::pb::DataType::Int64 as i32 || !fits {
        let t = tensor::elem_type_name(indices.data_type());
        return Some(format!(
            "has {t} indices of dims {:?} where int64 [{nnz}] or [{nnz}, {rank}] is needed",
            indices.dims
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::pb::DataType;

    fn sparse(dims: &[i64], values: &[f32], indices: &[i64], index_dims: &[i64]) -> SparseTensorProto {
        let values = TensorProto {
            name: Some("b".into()),
            data_type: Some(DataType::Float as i32),
            dims: vec![values.len() as i64],
            float_data: values.to_vec(),
            ..Default::default()
        };
        let indices = TensorProto {
            data_type: Some(DataType::Int64 as i32),
            dims: index_dims.to_vec(),
            int64_data: indices.to_vec(),
            ..Default::default()
        };
        SparseTensorProto { values: Some(values), indices: Some(indices), dims: dims.to_vec() }
    }

    #[test]
    fn a_sparse_initializer_defines_a_dense_value_of_its_dims() {
        let s = sparse(&[2, 3], &[1.0, 2.0], &[0, 4], &[2]);
        assert_eq!(sparse_mismatch(&s), None);
        let facts = sparse_facts(&s);
        assert_eq!(facts.elem, Some(DataType::Float as i32));
        assert_eq!(facts.shape, Shape::known(&[2, 3]));
        // Coordinates per non-zero: [NNZ, rank].
        assert_eq!(sparse_mismatch(&sparse(&[2, 3], &[1.0, 2.0], &[0, 0, 1, 1], &[2, 2])), None);
    }

    #[test]
    fn a_sparse_initializer_that_breaks_its_layout_is_a_data_mismatch() {
        assert!(sparse_mismatch(&sparse(&[2, 3], &[1.0, 2.0], &[0, 4, 5], &[3])).unwrap().contains("indices"));
        assert!(sparse_mismatch(&sparse(&[-2, 3], &[1.0], &[0], &[1])).unwrap().contains("negative"));
        let mut no_values = sparse(&[2, 3], &[1.0], &[0], &[1]);
        no_values.values = None;
        assert_eq!(sparse_mismatch(&no_values).as_deref(), Some("has no values"));
    }
}

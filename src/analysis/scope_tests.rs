use super::*;
use crate::onnx::pb::DataType;

fn tensor(name: &str, dims: &[i64], data_type: DataType, raw: Vec<u8>) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(data_type as i32),
        raw_data: Some(raw.into()),
        ..Default::default()
    }
}

/// An initializer set lazily reads as its tensor's facts: without its floating-point contents until they are read
/// for it, with its integer contents at once; and a name defined again (an input of that name, say) is the new
/// definition's, whatever the tensor said.
#[test]
fn an_initializers_facts_are_its_tensors_when_read() {
    let floats = tensor("w", &[2], DataType::Float, [1.5f32, -2.0].iter().flat_map(|x| x.to_le_bytes()).collect());
    let ints = tensor("shape", &[2], DataType::Int64, [3i64, 4].iter().flat_map(|x| x.to_le_bytes()).collect());
    let again = tensor("again", &[1], DataType::Float, 7f32.to_le_bytes().to_vec());
    let mut scope = Scope::unordered(3);
    for t in [&floats, &ints] {
        let s = scope.claim(t.name()).expect("a new name");
        scope.set_lazy(s, t);
    }
    assert_eq!(scope.get("w"), Some(&tensor::facts_from_tensor_but_floats(&floats)));
    assert_eq!(scope.get("shape"), Some(&tensor::facts_from_tensor(&ints)), "integer contents read at once");
    assert_eq!(scope.get("shape").and_then(|f| f.value.as_ref()).map(Vec::len), Some(2));
    scope.read_floats(scope.slot("w"), "w");
    assert_eq!(scope.get("w"), Some(&tensor::facts_from_tensor(&floats)));
    assert_eq!(scope.get("w").and_then(|f| f.floats.clone()), Some(vec![1.5, -2.0]));
    // Defined again before it was read: the tensor is not read for it any more.
    let s = scope.claim(again.name()).expect("a new name");
    scope.set_lazy(s, &again);
    scope.define("again", ValueFacts::contradicted());
    scope.read_all_floats();
    assert_eq!(scope.get("again"), Some(&ValueFacts::contradicted()));
    assert_eq!(scope.alive(), vec![0, 1, 2]);
}

/// Initializers of one element type and dims read one set of facts, made once; contents read for one of them, or
/// facts changed in place for one, are that one's alone.
#[test]
fn alike_initializers_share_facts_until_one_of_them_changes() {
    let bytes = |xs: [f32; 2]| xs.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let ts: Vec<TensorProto> = ["a", "b", "c"]
        .iter()
        .enumerate()
        .map(|(i, name)| tensor(name, &[2], DataType::Float, bytes([i as f32, 1.0])))
        .collect();
    let mut scope = Scope::unordered(3);
    for t in &ts {
        let s = scope.claim(t.name()).expect("a new name");
        scope.set_lazy(s, t);
    }
    let [a, b, c] = ["a", "b", "c"].map(|name| scope.get(name).expect("set") as *const ValueFacts);
    assert!(a == b && b == c, "one set of facts for the three");
    scope.read_floats(scope.slot("b"), "b");
    scope.read_mut(scope.slot("c"), "c").expect("set").shape = crate::sizes::shape::Shape::unranked();
    assert_eq!(scope.get("a"), Some(&tensor::facts_from_tensor_but_floats(&ts[0])));
    assert_eq!(scope.get("b"), Some(&tensor::facts_from_tensor(&ts[1])));
    assert_eq!(scope.get("b").and_then(|f| f.floats.clone()), Some(vec![1.0, 1.0]));
    let changed =
        ValueFacts { shape: crate::sizes::shape::Shape::unranked(), ..tensor::facts_from_tensor_but_floats(&ts[2]) };
    assert_eq!(scope.get("c"), Some(&changed));
    scope.read_all_floats();
    assert_eq!(scope.get("a"), Some(&tensor::facts_from_tensor(&ts[0])));
    assert_eq!(scope.get("c").and_then(|f| f.floats.clone()), Some(vec![2.0, 1.0]));
}

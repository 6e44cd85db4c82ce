//! The `ai.onnx.ml` domain (ONNX `docs/Operators-ml.md`): scikit-learn style preprocessing, linear models, SVMs,
//! tree ensembles and ZipMap. Batched ops take `[N, C]` inputs (a 1-D input is one example, `[1, C]`); their
//! element types come from attributes (class labels, `values_*`), so a model's output types are known even where
//! its sizes are not. Each op's versions differ in attributes, not in how outputs are shaped: one rule each.

use super::Ctx;
use crate::onnx::pb::DataType;
use crate::onnx::tensor::{Kind, ValueFacts, INT64};
use crate::sizes::shape::{Dim, Shape};
use crate::sizes::sym::Poly;

const FLOAT: i32 = DataType::Float as i32;
const STRING: i32 = DataType::String as i32;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    let same = |elem| ValueFacts::tensor(elem, ctx.shape(0));
    Some(match ctx.op {
        // Binarizer-1, Imputer-1: the input's type and shape.
        "Binarizer" | "Imputer" => vec![same(ctx.elem(0))],
        // Normalizer-1, Scaler-1: float, the input's shape.
        "Normalizer" | "Scaler" => vec![same(Some(FLOAT))],
        // CategoryMapper-1 maps strings to integers and back.
        "CategoryMapper" => vec![same(swap_string_int(ctx.elem(0)))],
        "LabelEncoder" => vec![same(label_encoder_type(ctx))],
        "ArrayFeatureExtractor" => vec![ValueFacts::tensor(ctx.elem(0), array_feature_extractor(ctx))],
        // OneHotEncoder-1: one more axis, as long as the category list.
        "OneHotEncoder" => {
            let cats = list_len(ctx, "cats_int64s").max(list_len(ctx, "cats_strings"));
            let shape = match ctx.dims(0) {
                Some(d) => Shape::ranked(d.iter().cloned().chain([Dim::Known(cats as u64)]).collect()),
                None => Shape::unranked(),
            };
            vec![ValueFacts::tensor(Some(FLOAT), shape)]
        }
        // CastMap-1: `cast_to`, float by default; DictVectorizer-1: the map's value type.
        "CastMap" => vec![ValueFacts::tensor(cast_map_type(ctx), Shape::unranked())],
        "DictVectorizer" => {
            let elem = ctx.input(0).filter(|f| matches!(f.kind, Kind::Map { .. })).and_then(|f| f.elem);
            vec![ValueFacts::tensor(elem, Shape::unranked())]
        }
        "FeatureVectorizer" => vec![ValueFacts::tensor(Some(FLOAT), feature_vectorizer(ctx))],
        "LinearClassifier" => linear_classifier(ctx),
        // LinearRegressor-1: `[N, targets]` floats.
        "LinearRegressor" => {
            let targets = Dim::Known(ctx.int("targets", 1).max(0) as u64);
            vec![ValueFacts::tensor(Some(FLOAT), Shape::ranked(vec![batch(ctx), targets]))]
        }
        // SVMClassifier-1: labels `[N]`, scores `[N, ?]` (their count depends on the kernel and mode).
        "SVMClassifier" => vec![
            ValueFacts::tensor(Some(label_type(ctx)), Shape::ranked(vec![batch(ctx)])),
            ValueFacts::tensor(Some(FLOAT), Shape::ranked(vec![batch(ctx), Dim::Unknown])),
        ],
        "SVMRegressor" => vec![ValueFacts::tensor(Some(FLOAT), Shape::unranked())],
        // TreeEnsembleClassifier-1/3/5: labels `[N]`, scores `[N, classes]`.
        "TreeEnsembleClassifier" => {
            let n = dim_at_2d(ctx);
            let classes = list_len(ctx, "classlabels_strings").max(list_len(ctx, "classlabels_int64s"));
            let classes = if classes > 0 { Dim::Known(classes as u64) } else { Dim::Unknown };
            vec![
                ValueFacts::tensor(Some(label_type(ctx)), Shape::ranked(vec![n.clone()])),
                ValueFacts::tensor(Some(FLOAT), Shape::ranked(vec![n, classes])),
            ]
        }
        // TreeEnsembleRegressor-1/3/5 gives floats, TreeEnsemble-5 the input's type: `[N, n_targets]`.
        "TreeEnsembleRegressor" | "TreeEnsemble" => {
            let elem = if ctx.op == "TreeEnsemble" { ctx.elem(0) } else { Some(FLOAT) };
            let targets = ctx.attrs.int("n_targets").filter(|&t| t >= 0).map_or(Dim::Unknown, |t| Dim::Known(t as u64));
            vec![ValueFacts::tensor(elem, Shape::ranked(vec![dim_at_2d(ctx), targets]))]
        }
        // ZipMap-1: a sequence of maps from each class label to its float score.
        "ZipMap" => {
            let key = if list_len(ctx, "classlabels_strings") > 0 { STRING } else { INT64 };
            vec![ValueFacts::of_kind(Kind::SequenceOfMaps { key }, Some(FLOAT), Shape::scalar())]
        }
        _ => return None,
    })
}

/// The length of a list attribute (ints, floats or strings).
fn list_len(ctx: &Ctx<'_, '_>, name: &str) -> usize {
    ctx.attrs.get(name).map_or(0, |a| a.ints.len().max(a.strings.len()).max(a.floats.len()))
}

fn swap_string_int(elem: Option<i32>) -> Option<i32> {
    match elem? {
        STRING => Some(INT64),
        INT64 => Some(STRING),
        _ => None,
    }
}

/// The batch size of a `[N, C]` or `[C]` input (a 1-D input is one example).
fn batch(ctx: &Ctx<'_, '_>) -> Dim {
    match ctx.dims(0) {
        Some([_]) => Dim::Known(1),
        Some([n, _]) => n.clone(),
        _ => Dim::Unknown,
    }
}

/// `N` of a `[N, F]` input (the tree ensembles take 2-D inputs only).
fn dim_at_2d(ctx: &Ctx<'_, '_>) -> Dim {
    match ctx.dims(0) {
        Some([n, _]) => n.clone(),
        _ => Dim::Unknown,
    }
}

/// Class labels are strings when `classlabels_strings` is given, integers otherwise.
fn label_type(ctx: &Ctx<'_, '_>) -> i32 {
    if list_len(ctx, "classlabels_strings") > 0 {
        STRING
    } else {
        INT64
    }
}

/// LabelEncoder: the type of its `values_*` attribute (2, 4); at version 1, strings to integers and back.
fn label_encoder_type(ctx: &Ctx<'_, '_>) -> Option<i32> {
    if let Some(t) = ctx.attrs.tensor("values_tensor") {
        return t.data_type.filter(|&e| e != 0);
    }
    let given = |name: &str| ctx.attrs.get(name).is_some();
    match () {
        _ if given("values_strings") => Some(STRING),
        _ if given("values_int64s") => Some(INT64),
        _ if given("values_floats") => Some(FLOAT),
        _ => swap_string_int(ctx.elem(0)),
    }
}

fn cast_map_type(ctx: &Ctx<'_, '_>) -> Option<i32> {
    match ctx.attrs.string("cast_to") {
        None | Some(b"TO_FLOAT") => Some(FLOAT),
        Some(b"TO_INT64") => Some(INT64),
        Some(b"TO_STRING") => Some(STRING),
        Some(_) => None,
    }
}

/// ArrayFeatureExtractor-1: the indices pick along the last axis: `X`'s other axes, then as many as there are
/// indices. A 1-D `X` (and scalar indices) are read differently by runtimes: left unknown.
fn array_feature_extractor(ctx: &Ctx<'_, '_>) -> Shape {
    let Some(d) = ctx.dims(0).filter(|d| d.len() >= 2) else { return Shape::unranked() };
    let count = match ctx.dims(1) {
        Some(i) if !i.is_empty() => i.iter().try_fold(Poly::constant(1), |acc, d| acc.mul(&d.to_poly()?)),
        _ => None,
    };
    let mut dims = d[..d.len() - 1].to_vec();
    dims.push(count.map_or(Dim::Unknown, Dim::from_poly));
    Shape::ranked(dims)
}

/// FeatureVectorizer-1: `[N, sum of inputdimensions]`, `N` from the first input.
fn feature_vectorizer(ctx: &Ctx<'_, '_>) -> Shape {
    let width = match ctx.attrs.ints("inputdimensions") {
        Some(d) if d.len() == ctx.inputs.len() && d.iter().all(|&x| x >= 0) => Dim::Known(d.iter().sum::<i64>() as u64),
        _ => Dim::Unknown,
    };
    Shape::ranked(vec![batch(ctx), width])
}

/// LinearClassifier-1: labels `[N]`, scores `[N, classes]`, one class per intercept (two for one intercept and
/// two labels: a binary model).
fn linear_classifier(ctx: &Ctx<'_, '_>) -> Vec<ValueFacts> {
    let labels = list_len(ctx, "classlabels_strings").max(list_len(ctx, "classlabels_ints"));
    let intercepts = list_len(ctx, "intercepts");
    let classes = if intercepts == 1 && labels == 2 { 2 } else { intercepts };
    let n = batch(ctx);
    vec![
        ValueFacts::tensor(Some(label_type(ctx)), Shape::ranked(vec![n.clone()])),
        ValueFacts::tensor(Some(FLOAT), Shape::ranked(vec![n, Dim::Known(classes as u64)])),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::test_support::tensor as t;
    use crate::infer::test_support::{ints, run_rule};
    use crate::onnx::pb::AttributeProto;

    const DOUBLE: i32 = DataType::Double as i32;

    fn strings(name: &str, v: &[&str]) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            strings: v.iter().map(|s| bytes::Bytes::copy_from_slice(s.as_bytes())).collect(),
            r#type: Some(8),
            ..Default::default()
        }
    }

    #[test]
    fn label_encoder_takes_its_values_type_and_at_version_1_swaps_strings_and_integers() {
        let attrs = vec![strings("keys_strings", &["a", "b"]), ints("values_int64s", &[1, 2])];
        let out = run_rule(infer, "LabelEncoder", 2, attrs, &[t(STRING, &[3])], 1);
        assert_eq!(out[0], ValueFacts::tensor(Some(INT64), Shape::known(&[3])));
        let out = run_rule(infer, "LabelEncoder", 1, vec![strings("classes_strings", &["a"])], &[t(INT64, &[3])], 1);
        assert_eq!(out[0].elem, Some(STRING));
    }

    #[test]
    fn tree_classifier_scores_one_column_per_class_label() {
        let out = run_rule(
            infer,
            "TreeEnsembleClassifier",
            3,
            vec![ints("classlabels_int64s", &[0, 1, 2])],
            &[t(DOUBLE, &[30, 3])],
            2,
        );
        assert_eq!(out[0], ValueFacts::tensor(Some(INT64), Shape::known(&[30])));
        assert_eq!(out[1], ValueFacts::tensor(Some(FLOAT), Shape::known(&[30, 3])));
    }

    #[test]
    fn linear_classifier_with_one_intercept_and_two_labels_is_binary() {
        let attrs = vec![ints("classlabels_ints", &[0, 1]), ints("intercepts", &[0])];
        let out = run_rule(infer, "LinearClassifier", 1, attrs, &[t(FLOAT, &[4])], 2);
        assert_eq!(out[0].shape, Shape::known(&[1]), "a 1-D input is one example");
        assert_eq!(out[1].shape, Shape::known(&[1, 2]));
    }

    #[test]
    fn zipmap_gives_a_sequence_of_maps_keyed_by_the_labels() {
        let out =
            run_rule(infer, "ZipMap", 1, vec![strings("classlabels_strings", &["x", "y"])], &[t(FLOAT, &[5, 2])], 1);
        assert_eq!(out[0], ValueFacts::of_kind(Kind::SequenceOfMaps { key: STRING }, Some(FLOAT), Shape::scalar()));
    }

    #[test]
    fn array_feature_extractor_picks_as_many_as_there_are_indices() {
        let out = run_rule(infer, "ArrayFeatureExtractor", 1, vec![], &[t(INT64, &[3, 4, 5]), t(INT64, &[2])], 1);
        assert_eq!(out[0].shape, Shape::known(&[3, 4, 2]));
        let out = run_rule(infer, "ArrayFeatureExtractor", 1, vec![], &[t(INT64, &[5]), t(INT64, &[2])], 1);
        assert_eq!(out[0].shape, Shape::unranked(), "a 1-D input is read differently by runtimes");
    }
}

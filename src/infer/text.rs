//! String ops (ONNX `docs/Operators.md`: RegexFullMatch-20, StringConcat-20, StringNormalizer-10, StringSplit-20,
//! TfIdfVectorizer-9).

use super::Ctx;
use crate::onnx::tensor::{ValueFacts, BOOL, INT64};
use crate::sizes::shape::{Dim, Shape};

const STRING: i32 = crate::onnx::pb::DataType::String as i32;
const FLOAT: i32 = crate::onnx::pb::DataType::Float as i32;

pub fn infer(ctx: &mut Ctx<'_, '_>) -> Option<Vec<ValueFacts>> {
    Some(match ctx.op {
        "RegexFullMatch" => vec![ValueFacts::tensor(Some(BOOL), ctx.shape(0))],
        // StringConcat-20 broadcasts its two inputs as numpy does.
        "StringConcat" => {
            let (a, b) = (ctx.shape(0), ctx.shape(1));
            let shape = crate::rules::multidirectional(&[&a, &b]).output;
            vec![ValueFacts::tensor(Some(STRING), shape)]
        }
        // StringNormalizer-10: `[C]` or `[1, C]`; stop words may remove any number of the C strings.
        "StringNormalizer" => {
            let shape = match ctx.dims(0) {
                Some([_]) => Shape::ranked(vec![Dim::Unknown]),
                Some([b, _]) => Shape::ranked(vec![b.clone(), Dim::Unknown]),
                _ => Shape::unranked(),
            };
            vec![ValueFacts::tensor(Some(STRING), shape)]
        }
        // StringSplit-20: the substrings on one more axis (as long as the most any string has), and their counts.
        "StringSplit" => {
            let split = match ctx.dims(0) {
                Some(d) => Shape::ranked(d.iter().cloned().chain([Dim::Unknown]).collect()),
                None => Shape::unranked(),
            };
            vec![ValueFacts::tensor(Some(STRING), split), ValueFacts::tensor(Some(INT64), ctx.shape(0))]
        }
        // TfIdfVectorizer-9: `[max(ngram_indexes) + 1]` counts per row of a `[C]` or `[N, C]` input.
        "TfIdfVectorizer" => {
            let width = ctx
                .attrs
                .ints("ngram_indexes")
                .and_then(|i| i.iter().max().copied())
                .filter(|&m| m >= 0)
                .map_or(Dim::Unknown, |m| Dim::Known(m as u64 + 1));
            let shape = match ctx.dims(0) {
                Some([_]) => Shape::ranked(vec![width]),
                Some([n, _]) => Shape::ranked(vec![n.clone(), width]),
                _ => Shape::unranked(),
            };
            vec![ValueFacts::tensor(Some(FLOAT), shape)]
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::test_support::tensor as t;
    use crate::infer::test_support::{ints, run_rule};

    #[test]
    fn string_concat_broadcasts() {
        let out = run_rule(infer, "StringConcat", 20, vec![], &[t(STRING, &[2, 1]), t(STRING, &[3])], 1);
        assert_eq!(out[0], ValueFacts::tensor(Some(STRING), Shape::known(&[2, 3])));
    }

    #[test]
    fn string_split_adds_an_axis_of_unknown_length() {
        let out = run_rule(infer, "StringSplit", 20, vec![], &[t(STRING, &[4])], 2);
        assert_eq!(out[0].shape, Shape::ranked(vec![Dim::Known(4), Dim::Unknown]));
        assert_eq!(out[1], ValueFacts::tensor(Some(INT64), Shape::known(&[4])));
    }

    #[test]
    fn tfidf_has_one_column_per_ngram_index() {
        let out =
            run_rule(infer, "TfIdfVectorizer", 9, vec![ints("ngram_indexes", &[0, 1, 6])], &[t(INT64, &[2, 5])], 1);
        assert_eq!(out[0], ValueFacts::tensor(Some(FLOAT), Shape::known(&[2, 7])));
    }
}

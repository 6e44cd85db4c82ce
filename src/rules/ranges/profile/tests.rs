use super::*;

fn input(name: &str, dims: &[&str]) -> Input {
    let dims = dims
        .iter()
        .map(|d| {
            d.parse::<u64>().map_or_else(|_| if *d == "?" { Dim::Unknown } else { Dim::from_dim_param(d) }, Dim::Known)
        })
        .collect();
    Input { name: name.to_string(), dims: Some(dims), elem: None }
}

fn profile(min: &str, opt: &str, max: &str) -> Profile {
    Profile { min: Shapes::parse(min).unwrap(), opt: Shapes::parse(opt).unwrap(), max: Shapes::parse(max).unwrap() }
}

#[test]
fn trtexec_shapes_parse_with_quoted_names() {
    let s = Shapes::parse("images:1x3x320x320,'input:0':8x16").unwrap();
    assert_eq!(s.0, vec![("images".to_string(), vec![1, 3, 320, 320]), ("input:0".to_string(), vec![8, 16])]);
    assert_eq!(s.spelled(), "images:1x3x320x320,'input:0':8x16");
    assert!(Shapes::parse("images").is_err());
    assert!(Shapes::parse("images:1xa").is_err());
    assert_eq!(Shapes::parse("scalar:").unwrap().0, vec![("scalar".to_string(), vec![])]);
}

#[test]
fn a_profile_gives_each_symbol_its_min_to_max() {
    let inputs = [input("images", &["batch", "3", "height", "width"])];
    let p = profile("images:1x3x320x320", "images:4x3x480x640", "images:8x3x640x640");
    let (ranges, opt) = p.ranges(&inputs).unwrap();
    assert_eq!(ranges.describe(), "batch ∈ 1..8, height ∈ 320..640, width ∈ 320..640");
    assert_eq!(opt.get("height"), Some(&480));
    // Without an opt shape, opt is the max.
    let (_, opt) = profile("images:1x3x320x320", "", "images:8x3x640x640").ranges(&inputs).unwrap();
    assert_eq!(opt.get("width"), Some(&640));
}

#[test]
fn a_profile_that_contradicts_the_model_is_an_error() {
    let inputs = [input("ids", &["batch", "seq"]), input("mask", &["batch", "seq"]), input("img", &["3", "2*s", "?"])];
    let err = |min: &str, max: &str| profile(min, "", max).ranges(&inputs).unwrap_err();
    assert!(matches!(err("nope:1", "nope:2"), ProfileError::NoInput { .. }));
    assert!(matches!(err("ids:1x1", "ids:8x64,mask:8x64"), ProfileError::Missing { .. }));
    assert!(matches!(err("ids:1", "ids:8"), ProfileError::Rank { .. }));
    assert!(matches!(err("ids:9x1", "ids:8x64"), ProfileError::Order { .. }));
    assert!(matches!(err("ids:1x1,mask:1x1", "ids:8x64,mask:4x64"), ProfileError::Disagree { .. }));
    assert!(matches!(err("img:4x2x2", "img:4x8x8"), ProfileError::Fixed { .. }));
    assert!(matches!(err("img:3x2x2", "img:3x8x8"), ProfileError::NotASymbol { .. }));
    let e = profile("ids:1x1", "ids:9x1", "ids:8x64").ranges(&inputs).unwrap_err();
    assert!(matches!(e, ProfileError::Opt { .. }), "{e}");
}

#[test]
fn a_safe_box_prints_as_trtexec_and_onnxruntime_profiles() {
    let inputs = [input("input_ids", &["batch", "seq"]), input("pixel", &["2*batch", "3"]), input("n", &["3"])];
    let mut safe = Ranges::default();
    safe.insert("batch", SizeRange::parse("1..8").unwrap());
    safe.insert("seq", SizeRange::parse("1..64").unwrap());
    let shapes = profile_of(&inputs, &safe, &BTreeMap::from([("seq".into(), 32)]));
    assert!(shapes.left_out.is_empty());
    assert_eq!(
        shapes.profile.trtexec(),
        "--minShapes=input_ids:1x1,pixel:2x3 --optShapes=input_ids:8x32,pixel:16x3 --maxShapes=input_ids:8x64,pixel:16x3"
    );
    assert_eq!(
        shapes.profile.onnxruntime(),
        r#"{"trt_profile_min_shapes":"input_ids:1x1,pixel:2x3","trt_profile_opt_shapes":"input_ids:8x32,pixel:16x3","trt_profile_max_shapes":"input_ids:8x64,pixel:16x3"}"#
    );
}

#[test]
fn a_name_a_shell_would_read_otherwise_is_quoted() {
    let p = profile("a b:1", "a b:1", "a b:2");
    assert_eq!(p.trtexec(), "'--minShapes=a b:1' '--optShapes=a b:1' '--maxShapes=a b:2'");
    assert_eq!(shell_word("it's"), r"'it'\''s'");
}

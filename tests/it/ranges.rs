//! Ranges of input sizes (`--range`, TensorRT profiles, `--safe-ranges`, `--witness`): the command line's
//! contracts, each test named after the behaviour it pins, on the models of `fixtures/ranges/` (a position table
//! of 64 rows; a feature pyramid that needs multiples of 4; position ids computed and read by a Gather). That the witnesses fail and the safe sizes run in
//! onnxruntime over the corpora is tests/it/ranges_corpus.rs.

use crate::common::cli::{run, run_in, Run};
use std::path::PathBuf;

use prost::Message;
use serde_json::Value as Json;

const POSITIONS: &str = "fixtures/ranges/position_table.onnx";
const PYRAMID: &str = "fixtures/ranges/feature_pyramid.onnx";
/// Position ids computed (`Range(0, seq) + 2`, RoBERTa's `CumSum(mask) * mask + 1`, OPT's
/// `CumSum(attention_mask) * attention_mask + 1`), read by a Gather from tables of 66 rows.
const POSITION_IDS: &str = "fixtures/ranges/position_ids.onnx";

fn scratch(name: &str) -> PathBuf {
    crate::common::cli::scratch("ranges-cli", name)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn json(r: &Run) -> Json {
    serde_json::from_str(r.stdout.lines().next().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

fn site<'a>(report: &'a Json, op_node: &str) -> &'a Json {
    report["sites"].as_array().unwrap().iter().find(|s| s["node"] == op_node).unwrap_or_else(|| panic!("{report}"))
}

#[test]
fn a_position_table_fails_one_past_its_length_and_is_proven_below() {
    let r = run(&["check", POSITIONS, "--range", "seq=1..512"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("error[broadcast-violation] main › #7 (Add): fails at seq = 65 (it needs seq ≤ 64)"),
        "{}",
        r.stdout
    );
    let r = run(&["check", POSITIONS, "--range", "seq=1..64", "--range", "batch=1..8"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("0 conditional"), "{}", r.stdout);
    // Without ranges the site stays conditional, a warning.
    assert_eq!(run(&["check", POSITIONS]).code, 0);
}

#[test]
fn json_gives_each_decision_with_its_witness_or_proof() {
    let r = run(&["check", POSITIONS, "--format", "json", "--range", "seq=1..512"]);
    let report = json(&r);
    let add = site(&report, "#7 (Add)");
    assert_eq!(add["verdict"], "violation");
    assert_eq!(add["code"], "broadcast-violation");
    assert_eq!(add["over_ranges"]["result"], "fails");
    assert_eq!(add["over_ranges"]["witness"], serde_json::json!({ "seq": 65 }));
    // The axis at fault is the one whose condition fails at the witness: the sequence axis.
    assert_eq!(add["axis"], 1);
    assert_eq!(report["ranges"]["symbols"]["seq"], serde_json::json!({ "min": 1, "max": 512, "step": 1 }));
    assert_eq!(report["ranges"]["failures"][0]["witness"]["seq"], 65);
    let r = run(&["check", POSITIONS, "--format", "json", "--range", "seq=1..64"]);
    let add = site(&json(&r), "#7 (Add)").clone();
    assert_eq!(add["verdict"], "broadcast");
    assert_eq!(add["code"], Json::Null);
    assert_eq!(add["over_ranges"], serde_json::json!({ "result": "holds", "enumerated": 0 }));
    // Without ranges, no range field at all: the JSON of a plain check is unchanged.
    let plain = json(&run(&["check", POSITIONS, "--format", "json"]));
    assert!(plain.get("ranges").is_none() && site(&plain, "#7 (Add)").get("over_ranges").is_none());
}

#[test]
fn a_symbol_without_a_range_leaves_the_site_conditional_and_says_why() {
    let r = run(&["check", PYRAMID, "--range", "height=8..64/4"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // The height's conditions are proven apart; what is left depends on the width only.
    assert!(r.stdout.contains("over the ranges, unproven (it depends on width, which has no range)"), "{}", r.stdout);
}

#[test]
fn multiples_of_the_pyramid_step_are_proven_and_other_sizes_fail_at_the_smallest() {
    let r = run(&["check", PYRAMID, "--range", "height=8..1024/4", "--range", "width=8..1024/4"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = run(&["check", PYRAMID, "--range", "height=8..64", "--range", "width=8..64"]);
    assert_eq!(r.code, 1);
    // The first add needs floor(width / 2) even (width 8 or 9 pass), the second width even.
    assert!(r.stdout.contains("main › #3 (Add): fails at height = 8, width = 10"), "{}", r.stdout);
    assert!(r.stdout.contains("main › #5 (Add): fails at height = 8, width = 9"), "{}", r.stdout);
}

#[test]
fn a_tensorrt_profile_ranges_the_symbols_of_the_inputs_it_names() {
    let profile =
        ["--min-shapes", "input_ids:1x1,attention_mask:1x1", "--max-shapes", "input_ids:8x128,attention_mask:8x128"];
    let r = run(&[&["check", POSITIONS], &profile[..]].concat());
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("fails at seq = 65"), "{}", r.stdout);
    // trtexec's own spelling of the flags works too.
    let r = run(&[
        "check",
        POSITIONS,
        "--minShapes=input_ids:1x1,attention_mask:1x1",
        "--maxShapes=input_ids:8x64,attention_mask:8x64",
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // A profile that contradicts the model is an error naming the input.
    let r = run(&[
        "check",
        POSITIONS,
        "--min-shapes",
        "input_ids:1x1,attention_mask:2x1",
        "--max-shapes",
        "input_ids:8x64,attention_mask:8x64",
    ]);
    assert_eq!(r.code, 2);
    assert!(r.stdout.contains("batch gets 1..8 from one input and 2..8 from another"), "{}{}", r.stdout, r.stderr);
    // A --range narrows the profile's range of a symbol (a step, say), within its min and max only.
    let narrowed = [&profile[..], &["--range", "seq=1..64"]].concat();
    assert_eq!(run(&[&["check", POSITIONS], &narrowed[..]].concat()).code, 0);
    let r = run(&[&["check", POSITIONS], &profile[..], &["--range", "seq=1..512"]].concat());
    assert_eq!(r.code, 2);
    assert!(r.stdout.contains("--range seq: 1..512 is not within the profile's 1..128"), "{}", r.stdout);
    let r = run(&["check", POSITIONS, "--min-shapes", "images:1x3", "--max-shapes", "images:1x3"]);
    assert_eq!(r.code, 2);
    assert!(r.stdout.contains("--min-shapes: the model has no input named images"), "{}{}", r.stdout, r.stderr);
}

#[test]
fn safe_ranges_print_the_largest_box_as_trtexec_and_onnxruntime_profiles() {
    let r = run(&["check", POSITIONS, "--range", "seq=1..4096", "--range", "batch=1..8", "--safe-ranges"]);
    assert!(r.stdout.contains("safe ranges: batch ∈ 1..8, seq ∈ 1..64 (every site holds there)"), "{}", r.stdout);
    assert!(r.stdout.contains(
        "trtexec --minShapes=input_ids:1x1,attention_mask:1x1 --optShapes=input_ids:8x64,attention_mask:8x64 --maxShapes=input_ids:8x64,attention_mask:8x64"
    ), "{}", r.stdout);
    assert!(
        r.stdout.contains(
            r#"onnxruntime TensorRT provider options: {"trt_profile_min_shapes":"input_ids:1x1,attention_mask:1x1""#
        ),
        "{}",
        r.stdout
    );
    let r = run(&[
        "check",
        PYRAMID,
        "--range",
        "height=8..64",
        "--range",
        "width=8..64",
        "--range",
        "batch=1..2",
        "--safe-ranges",
        "--format",
        "json",
    ]);
    let safe = &json(&r)["ranges"]["safe"];
    assert_eq!(safe["symbols"]["height"], serde_json::json!({ "min": 8, "max": 64, "step": 4 }), "{safe}");
    assert_eq!(safe["symbols"]["width"], serde_json::json!({ "min": 8, "max": 64, "step": 4 }));
    assert_eq!(safe["profile"]["max_shapes"], "image:2x3x64x64");
    assert_eq!(safe["complete"], true);
}

#[test]
fn safe_ranges_without_ranges_search_the_default_bounds_and_say_so() {
    let r = run(&["check", POSITIONS, "--safe-ranges"]);
    assert!(r.stdout.contains("safe ranges: batch ∈ 1..65536, seq ∈ 1..64"), "{}", r.stdout);
    assert!(r.stdout.contains("no range was given for batch, seq: searched within 1..65536"), "{}", r.stdout);
}

#[test]
fn a_range_of_one_size_is_a_binding() {
    let r = run(&["check", POSITIONS, "--range", "seq=65", "--format", "json"]);
    let report = json(&r);
    // Bound before inference: the site is a plain violation at seq = 65, not a decision over a range.
    assert_eq!(site(&report, "#7 (Add)")["verdict"], "violation");
    assert!(site(&report, "#7 (Add)").get("over_ranges").is_none());
    let r = run(&["check", POSITIONS, "--range", "seq=1..64", "--bind", "seq=3"]);
    assert_eq!(r.code, 2);
    assert!(r.stdout.contains("seq is given a size by --bind and a range"), "{}{}", r.stdout, r.stderr);
}

#[test]
fn a_range_naming_no_input_symbol_is_an_error() {
    let r = run(&["check", POSITIONS, "--range", "height=1..8"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stdout.contains("--range height: no input of the model has a dim named height (its inputs name batch, seq)"),
        "{}",
        r.stdout
    );
    let r = run(&["check", POSITIONS, "--range", "seq=9..1"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("MIN is larger than MAX"), "{}", r.stderr);
}

#[test]
fn witnesses_are_tensors_of_the_failing_sizes() {
    let dir = scratch("witness");
    let out = dir.join("w");
    let model = root().join(POSITIONS);
    let r = run_in(
        &dir,
        &["check", model.to_str().unwrap(), "--range", "seq=1..512", "--range", "batch=2..4", "--witness", "w"],
    );
    assert_eq!(r.code, 1);
    let folder = std::fs::read_dir(&out).unwrap().next().unwrap().unwrap().path();
    let listed: Json = serde_json::from_slice(&std::fs::read(folder.join("witnesses.json")).unwrap()).unwrap();
    assert_eq!(listed[0]["sizes"], serde_json::json!({ "seq": 65, "batch": 2 }));
    for (i, name) in ["input_ids", "attention_mask"].iter().enumerate() {
        let bytes = std::fs::read(folder.join("1").join(format!("input_{i}.pb"))).unwrap();
        let t = onnx_bcast::onnx::pb::TensorProto::decode(bytes.as_slice()).unwrap();
        assert_eq!((t.name(), t.dims.as_slice(), t.data_type()), (*name, &[2i64, 65][..], 7));
        // int64, each 0 or 1: a valid index into any table.
        let raw = t.raw_data.as_ref().unwrap();
        assert_eq!(raw.len(), 2 * 65 * 8);
        assert!(raw.chunks(8).all(|c| i64::from_le_bytes(c.try_into().unwrap()) <= 1));
    }
    assert!(r.stdout.contains("witness for main › #7 (Add) at seq = 65, batch = 2: "), "{}", r.stdout);
}

#[test]
fn the_config_file_gives_ranges_and_flags_override_them() {
    let dir = scratch("config");
    std::fs::write(dir.join("onnx-bcast.toml"), "range = [\"seq=1..512\", \"batch=1..8\"]\nsafe-ranges = true\n")
        .unwrap();
    let model = root().join(POSITIONS);
    let r = run_in(&dir, &["check", model.to_str().unwrap()]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.contains("fails at seq = 65") && r.stdout.contains("safe ranges: batch ∈ 1..8, seq ∈ 1..64"),
        "{}",
        r.stdout
    );
    let r = run_in(&dir, &["check", model.to_str().unwrap(), "--range", "seq=1..32"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(r.stdout.contains("safe ranges: batch ∈ 1..8, seq ∈ 1..32"), "{}", r.stdout);
}

#[test]
fn infer_over_ranges_writes_what_holds_at_every_size_and_refuses_a_failing_site() {
    let dir = scratch("infer");
    let out = dir.join("out.onnx");
    let r = run(&["infer", POSITIONS, out.to_str().unwrap(), "--range", "seq=1..512"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("fails at seq = 65 within the ranges (it needs seq ≤ 64)"), "{}", r.stderr);
    assert!(!out.exists());
    let r = run(&["infer", POSITIONS, out.to_str().unwrap(), "--range", "seq=1..64"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let m = onnx_bcast::onnx::pb::ModelProto::decode(std::fs::read(&out).unwrap().as_slice()).unwrap();
    let dims = |name: &str| -> Vec<String> {
        let g = m.graph.as_ref().unwrap();
        let vi = g.value_info.iter().chain(&g.output).find(|v| v.name() == name).unwrap();
        let shape = vi.r#type.as_ref().unwrap().tensor_type.as_ref().unwrap().shape.as_ref().unwrap();
        shape.dim.iter().map(|d| format!("{:?}", d.value.as_ref().unwrap())).collect()
    };
    // min(64, seq) is seq over 1..64: nothing of the part of the range where it is 64.
    assert_eq!(dims("position_embeddings"), ["DimValue(1)", "DimParam(\"seq\")", "DimValue(8)"]);
    // Over 64..512 the slice is 64 rows at every size.
    let r = run(&["shapes", POSITIONS, "--range", "seq=64..512"]);
    assert!(r.stdout.contains("position_embeddings: float [1, 64, 8]"), "{}", r.stdout);
}

#[test]
fn expand_over_ranges_leaves_a_failing_site_with_its_witness() {
    let dir = scratch("expand");
    let out = dir.join("out.onnx");
    let r = run(&["expand", POSITIONS, out.to_str().unwrap(), "--range", "seq=1..512"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.contains("left implicit main › #7 (Add)")
            && r.stdout.contains("): fails at seq = 65 within the ranges"),
        "{}",
        r.stdout
    );
    let r = run(&["expand", POSITIONS, out.to_str().unwrap(), "--range", "seq=1..64", "--format", "json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // Proven over the ranges: the rewrite states no condition.
    let actions = json(&r)["actions"].clone();
    assert!(actions.as_array().unwrap().iter().all(|a| a["conditions"].as_array().unwrap().is_empty()), "{actions}");
}

#[test]
fn computed_position_ids_name_the_size_their_table_holds() {
    let r = run(&["check", "--no-config", POSITION_IDS]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let warnings: Vec<&str> = r.stdout.lines().filter(|l| l.contains("warning[index-bound]")).collect();
    assert_eq!(warnings.len(), 2, "{}", r.stdout);
    assert!(warnings[0].contains("main › #4 (Gather): holds only if seq ≤ 64: indices range_ids [seq] reach seq + 1"));
    // RoBERTa's ids reach seq + 1 only where no id is the padding id 1.
    assert!(warnings[1].contains(
        "main › #12 (Gather): holds only if seq ≤ 64: indices cumsum_ids [batch, seq] reach \
         seq + 1 (with 'input_ids' filled with 2)"
    ));
}

#[test]
fn computed_position_ids_are_decided_over_ranges_like_a_broadcast() {
    let r = run(&["check", "--no-config", POSITION_IDS, "--range", "seq=1..64", "--range", "batch=1..8"]);
    assert_eq!((r.code, r.stdout.contains("index-bound")), (0, false), "{}", r.stdout);
    let r = run(&["check", "--no-config", POSITION_IDS, "--range", "seq=1..512", "--safe-ranges", "--format", "json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let report = json(&r);
    let errors: Vec<&Json> =
        report["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "index-bound").collect();
    assert_eq!(errors.len(), 2);
    assert!(errors.iter().all(|f| f["severity"] == "error"
        && f["message"].as_str().unwrap().starts_with("fails at seq = 65 (it needs seq ≤ 64): ")));
    assert_eq!(report["ranges"]["safe"]["symbols"]["seq"], serde_json::json!({ "min": 1, "max": 64, "step": 1 }));
}

#[test]
fn a_witness_of_computed_indices_fills_the_inputs_that_drive_them_past_the_table() {
    let dir = scratch("witness-ids");
    let model = root().join(POSITION_IDS);
    let r = run_in(&dir, &["check", "--no-config", model.to_str().unwrap(), "--range", "seq=1..512", "--witness", "w"]);
    assert_eq!(r.code, 1);
    let folder = std::fs::read_dir(dir.join("w")).unwrap().next().unwrap().unwrap().path();
    let listed: Json = serde_json::from_slice(&std::fs::read(folder.join("witnesses.json")).unwrap()).unwrap();
    // One witness per data: the Range's ids fail on any data, RoBERTa's on ids that are never the padding id.
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
    assert_eq!(listed[1]["sites"], serde_json::json!(["main/#12 (Gather)"]));
    assert_eq!(
        (&listed[0]["filled"], &listed[1]["filled"]),
        (&serde_json::json!({}), &serde_json::json!({ "input_ids": 2 }))
    );
    let bytes = std::fs::read(folder.join("2").join("input_0.pb")).unwrap();
    let t = onnx_bcast::onnx::pb::TensorProto::decode(bytes.as_slice()).unwrap();
    assert_eq!((t.name(), t.dims.as_slice()), ("input_ids", &[1i64, 65][..]));
    let raw = t.raw_data.as_ref().unwrap();
    assert!(raw.chunks(8).all(|c| i64::from_le_bytes(c.try_into().unwrap()) == 2));
}

#[test]
fn a_range_of_an_integer_inputs_values_bounds_the_indices_computed_from_it() {
    // OPT's ids: any attention_mask value may be fed, so nothing bounds them; a 0/1 mask bounds them by seq + 1.
    let r = run(&["check", "--no-config", POSITION_IDS, "--range", "seq=1..512"]);
    assert!(!r.stdout.contains("main › #18 (Gather)"), "{}", r.stdout);
    let r = run(&["check", "--no-config", POSITION_IDS, "--range", "seq=1..512", "--range", "attention_mask=0..1"]);
    assert!(
        r.stdout.contains(
            "error[index-bound] main › #18 (Gather): fails at seq = 65 (it needs seq ≤ 64): indices mask_ids [batch, \
             seq] reach seq + 1 (with 'attention_mask' filled with 1)"
        ),
        "{}",
        r.stdout
    );
    // A value range is for integer inputs: a name neither a dim nor an integer input is still an error.
    let r = run(&["check", "--no-config", POSITION_IDS, "--range", "embeddings=0..1"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

#[test]
fn an_ops_conditions_on_sizes_are_decided_over_ranges_like_a_broadcasts() {
    // MatMul [.., K] x [768, ..]: K = 768; Reshape of 6*N elements into rows of 4: 4 divides 6*N.
    let matmul = "fixtures/contradiction/matmul_symbolic.onnx";
    let r = run(&["check", "--no-config", matmul, "--range", "K=768"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(!r.stdout.contains("conditional-shape"), "proven at the one size: {}", r.stdout);
    let r = run(&["check", "--no-config", matmul, "--range", "K=700..800"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout.contains("error[shape-contradiction] main › mm (MatMul): fails at K = 700 (it needs K = 768)"),
        "{}",
        r.stdout
    );
    let reshape = "fixtures/contradiction/reshape_symbolic.onnx";
    let r = run(&["check", "--no-config", reshape, "--range", "N=2..64/2"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(!r.stdout.contains("conditional-shape"), "every even N: {}", r.stdout);
    let r = run(&["check", "--no-config", "--format", "json", reshape, "--range", "N=1..64", "--safe-ranges"]);
    let report = json(&r);
    let codes: Vec<&str> = report["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert!(codes.contains(&"inexact-division"), "{report}");
    assert!(report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["message"].as_str().unwrap().starts_with("fails at N = 1")));
    // The largest safe range keeps the odd sizes out.
    assert_eq!(
        report["ranges"]["safe"]["symbols"]["N"],
        serde_json::json!({"min": 2, "max": 64, "step": 2}),
        "{report}"
    );
}

#[test]
fn an_unproven_op_condition_stays_conditional_and_names_the_part_left() {
    let r = run(&["check", "--no-config", "fixtures/contradiction/matmul_symbolic.onnx", "--range", "N=1..4"]);
    assert!(
        r.stdout.contains("warning[conditional-shape]") && r.stdout.contains("over the ranges, unproven"),
        "{}",
        r.stdout
    );
}

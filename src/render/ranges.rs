//! What `check` says about ranges of sizes, in text and JSON: each site's decision over the ranges, the safe
//! ranges with their TensorRT profiles, and the witnesses written.

use std::io::{self, Write};

use serde_json::{json, Value};

use crate::check::range_report::{RangeFailure, RangeReport, SafeReport};
use crate::rules::ranges::{describe, Decision, Ranges, SafeRanges, SizeRange, Sizes};

fn range_json(r: SizeRange) -> Value {
    json!({ "min": r.first(), "max": r.last(), "step": r.step() })
}

fn ranges_json(ranges: &Ranges) -> Value {
    Value::Object(ranges.iter().map(|(n, r)| (n.to_string(), range_json(r))).collect())
}

fn sizes_json(sizes: &Sizes) -> Value {
    Value::Object(sizes.iter().map(|(n, v)| (n.to_string(), Value::from(*v))).collect())
}

/// A site's `over_ranges` object: `{"result": "holds"|"fails"|"unproven", …}` with the witness, the number of
/// sizes decided one by one, or the undecided parts and why.
pub fn decision_json(d: &Decision) -> Value {
    match d {
        Decision::Holds(proof) => json!({ "result": d.as_str(), "enumerated": proof.enumerated }),
        Decision::Fails { witness, smaller_unproven } => {
            json!({ "result": d.as_str(), "witness": sizes_json(witness), "smaller_unproven": smaller_unproven })
        }
        Decision::Unproven(u) => {
            let parts: Vec<Value> = u
                .parts
                .iter()
                .map(|p| Value::Object(p.iter().map(|(n, r)| (n.to_string(), range_json(*r))).collect()))
                .collect();
            let free: Vec<String> = match &u.reason {
                crate::rules::ranges::UnprovenReason::FreeSymbols(names) => {
                    names.iter().map(|n| n.to_string()).collect()
                }
                _ => Vec::new(),
            };
            json!({
                "result": d.as_str(),
                "unproven": parts,
                "unproven_sizes": u.sizes.min(u128::from(u64::MAX)) as u64,
                "reason": u.reason.as_str(),
                "free_symbols": free,
            })
        }
    }
}

/// A model's `ranges` object.
pub fn range_report_json(r: &RangeReport) -> Value {
    json!({
        "symbols": ranges_json(&r.ranges),
        "defaulted": r.defaulted.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        "failures": r.failures.iter().map(|f| json!({
            "graph": f.graph, "node": f.node, "op": f.op, "witness": sizes_json(&f.witness),
        })).collect::<Vec<_>>(),
        "safe": r.safe.as_ref().map(|s| safe_json(s, &r.ranges)),
        "witnesses": r.witnesses.iter().map(|w| json!({
            "sizes": sizes_json(&w.sizes),
            "sites": w.sites.iter().map(RangeFailure::path).collect::<Vec<_>>(),
            "dir": w.dir.display().to_string(),
            "error": w.error,
            "runtime": w.runtime,
        })).collect::<Vec<_>>(),
    })
}

fn safe_json(s: &SafeReport, all: &Ranges) -> Value {
    let (complete, left_out) = match &s.outcome {
        SafeRanges::Safe { safe, left_out } => (safe.complete, *left_out),
        SafeRanges::None { left_out } => (true, *left_out),
    };
    let profile = s.profile.as_ref().map(|p| {
        json!({
            "min_shapes": p.profile.min.spelled(),
            "opt_shapes": p.profile.opt.spelled(),
            "max_shapes": p.profile.max.spelled(),
            "trtexec": p.profile.trtexec(),
            "onnxruntime": serde_json::from_str::<Value>(&p.profile.onnxruntime()).unwrap_or(Value::Null),
            "left_out_inputs": p.left_out,
        })
    });
    json!({
        "symbols": s.safe_ranges(all).as_ref().map(ranges_json),
        "complete": complete,
        "left_out_conditions": left_out,
        "always_violated": s.always_violated,
        "profile": profile,
    })
}

/// The text lines of a model's ranges: the safe ranges and their profiles (with `--safe-ranges`), and the
/// witnesses written.
pub fn write_ranges_text(out: &mut impl Write, path: &str, r: &RangeReport) -> io::Result<()> {
    if let Some(safe) = &r.safe {
        write_safe_text(out, path, safe, r)?;
    }
    for w in &r.witnesses {
        // The site, the folder (named after the model's path) and what a runtime said are the model's: escaped.
        let first = w.sites.first().map(RangeFailure::at).unwrap_or_default();
        let sites = match w.sites.len() {
            0 | 1 => first,
            2 => format!("{first} and 1 more site"),
            n => format!("{first} and {} more sites", n - 1),
        };
        let sizes = crate::rules::ranges::describe_sizes(&w.sizes);
        match &w.error {
            Some(e) => {
                writeln!(out, "{path}: witness for {sites} at {sizes} not written: {}", crate::sys::escape::text(e))?
            }
            None => {
                let dir = w.dir.display().to_string();
                writeln!(out, "{path}: witness for {sites} at {sizes}: {}", crate::sys::escape::text(&dir))?
            }
        }
        if let Some(runtime) = &w.runtime {
            writeln!(out, "{path}:   runtime: {}", crate::sys::escape::text(runtime))?;
        }
    }
    Ok(())
}

fn write_safe_text(out: &mut impl Write, path: &str, safe: &SafeReport, r: &RangeReport) -> io::Result<()> {
    let Some(ranges) = safe.safe_ranges(&r.ranges) else {
        let why = match safe.always_violated {
            0 => "no size of the ranges is proven safe".to_string(),
            n => format!("nothing is safe: {n} site(s) break their rule at every size"),
        };
        return writeln!(out, "{path}: safe ranges: none ({why})");
    };
    let SafeRanges::Safe { safe: found, left_out } = &safe.outcome else { return Ok(()) };
    if ranges.iter().next().is_none() {
        // A model whose inputs have no symbolic size: there is no box to give, and an empty profile is no help.
        return writeln!(out, "{path}: safe ranges: the inputs have no symbolic sizes to bound (every site holds)");
    }
    let mut notes = vec![match found.complete {
        true => "every site holds there".to_string(),
        false => "every site holds there; the search stopped at its budget, so a larger box may exist".to_string(),
    }];
    if *left_out > 0 {
        notes.push(format!("{left_out} condition(s) no range decides left out"));
    }
    writeln!(out, "{path}: safe ranges: {} ({})", ranges.describe(), notes.join("; "))?;
    if !r.defaulted.is_empty() {
        let names: Vec<String> = r.defaulted.iter().map(|n| crate::rules::ranges::shown_name(n)).collect();
        let bounds = crate::rules::ranges::DEFAULT_SAFE_BOUNDS;
        writeln!(
            out,
            "{path}:   no range was given for {}: searched within {bounds}; give --range to bound them",
            names.join(", ")
        )?;
    }
    if let Some(p) = &safe.profile {
        write_profile_text(out, path, &p.profile)?;
        if !p.left_out.is_empty() {
            let names: Vec<String> = p.left_out.iter().map(|n| format!("{n:?}")).collect();
            writeln!(out, "{path}:   not in the profile (a dim no range gives): {}", names.join(", "))?;
        }
    }
    let stepped: Vec<(&str, SizeRange)> =
        ranges.iter().filter(|(_, s)| s.step() > 1 && !s.is_point()).map(|(n, s)| (n.as_ref(), s)).collect();
    if !stepped.is_empty() {
        writeln!(
            out,
            "{path}:   feed only the sizes of the steps ({}): a TensorRT profile cannot say so",
            describe(stepped.into_iter())
        )?;
    }
    Ok(())
}

/// The profile as trtexec flags and onnxruntime's TensorRT provider options, a line each, ready to paste; when
/// those lines would run past 300 characters (many inputs, long names), one line per input (`min / opt / max`) and
/// where the paste-ready forms are (JSON's `ranges.safe.profile`). Input names are the model's: shown escaped.
fn write_profile_text(
    out: &mut impl Write,
    path: &str,
    profile: &crate::rules::ranges::profile::Profile,
) -> io::Result<()> {
    let trtexec = format!("   trtexec {}", crate::sys::escape::text(&profile.trtexec()));
    let options =
        format!("   onnxruntime TensorRT provider options: {}", crate::sys::escape::text(&profile.onnxruntime()));
    let fits = |line: &str| line.chars().count() <= crate::render::brief::AFTER_PATH;
    if fits(&trtexec) && fits(&options) {
        writeln!(out, "{path}:{trtexec}")?;
        return writeln!(out, "{path}:{options}");
    }
    writeln!(
        out,
        "{path}:   the profile per input, min / opt / max (trtexec's flags and onnxruntime's options for {} inputs: \
         `--format json`, ranges.safe.profile):",
        profile.min.0.len()
    )?;
    let dims = |d: &[u64]| d.iter().map(u64::to_string).collect::<Vec<_>>().join("x");
    // The three shapes list the same inputs in the same order (`Profile` is made input by input).
    let at = |shapes: &crate::rules::ranges::profile::Shapes, k: usize| {
        shapes.0.get(k).map_or(String::new(), |s| dims(&s.1))
    };
    for (k, (name, min)) in profile.min.0.iter().enumerate() {
        let shown = crate::sys::escape::short(name);
        writeln!(out, "{path}:     {shown}: {} / {} / {}", dims(min), at(&profile.opt, k), at(&profile.max, k))?;
    }
    Ok(())
}

//! `onnx-bcast shapes`: every value's inferred element type and shape (text, JSON), or a Graphviz picture.

use std::io::{self, Write};
use std::path::Path;

use onnx_bcast::analysis::{analyze_model_request, prepare, Bindings, Options, Request};
use onnx_bcast::check::{CheckOptions, Judge};
use onnx_bcast::render;

use super::args::{ShapesArgs, ShapesFormat};
use super::Status;

/// Each model in turn, the worst status wins; a model that cannot be read does not stop the others.
pub fn command(args: &ShapesArgs) -> io::Result<Status> {
    let request = match Bindings::new(&args.bind) {
        Ok(bindings) => {
            Request { bindings, ranges: args.ranges.request(), training_graphs: true, ..Default::default() }
        }
        Err(e) => {
            say!("onnx-bcast: error: {e}");
            return Ok(Status::Failed);
        }
    };
    let mut worst = Status::Clean;
    for model in &args.models {
        worst = worst.max(shapes(model, args.format, &request)?);
    }
    Ok(worst)
}

fn shapes(path: &Path, format: ShapesFormat, request: &Request) -> io::Result<Status> {
    let shown = path.display().to_string();
    let model = match super::open_model(path)? {
        Ok(model) => model,
        Err(e) => {
            say!("onnx-bcast: error: {e}");
            return Ok(Status::Failed);
        }
    };
    let analyzed = onnx_bcast::sys::panics::guard(|| {
        let (request, ranges) = prepare(model.proto(), request)?;
        let mut analysis = analyze_model_request(&model, Options::default(), &request, None)?;
        // Over ranges, every size is shown as what it is at all of them.
        if let Some(ranges) = &ranges {
            analysis.facts_within(&ranges.ranges);
        }
        Ok::<_, onnx_bcast::analysis::BindError>((analysis, ranges))
    });
    let (analysis, ranges) = match analyzed {
        Ok(Ok(a)) => a,
        Ok(Err(e)) => {
            say!("onnx-bcast: error: {shown}: {e}");
            return Ok(Status::Failed);
        }
        Err(panic) => {
            say!("onnx-bcast: internal error: {shown}: {panic}");
            return Ok(Status::Failed);
        }
    };
    // Shapes at sizes the model contradicts are shown, with each contradiction (`check` reports the same): exit 1.
    let contradicted: Vec<&onnx_bcast::analysis::Note> =
        analysis.notes.iter().filter(|n| n.code == onnx_bcast::diagnostic::Code::BindContradiction).collect();
    let notes: Vec<onnx_bcast::analysis::Note> = contradicted.iter().map(|n| (*n).clone()).collect();
    super::print_notes(&shown, &notes);
    let ascii = format == ShapesFormat::Text && super::charset::stdout_ascii();
    let mut out = io::BufWriter::new(super::charset::Text::new(io::stdout().lock(), ascii));
    match format {
        ShapesFormat::Text => render::write_shapes_text(&mut out, &shown, &analysis)?,
        ShapesFormat::Json => writeln!(out, "{}", render::shapes_json(&shown, &analysis))?,
        ShapesFormat::Dot => {
            let mut judge = Judge::new(CheckOptions::default(), true).with_ranges(ranges);
            analysis.sites.iter().cloned().for_each(|site| judge.judge(site));
            let report = judge.finish(&analysis);
            out.write_all(onnx_bcast::render::dot::main_graph(model.proto(), &analysis, &report).as_bytes())?
        }
    }
    out.flush()?;
    Ok(if contradicted.is_empty() { Status::Clean } else { Status::Findings })
}

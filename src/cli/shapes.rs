//! `onnx-bcast shapes`: every value's inferred element type and shape (text, JSON), or a Graphviz picture.

use std::io::{self, Write};
use std::path::Path;

use onnx_bcast::analysis::{analyze_model_request, Bindings, Options, Request};
use onnx_bcast::check::{check, CheckOptions};
use onnx_bcast::render;

use super::args::{ShapesArgs, ShapesFormat};
use super::Status;

/// Each model in turn, the worst status wins; a model that cannot be read does not stop the others.
pub fn command(args: &ShapesArgs) -> io::Result<Status> {
    let request = match Bindings::new(&args.bind) {
        Ok(bindings) => Request { bindings, function_facts: false },
        Err(e) => {
            eprintln!("onnx-bcast: error: {e}");
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
            eprintln!("onnx-bcast: error: {e}");
            return Ok(Status::Failed);
        }
    };
    let analysis = match onnx_bcast::panics::guard(|| analyze_model_request(&model, Options::default(), request, None))
    {
        Ok(Ok(a)) => a,
        Ok(Err(e)) => {
            eprintln!("onnx-bcast: error: {shown}: {e}");
            return Ok(Status::Failed);
        }
        Err(panic) => {
            eprintln!("onnx-bcast: internal error: {shown}: {panic}");
            return Ok(Status::Failed);
        }
    };
    let mut out = io::BufWriter::new(io::stdout().lock());
    match format {
        ShapesFormat::Text => render::write_shapes_text(&mut out, &shown, &analysis)?,
        ShapesFormat::Json => writeln!(out, "{}", render::shapes_json(&shown, &analysis))?,
        ShapesFormat::Dot => {
            let report = check(&analysis, CheckOptions::default());
            out.write_all(onnx_bcast::dot::main_graph(model.proto(), &analysis, &report).as_bytes())?
        }
    }
    out.flush()?;
    Ok(Status::Clean)
}

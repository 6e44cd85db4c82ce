//! `onnx-bcast explain`: a code's documentation, or the list of codes (as text or as the table of docs/codes.md).

use std::io::{self, Write};

use onnx_bcast::diagnostic::Code;

use super::args::{ExplainArgs, ListFormat};
use super::Status;

pub fn command(args: &ExplainArgs) -> io::Result<Status> {
    let text = match (args.list, args.format, args.code.as_deref()) {
        (true, ListFormat::Text, _) | (false, _, None) => onnx_bcast::render::explain::list(),
        (true, ListFormat::Markdown, _) => onnx_bcast::render::explain::markdown(),
        (false, _, Some(code)) => {
            let code = Code::from_name(code).expect("clap accepts only codes");
            onnx_bcast::render::explain::text(code)
        }
    };
    let ascii = args.format == ListFormat::Text && super::charset::stdout_ascii();
    let mut out = super::charset::Text::new(io::stdout().lock(), ascii);
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(Status::Clean)
}

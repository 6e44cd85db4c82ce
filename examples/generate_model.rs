//! Writes a large synthetic ONNX model (see `onnx_bcast::gen`) for load, speed and memory measurements.
//!
//! ```text
//! cargo run --release --example generate_model -- --tensors 200 --dims 1280,1024 --nodes 20000 --small 100 --seed 1 OUT.onnx
//! ```

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;

#[allow(dead_code)] // the generator also serves the tests, which use more of it
#[path = "../tests/it/common/gen.rs"]
mod gen;

use gen::{write_synthetic, SyntheticSpec};

/// Write a large synthetic ONNX model: a chain of broadcasting element-wise nodes over large float32 initializers.
#[derive(Parser)]
struct Args {
    /// Number of large float32 initializers, each of shape --dims.
    #[arg(long, default_value_t = 200)]
    tensors: usize,
    /// Shape of the large initializers, of the input X and of the output Y, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1280,1024")]
    dims: Vec<u64>,
    /// Number of element-wise nodes (Add, Mul, Sub, Div) in the chain from X to Y.
    #[arg(long, default_value_t = 20_000)]
    nodes: usize,
    /// Number of small initializers ([d] or [1, d]) that some nodes broadcast against.
    #[arg(long, default_value_t = 100)]
    small: usize,
    /// Seed of the ops, operand order and tensor contents.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Default-domain opset (7 or later).
    #[arg(long, default_value_t = 17)]
    opset: i64,
    /// Where to write the model.
    out: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let spec = SyntheticSpec {
        large_initializers: args.tensors,
        large_dims: args.dims,
        nodes: args.nodes,
        small_initializers: args.small,
        seed: args.seed,
        opset: args.opset,
    };
    let start = Instant::now();
    let mut file =
        std::fs::File::create(&args.out).map_err(|e| anyhow::anyhow!("{}: cannot create: {e}", args.out.display()))?;
    // A spec the generator refuses (`--nodes 0`) or a failed write leaves no file behind, rather than an empty or
    // cut model that a later run could take for one.
    let written = write_synthetic(&spec, &mut file).map_err(|e| {
        let _ = std::fs::remove_file(&args.out);
        anyhow::anyhow!("{}: cannot write: {e}", args.out.display())
    })?;
    eprintln!(
        "wrote {} ({written} bytes, {:.1} MiB) in {:.2} s",
        args.out.display(),
        written as f64 / (1 << 20) as f64,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

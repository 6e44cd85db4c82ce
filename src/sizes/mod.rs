//! Layer 1, sizes: symbolic size expressions ([`sym`]) and the dimensions and shapes built from them
//! ([`shape`]). Pure algebra: nothing here knows a model.

pub mod shape;
pub mod sym;

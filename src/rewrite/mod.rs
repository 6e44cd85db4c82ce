//! Layer 7, the rewrites: [`expand`] makes implicit broadcasts explicit, [`fold`] removes explicit ones a consumer
//! performs anyway, [`annotate`] declares every inferred shape (`infer`). Each says what it analyses and how it
//! plans; [`driver`] owns the rest of the way, the same for all three: refuse a broken model ([`refuse`]), splice
//! the plan's edit into the original bytes, write them. [`declare`] writes a value's facts as a declaration
//! (`infer`, and the inputs `--bind` fixes); [`materialize`] writes a constant at its broadcast shape.

pub mod annotate;
pub mod declare;
pub mod driver;
pub mod expand;
pub mod fold;
pub mod materialize;
pub mod refuse;

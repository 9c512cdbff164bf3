//! Getting a build onto disk: [`output`] writes every artifact all-or-nothing (staged,
//! journaled, locked) and checks a folder for staleness; [`cache`] keeps a build's memo and
//! record so a rebuild costs what changed; [`builder`] is the API a `build.rs`
//! calls (generate the files in memory, then write them into `OUT_DIR`). Both are re-exported at
//! the crate root (`toolreg::output`, `toolreg::builder`, `toolreg::Builder`), the paths they had
//! before the move.

pub mod builder;
pub mod cache;
pub mod output;

//! The computer's disk: a host directory seen through CC's path rules. Paths are normalised the
//! way CC does (`\` is `/`, `.` and `..` resolved), and a path that would climb above the root is
//! refused, so a program can never touch the host outside its computer's directory. `/rom` is an
//! empty read-only directory, as a stand-in for CC's ROM.
//!
//! Native functions answer `true, values...` or `false, message`; the bios turns the latter into
//! a Lua error with a string message (mlua's own errors are userdata, CC's are strings).

mod disk;
mod path;
mod private;
mod table;

pub(crate) use private::{private_dir, private_folder, tighten, write_private};
pub(crate) use table::native;

#[cfg(test)]
mod tests;

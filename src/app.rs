//! Wiring of the run modes.

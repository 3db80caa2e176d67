//! Lua numbers as text, the way CC: Tweaked's `tostring` writes them, for every native that
//! turns a number into bytes (`write`, file handles).

/// A number as CC's `tostring` writes it (`5`, not `5.0`).
pub(crate) fn number_text(n: f64) -> String {
    if n.is_nan() {
        "nan".into()
    } else if n.is_infinite() {
        if n > 0.0 { "inf".into() } else { "-inf".into() }
    } else if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}
